chunk 6: inode [/t5/a]: link count 3, should be 1 [LINK_COUNT]; correct it: fixed
checked 1 of 64 chunks (63 clean, skipped)
3 inodes, 1 directories in the checked chunks; 1 problems, 1 fixed, 0 left
exit 1
