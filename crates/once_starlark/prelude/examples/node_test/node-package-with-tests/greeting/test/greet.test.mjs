// Tests of the greeting library, imported by its package name.

import assert from "node:assert/strict";
import { test } from "node:test";

import { greet } from "greeting";

test("greets by name", () => {
  assert.equal(greet("world"), "hello, world");
});

test("shouts on request", () => {
  assert.equal(greet(" world ", { shout: true }), "HELLO, WORLD!");
});

test("rejects an empty name", () => {
  assert.throws(() => greet("  "), TypeError);
});
