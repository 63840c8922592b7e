chunk 2: dir [/d2/tree]: index damaged [DIR_INDEX]; rebuild it from its leaves: needs a person
checked 1 of 4 chunks (3 clean, skipped)
77 inodes, 4 directories in the checked chunks; 1 problems, 0 fixed, 1 left
UNEXPECTED INCONSISTENCY; RUN chunkfs fsck MANUALLY (without -a or -p)
exit 4
