chunk 1: inode [/d1/small]: extended attribute block corrupt [XATTR_BLOCK]; drop the block: needs a person
checked 1 of 4 chunks (3 clean, skipped)
9 inodes, 2 directories in the checked chunks; 1 problems, 0 fixed, 1 left
UNEXPECTED INCONSISTENCY; RUN chunkfs fsck MANUALLY (without -a or -p)
exit 4
