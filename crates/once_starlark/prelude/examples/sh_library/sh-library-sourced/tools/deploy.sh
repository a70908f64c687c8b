#!/usr/bin/env bash
# Pretends to deploy to the environment named by the first argument.
set -euo pipefail
source "$(dirname "$0")/log.sh"

environment="${1:-}"
if [[ -z "$environment" ]]; then
  log_error "usage: deploy.sh ENVIRONMENT"
  exit 2
fi
log_info "deploying to $environment"
