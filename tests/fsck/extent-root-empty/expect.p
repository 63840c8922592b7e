chunk 2: block bitmap differs in 5 places [BLOCK_BITMAP]; rewrite it from the block maps: fixed
chunk 2: inode [/d1/link-f]: extent tree root is an index node with no records [MAP_EMPTY_ROOT]; make it an empty leaf: fixed
chunk 2: inode [/d1/link-f]: owns 0 blocks, records 5 [INODE_NBLOCKS]; correct the count: fixed
checked 1 of 4 chunks (3 clean, skipped)
77 inodes, 4 directories in the checked chunks; 3 problems, 3 fixed, 0 left
exit 1
