fsck -p says a destroyed chunk header was "not fixed" but writes the rebuilt header and rewrites both bitmaps
  chunkfs fsck -p test.img   (damage zero-chunk-header: chunk 1's header zeroed)
    chunk 1: chunk header destroyed, rebuilt from contents (not fixed: needs a person)
    chunk 1: block bitmap differs in 60 places (fixed)
    chunk 1: inode bitmap differs in 11 places (fixed)
    chunk 1: header counts continuations/stubs/dirs 0/0/0, should be 0/2/2 (fixed)
    exit 4
Preen must stop at the problem that needs a person (see inode-csum/known-bug.p).
