import { describe, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";

test("passes", () => {
  assert.equal("a".toUpperCase(), "A");
});

describe("group", () => {
  test("fails", () => {
    assert.equal(1 + 1, 3, "one and one make two");
  });
});

test("skipped", { skip: "not on this machine" }, () => {});

test("flaky", () => {
  const marker = process.env.FLAKY_MARKER;
  if (!fs.existsSync(marker)) {
    fs.writeFileSync(marker, "");
    assert.fail("fails the first time");
  }
});
