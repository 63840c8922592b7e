chunk 0: dir [/]: index damaged [DIR_INDEX]; rebuild it from its leaves: fixed
chunk 0: inode [/]: link count 6, should be 2 [LINK_COUNT]; correct it: fixed
chunk 0: inode [/lost+found]: lost+found, in no directory [LPF_UNLINKED]; name it in / again: fixed
chunk 1: inode [/d1]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 1: stub [stub:/d1]: backs no directory entry [STUB_ORPHAN]; free it: fixed
chunk 2: inode [/d2/g]: link count 2, should be 1 [LINK_COUNT]; correct it: fixed
chunk 2: inode [/d2]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 2: stub [stub:/d2]: backs no directory entry [STUB_ORPHAN]; free it: fixed
chunk 2: stub [stub:/xlink]: backs no directory entry [STUB_ORPHAN]; free it: fixed
chunk 3: inode [/d3]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 3: stub [stub:/d3]: backs no directory entry [STUB_ORPHAN]; free it: fixed
checked 4 of 4 chunks (0 clean, skipped) [lost directory entries: checked every chunk]
90 inodes, 9 directories in the checked chunks; 11 problems, 11 fixed, 0 left
exit 1
