chunk 2: continuation [cont:/d3/big:1]: back pointer [/d1/multi], should be [/d3/big] [CONT_BACK]; correct it: fixed
checked 1 of 4 chunks (3 clean, skipped)
77 inodes, 4 directories in the checked chunks; 1 problems, 1 fixed, 0 left
exit 1
