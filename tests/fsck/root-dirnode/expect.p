chunk 0: dir [/]: index damaged [DIR_INDEX]; rebuild it from its leaves: needs a person
chunk 0: inode [/]: link count 6, should be 2 [LINK_COUNT]; correct it: needs a person
chunk 0: inode [/lost+found]: lost+found, in no directory [LPF_UNLINKED]; name it in / again: needs a person
checked 1 of 4 chunks (3 clean, skipped)
2 inodes, 2 directories in the checked chunks; 3 problems, 0 fixed, 3 left
UNEXPECTED INCONSISTENCY; RUN chunkfs fsck MANUALLY (without -a or -p)
exit 4
