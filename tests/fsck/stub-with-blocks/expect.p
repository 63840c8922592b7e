chunk 2: inode [/d2/many/n03]: stub flag on a head inode [STUB_FLAG_ON_HEAD]; clear the flag: fixed
checked 1 of 4 chunks (3 clean, skipped)
77 inodes, 4 directories in the checked chunks; 1 problems, 1 fixed, 0 left
exit 1
