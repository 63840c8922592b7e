chunk 1: block bitmap differs in 34 places [BLOCK_BITMAP]; rewrite it from the block maps: needs a person
chunk 1: dir [/many]: entry 'f074' -> [/many/f074] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f075' -> [/many/f075] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f076' -> [/many/f076] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f077' -> [/many/f077] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f078' -> [/many/f078] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f079' -> [/many/f079] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f080' -> [/many/f080] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f081' -> [/many/f081] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f082' -> [/many/f082] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f083' -> [/many/f083] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f084' -> [/many/f084] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f085' -> [/many/f085] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f086' -> [/many/f086] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f087' -> [/many/f087] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f088' -> [/many/f088] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f089' -> [/many/f089] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f090' -> [/many/f090] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f091' -> [/many/f091] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f092' -> [/many/f092] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f093' -> [/many/f093] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f094' -> [/many/f094] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f095' -> [/many/f095] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f096' -> [/many/f096] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f097' -> [/many/f097] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f098' -> [/many/f098] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: dir [/many]: entry 'f099' -> [/many/f099] invalid [ENTRY_INVALID]; remove the entry: needs a person
chunk 1: free inode count 37, should be 0 [FREE_INODES]; correct it: needs a person
chunk 1: header counts continuations/stubs/dirs 0/3/2, should be 0/2/2 [HDR_COUNTS]; correct them: needs a person
chunk 1: inode [/link-f050]: link count 2, should be 1 [LINK_COUNT]; correct it: needs a person
chunk 1: inode cluster 1 at block 1019 lies outside the data area [ICL_OUTSIDE]; drop it from the map: needs a person
checked 1 of 2 chunks (1 clean, skipped)
78 inodes, 2 directories in the checked chunks; 31 problems, 0 fixed, 31 left
UNEXPECTED INCONSISTENCY; RUN chunkfs fsck MANUALLY (without -a or -p)
exit 4
