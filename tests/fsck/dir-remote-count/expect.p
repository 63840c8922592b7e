chunk 2: dir [/d2]: records 8 entries (2 remote), has 7 (1) [DIR_COUNTS]; correct the counts: fixed
checked 1 of 4 chunks (3 clean, skipped)
77 inodes, 4 directories in the checked chunks; 1 problems, 1 fixed, 0 left
exit 1
