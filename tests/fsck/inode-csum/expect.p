chunk 1: block bitmap differs in 20 places [BLOCK_BITMAP]; rewrite it from the block maps: needs a person
chunk 1: dir [/d1]: entry 'multi' -> [/d1/multi] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: inode [/d1/multi]: checksum mismatch, contents plausible [INODE_CSUM_PLAUSIBLE]; recompute the checksum: needs a person
chunk 1: stub [stub:/d2/link-multi]: backs no directory entry [STUB_ORPHAN]; free it: needs a person
checked 1 of 4 chunks (3 clean, skipped)
8 inodes, 2 directories in the checked chunks; 4 problems, 0 fixed, 4 left
UNEXPECTED INCONSISTENCY; RUN chunkfs fsck MANUALLY (without -a or -p)
exit 4
