#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A file deleted while a process holds it open keeps its chunk dirty, so
# that after a crash (kill -9 of the daemon) the mount's check frees its
# space: write 50 MiB, wait for every chunk to go clean, open, rm, wait
# longer than clean_after, kill -9, mount again: the space is free.
. "$(dirname "$0")/lib.sh"

mount_test orphan_mount orphan.img
mkfs_or_finish -c 4 "$img" 256M
mount_or_finish orphan_mount -o clean_after=0.5

free0=$(stat -f -c %f "$mnt")
timeout 60 dd if=/dev/zero of="$mnt/big" bs=1M count=50 conv=fsync status=none
chunk=$(( $(stat -c %i "$mnt/big") >> 24 ))
if wait_clean "$img" 20; then
	pass written_then_clean
else
	fail written_then_clean "still dirty: $(dirty_chunks "$img")"
fi

exec 3<"$mnt/big"
rm "$mnt/big"
sleep 2   # four times clean_after
during=$(dirty_chunks "$img")
if [ "$during" = "$chunk" ]; then
	pass open_orphan_chunk_stays_dirty
else
	fail open_orphan_chunk_stays_dirty "big was in chunk $chunk, dirty: '$during'"
fi

kill_daemon
exec 3<&-

if ! mount_fs "$img" "$mnt" -o clean_after=0.5; then
	fail remount "mount failed"
	finish
fi
if grep -q "checked 1 of 4 chunks" "$DAEMON_LOG"; then
	pass remount_checks_that_chunk
else
	fail remount_checks_that_chunk "$(head -c 300 "$DAEMON_LOG")"
fi
free1=$(stat -f -c %f "$mnt")
if [ "$free1" = "$free0" ]; then
	pass space_freed_after_crash
else
	fail space_freed_after_crash "free blocks $free1 after, $free0 before the file"
fi
unmount_fs "$mnt"
log_clean daemon_log_clean "$DAEMON_LOG" && pass daemon_log_clean
"$CFSCHECK" "$img" >"$TESTDIR/check.out" 2>&1 &&
	pass consistent_after || fail consistent_after "$(head -c 300 "$TESTDIR/check.out")"
finish
