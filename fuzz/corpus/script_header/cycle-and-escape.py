#!/usr/bin/python3 -u
# once needs "gen.sh"
# once input "../../outside.txt"
# once output "/abs/path"
# once output ".once/cache/x"
# once Inputs: "data/*.csv"
# ONCE input 'single quoted'
# once output "a\"b"
# once cwd "missing/dir"
# once cwd "."
print("hi")
