source "$(dirname "$0")/greet.sh"
[ "$(greet world)" = "hello, world" ]
