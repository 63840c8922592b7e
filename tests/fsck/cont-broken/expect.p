chunk 0: continuation 3 detached from file 50331651, re-attached (fixed)
checked 2 of 4 chunks (2 clean, skipped)
4 inodes, 3 directories in the checked chunks; 1 problems, 1 fixed, 0 left
exit 1
