chunk 2: inode [/t1/a]: link count 2, should be 1 [LINK_COUNT]; correct it: fixed
chunk 2: stub [stub:/t2/link-a]: backs no directory entry [STUB_ORPHAN]; free it: fixed
chunk 3: dir [/t2]: records 3 entries (1 remote), has 2 (0) [DIR_COUNTS]; correct the counts: fixed
checked 2 of 64 chunks (62 clean, skipped)
6 inodes, 2 directories in the checked chunks; 3 problems, 3 fixed, 0 left
exit 1
