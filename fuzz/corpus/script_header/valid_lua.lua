#!/usr/bin/lua5.4 -W
-- once input "template.txt"
-- once output "rendered.txt"
print("ok")
