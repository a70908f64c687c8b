echo "checking the release"
echo "missing changelog entry" >&2
exit 3
