checked 0 of 4 chunks (4 clean, skipped)
exit 0
