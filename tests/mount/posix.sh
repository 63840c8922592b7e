#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# POSIX semantics over a real mount (issue 3 part 2): every call's exact
# result and errno, as root and, where permissions matter, as uid 65534.
# Each "== name" block of the fsop scripts below is one PASS/FAIL line.
. "$(dirname "$0")/lib.sh"

mount_test posix_mount posix.img
mkfs_or_finish -c 8 "$img" 256M
mount_or_finish posix_mount -o allow_other,clean_after=2

# ---- as root ---------------------------------------------------------------
fsop_run root/ "$mnt" <<'EOF'
umask 022
== open_create_excl
open a f1 O_WRONLY|O_CREAT|O_EXCL 0666 => OK
open b f1 O_WRONLY|O_CREAT|O_EXCL 0666 => ERR EEXIST
open b f1 O_WRONLY|O_CREAT 0600 => OK
stat f1 type,mode,nlink,size,uid,gid => OK reg 0644 1 0 0 0
open c nofile O_RDONLY => ERR ENOENT
open c nodir/x O_WRONLY|O_CREAT => ERR ENOENT
open c f1/x O_WRONLY|O_CREAT => ERR ENOTDIR
open c f1 O_RDONLY|O_DIRECTORY => ERR ENOTDIR
mkdir d1 0755 => OK
open c d1 O_WRONLY => ERR EISDIR
open c d1 O_RDONLY|O_CREAT => ERR EISDIR
open c d1 O_RDONLY|O_DIRECTORY => OK
close a => OK
close b => OK
close c => OK

== names_255_256
open a @255 O_WRONLY|O_CREAT 0644 => OK
close a => OK
stat @255 type => OK reg
open a @256 O_WRONLY|O_CREAT 0644 => ERR ENAMETOOLONG
stat @256 type => ERR ENAMETOOLONG
mkdir @256 0755 => ERR ENAMETOOLONG
symlink x @256 => ERR ENAMETOOLONG
rename @255 @256 => ERR ENAMETOOLONG
unlink @255 => OK

== read_write_any_offset
open a rw O_RDWR|O_CREAT 0644 => OK
write a hello => OK 5
pwrite a 10 world => OK 5
fstat a size => OK 15
pread a 0 20 => OK hello\0\0\0\0\0world
lseek a 0 SET => OK 0
read a 5 => OK hello
pwrite a 2 XY => OK 2
pread a 0 7 => OK heXYo\0\0
pwrite a 1000000 far => OK 3
fstat a size => OK 1000003
pread a 999999 10 => OK \0far
pread a 2000000 10 => OK
close a => OK
open b rw O_RDONLY => OK
write b nope => ERR EBADF
pread b 10 5 => OK world
close b => OK

== o_append
open a ap O_WRONLY|O_CREAT|O_TRUNC 0644 => OK
write a 12345 => OK 5
close a => OK
open b ap O_WRONLY|O_APPEND => OK
open c ap O_RDWR|O_APPEND => OK
lseek b 0 SET => OK 0
write b abc => OK 3
write c def => OK 3
write b ghi => OK 3
fstat b size => OK 14
close b => OK
close c => OK
open d ap O_RDONLY => OK
read d 100 => OK 12345abcdefghi
close d => OK

== o_trunc
open a tr O_WRONLY|O_CREAT 0644 => OK
write a 0123456789 => OK 10
close a => OK
savetime 1 tr
sleep 20
open a tr O_RDWR|O_TRUNC => OK
fstat a size => OK 0
read a 10 => OK
cmptime 1 tr => OK a> m> c>
close a => OK
open a tr O_RDONLY|O_TRUNC => OK
close a => OK

== truncate_both_ways
open a tu O_RDWR|O_CREAT 0644 => OK
write a abcdef => OK 6
ftruncate a 3 => OK
fstat a size => OK 3
ftruncate a 10000 => OK
fstat a size => OK 10000
pread a 0 5 => OK abc\0\0
pread a 9998 10 => OK \0\0
truncate tu 1 => OK
fstat a size => OK 1
pread a 0 10 => OK a
truncate tu 5000000 => OK
stat tu size => OK 5000000
ftruncate a -1 => ERR EINVAL
close a => OK
open b tu O_RDONLY => OK
ftruncate b 0 => ERR EINVAL
close b => OK
truncate d1 0 => ERR EISDIR
truncate nofile 0 => ERR ENOENT

