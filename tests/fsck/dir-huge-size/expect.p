chunk 1: dir [/d1/sub]: index damaged [DIR_INDEX]; rebuild it from its leaves: needs a person
chunk 1: inode [/d1/sub/f1]: in no directory [ORPHAN]; move it to /lost+found: needs a person
chunk 1: inode [/d1/sub/f2]: in no directory [ORPHAN]; move it to /lost+found: needs a person
chunk 1: inode [/d1/sub/f3]: in no directory [ORPHAN]; move it to /lost+found: needs a person
checked 1 of 4 chunks (3 clean, skipped)
9 inodes, 2 directories in the checked chunks; 4 problems, 0 fixed, 4 left
UNEXPECTED INCONSISTENCY; RUN chunkfs fsck MANUALLY (without -a or -p)
exit 4
