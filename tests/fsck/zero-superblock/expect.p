primary superblock unusable [SB_BACKUP]; restore it from the backup: needs a person
checked 0 of 4 chunks (4 clean, skipped)
0 inodes, 0 directories in the checked chunks; 1 problems, 0 fixed, 1 left
UNEXPECTED INCONSISTENCY; RUN chunkfs fsck MANUALLY (without -a or -p)
exit 4
