fsck -p leaves a garbage inode "for a person" but removes the entry naming it and frees it in the bitmap
  chunkfs fsck -p test.img   (damage inode-garbage: /d1/sub/f3's inode overwritten)
    chunk 1: inode 16777225: checksum mismatch, cleared (not fixed: needs a person)
    chunk 1: dir 16777219: entry 'f3' -> 16777225 invalid, removed (fixed)
    chunk 1: inode bitmap differs in 1 places (fixed)
    exit 4
Preen must stop at the problem that needs a person (see inode-csum/known-bug.p).
