chunk 2: dir [/d2/tree]: index damaged [DIR_INDEX]; rebuild it from its leaves: fixed
checked 2 of 4 chunks (2 clean, skipped)
86 inodes, 6 directories in the checked chunks; 1 problems, 1 fixed, 0 left
exit 1
