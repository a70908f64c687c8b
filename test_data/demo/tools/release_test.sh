#!/usr/bin/env bash
# The release script must refuse unknown flags and succeed in dry-run mode.
set -euo pipefail

if bash release.sh --publish-everything 2>/dev/null; then
    echo "release.sh accepted an unknown flag" >&2
    exit 1
fi
bash release.sh --dry-run | grep -q "nothing published"
