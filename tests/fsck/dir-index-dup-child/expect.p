chunk 2: dir [/d2/tree]: index damaged [DIR_INDEX]; rebuild it from its leaves: fixed
checked 1 of 4 chunks (3 clean, skipped)
77 inodes, 4 directories in the checked chunks; 1 problems, 1 fixed, 0 left
exit 1
