import { test } from "node:test";
import assert from "node:assert/strict";

test("adds", () => {
  assert.equal(1 + 1, 2);
});

test("skipped here", { skip: "not on this machine" }, () => {});

// The same name as a test of mixed.test.mjs: their case ids differ by their file.
test("passes", () => {
  assert.equal("b".repeat(2), "bb");
});
