chunk 1: inode [/d1/multi]: link count 7, should be 2 [LINK_COUNT]; correct it: fixed
checked 1 of 4 chunks (3 clean, skipped)
9 inodes, 2 directories in the checked chunks; 1 problems, 1 fixed, 0 left
exit 1
