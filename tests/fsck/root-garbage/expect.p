chunk 0: block bitmap differs in 1 places [BLOCK_BITMAP]; rewrite it from the block maps: needs a person
chunk 0: header counts continuations/stubs/dirs 1/0/2, should be 1/0/1 [HDR_COUNTS]; correct them: needs a person
chunk 0: inode [/]: checksum mismatch [INODE_CSUM]; clear the inode: needs a person
chunk 0: inode [/lost+found]: lost+found, in no directory [LPF_UNLINKED]; name it in / again: needs a person
checked 1 of 4 chunks (3 clean, skipped)
1 inodes, 1 directories in the checked chunks; 4 problems, 0 fixed, 4 left
UNEXPECTED INCONSISTENCY; RUN chunkfs fsck MANUALLY (without -a or -p)
exit 4
