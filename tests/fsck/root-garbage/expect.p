chunk 0: block bitmap differs in 1 places (not fixed: needs a person)
chunk 0: header counts continuations/stubs/dirs 1/0/2, should be 1/0/1 (not fixed: needs a person)
chunk 0: inode [/]: checksum mismatch, cleared (not fixed: needs a person)
chunk 0: lost+found (inode [/lost+found]) is in no directory, named in / again (not fixed: needs a person)
checked 1 of 4 chunks (3 clean, skipped)
1 inodes, 1 directories in the checked chunks; 4 problems, 0 fixed, 4 left
UNEXPECTED INCONSISTENCY; RUN chunkfs fsck MANUALLY (without -a or -p)
exit 4
