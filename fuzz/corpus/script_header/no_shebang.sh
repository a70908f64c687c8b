# once input "a.txt"
echo hi
