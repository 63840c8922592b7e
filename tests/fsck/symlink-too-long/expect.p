chunk 1: block bitmap differs in 9 places [BLOCK_BITMAP]; rewrite it from the block maps: needs a person
chunk 1: dir [/d1]: entry 'multi2' -> [/d1/multi2] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: inode [/d1/multi2]: impossible: symlink target longer than PATH_MAX (size 9000) [INODE_IMPOSSIBLE]; clear the inode: needs a person
checked 1 of 4 chunks (3 clean, skipped)
8 inodes, 2 directories in the checked chunks; 3 problems, 0 fixed, 3 left
UNEXPECTED INCONSISTENCY; RUN chunkfs fsck MANUALLY (without -a or -p)
exit 4
