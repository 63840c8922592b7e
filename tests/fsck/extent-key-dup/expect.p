chunk 1: block bitmap differs in 1 places [BLOCK_BITMAP]; rewrite it from the block maps: needs a person
chunk 1: inode [/d1/frag]: extent at logical block 0 (1 blocks at chunk block 69) is out of key order [EXTENT_MISPLACED]; remove the extent: needs a person
chunk 1: inode [/d1/frag]: owns 24 blocks, records 25 [INODE_NBLOCKS]; correct the count: needs a person
checked 1 of 4 chunks (3 clean, skipped)
9 inodes, 2 directories in the checked chunks; 3 problems, 0 fixed, 3 left
UNEXPECTED INCONSISTENCY; RUN chunkfs fsck MANUALLY (without -a or -p)
exit 4
