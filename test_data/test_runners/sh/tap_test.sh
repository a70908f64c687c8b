echo "1..2"
echo "ok 1 - banner present"
echo "not ok 2 - refuses unknown flags"
echo "# expected exit status 2, got 0"
exit 1
