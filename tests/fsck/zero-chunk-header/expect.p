chunk 1: block bitmap differs in 60 places (not fixed: needs a person)
chunk 1: chunk header destroyed, rebuilt from contents (not fixed: needs a person)
chunk 1: header counts continuations/stubs/dirs 0/0/0, should be 0/2/2 (not fixed: needs a person)
chunk 1: inode bitmap differs in 11 places (not fixed: needs a person)
checked 1 of 4 chunks (3 clean, skipped)
9 inodes, 2 directories in the checked chunks; 4 problems, 0 fixed, 4 left
UNEXPECTED INCONSISTENCY; RUN chunkfs fsck MANUALLY (without -a or -p)
exit 4
