const test = require("node:test");
const assert = require("node:assert");
const strings = require("..");

test("capitalizes", () => assert.strictEqual(strings.capitalize("ada"), "Ada"));
test("shouts", () => assert.strictEqual(strings.shout("hi"), "Hi!"));
test("skipped for now", { skip: "later" }, () => {});
