#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Inodes through the mount (issue 11 item 2, FORMAT.md 10.4): an image of
# the old layout (-O ^dyninodes, the fixed inode tables images had before
# the feature) mounts, runs out of inodes with df -i saying so, unmounts
# clean and checks; the default layout, with the same tiny tables, takes
# ten times the files through the mount in inode clusters, df -i counting
# what can still be made, and reads them back after a remount.
. "$(dirname "$0")/lib.sh"

mount_test old_layout_mount old.img
mkfs_or_finish -O ^dyninodes -c 2 -N 64 "$img" 32M
if "$CHUNKFS" info "$img" | grep -q 'incompat 0x0$'; then
	pass old_layout_no_bit
else
	fail old_layout_no_bit "$("$CHUNKFS" info "$img" | grep Features)"
fi
mount_or_finish old_layout_mount
n=0
for i in $(seq 1 100); do
	echo "file $i" >"$mnt/f$i" 2>/dev/null || break
	n=$i
done
# 64 inodes: the root and lost+found take two, each file one (a file in
# the other chunk takes its back-reference stub too); each chunk keeps its
# repair reserve (2, not in df -i) and, while it has free blocks, the 2
# inodes the placement keeps as the way in to them (alloc.c, in df -i)
if [ "$n" -ge 40 ] && [ "$n" -lt 63 ] && [ "$(stat -f -c %d "$mnt")" -le 4 ]; then
	pass old_layout_fixed_pool
else
	fail old_layout_fixed_pool "$n files made, df -i free $(stat -f -c %d "$mnt")"
fi
unmount_checked
check_exit old_layout_fsck 0 "$CHUNKFS" fsck -f -n "$img"

img=$TESTDIR/dyn.img
mkfs_or_finish -c 2 -N 64 "$img" 32M
mount_or_finish dyn_mount
before=$(stat -f -c %d "$mnt")
ok=1
for i in $(seq 1 600); do
	echo "file $i" >"$mnt/f$i" || { ok=0; break; }
done
after=$(stat -f -c %d "$mnt")
[ $ok = 1 ] && pass dyn_600_files || fail dyn_600_files "file $i: could not be made"
# each file takes about one inode of what df -i said could be made: df -i
# counts room for each new inode's name, so a file made takes its inode
# less its name's share (1/6 at 4 KiB blocks) plus the directory blocks its
# name fills (src/super.c, inodes_free_estimate)
if [ "$before" -gt 10000 ] && [ $((before - after)) -ge 500 ] && [ $((before - after)) -le 1300 ]; then
	pass dyn_df_i_counts
else
	fail dyn_df_i_counts "df -i free $before before, $after after 600 files"
fi
unmount_checked
if "$CHUNKFS" info "$img" | grep -Eq '^Inode clusters: +[1-9]'; then
	pass dyn_info_clusters
else
	fail dyn_info_clusters "$("$CHUNKFS" info "$img" | grep -i cluster)"
fi
check_exit dyn_fsck 0 "$CHUNKFS" fsck -f -n "$img"
mount_or_finish dyn_remount
bad=0
for i in $(seq 1 600); do
	[ "$(cat "$mnt/f$i")" = "file $i" ] || bad=$((bad + 1))
done
[ $bad = 0 ] && pass dyn_read_back || fail dyn_read_back "$bad files differ"
unmount_checked
finish
