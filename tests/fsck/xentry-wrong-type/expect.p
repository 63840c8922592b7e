chunk 1: inode [/d1/multi]: link count 2, should be 1 [LINK_COUNT]; correct it: fixed
chunk 1: stub [stub:/d2/link-multi]: backs no directory entry [STUB_ORPHAN]; free it: fixed
chunk 2: dir [/d2]: entry 'link-multi' -> [/d1/multi] invalid [ENTRY_INVALID]; remove the entry: fixed
checked 4 of 4 chunks (0 clean, skipped) [lost directory entries: checked every chunk]
90 inodes, 9 directories in the checked chunks; 3 problems, 3 fixed, 0 left
exit 1
