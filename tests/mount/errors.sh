#!/usr/bin/env bash
# Corruption met through the mount is remembered: one bit of a file's inode
# flipped on the image of a clean chunk; through the mount, reading the file
# fails with EBADMSG while another chunk's files read fine; after umount
# `chunkfs info` shows that chunk in error with the record, and fsck -p
# checks exactly that chunk (before: the chunk stayed clean and only
# fsck -f found the damage).  The daemon's log names the error as it is
# recorded.
. "$(dirname "$0")/lib.sh"

mount_test errors_mount errors.img
mkfs_or_finish -c 4 "$img" 64M
"$CHUNKFS" mkdir "$img" /a /b &&
	echo alpha | "$CHUNKFS" put "$img" - /a/f &&
	echo beta | "$CHUNKFS" put "$img" - /b/f || { fail setup "put failed"; finish; }
ino=$("$CHUNKFS" stat "$img" /a/f | awk '/Inode:/ { print $2; exit }')
chunk=$((ino >> 24))
# one bit of its ctime, the checksum left wrong
"$CFSDAMAGE" "$img" inode "$ino" 0x10 || { fail setup "could not damage the inode"; finish; }
mount_or_finish errors_mount

if timeout 20 cat "$mnt/a/f" >/dev/null 2>"$TESTDIR/cat.err"; then
	fail errors_read_fails "cat of the damaged file succeeded"
elif grep -q "Bad message" "$TESTDIR/cat.err"; then
	pass errors_read_fails
else
	fail errors_read_fails "$(head -c 200 "$TESTDIR/cat.err")"
fi
if [ "$(timeout 20 cat "$mnt/b/f")" = beta ] && timeout 20 mkdir "$mnt/b/new"; then
	pass errors_other_chunk_works
else
	fail errors_other_chunk_works "reading or writing /b failed"
fi
# on disk at once, while still mounted
if [ "$("$CHUNKFS" info --json "$img" | python3 -c 'import json,sys; c=json.load(sys.stdin)["chunks"][int(sys.argv[1])]; print(c["state"], c["errors"])' "$chunk")" = "error 1" ]; then
	pass errors_marked_while_mounted
else
	fail errors_marked_while_mounted "$("$CHUNKFS" info "$img" | tail -n 8)"
fi
unmount_fs "$mnt"
log_clean errors_daemon_log "$DAEMON_LOG" && pass errors_daemon_log
# the daemon's log (stderr in the foreground) said so as it happened
if grep -q "chunk $chunk marked in error: inode checksum mismatch (inode $ino, block [0-9]*): Bad message; run chunkfs fsck -p" "$DAEMON_LOG"; then
	pass errors_logged_by_daemon
else
	fail errors_logged_by_daemon "$(head -c 300 "$DAEMON_LOG")"
fi

"$CHUNKFS" info "$img" >"$TESTDIR/info.out"
if grep -q "chunk $chunk: 1 error" "$TESTDIR/info.out" &&
   grep -q "inode $ino, block [0-9]*, inode checksum mismatch (Bad message)" "$TESTDIR/info.out"; then
	pass errors_info_after_umount
else
	fail errors_info_after_umount "$(tail -n 6 "$TESTDIR/info.out")"
fi
"$CHUNKFS" fsck -p "$img" >"$TESTDIR/fsck.out" 2>&1
if grep -q "checked 1 of 4 chunks" "$TESTDIR/fsck.out"; then
	pass errors_preen_checks_that_chunk
else
	fail errors_preen_checks_that_chunk "$(head -c 300 "$TESTDIR/fsck.out")"
fi
finish
