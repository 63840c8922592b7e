chunk 1: block bitmap differs in 1 places [BLOCK_BITMAP]; rewrite it from the block maps: fixed
chunk 1: inode [/d1/small]: extended attribute block corrupt [XATTR_BLOCK]; drop the block: fixed
chunk 1: inode [/d1/small]: owns 0 blocks, records 1 [INODE_NBLOCKS]; correct the count: fixed
checked 1 of 4 chunks (3 clean, skipped)
9 inodes, 2 directories in the checked chunks; 3 problems, 3 fixed, 0 left
exit 1
