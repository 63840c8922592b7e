#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Corruption that only a structure's own rules catch is remembered too: the
# root node of directory /a claims B+tree level 7, its checksum valid (so
# the block layer sees nothing).  Through the mount, listing /a fails with
# EUCLEAN ("Structure needs cleaning") while /b, in another chunk, works;
# the chunk holding /a is marked in error on disk at once, with a record
# naming /a's inode and the node's block; after umount `chunkfs info --json`
# shows it, and fsck -p checks exactly that chunk and repairs it.  (Before:
# such an impossible value failed the call but left the chunk clean.)
. "$(dirname "$0")/lib.sh"

mount_test errors_records errors_records.img
image_ab
dino=$("$CHUNKFS" stat "$img" /a | awk '/Inode:/ { print $2; exit }')
chunk=$((dino >> 24))
[ "$chunk" != 0 ] || { fail setup "/a is in chunk 0, with the root"; finish; }
blk=$("$CFSDAMAGE" "$img" dirlevel "$chunk") || { fail setup "could not damage /a's node"; finish; }
mount_or_finish errors_records

if timeout 20 ls "$mnt/a" >/dev/null 2>"$TESTDIR/ls.err"; then
	fail records_list_fails "ls of the damaged directory succeeded"
elif grep -q "Structure needs cleaning" "$TESTDIR/ls.err"; then
	pass records_list_fails
else
	fail records_list_fails "$(head -c 200 "$TESTDIR/ls.err")"
fi
if [ "$(timeout 20 cat "$mnt/b/f")" = beta ] && timeout 20 mkdir "$mnt/b/new" &&
   echo gamma >"$mnt/b/g"; then
	pass records_other_chunk_works
else
	fail records_other_chunk_works "reading or writing /b failed"
fi
# on disk at once, while still mounted: the chunk, the inode, the block
json_record() {
	"$CHUNKFS" info --json "$img" | python3 -c '
import json, sys
c = json.load(sys.stdin)["chunks"][int(sys.argv[1])]
e = c.get("first_error", {})
print(c["state"], c["errors"], e.get("ino"), e.get("block"), e.get("errno"), e.get("what"))' "$chunk"
}
rec=$(json_record)
case $rec in
"error 1 $dino $blk 117 bad B+tree root") pass records_marked_while_mounted ;;
*) fail records_marked_while_mounted "info --json: $rec (want: error 1 $dino $blk 117 bad B+tree root)" ;;
esac
unmount_fs "$mnt"
log_clean records_daemon_log "$DAEMON_LOG" && pass records_daemon_log
if grep -q "chunk $chunk marked in error: bad B+tree root (inode $dino, block $blk): Structure needs cleaning" "$DAEMON_LOG"; then
	pass records_logged_by_daemon
else
	fail records_logged_by_daemon "$(head -c 300 "$DAEMON_LOG")"
fi
rec=$(json_record)
case $rec in
"error 1 $dino $blk 117 bad B+tree root") pass records_info_after_umount ;;
*) fail records_info_after_umount "info --json: $rec" ;;
esac
# the other chunks are clean: only this one needs the check
"$CHUNKFS" fsck -p "$img" >"$TESTDIR/fsck.out" 2>&1
rc=$?
if grep -q "checked 1 of 4 chunks" "$TESTDIR/fsck.out"; then
	pass records_preen_checks_that_chunk
else
	fail records_preen_checks_that_chunk "exit $rc: $(head -c 300 "$TESTDIR/fsck.out")"
fi
[ "$rc" = 4 ] && "$CHUNKFS" fsck -y "$img" >>"$TESTDIR/fsck.out" 2>&1
if "$CHUNKFS" fsck -f -n "$img" >"$TESTDIR/fsck2.out" 2>&1; then
	pass records_repaired
else
	fail records_repaired "$(head -c 300 "$TESTDIR/fsck2.out")"
fi
finish
