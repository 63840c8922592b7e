chunk 0: dir [/]: index damaged [DIR_INDEX]; rebuild it from its leaves: fixed
chunk 0: inode [/]: link count 7, should be 2 [LINK_COUNT]; correct it: fixed
chunk 0: inode [/lost+found]: lost+found, in no directory [LPF_UNLINKED]; name it in / again: fixed
chunk 1: inode [/a]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 1: inode [/d]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 1: stub [stub:/a]: backs no directory entry [STUB_ORPHAN]; free it: fixed
chunk 1: stub [stub:/d]: backs no directory entry [STUB_ORPHAN]; free it: fixed
chunk 2: inode [/b]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 2: stub [stub:/b]: backs no directory entry [STUB_ORPHAN]; free it: fixed
chunk 3: inode [/c]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 3: stub [stub:/c]: backs no directory entry [STUB_ORPHAN]; free it: fixed
checked 4 of 4 chunks (0 clean, skipped) [lost directory entries: checked every chunk]
89 inodes, 6 directories in the checked chunks; 11 problems, 11 fixed, 0 left
exit 1
