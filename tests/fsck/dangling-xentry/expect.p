chunk 0: dir 1: entry 'xlink' -> 33554436 invalid, removed (fixed)
chunk 2: inode 33554436: link count 2, should be 1 (fixed)
checked 4 of 4 chunks (0 clean, skipped) [lost directory entries: checked every chunk]
25 inodes, 8 directories in the checked chunks; 2 problems, 2 fixed, 0 left
exit 1
