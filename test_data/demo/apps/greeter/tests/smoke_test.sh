#!/usr/bin/env bash
# Runs the greeter staged in the test's runfiles directory and checks its output.
set -euo pipefail

actual="$("$(dirname "$0")/../greeter")"
if [[ "$actual" != "${EXPECTED}" ]]; then
    echo "expected '${EXPECTED}', got '${actual}'" >&2
    exit 1
fi
echo "ok: ${actual}"
