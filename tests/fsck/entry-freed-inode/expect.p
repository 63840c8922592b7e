chunk 1: dir 16777219: entry 'f2' -> 16777224 invalid, removed (fixed)
checked 1 of 4 chunks (3 clean, skipped)
8 inodes, 2 directories in the checked chunks; 1 problems, 1 fixed, 0 left
exit 1
