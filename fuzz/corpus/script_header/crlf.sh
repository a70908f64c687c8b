#!/bin/sh
# once input "crlf.txt"
# once output "out.txt"
echo hi
