// Tests of the JavaScript greeting library, imported by its package name.

import assert from "node:assert/strict";
import { test } from "node:test";

import { capitalize, greet, joinNames } from "@demo/greeting";

test("greets the world by default", () => {
  assert.equal(greet(), "Hello, World!");
});

test("greets several people", () => {
  assert.equal(greet(["ann", "bo"]), "Hello, Ann and Bo!");
});

test("capitalizes only the first letter", () => {
  assert.equal(capitalize("éclair"), "Éclair");
  assert.equal(capitalize(""), "");
});

test("joins names as prose", () => {
  assert.equal(joinNames(["ann"]), "ann");
  assert.equal(joinNames(["ann", "bo", "cy"]), "ann, bo and cy");
});
