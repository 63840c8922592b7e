chunk 2: inode 33554514: free inode with stale fields [FREE_INODE_STALE]; zero it: fixed
checked 1 of 4 chunks (3 clean, skipped)
77 inodes, 4 directories in the checked chunks; 1 problems, 1 fixed, 0 left
exit 1
