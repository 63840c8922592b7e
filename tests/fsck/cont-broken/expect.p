chunk 2: continuation [cont:/d3/big:1]: detached from file [/d3/big] [CONT_DETACHED]; re-attach it: fixed
checked 2 of 4 chunks (2 clean, skipped)
79 inodes, 5 directories in the checked chunks; 1 problems, 1 fixed, 0 left
exit 1
