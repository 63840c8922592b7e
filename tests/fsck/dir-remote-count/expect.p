chunk 2: dir [/d2]: records 8 entries (2 remote), has 7 (1) [DIR_COUNTS]; correct the counts: fixed
checked 4 of 4 chunks (0 clean, skipped) [lost directory entries: checked every chunk]
90 inodes, 9 directories in the checked chunks; 1 problems, 1 fixed, 0 left
exit 1
