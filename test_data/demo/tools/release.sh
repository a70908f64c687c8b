#!/usr/bin/env bash
# Prints the release banner; with --dry-run it publishes nothing.
set -euo pipefail

dry_run=false
for arg in "$@"; do
    case "$arg" in
        --dry-run) dry_run=true ;;
        *) echo "usage: release.sh [--dry-run]" >&2; exit 2 ;;
    esac
done

# The banner `tools/Banner` generates, staged next to this script by `once`.
cat "$(dirname "$0")/banner.txt"
if [[ "$dry_run" == true ]]; then
    echo "dry run: nothing published"
fi
