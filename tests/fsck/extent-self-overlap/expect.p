chunk 1: block bitmap differs in 25 places [BLOCK_BITMAP]; rewrite it from the block maps: fixed
chunk 1: inode [/d1/frag]: block map maps a block twice [MAP_TWICE]; drop the block map: fixed
chunk 1: inode [/d1/frag]: owns 0 blocks, records 25 [INODE_NBLOCKS]; correct the count: fixed
checked 1 of 4 chunks (3 clean, skipped)
9 inodes, 2 directories in the checked chunks; 3 problems, 3 fixed, 0 left
exit 1
