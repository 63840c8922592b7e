#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Corruption met through the mount is remembered: one bit of a file's inode
# flipped on the image of a clean chunk; through the mount, reading the file
# fails with EBADMSG while another chunk's files read fine; after umount
# `chunkfs info` shows that chunk in error with the record, and fsck -p
# checks exactly that chunk (before: the chunk stayed clean and only
# fsck -f found the damage).  The daemon's log names the error as it is
# recorded.
# Then -o errors=remount-ro (changes refused after the first error, reads
# go on), errors=repair (a chunk that needs a person goes out of service
# with EUCLEAN, the others go on, scrub -y puts it back) and
# scrub_interval= (every chunk checked in the background, damage nobody
# met found and marked).
. "$(dirname "$0")/lib.sh"

mount_test errors_mount errors.img
image_ab
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

# ---- -o errors=, scrub_interval= (issue 12 items 4, 5) ----
C=$CHUNKFS
state_of() {   # CHUNK -> "state errors" on disk
	"$C" info --json "$img" | python3 -c 'import json,sys; c=json.load(sys.stdin)["chunks"][int(sys.argv[1])]; print(c["state"], c["errors"])' "$1"
}
fresh() {   # a new image: /a/f in one chunk, /b/f in another
	image_ab
	ino=$("$C" stat "$img" /a/f | awk '/Inode:/ { print $2; exit }')
	chunk=$((ino >> 24))
}
wait_log() {   # PATTERN: wait (at most 20 s) for it in the daemon's log
	local i
	for i in $(seq 200); do
		grep -q "$1" "$DAEMON_LOG" && return 0
		sleep 0.1
	done
	return 1
}
errno_of() {   # what cat of FILE fails with, or "ok CONTENT"
	local out
	if out=$(timeout 20 cat "$1" 2>"$TESTDIR/errno.err"); then
		echo "ok $out"
	else
		sed 's/.*: //' "$TESTDIR/errno.err" | head -1
	fi
}

if expect_exit 2 "$C" mount -f -o errors=sometimes "$img" "$mnt" &&
   grep -q "bad errors 'sometimes'" "$ERR"; then
	pass errors_option_checked
else
	fail errors_option_checked "$(head -c 200 "$ERR")"
fi
check_exit scrub_interval_checked 2 "$C" mount -f -o scrub_interval=7x "$img" "$mnt"

# errors=remount-ro: the first error refuses every change; reads go on;
# what was written before reaches the disk
fresh
mount_or_finish errors_ro_mount -o errors=remount-ro
echo before >"$mnt/b/pre" || fail errors_ro_write_before "write failed"
"$CFSDAMAGE" "$img" inode "$ino" 0x10 || { fail setup "could not damage the inode"; finish; }
same errors_ro_read_fails "$(errno_of "$mnt/a/f")" "Bad message"
if mkdir "$mnt/b/after" 2>"$TESTDIR/mkdir.err"; then
	fail errors_ro_refuses_changes "mkdir succeeded after the error"
elif grep -q "Read-only file system" "$TESTDIR/mkdir.err"; then
	pass errors_ro_refuses_changes
else
	fail errors_ro_refuses_changes "$(cat "$TESTDIR/mkdir.err")"
fi
same errors_ro_reads_go_on "$(errno_of "$mnt/b/f")" "ok beta"
wait_log "refusing changes from now on (errors=remount-ro)" && pass errors_ro_logged ||
	fail errors_ro_logged "$(tail -c 300 "$DAEMON_LOG")"
unmount_ok errors_ro_unmount
same errors_ro_write_before_kept "$("$C" cat "$img" /b/pre)" before
check_exit errors_ro_fsck_repairs 1 "$C" fsck -y "$img"

# errors=repair, damage that needs a person: the chunk goes out of service
# (EUCLEAN), the others go on; scrub -y puts it back
fresh
mount_or_finish errors_repair_mount -o errors=repair
"$CFSDAMAGE" "$img" inode "$ino" 0x10 || { fail setup "could not damage the inode"; finish; }
same errors_repair_read_fails "$(errno_of "$mnt/a/f")" "Bad message"
if wait_log "chunk $chunk: [0-9]* problem(s) need a person: its files fail with EUCLEAN"; then
	pass errors_repair_logged_needs_person
else
	fail errors_repair_logged_needs_person "$(tail -c 400 "$DAEMON_LOG")"
fi
same errors_repair_chunk_out "$(errno_of "$mnt/a/f")" "Structure needs cleaning"
same errors_repair_others_read "$(errno_of "$mnt/b/f")" "ok beta"
if echo new >"$mnt/b/new" && [ "$(cat "$mnt/b/new")" = new ]; then
	pass errors_repair_others_write
else
	fail errors_repair_others_write "write in /b failed"
fi
case $(state_of "$chunk") in
error*) pass errors_repair_marked_on_disk ;;
*) fail errors_repair_marked_on_disk "$(state_of "$chunk")" ;;
esac
check_exit errors_repair_scrub_y 1 "$C" scrub -y -c "$chunk" "$mnt"
same errors_repair_back_in_service "$(errno_of "$mnt/a/f")" "ok alpha"
unmount_ok errors_repair_unmount
check_exit errors_repair_fsck_clean 0 "$C" fsck -f -n "$img"

# scrub_interval: every chunk checked in the background, damage nobody
# met found and marked
fresh
t0=$(date +%s)
sleep 1.1
mount_or_finish scrub_interval_mount -o scrub_interval=2
"$CFSDAMAGE" "$img" inode "$ino" 0x10 || { fail setup "could not damage the inode"; finish; }
if wait_log "scrub: chunk $chunk: inode $ino: checksum mismatch"; then
	pass scrub_interval_finds_damage
else
	fail scrub_interval_finds_damage "$(tail -c 400 "$DAEMON_LOG")"
fi
sleep 3
case $(state_of "$chunk") in
error*) pass scrub_interval_marks_chunk ;;
*) fail scrub_interval_marks_chunk "$(state_of "$chunk")" ;;
esac
if "$C" info --json "$img" | python3 -c '
import json, sys
cs = json.load(sys.stdin)["chunks"]
old = [c["index"] for c in cs if c["last_check"] < int(sys.argv[1]) and c["index"] != int(sys.argv[2])]
assert not old, "not checked: %s" % old' "$t0" "$chunk" 2>"$TESTDIR/lc.err"; then
	pass scrub_interval_checks_every_chunk
else
	fail scrub_interval_checks_every_chunk "$(tail -1 "$TESTDIR/lc.err")"
fi
same scrub_interval_others_read "$(errno_of "$mnt/b/f")" "ok beta"
unmount_ok scrub_interval_unmount
finish
