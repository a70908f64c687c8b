#!/usr/bin/env bash
# Passes when deploy.sh logs the environment and rejects a missing one.
set -euo pipefail
here="$(dirname "$0")"

output="$(bash "$here/deploy.sh" staging)"
if [[ "$output" != "[info] deploying to staging" ]]; then
  echo "unexpected output: $output" >&2
  exit 1
fi
if bash "$here/deploy.sh" 2>/dev/null; then
  echo "deploy.sh accepted a missing environment" >&2
  exit 1
fi
echo "ok"
