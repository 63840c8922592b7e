chunk 1: dir [/d1/sub]: entry 'f2' -> [/d1/sub/f2] invalid [ENTRY_INVALID]; remove the entry: fixed
chunk 1: inode [/d1/sub/f2]: in no directory [ORPHAN]; move it to /lost+found: fixed
checked 1 of 4 chunks (3 clean, skipped)
9 inodes, 2 directories in the checked chunks; 2 problems, 2 fixed, 0 left
exit 1
