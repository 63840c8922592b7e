chunk 1: block bitmap differs in 4 places [BLOCK_BITMAP]; rewrite it from the block maps: fixed
checked 1 of 4 chunks (3 clean, skipped)
9 inodes, 2 directories in the checked chunks; 1 problems, 1 fixed, 0 left
exit 1
