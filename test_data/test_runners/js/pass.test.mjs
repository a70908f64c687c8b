import { test } from "node:test";
import assert from "node:assert/strict";

test("adds", () => {
  assert.equal(1 + 1, 2);
});

test("skipped here", { skip: "not on this machine" }, () => {});
