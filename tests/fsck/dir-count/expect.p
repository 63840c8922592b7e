chunk 1: dir [/d1/sub]: records 5 entries (0 remote), has 3 (0) [DIR_COUNTS]; correct the counts: fixed
checked 1 of 4 chunks (3 clean, skipped)
9 inodes, 2 directories in the checked chunks; 1 problems, 1 fixed, 0 left
exit 1