== sparse_seek_data_hole
open a sp O_RDWR|O_CREAT 0644 => OK
pwrite a 0 A => OK 1
pwrite a 8388608 B => OK 1
close a => OK
stat sp size,blocks => OK 8388609 16
open b sp O_RDONLY => OK
lseek b 0 DATA => OK 0
lseek b 0 HOLE => OK 4096
lseek b 4096 DATA => OK 8388608
lseek b 100000 DATA => OK 8388608
lseek b 8388608 HOLE => OK 8388609
lseek b 8388609 DATA => ERR ENXIO
lseek b 9000000 HOLE => ERR ENXIO
pread b 4096 4 => OK \0\0\0\0
close b => OK

== seek_data_while_writing
open a sw O_RDWR|O_CREAT 0644 => OK
pwrite a 1048576 Z => OK 1
lseek a 0 DATA => OK 1048576
lseek a 0 HOLE => OK 0
lseek a 1048576 HOLE => OK 1048577
pwrite a 0 Y => OK 1
lseek a 0 DATA => OK 0
close a => OK

== fallocate
open a fa O_RDWR|O_CREAT 0644 => OK
fallocate a 0 0 16384 => OK
fstat a size,blocks => OK 16384 32
fallocate a KEEP_SIZE 16384 16384 => OK
fstat a size,blocks => OK 16384 64
pwrite a 0 data => OK 4
fallocate a KEEP_SIZE,PUNCH_HOLE 0 8192 => OK
fstat a size,blocks => OK 16384 48
pread a 0 4 => OK \0\0\0\0
fallocate a PUNCH_HOLE 0 4096 => ERR EOPNOTSUPP
fallocate a ZERO_RANGE 0 4096 => OK
pread a 0 4 => OK \0\0\0\0
fallocate a ZERO_RANGE,PUNCH_HOLE,KEEP_SIZE 0 4096 => ERR EOPNOTSUPP
fallocate a 0 0 0 => ERR EINVAL
close a => OK

== mkdir_rmdir
mkdir d 0755 => OK
mkdir d 0755 => ERR EEXIST
mkdir d/e 0700 => OK
stat d/e type,mode,nlink => OK dir 0700 2
stat d nlink => OK 3
rmdir d => ERR ENOTEMPTY
open a d/file O_WRONLY|O_CREAT 0644 => OK
close a => OK
rmdir d/e => OK
stat d nlink => OK 2
rmdir d => ERR ENOTEMPTY
unlink d/file => OK
rmdir d => OK
rmdir d => ERR ENOENT
rmdir f1 => ERR ENOTDIR
unlink d1 => ERR EISDIR
mkdir f1/x 0755 => ERR ENOTDIR
mkdir nodir/x 0755 => ERR ENOENT
rmdir d1/. => ERR EINVAL
rmdir d1/.. => ERR ENOTEMPTY

== rename_basic
open a r1 O_WRONLY|O_CREAT 0644 => OK
write a one => OK 3
close a => OK
rename r1 r2 => OK
stat r1 type => ERR ENOENT
rename r1 r2 => ERR ENOENT
open a r3 O_WRONLY|O_CREAT 0644 => OK
write a three => OK 5
close a => OK
rename r2 r3 => OK
open a r3 O_RDONLY => OK
read a 10 => OK one
close a => OK
mkdir e1 0755 => OK
mkdir e2 0755 => OK
rename e1 e2 => OK
stat e1 type => ERR ENOENT
mkdir e3 0755 => OK
mkdir e3/x 0755 => OK
mkdir e4 0755 => OK
rename e4 e3 => ERR ENOTEMPTY
rename r3 e4 => ERR EISDIR
rename e4 r3 => ERR ENOTDIR
rename e3 e3/x/y => ERR EINVAL
rename e3 e3/x => ERR EINVAL
rename e3/x e3 => ERR ENOTEMPTY
rename e4 e4 => OK

