#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Scale over a mount: 100,000 files in one directory (created, counted,
# listed exactly once each, persisted); readdir of a big directory while
# other entries come and go; filling the filesystem to ENOSPC, deleting and
# filling again with statfs agreeing before and after.
# SCALE_FILES=N makes the big directory smaller for a quick run by hand.
. "$(dirname "$0")/lib.sh"

mount_test scale_mount scale.img
N=${SCALE_FILES:-100000}
mkfs_or_finish -c 8 -N 300000 "$img" 1G
mount_or_finish scale_mount
mkdir "$mnt/big" "$mnt/churn"

# ---- 100,000 files in one directory ---------------------------------------------------
start=$(date +%s.%N)
fsop_run "" "$mnt" <<EOF
== create_${N}_files_in_one_dir
mkfiles big $N => OK $N
EOF
echo "  created $N files in $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
fsop_run "" "$mnt" <<EOF
== list_${N}_files_each_once
count big => OK $N
readdir_check big f $N => OK
stat big/f$((N - 1)) type,size => OK reg 0
stat big/f$N type => ERR ENOENT
open a big/f$((N / 2)) O_WRONLY|O_CREAT|O_EXCL 0644 => ERR EEXIST
EOF

# ---- readdir while the directory changes ------------------------------------------------
# 3000 files that stay must each be listed exactly once in every pass,
# whatever else is created and removed meanwhile.
fsop_run "" "$mnt" <<'EOF'
mkfiles churn 3000 => OK 3000
EOF
timeout 60 "$FSOP" -C "$mnt" <<'EOF' >"$TESTDIR/churn.out" 2>&1 &
churn churn 300 3 => *
EOF
churner=$!
{
	echo "== readdir_while_changing"
	for _ in $(seq 30); do
		echo "readdir_check churn f 3000 => OK"
	done
} | fsop_run "" "$mnt"
wait "$churner" || fail churn_ran "$(cat "$TESTDIR/churn.out")"

# ---- persistence of the big directory ------------------------------------------------------
unmount_ok unmount_after_big_dir
n=$(timeout 120 "$CHUNKFS" ls "$img" /big | wc -l)
if [ "$n" = "$N" ]; then
	pass big_dir_persisted
else
	fail big_dir_persisted "chunkfs ls lists $n entries"
fi
consistent image_consistent_after_big_dir "$img"

# ---- ENOSPC, delete, refill ---------------------------------------------------------------
# A small image of 4 chunks: one file fills all of them through
# continuations, and ENOSPC comes only when the whole filesystem is full.
# Each fill writes 10 MiB more than is free.  With the writeback cache the
# kernel accepts the data first and the error comes at fsync or close;
# without it, at write().  Space of a deleted file comes back when the
# kernel releases and forgets the inode, just after unlink returns.
simg=$TESTDIR/small.img
"$CHUNKFS" mkfs -q -c 4 "$simg" 64M
# what a user can still get (df's "Avail"): the free blocks less fsck's
# repair reserve (FORMAT.md 16.4)
free_blocks() { stat -f -c %a "$mnt"; }
wait_free() { # BLOCKS: wait until that many blocks are available
	for _ in $(seq 100); do
		[ "$(free_blocks)" = "$1" ] && return 0
		sleep 0.1
	done
	return 1
}
fill() { # FILE: succeeds if dd failed with ENOSPC
	local mib=$(( ($(free_blocks) * $(stat -f -c %S "$mnt") >> 20) + 10 ))
	! timeout 120 dd if=/dev/zero of="$1" bs=1M count="$mib" conv=fsync \
		2>"$TESTDIR/dd.err" && grep -q "No space left on device" "$TESTDIR/dd.err"
}
for cache in writeback_cache no_writeback_cache; do
	if ! mount_fs "$simg" "$mnt" -o "$cache"; then
		fail "enospc_$cache" "mount failed"
		continue
	fi
	before=$(free_blocks)
	if fill "$mnt/fill"; then
		pass "enospc_when_full_$cache"
	else
		fail "enospc_when_full_$cache" "dd: $(tail -2 "$TESTDIR/dd.err")"
	fi
	full=$(free_blocks)
	# all but a few blocks (extent trees, continuation inodes) were usable
	if [ "$full" -le 16 ]; then
		pass "whole_fs_usable_$cache"
	else
		fail "whole_fs_usable_$cache" "$full of $before blocks still free after ENOSPC"
	fi
	rm "$mnt/fill"
	if wait_free "$before"; then
		pass "delete_gives_all_back_$cache"
	else
		fail "delete_gives_all_back_$cache" "free blocks before $before, after $(free_blocks)"
	fi
	fill "$mnt/fill2"
	if [ "$(free_blocks)" = "$full" ]; then
		pass "refill_same_size_$cache"
	else
		fail "refill_same_size_$cache" "first fill left $full blocks free, the second $(free_blocks)"
	fi
	rm "$mnt/fill2"
	wait_free "$before" || fail "delete_again_$cache" "free $(free_blocks) != $before"
	unmount_fs "$mnt"
	log_clean "daemon_log_clean_$cache" "$DAEMON_LOG"
done
consistent image_consistent_after_enospc "$simg"
finish
