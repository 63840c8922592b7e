#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# chunkfs resize on a mounted image: the offline command refuses it; given
# the mount point, the daemon grows it (the ioctl) while a workload keeps
# writing and reading back files, the new space is usable at once, and
# after the unmount fsck -f -n is clean and the data intact.  Only root,
# only the mount point, not read-only.  Then offline on a loop device after losetup -c.
. "$(dirname "$0")/lib.sh"

need_fuse resize_mount
pass resize_mount

C=$CHUNKFS
img=$TESTDIR/grow.img
mnt=$PUB/mnt
mkdir "$mnt"
"$C" mkfs -q -c 2 "$img" 32M || { fail resize_mkfs mkfs; finish; }
head -c $((40 << 20)) /dev/urandom >big
head -c $((1 << 20)) /dev/urandom >pat
chunks() { "$C" info "$1" | awk '/^Chunks:/ { print $2 }'; }

# Writes and reads back 1 MiB files, at most 4 at a time, until ./stop.
workload() {
	local i=0
	mkdir -p "$mnt/w"
	while [ ! -e stop ]; do
		if ! cp pat "$mnt/w/f$i" || ! cmp -s pat "$mnt/w/f$i"; then
			echo "file $i" >>work.err
		fi
		[ $i -ge 4 ] && rm -f "$mnt/w/f$((i - 4))"
		i=$((i + 1))
		echo $i >work.n
	done
}

if ! mount_fs "$img" "$mnt" -o allow_other; then
	fail resize_online "mount failed: $(cat "$DAEMON_LOG")"
	finish
fi
cp "$img" sb-before.img
if expect_exit 1 "$C" resize "$img" && grep -q 'unmount it first, or give its mount point' "$ERR" &&
   cmp -s -n 4096 sb-before.img "$img"; then
	pass resize_offline_refuses_mounted
else
	fail resize_offline_refuses_mounted "$(cat "$ERR")"
fi

rm -f stop work.err work.n
workload &
wpid=$!
sleep 1
truncate -s 64M "$img"
if expect_exit 0 "$C" resize "$mnt" && grep -q 'now 16382 (4k) blocks long: 4 chunks, was 2' "$OUT" &&
   [ "$(df -k --output=size "$mnt" | tail -1)" -gt 60000 ]; then
	pass resize_online
else
	fail resize_online "$(cat "$OUT" "$ERR"; df -k "$mnt")"
fi
# the new space, at once: 40 MiB did not fit in 32
if cp big "$mnt/big" && cmp -s big "$mnt/big"; then
	pass resize_online_space_usable
else
	fail resize_online_space_usable "$(df -k "$mnt")"
fi
if expect_exit 0 "$C" resize "$mnt" 100M && grep -q '6 chunks, was 4' "$OUT" &&
   [ "$(stat -c %s "$img")" = $((100 << 20)) ]; then
	pass resize_online_size
else
	fail resize_online_size "$(cat "$OUT" "$ERR")"
fi
sleep 1
touch stop
wait "$wpid"
if [ ! -s work.err ] && [ "$(cat work.n 2>/dev/null || echo 0)" -ge 3 ]; then
	echo "  workload: $(cat work.n) files written and read back meanwhile"
	pass resize_online_workload
else
	fail resize_online_workload "$(cat work.n 2>/dev/null) files, errors: $(cat work.err 2>/dev/null)"
fi
if expect_exit 1 "$C" resize "$mnt/w" && grep -q 'not the mount point of a chunkfs mount' "$ERR" &&
   expect_exit 1 "$C" resize "$TESTDIR" && grep -q 'not the mount point' "$ERR"; then
	pass resize_online_needs_mount_point
else
	fail resize_online_needs_mount_point "$(cat "$ERR")"
fi
if expect_exit 1 "${NOBODY[@]}" "$C" resize "$mnt" && grep -q 'Operation not permitted' "$ERR"; then
	pass resize_online_root_only
else
	fail resize_online_root_only "$(cat "$OUT" "$ERR")"
fi
unmount_fs "$mnt"
log_clean resize_online_daemon_log "$DAEMON_LOG" && pass resize_online_daemon_log
check_exit resize_online_fsck_clean 0 "$C" fsck -f -n "$img"
if [ "$(chunks "$img")" = 6 ] && "$C" cat "$img" /big | cmp -s big -; then
	pass resize_online_data_intact
else
	fail resize_online_data_intact "$(chunks "$img") chunks"
fi

if mount_fs "$img" "$mnt" -o ro; then
	truncate -s 200M "$img"
	if expect_exit 1 "$C" resize "$mnt" && grep -q 'mnt: mounted read-only$' "$ERR"; then
		pass resize_online_refuses_ro
	else
		fail resize_online_refuses_ro "$(cat "$OUT" "$ERR")"
	fi
	unmount_fs "$mnt"
	[ "$(chunks "$img")" = 6 ] || fail resize_online_refuses_ro "$(chunks "$img") chunks"
else
	fail resize_online_refuses_ro "mount -o ro failed"
fi

# ---- a loop device, grown under it ----------------------------------------------
limg=$TESTDIR/loop.img
"$C" mkfs -q -c 2 "$limg" 32M
if ! loop_attach "$limg"; then
	skip resize_loop_device "$LOOP_WHY"
else
	"$C" put "$LOOP" pat /pat
	truncate -s 64M "$limg"
	if expect_exit 0 "$C" resize "$LOOP" && grep -q 'Nothing to do' "$OUT" &&
	   losetup -c "$LOOP" && expect_exit 0 "$C" resize "$LOOP" &&
	   grep -q '4 chunks, was 2' "$OUT" && [ "$(chunks "$LOOP")" = 4 ] &&
	   expect_exit 0 "$C" fsck -f -n "$LOOP" && "$C" cat "$LOOP" /pat | cmp -s pat - &&
	   expect_exit 1 "$C" resize "$LOOP" 200M && grep -q 'cannot grow to 209715200 bytes: the device holds only 67108864$' "$ERR"; then
		pass resize_loop_device
	else
		fail resize_loop_device "$(cat "$OUT" "$ERR")"
	fi
	loop_detach
fi
finish
