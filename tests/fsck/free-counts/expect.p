chunk 1: free block count 741, should be 736 [FREE_BLOCKS]; correct it: fixed
chunk 1: free inode count 114, should be 116 [FREE_INODES]; correct it: fixed
checked 1 of 4 chunks (3 clean, skipped)
9 inodes, 2 directories in the checked chunks; 2 problems, 2 fixed, 0 left
exit 1
