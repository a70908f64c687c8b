#!/usr/bin/env bash
set -euo pipefail
echo "hello, ${1:-stranger}"
