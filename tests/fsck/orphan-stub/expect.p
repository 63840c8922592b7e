chunk 1: dir [/d1]: records 6 entries (1 remote), has 5 (0) (fixed)
chunk 2: inode [/d1/link-f]: link count 2, should be 1 (fixed)
chunk 2: stub [stub:/d1/link-f] backs no directory entry, freed (fixed)
checked 4 of 4 chunks (0 clean, skipped) [lost directory entries: checked every chunk]
90 inodes, 9 directories in the checked chunks; 3 problems, 3 fixed, 0 left
exit 1
