fsck -p leaves a bad inode "for a person" but acts on it anyway: removes its names, frees its blocks and stub
Reproduction (tests/fsck/mkcase.c, damage inode-csum: a byte of /d1/multi's
inode changed, chunk 1 marked dirty):
  chunkfs fsck -p test.img
    chunk 1: inode 16777221: checksum mismatch, contents plausible: checksum recomputed (not fixed: needs a person)
    chunk 1: dir 16777217: entry 'multi' -> 16777221 invalid, removed (fixed)
    chunk 1: stub 16777227 backs no directory entry, freed (fixed)
    chunk 1: block bitmap differs in 20 places (fixed)     <- its 20 data blocks freed
    chunk 1: inode bitmap differs in 1 places (fixed)      <- the inode itself freed
    exit 4
  chunkfs fsck -y test.img      (what the message tells the person to do)
    fixes the checksum, finds the inode nameless and puts it in /lost+found
  chunkfs fsck -n -f test.img
    chunk 2: dir 33554433: entry 'link-multi' -> 16777221 invalid, removed   exit 4
The name /d1/multi is lost, /d2/link-multi (chunk 2, clean, never checked)
is left dangling, and the data blocks were free for reuse in between.
Expected (e2fsck's preen): on a problem that needs a person, stop and change
nothing that depends on it (exit 4); or at least treat the unfixed inode as
in use (kind, inode bit, its blocks claimed) for the rest of the check.
