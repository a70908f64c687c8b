#!/usr/bin/env once build
# once input "a.txt"
