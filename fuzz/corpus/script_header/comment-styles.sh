#!/bin/sh
// once input "data/a.csv"
-- once output "out.txt"
; once env "NAME"
% once needs "dep.sh"
