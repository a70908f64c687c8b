#!/usr/bin/env node
// Greets its argument: `greet [--shout] NAME`.

import { greet } from "greeting";

const args = process.argv.slice(2);
const shout = args.includes("--shout");
const name = args.find((arg) => arg !== "--shout") ?? "stranger";
console.log(greet(name, { shout }));