== rename_across_dirs_and_chunks
mkdir A 0755 => OK
mkdir B 0755 => OK
open a A/f O_WRONLY|O_CREAT 0644 => OK
write a payload => OK 7
close a => OK
rename A/f B/g => OK
stat B/g nlink,size => OK 1 7
stat A/f type => ERR ENOENT
mkdir A/sub 0755 => OK
mkdir A/sub/deep 0755 => OK
stat A nlink => OK 3
rename A/sub B/sub => OK
stat A nlink => OK 2
stat B nlink => OK 3
stat B/sub/deep type => OK dir
rename B/sub/deep A/deep => OK
stat B/sub nlink => OK 2
rename B/g A/g => OK
open a A/g O_RDONLY => OK
read a 100 => OK payload
close a => OK

== rename_noreplace_exchange
open a x O_WRONLY|O_CREAT 0644 => OK
write a xx => OK 2
close a => OK
open a y O_WRONLY|O_CREAT 0644 => OK
write a yyy => OK 3
close a => OK
renameat2 x y NOREPLACE => ERR EEXIST
renameat2 x z NOREPLACE => OK
renameat2 z x NOREPLACE => OK
renameat2 x y EXCHANGE => OK
stat x size => OK 3
stat y size => OK 2
mkdir xd 0755 => OK
renameat2 x xd EXCHANGE => OK
stat x type => OK dir
stat xd type,size => OK reg 3
renameat2 x nothere EXCHANGE => ERR ENOENT
renameat2 x y NOREPLACE|EXCHANGE => ERR EINVAL
renameat2 y notyet WHITEOUT|EXCHANGE => ERR EINVAL
renameat2 A/g B/g EXCHANGE => ERR ENOENT

== rename_whiteout
open a wsrc O_WRONLY|O_CREAT 0644 => OK
write a moved => OK 5
close a => OK
renameat2 wsrc A/wdst WHITEOUT => OK
stat wsrc type,mode,rdev,size,nlink => OK chr 0000 0:0 0 1
open a A/wdst O_RDONLY => OK
read a 10 => OK moved
close a => OK
renameat2 A/wdst wsrc WHITEOUT|NOREPLACE => ERR EEXIST
renameat2 A/wdst wsrc WHITEOUT => OK
stat A/wdst type,rdev => OK chr 0:0
stat wsrc type,size => OK reg 5
mknod wmade chr 0000 0 0 => OK
stat wmade type,mode,rdev => OK chr 0000 0:0
link wmade B/wlink => OK
stat wmade nlink => OK 2
unlink wmade => OK
unlink B/wlink => OK
unlink A/wdst => OK
unlink wsrc => OK

== rename_hardlinks_same_inode
open a hl O_WRONLY|O_CREAT 0644 => OK
close a => OK
link hl hl2 => OK
rename hl hl2 => OK
stat hl nlink => OK 2
stat hl2 nlink => OK 2
sameino hl hl2 => OK same

== hard_links
open a h1 O_WRONLY|O_CREAT 0644 => OK
write a linked => OK 6
close a => OK
link h1 h2 => OK
stat h1 nlink => OK 2
link h1 B/h3 => OK
stat h2 nlink => OK 3
sameino h1 B/h3 => OK same
link h1 h2 => ERR EEXIST
link d1 d1link => ERR EPERM
link nofile x => ERR ENOENT
unlink h1 => OK
stat h2 nlink => OK 2
open a B/h3 O_RDONLY => OK
read a 10 => OK linked
close a => OK
unlink h2 => OK
stat B/h3 nlink => OK 1
unlink B/h3 => OK
stat B/h3 type => ERR ENOENT

== symlinks
symlink target sl => OK
readlink sl => OK target
lstat sl type,size => OK lnk 6
stat sl type => ERR ENOENT
symlink target sl => ERR EEXIST
open a target O_WRONLY|O_CREAT 0644 => OK
write a via => OK 3
close a => OK
open a sl O_RDONLY => OK
read a 10 => OK via
close a => OK
open a sl O_RDONLY|O_NOFOLLOW => ERR ELOOP
symlink l1 l2 => OK
symlink l2 l1 => OK
stat l1 type => ERR ELOOP
readlink target => ERR EINVAL
symlink @4095 longlink => OK
lstat longlink size => OK 4095
symlink @4096 toolong => ERR ENAMETOOLONG
symlink /abs/path/x abs => OK
readlink abs => OK /abs/path/x

