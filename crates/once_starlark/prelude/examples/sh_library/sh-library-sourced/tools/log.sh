# Logging helpers, sourced by the scripts of this package.

log_info() {
  printf '[info] %s\n' "$*"
}

log_error() {
  printf '[error] %s\n' "$*" >&2
}
