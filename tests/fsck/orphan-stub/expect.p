chunk 1: dir [/d1]: records 6 entries (1 remote), has 5 (0) [DIR_COUNTS]; correct the counts: fixed
chunk 2: inode [/d1/link-f]: link count 2, should be 1 [LINK_COUNT]; correct it: fixed
chunk 2: stub [stub:/d1/link-f]: backs no directory entry [STUB_ORPHAN]; free it: fixed
checked 2 of 4 chunks (2 clean, skipped)
86 inodes, 6 directories in the checked chunks; 3 problems, 3 fixed, 0 left
exit 1
