chunk 1: header counts continuations/stubs/dirs 2/4/5, should be 1/2/2 [HDR_COUNTS]; correct them: fixed
checked 1 of 4 chunks (3 clean, skipped)
9 inodes, 2 directories in the checked chunks; 1 problems, 1 fixed, 0 left
exit 1
