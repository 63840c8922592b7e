chunk 0: dir [/]: index damaged, rebuilt from its leaves (not fixed: needs a person)
chunk 0: inode [/]: link count 6, should be 2 (not fixed: needs a person)
chunk 0: lost+found (inode [/lost+found]) is in no directory, named in / again (not fixed: needs a person)
checked 1 of 4 chunks (3 clean, skipped)
2 inodes, 2 directories in the checked chunks; 3 problems, 0 fixed, 3 left
UNEXPECTED INCONSISTENCY; RUN chunkfs fsck MANUALLY (without -a or -p)
exit 4
