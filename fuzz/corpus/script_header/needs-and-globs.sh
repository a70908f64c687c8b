#!/usr/bin/env -S once exec -- bash -e
# once input "data/*.csv"
# once input "data"
# once input "../shared/config.toml"
# once needs "dep.sh"
# once needs "order.sh"
# once output "out/report.txt"
# once output "out/dir"
# once env "NAME"
# once env "MISSING"
# once fingerprint "uname -s"
# once cwd ".."
# once output-symlinks "materialize-external"
cat data/*.csv > out/report.txt
