chunk 1: block bitmap differs in 62 places [BLOCK_BITMAP]; rewrite it from the block maps: needs a person
chunk 1: dir [/many]: entry 'f010' -> [/many/f010] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f011' -> [/many/f011] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f012' -> [/many/f012] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f013' -> [/many/f013] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f014' -> [/many/f014] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f015' -> [/many/f015] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f016' -> [/many/f016] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f017' -> [/many/f017] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f018' -> [/many/f018] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f019' -> [/many/f019] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f020' -> [/many/f020] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f021' -> [/many/f021] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f022' -> [/many/f022] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f023' -> [/many/f023] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f024' -> [/many/f024] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f025' -> [/many/f025] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f026' -> [/many/f026] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f027' -> [/many/f027] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f028' -> [/many/f028] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f029' -> [/many/f029] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f030' -> [/many/f030] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f031' -> [/many/f031] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f032' -> [/many/f032] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f033' -> [/many/f033] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f034' -> [/many/f034] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f035' -> [/many/f035] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f036' -> [/many/f036] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f037' -> [/many/f037] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f038' -> [/many/f038] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f039' -> [/many/f039] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f040' -> [/many/f040] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f041' -> [/many/f041] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f042' -> [/many/f042] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f043' -> [/many/f043] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f044' -> [/many/f044] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f045' -> [/many/f045] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f046' -> [/many/f046] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f047' -> [/many/f047] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f048' -> [/many/f048] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f049' -> [/many/f049] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f050' -> [/link-f050] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f051' -> [/many/f051] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f052' -> [/many/f052] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f053' -> [/many/f053] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f054' -> [/many/f054] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f055' -> [/many/f055] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f056' -> [/many/f056] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f057' -> [/many/f057] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f058' -> [/many/f058] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f059' -> [/many/f059] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f060' -> [/many/f060] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f061' -> [/many/f061] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f062' -> [/many/f062] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f063' -> [/many/f063] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f064' -> [/many/f064] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f065' -> [/many/f065] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f066' -> [/many/f066] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f067' -> [/many/f067] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f068' -> [/many/f068] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f069' -> [/many/f069] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f070' -> [/many/f070] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f071' -> [/many/f071] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f072' -> [/many/f072] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f073' -> [/many/f073] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: inode cluster 0 at block 7 holds no inode, only damaged slots [ICL_GARBAGE]; drop it from the map: needs a person
chunk 1: stub [stub:/link-f050]: backs no directory entry [STUB_ORPHAN]; free it: needs a person
checked 1 of 2 chunks (1 clean, skipped)
40 inodes, 2 directories in the checked chunks; 67 problems, 0 fixed, 67 left
UNEXPECTED INCONSISTENCY; RUN chunkfs fsck MANUALLY (without -a or -p)
exit 4
