chunk 1: inode-cluster map block 0 (block 962): checksum mismatch [ICMAP_CSUM]; rewrite it: needs a person
checked 1 of 2 chunks (1 clean, skipped)
104 inodes, 2 directories in the checked chunks; 1 problems, 0 fixed, 1 left
UNEXPECTED INCONSISTENCY; RUN chunkfs fsck MANUALLY (without -a or -p)
exit 4
