chunk 0: dir [/]: entry 'xlink' -> [/d2/g] invalid [ENTRY_INVALID]; remove the entry: fixed
chunk 2: inode [/d2/g]: link count 2, should be 1 [LINK_COUNT]; correct it: fixed
checked 2 of 4 chunks (2 clean, skipped)
79 inodes, 6 directories in the checked chunks; 2 problems, 2 fixed, 0 left
exit 1
