#!/usr/bin/env bash
# once inputs "a.txt"
# once input: "b.txt"
# once input c.txt
# once input 'd.txt'
# once input "e.txt" "f.txt"
# once input "g.txt
# once input "h.txt" trailing
# once inptu "i.txt"
# ONCE input "j.txt"
# once Output "k.txt"
# once
# once env
echo body
