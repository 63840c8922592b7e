chunk 1: block bitmap differs in 252 places [BLOCK_BITMAP]; rewrite it from the block maps: needs a person
chunk 1: chunk header destroyed [CHUNK_HEADER]; rebuild it from the chunk's contents: needs a person
chunk 1: header counts continuations/stubs/dirs 0/0/0, should be 1/2/2 [HDR_COUNTS]; correct them: needs a person
chunk 1: inode bitmap differs in 12 places [INODE_BITMAP]; rewrite it from the inode table: needs a person
checked 1 of 4 chunks (3 clean, skipped)
9 inodes, 2 directories in the checked chunks; 4 problems, 0 fixed, 4 left
UNEXPECTED INCONSISTENCY; RUN chunkfs fsck MANUALLY (without -a or -p)
exit 4
