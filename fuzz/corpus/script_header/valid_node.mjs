#!/usr/bin/env node
// once input "src/index.mjs"
// once output "dist/bundle.js"
// once env "NODE_ENV"
import fs from "node:fs";
