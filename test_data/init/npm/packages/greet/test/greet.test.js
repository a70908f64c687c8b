import { test } from "node:test";
import assert from "node:assert";
import { greet } from "../greet.js";

test("greets by name", () => assert.strictEqual(greet("grace"), "Hello, Grace"));
test("greets nobody", () => assert.strictEqual(greet(""), "Hello, "));
