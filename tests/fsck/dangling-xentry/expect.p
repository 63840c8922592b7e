chunk 0: dir [/]: entry 'xlink' -> [/d2/g] invalid [ENTRY_INVALID]; remove the entry: fixed
chunk 2: inode [/d2/g]: link count 2, should be 1 [LINK_COUNT]; correct it: fixed
checked 4 of 4 chunks (0 clean, skipped) [lost directory entries: checked every chunk]
90 inodes, 9 directories in the checked chunks; 2 problems, 2 fixed, 0 left
exit 1
