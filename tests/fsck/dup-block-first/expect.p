chunk 1: block bitmap differs in 20 places [BLOCK_BITMAP]; rewrite it from the block maps: fixed
chunk 1: inode [/d1/multi]: block map shares blocks with another inode [MAP_SHARED]; drop the block map: fixed
chunk 1: inode [/d1/multi]: owns 0 blocks, records 20 [INODE_NBLOCKS]; correct the count: fixed
checked 1 of 4 chunks (3 clean, skipped)
9 inodes, 2 directories in the checked chunks; 3 problems, 3 fixed, 0 left
exit 1
