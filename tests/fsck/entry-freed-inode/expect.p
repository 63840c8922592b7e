chunk 1: dir [/d1/sub]: entry 'f2' -> [/d1/sub/f2] invalid [ENTRY_INVALID]; remove the entry: fixed
checked 1 of 4 chunks (3 clean, skipped)
8 inodes, 2 directories in the checked chunks; 1 problems, 1 fixed, 0 left
exit 1
