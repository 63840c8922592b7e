fsck -p leaves a damaged directory "for a person" but moves its files to /lost+found
  chunkfs fsck -p test.img   (damage dirnode-csum: /d1/sub's only node fails its checksum)
    chunk 1: dir 16777219: index damaged, rebuilt from its leaves (not fixed: needs a person)
    chunk 1: inode 16777223 is in no directory, moved to /lost+found (fixed)
    chunk 1: inode 16777224 is in no directory, moved to /lost+found (fixed)
    chunk 1: inode 16777225 is in no directory, moved to /lost+found (fixed)
    exit 4
Preen must stop at the problem that needs a person (see inode-csum/known-bug.p).
