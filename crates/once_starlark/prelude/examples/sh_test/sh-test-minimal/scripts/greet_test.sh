#!/usr/bin/env bash
# Passes when greet.sh greets its argument; any non-zero exit fails the test. The test
# runs greet.sh as it is staged beside this script (the runfiles directory), not the
# source file: what the test reads is what its target declares.
set -euo pipefail

actual="$(bash "$(dirname "$0")/greet.sh" world)"
expected="hello, world"
if [[ "$actual" != "$expected" ]]; then
  echo "expected '$expected', got '$actual'" >&2
  exit 1
fi
echo "ok"
