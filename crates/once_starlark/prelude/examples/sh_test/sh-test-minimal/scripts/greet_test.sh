#!/usr/bin/env bash
# Passes when greet.sh greets its argument; any non-zero exit fails the test.
set -euo pipefail

actual="$(bash ./greet.sh world)"
expected="hello, world"
if [[ "$actual" != "$expected" ]]; then
  echo "expected '$expected', got '$actual'" >&2
  exit 1
fi
echo "ok"
