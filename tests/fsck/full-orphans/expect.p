chunk 0: inode [/b/f069]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 0: inode [/b/f073]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 0: inode [/b/f077]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 0: stub [stub:/b/f069]: backs no directory entry [STUB_ORPHAN]; free it: fixed
chunk 0: stub [stub:/b/f073]: backs no directory entry [STUB_ORPHAN]; free it: fixed
chunk 0: stub [stub:/b/f077]: backs no directory entry [STUB_ORPHAN]; free it: fixed
chunk 2: block bitmap differs in 1 places [BLOCK_BITMAP]; rewrite it from the block maps: fixed
chunk 2: dir [/b]: index damaged [DIR_INDEX]; rebuild it from its leaves: fixed
chunk 2: inode [/b/f001]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 2: inode [/b/f005]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 2: inode [/b/f009]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 2: inode [/b/f013]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 2: inode [/b/f017]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 2: inode [/b/f021]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 2: inode [/b/f025]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 2: inode [/b/f029]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 2: inode [/b/f033]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 2: inode [/b/f037]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 2: inode [/b/f041]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 2: inode [/b/f045]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 2: inode [/b/f049]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 2: inode [/b/f053]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 2: inode [/b/f057]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 2: inode [/b/f061]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 2: inode [/b/f085]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 2: inode [/b]: owns 0 blocks, records 1 [INODE_NBLOCKS]; correct the count: fixed
chunk 3: inode [/b/f065]: in no directory [ORPHAN]; move it to /lost+found: fixed
chunk 3: stub [stub:/b/f065]: backs no directory entry [STUB_ORPHAN]; free it: fixed
checked 4 of 4 chunks (0 clean, skipped) [lost directory entries: checked every chunk]
89 inodes, 6 directories in the checked chunks; 28 problems, 28 fixed, 0 left
exit 1
