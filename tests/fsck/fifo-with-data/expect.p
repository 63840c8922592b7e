chunk 2: block bitmap differs in 3 places [BLOCK_BITMAP]; rewrite it from the block maps: needs a person
chunk 2: inode [/d2/many/n03]: impossible: fifo with data (flags 0x2, size 2100, device 0) [INODE_IMPOSSIBLE]; clear the inode: needs a person
checked 1 of 4 chunks (3 clean, skipped)
76 inodes, 4 directories in the checked chunks; 2 problems, 0 fixed, 2 left
UNEXPECTED INCONSISTENCY; RUN chunkfs fsck MANUALLY (without -a or -p)
exit 4
