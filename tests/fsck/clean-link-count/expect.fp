chunk 1: inode [/d1/multi]: link count 7, should be 2 [LINK_COUNT]; correct it: fixed
checked 4 of 4 chunks (0 clean, skipped)
90 inodes, 9 directories in the checked chunks; 1 problems, 1 fixed, 0 left
exit 1