== chmod_chown_root
open a c1 O_WRONLY|O_CREAT 0644 => OK
close a => OK
chmod c1 4755 => OK
stat c1 mode => OK 4755
chown c1 65534 65534 => OK
stat c1 mode,uid,gid => OK 0755 65534 65534
chmod c1 2755 => OK
chown c1 1 1 => OK
stat c1 mode,uid,gid => OK 0755 1 1
chmod c1 2644 => OK
chown c1 2 2 => OK
stat c1 mode,uid,gid => OK 2644 2 2
chown c1 -1 -1 => OK
stat c1 mode,uid,gid => OK 2644 2 2
chmod c1 7777 => OK
stat c1 mode => OK 7777
chmod nofile 0644 => ERR ENOENT
mkdir sd 2755 => OK
stat sd mode => OK 0755
chmod sd 2755 => OK
chown sd 3 3 => OK
stat sd mode,uid,gid => OK 2755 3 3
open a sd/inherit O_WRONLY|O_CREAT 0644 => OK
close a => OK
stat sd/inherit gid => OK 3
mkdir sd/sub 0755 => OK
stat sd/sub mode,gid => OK 2755 3

== utimens
open a ut O_WRONLY|O_CREAT 0644 => OK
close a => OK
utimens ut 1000000000.5 2000000000.25 => OK
stat ut atime,mtime => OK 1000000000.000000005 2000000000.000000025
utimens ut 1000000000.123456789 2000000000.987654321 => OK
stat ut atime,mtime => OK 1000000000.123456789 2000000000.987654321
utimens ut OMIT 3000 => OK
stat ut atime,mtime => OK 1000000000.123456789 3000.000000000
utimens ut 4000 OMIT => OK
stat ut atime,mtime => OK 4000.000000000 3000.000000000
savetime 2 ut
sleep 20
utimens ut NOW OMIT => OK
cmptime 2 ut => OK a> m= c>
savetime 2 ut
sleep 20
utimens ut OMIT NOW => OK
cmptime 2 ut => OK a= m> c>
savetime 2 ut
sleep 20
utimens ut OMIT OMIT => OK
cmptime 2 ut => OK a= m= c=
== atime_seen_through_attr_cache
mkdir ra 0755 => OK
utimens ra 1000 OMIT => OK
stat ra atime => OK 1000.000000000
savetime 5 ra
ls ra => OK
cmptime 5 ra => OK a> m= c=
utimens nofile NOW NOW => ERR ENOENT

== timestamps
open a ts O_WRONLY|O_CREAT 0644 => OK
write a first => OK 5
close a => OK
open a ts O_RDONLY => OK
close a => OK
savetime 3 ts
sleep 20
open a ts O_WRONLY => OK
write a x => OK 1
close a => OK
cmptime 3 ts => OK a= m> c>
savetime 3 ts
sleep 20
open a ts O_RDONLY => OK
read a 10 => OK xirst
close a => OK
cmptime 3 ts => OK a> m= c=
savetime 3 ts
sleep 20
open a ts O_RDONLY => OK
read a 10 => OK xirst
close a => OK
cmptime 3 ts => OK a= m= c=
chmod ts 0600 => OK
cmptime 3 ts => OK a= m= c>
savetime 3 ts
sleep 20
setxattr ts user.t v 0 => OK
cmptime 3 ts => OK a= m= c>
mkdir td 0755 => OK
ls td => OK
savetime 4 td
sleep 20
open a td/new O_WRONLY|O_CREAT 0644 => OK
close a => OK
cmptime 4 td => OK a= m> c>
savetime 4 td
sleep 20
ls td => OK new
cmptime 4 td => OK a> m= c=
savetime 3 ts
savetime 4 td
sleep 20
link ts td/tslink => OK
cmptime 3 ts => OK a= m= c>
cmptime 4 td => OK a= m> c>
savetime 3 ts
savetime 4 td
sleep 20
rename td/tslink td/tslink2 => OK
cmptime 3 ts => OK a= m= c>
cmptime 4 td => OK a= m> c>
savetime 3 ts
savetime 4 td
sleep 20
unlink td/tslink2 => OK
cmptime 3 ts => OK a= m= c>
cmptime 4 td => OK a= m> c>
savetime 3 ts
sleep 20
truncate ts 0 => OK
cmptime 3 ts => OK a= m> c>

