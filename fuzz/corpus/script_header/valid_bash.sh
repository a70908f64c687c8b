#!/usr/bin/env bash
# Builds the report from the CSV files.
# once input "data/*.csv"
# once input "../shared/config.toml"
# once output "out/report.txt"
# once needs "prepare.sh"
# once fingerprint "python3 --version"
# once env "REPORT_TITLE"
# once cwd "."
# once output-symlinks "preserve"
#MISE description="a tool's own comment is not a directive"

set -euo pipefail
cat data/*.csv > out/report.txt
