chunk 1: dir [/d1/sub]: entry 'f1' -> [/d1/sub/f1] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: inode [/d1/sub/f1]: checksum mismatch, contents plausible [INODE_CSUM_PLAUSIBLE]; recompute the checksum: needs a person
checked 1 of 4 chunks (3 clean, skipped)
8 inodes, 2 directories in the checked chunks; 2 problems, 0 fixed, 2 left
UNEXPECTED INCONSISTENCY; RUN chunkfs fsck MANUALLY (without -a or -p)
exit 4