== mknod_fifo_devices
mknod fifo1 fifo 0644 => OK
stat fifo1 type,mode,size => OK fifo 0644 0
mknod null1 chr 0666 1 3 => OK
stat null1 type,mode,rdev => OK chr 0644 1:3
mknod blk1 blk 0600 8 1 => OK
stat blk1 type,rdev => OK blk 8:1
mknod big1 chr 0600 300 70000 => OK
stat big1 rdev => OK 300:70000
mknod sock1 sock 0644 => OK
stat sock1 type => OK sock
mknod fifo1 fifo 0644 => ERR EEXIST
open a null1 O_RDWR => OK
write a discarded => OK 9
read a 10 => OK
close a => OK
open a fifo1 O_RDWR => OK
write a through => OK 7
read a 7 => OK through
close a => OK

== statfs
statfs . bsize => OK 4096
statfs . namemax => OK 255

== fsync_fdatasync
open a fs O_WRONLY|O_CREAT 0644 => OK
write a synced => OK 6
fsync a => OK
fdatasync a => OK
close a => OK
open a d1 O_RDONLY|O_DIRECTORY => OK
fsync a => OK
close a => OK

== xattrs
open a xa O_WRONLY|O_CREAT 0644 => OK
close a => OK
getxattr xa user.a => ERR ENODATA
setxattr xa user.a v1 0 => OK
getxattr xa user.a => OK v1
getxattr xa user.a 0 => OK 2
getxattr xa user.a 1 => ERR ERANGE
setxattr xa user.a v2 CREATE => ERR EEXIST
setxattr xa user.b x REPLACE => ERR ENODATA
setxattr xa user.a value2 REPLACE => OK
getxattr xa user.a => OK value2
setxattr xa user.b \0bin\n 0 => OK
getxattr xa user.b => OK \0bin\n
setxattr xa user.empty \s 0 => OK
setxattr xa trusted.t tv 0 => OK
setxattr xa security.s sv 0 => OK
listxattr xa => OK security.s trusted.t user.a user.b user.empty
removexattr xa user.a => OK
removexattr xa user.a => ERR ENODATA
getxattr xa trusted.t => OK tv
listxattr xa => OK security.s trusted.t user.b user.empty
setxattr xa user.@256 v 0 => ERR ERANGE
setxattr xa user.big @65537 0 => ERR E2BIG
setxattr xa user.big @60000 0 => ERR E2BIG
setxattr xa foo.bar v 0 => ERR EOPNOTSUPP
getxattr xa system.posix_acl_access => ERR ENODATA
setxattr xa system.posix_acl_access v 0 => ERR EINVAL
setxattr xa system.posix_acl_access \x02\0\0\0\x01\0\x06\0\xff\xff\xff\xff\x04\0\x04\0\xff\xff\xff\xff\x20\0\x04\0\xff\xff\xff\xff 0 => OK
getxattr xa system.posix_acl_access => ERR ENODATA
setxattr d1 user.dir yes 0 => OK
getxattr d1 user.dir => OK yes
lsetxattr sl user.x v 0 => ERR EPERM
setxattr nofile user.x v 0 => ERR ENOENT

== unlinked_but_open
open a uo O_RDWR|O_CREAT 0644 => OK
write a still => OK 5
unlink uo => OK
stat uo type => ERR ENOENT
fstat a nlink,size => OK 0 5
pwrite a 5 here => OK 4
pread a 0 20 => OK stillhere
fsync a => OK
close a => OK
mkdir cw 0755 => OK
chdir cw => OK
rmdir ../cw => OK
stat . type,nlink => OK dir 0
open a inside O_WRONLY|O_CREAT 0644 => ERR ENOENT
chdir .. => OK
stat cw type => ERR ENOENT
EOF

# ---- inode numbers carry the chunk ------------------------------------------
# Top-level directories are spread over chunks: A and B are not both in
# chunk 0, and ls -i shows the same numbers as the image itself.
ino_a=$(stat -c %i "$mnt/A") ino_b=$(stat -c %i "$mnt/B")
if [ $((ino_a >> 24)) != $((ino_b >> 24)) ] || [ $((ino_a >> 24)) != 0 ]; then
	got=$(ls -id "$mnt/A" | awk '{print $1}')
	if [ "$got" = "$ino_a" ]; then
		pass root/inode_numbers_carry_chunk
	else
		fail root/inode_numbers_carry_chunk "ls -i says $got, stat says $ino_a"
	fi
else
	fail root/inode_numbers_carry_chunk "A ($ino_a) and B ($ino_b) both in chunk 0"
