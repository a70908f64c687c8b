#!/usr/bin/env bash
# Lists (or, without --dry-run, removes) editor backup files below the current directory.
set -euo pipefail

dry_run=false
if [[ "${1:-}" == "--dry-run" ]]; then
  dry_run=true
fi

find . -name '*~' -type f | while read -r file; do
  if $dry_run; then
    echo "would remove $file"
  else
    rm -- "$file"
  fi
done
