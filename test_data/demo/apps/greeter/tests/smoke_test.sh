#!/usr/bin/env bash
# Runs the staged greeter and checks its first line of output.
set -euo pipefail

actual="$(./greeter)"
if [[ "$actual" != "${EXPECTED}" ]]; then
    echo "expected '${EXPECTED}', got '${actual}'" >&2
    exit 1
fi
echo "ok: ${actual}"
