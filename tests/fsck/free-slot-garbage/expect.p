chunk 1: inode 16777228: free inode with stale fields [FREE_INODE_STALE]; zero it: fixed
checked 1 of 4 chunks (3 clean, skipped)
9 inodes, 2 directories in the checked chunks; 1 problems, 1 fixed, 0 left
exit 1
