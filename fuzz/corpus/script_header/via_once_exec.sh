#!/usr/bin/env -S once exec -- bash -e
# once output "stamp.txt"
date > stamp.txt
