chunk 2: continuation [cont:/d3/big:1]: names head [/d1/multi], its chain belongs to [/d3/big] [CONT_HEAD]; correct the head: fixed
checked 1 of 4 chunks (3 clean, skipped)
77 inodes, 4 directories in the checked chunks; 1 problems, 1 fixed, 0 left
exit 1
