#!/usr/bin/env -S
# once input "a.txt"
