#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The dyninodes feature from the command line (FORMAT.md 10.4): mkfs sets
# it by default and -O ^dyninodes leaves it out; an image of the old
# layout runs out of inodes at its table, checks clean, and `tune -O
# dyninodes` lets it make inode clusters; `tune -O ^dyninodes` is refused
# while a chunk has clusters, then allowed once they are given back; info
# shows the clusters per chunk; bad feature names are usage errors.
. "$(dirname "$0")/lib.sh"

C=$CHUNKFS
img=$TESTDIR/d.img
mkdir -p tree && for i in $(seq 1 150); do echo "small $i" >"tree/f$i"; done

check_exit mkfs_default 0 "$C" mkfs -q "$img" 16M
"$C" info "$img" | grep -q '^Features: .*incompat 0x2 (dyninodes)$' &&
	pass mkfs_default_dyninodes || fail mkfs_default_dyninodes "$("$C" info "$img" | grep Features)"
check_exit mkfs_bad_feature 2 "$C" mkfs -q -F -O frobnicate "$img" 16M
grep -q "unknown feature 'frobnicate'" "$ERR" && pass mkfs_bad_feature_named ||
	fail mkfs_bad_feature_named "$(cat "$ERR")"

check_exit mkfs_old_layout 0 "$C" mkfs -q -F -O ^dyninodes -c 1 -N 32 "$img" 16M
"$C" info "$img" | grep -q '^Features: .*incompat 0x0$' && pass old_layout_no_bit ||
	fail old_layout_no_bit "$("$C" info "$img" | grep Features)"
# 32 inodes, two of them the root and lost+found
if expect_exit 1 "$C" put -r "$img" tree /tree && grep -q "No space left" "$ERR"; then
	pass old_layout_enospc
else
	fail old_layout_enospc "$(tail -2 "$ERR")"
fi
check_exit old_layout_fsck 0 "$C" fsck -f -n "$img"
"$C" rm -r "$img" /tree

check_exit tune_on 0 "$C" tune -O dyninodes "$img"
check_exit tune_on_put 0 "$C" put -r "$img" tree /tree
ok=1
for i in 1 75 150; do
	[ "$("$C" cat "$img" "/tree/f$i")" = "small $i" ] || ok=0
done
[ $ok = 1 ] && pass tune_on_read_back || fail tune_on_read_back "a file differs"
if "$C" info "$img" >info.out && grep -Eq '^Inode clusters: +[1-9]' info.out &&
   grep -Eq '^Inode clusters \(chunk:count\): 0:[1-9]' info.out; then
	pass info_clusters
else
	fail info_clusters "$(grep -i cluster info.out)"
fi
"$C" info --json "$img" | grep -q '"clusters": [1-9]' && pass info_json_clusters ||
	fail info_json_clusters "no clusters in --json"
check_exit tune_on_fsck 0 "$C" fsck -f -n "$img"
if expect_exit 1 "$C" tune -O ^dyninodes "$img" && grep -q "has inode clusters" "$ERR"; then
	pass tune_off_refused
else
	fail tune_off_refused "$(cat "$ERR")"
fi
"$C" rm -r "$img" /tree
check_exit tune_off 0 "$C" tune -O ^dyninodes "$img"
"$C" info "$img" | grep -q '^Features: .*incompat 0x0$' && pass tune_off_bit ||
	fail tune_off_bit "$("$C" info "$img" | grep Features)"
check_exit tune_off_fsck 0 "$C" fsck -f -n "$img"
check_exit tune_bad_feature 2 "$C" tune -O ^nosuch "$img"
finish