fi

# ---- as an unprivileged user --------------------------------------------------
# Root prepares files with known owners and modes; the kernel
# (default_permissions) must then refuse exactly what ext4 would.
fsop_run setup/ "$mnt" <<'EOF'
== unpriv_setup
umask 022
mkdir pub 1777 => OK
chmod pub 1777 => OK
mkdir priv 0700 => OK
open a rootfile O_WRONLY|O_CREAT 0644 => OK
write a rootdata => OK 8
close a => OK
setxattr rootfile user.r rv 0 => OK
open a pub/rootsfile O_WRONLY|O_CREAT 0644 => OK
close a => OK
open a secret O_WRONLY|O_CREAT 0600 => OK
close a => OK
mkdir nobodydir 0755 => OK
chown nobodydir 65534 65534 => OK
open a nobodydir/suid O_WRONLY|O_CREAT 0755 => OK
close a => OK
chown nobodydir/suid 65534 65534 => OK
chmod nobodydir/suid 6755 => OK
open a nobodydir/rootowned O_WRONLY|O_CREAT 0644 => OK
close a => OK
EOF

fsop_run nobody/ "$mnt" "${NOBODY[@]}" <<'EOF'
umask 022
== perm_read_write_exec
open a priv/f O_RDONLY => ERR EACCES
ls priv => ERR EACCES
open a secret O_RDONLY => ERR EACCES
open a rootfile O_WRONLY => ERR EACCES
open a rootfile O_RDONLY => OK
read a 20 => OK rootdata
close a => OK
truncate rootfile 0 => ERR EACCES
mkdir priv/x 0755 => ERR EACCES
open a newfile O_WRONLY|O_CREAT 0644 => ERR EACCES
access rootfile r => OK
access rootfile w => ERR EACCES

== perm_create_owner
open a pub/mine O_WRONLY|O_CREAT 0666 => OK
close a => OK
stat pub/mine uid,gid,mode => OK 65534 65534 0644
mkdir pub/mydir 0777 => OK
stat pub/mydir uid,gid,mode => OK 65534 65534 0755
symlink x pub/mylink => OK
lstat pub/mylink uid,gid => OK 65534 65534
renameat2 pub/mine pub/mine2 WHITEOUT => OK
stat pub/mine type,rdev,uid,gid => OK chr 0:0 65534 65534
rename pub/mine2 pub/mine => OK

== perm_sticky_dir
unlink pub/rootsfile => ERR EPERM
rename pub/rootsfile pub/taken => ERR EPERM
unlink pub/mine => OK
rmdir pub/mydir => OK
unlink pub/mylink => OK

== perm_chmod_chown_utimens
chmod rootfile 0777 => ERR EPERM
chown rootfile 65534 65534 => ERR EPERM
chown nobodydir/suid 0 0 => ERR EPERM
chown nobodydir/suid 65534 0 => ERR EPERM
utimens rootfile NOW NOW => ERR EACCES
utimens rootfile 5 5 => ERR EPERM
utimens nobodydir/suid 5 5 => OK
chmod nobodydir 0700 => OK
chmod nobodydir 0755 => OK

== perm_xattr
getxattr rootfile user.r => OK rv
setxattr rootfile user.x v 0 => ERR EACCES
setxattr nobodydir/suid trusted.x v 0 => ERR EPERM
setxattr nobodydir/suid user.x v 0 => OK
removexattr rootfile user.r => ERR EACCES

== setuid_cleared_on_write
stat nobodydir/suid mode => OK 6755
open a nobodydir/suid O_WRONLY => OK
write a x => OK 1
close a => OK
stat nobodydir/suid mode => OK 0755

== perm_unlink_in_own_dir
unlink nobodydir/rootowned => OK
EOF

fsop_run root/ "$mnt" <<'EOF'
== setuid_cleared_on_truncate_by_other
open a nobodydir/s2 O_WRONLY|O_CREAT 0644 => OK
close a => OK
chmod nobodydir/s2 4777 => OK
EOF
fsop_run nobody/ "$mnt" "${NOBODY[@]}" <<'EOF'
== setuid_cleared_on_truncate
truncate nobodydir/s2 0 => OK
stat nobodydir/s2 mode => OK 0777
EOF

# ---- unmount cleanly --------------------------------------------------------
unmount_checked
finish
