-rw-r--r-- 1 0 0 24576 DATE frag
-rw-r--r-- 2 0 0  5000 DATE link-f
-rw-r--r-- 2 0 0 20000 DATE multi
-rw-r--r-- 1 0 0    13 DATE small
drwxr-xr-x 2 0 0  1024 DATE sub
exit 1
stderr: chunkfs: test.img:/d1/multi2: Filesystem is corrupted (checksum or structure error)
