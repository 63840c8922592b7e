chunk 1: block bitmap differs in 20 places [BLOCK_BITMAP]; rewrite it from the block maps: fixed
chunk 1: inode [/many/big]: block map shares blocks with another inode [MAP_SHARED]; drop the block map: fixed
chunk 1: inode [/many/big]: owns 0 blocks, records 20 [INODE_NBLOCKS]; correct the count: fixed
checked 1 of 2 chunks (1 clean, skipped)
104 inodes, 2 directories in the checked chunks; 3 problems, 3 fixed, 0 left
exit 1
