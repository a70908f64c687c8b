#!/usr/bin/env bash
# The release script must refuse unknown flags and succeed in dry-run mode.
set -euo pipefail

# `tools/Release` is staged in this test's runfiles directory with its banner.
release="$(dirname "$0")/release.sh"
if bash "$release" --publish-everything 2>/dev/null; then
    echo "release.sh accepted an unknown flag" >&2
    exit 1
fi
bash "$release" --dry-run | grep -q "nothing published"
