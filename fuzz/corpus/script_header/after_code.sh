#!/usr/bin/env bash
# once input "early.txt"
echo start
# once output "late.txt"
