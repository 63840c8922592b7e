chunk 0: block bitmap differs in 1 places [BLOCK_BITMAP]; rewrite it from the block maps: needs a person
chunk 0: dir [/]: entry 'lost+found' -> [/lost+found] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 0: header counts continuations/stubs/dirs 1/0/2, should be 1/0/1 [HDR_COUNTS]; correct them: needs a person
chunk 0: inode [/]: link count 6, should be 5 [LINK_COUNT]; correct it: needs a person
chunk 0: inode [/lost+found]: checksum mismatch [INODE_CSUM]; clear the inode: needs a person
checked 1 of 4 chunks (3 clean, skipped)
1 inodes, 1 directories in the checked chunks; 5 problems, 0 fixed, 5 left
UNEXPECTED INCONSISTENCY; RUN chunkfs fsck MANUALLY (without -a or -p)
exit 4
