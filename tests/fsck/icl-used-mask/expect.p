chunk 1: inode bitmap differs in 2 places [INODE_BITMAP]; rewrite it from the inode table: fixed
checked 1 of 2 chunks (1 clean, skipped)
104 inodes, 2 directories in the checked chunks; 1 problems, 1 fixed, 0 left
exit 1
