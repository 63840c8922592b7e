#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# -o errors=repair returns a chunk to service (issue 12 item 4): damage the
# library meets in normal operation and preen may fix.
# The inode bitmap of chunk W loses the bit of a file in use (cfsdamage
# ibit, behind the daemon's back: written while unmounted, the chunk clean,
# so the mount's own check skips it).  The first create in /w is given that
# inode, finds it in use in the table, fails with EUCLEAN and marks the
# chunk in error on disk; the daemon scrubs the chunk at once with preen's
# rules, which rewrites the inode bitmap from the inode table (as e2fsck -p
# fixes inode bitmap differences); the chunk's error mark is cleared, the
# chunk is back in service: creates in /w succeed, the file whose bit was
# lost reads as before, its inode is not handed out again; after umount
# fsck -f -n is clean.
. "$(dirname "$0")/lib.sh"

C=$CHUNKFS
mount_test preen_mount preen.img
mkfs_or_finish -c 4 "$img" 64M
"$C" mkdir "$img" /a /w && for i in 1 2 3; do echo "file $i" | "$C" put "$img" - "/w/f$i" || exit 1; done ||
	{ fail setup "put failed"; finish; }
ino=$("$C" stat "$img" /w/f1 | awk '/Inode:/ { print $2; exit }')
wchunk=$((ino >> 24))
"$CFSDAMAGE" "$img" ibit "$ino" || { fail setup "could not clear the bit of inode $ino"; finish; }
# what the library meets is not what the mount's check looks at: the chunk
# is clean, and fsck -p skips it (fsck -f -n sees it, for a person)
check_exit preen_fsck_p_skips_clean_chunk 0 "$C" fsck -n "$img"
expect_exit 4 "$C" fsck -f -n "$img" >/dev/null
grep -q "chunk $wchunk: inode bitmap differs in 1 places \[INODE_BITMAP\]" "$OUT" &&
	pass preen_damage_is_inode_bitmap ||
	fail preen_damage_is_inode_bitmap "$(grep '\[' "$OUT" | head -3 | tr '\n' '|')"

mount_or_finish preen_mount -o errors=repair

info_state() {   # CHUNK -> "state errors"
	"$C" info --json "$img" | python3 -c 'import json,sys; c=json.load(sys.stdin)["chunks"][int(sys.argv[1])]; print(c["state"], c["errors"])' "$1"
}
# the first create in /w is given the inode whose bit was lost
if timeout 20 bash -c "echo new >'$mnt/w/new1'" 2>"$TESTDIR/create.err"; then
	fail preen_create_meets_damage "the create succeeded: $(ls -i "$mnt/w" | tr '\n' ' ')"
elif grep -q "Structure needs cleaning" "$TESTDIR/create.err"; then
	pass preen_create_meets_damage
else
	fail preen_create_meets_damage "$(head -c 200 "$TESTDIR/create.err")"
fi
# the daemon says it repaired the chunk and put it back in service
for i in $(seq 100); do
	grep -q "chunk $wchunk checked online: .* fixed, back in service" "$DAEMON_LOG" && break
	sleep 0.1
done
if grep -q "chunk $wchunk marked in error: free in bitmap, in use in table (inode $ino" "$DAEMON_LOG" &&
   grep -q "chunk $wchunk checked online: 1 problem(s) fixed, back in service" "$DAEMON_LOG"; then
	pass preen_repaired_online
else
	fail preen_repaired_online "$(grep chunkfs: "$DAEMON_LOG" | head -4 | tr '\n' '|')"
fi
st=$(info_state "$wchunk")
case $st in
error*) fail preen_error_mark_cleared "chunk $wchunk: $st" ;;
*" 1") pass preen_error_mark_cleared ;;   # the record stays: 1 error
*) fail preen_error_mark_cleared "chunk $wchunk: $st (want not error, 1 error recorded)" ;;
esac
# back in service: creates in /w succeed, in the chunk, and the file whose
# bit was lost keeps its inode and contents
ok=1
for i in 2 3 4; do
	timeout 20 bash -c "echo new $i >'$mnt/w/new$i'" 2>>"$TESTDIR/after.err" || ok=0
	[ "$(timeout 20 cat "$mnt/w/new$i" 2>&1)" = "new $i" ] || ok=0
	n=$(stat -c %i "$mnt/w/new$i" 2>/dev/null)
	[ -n "$n" ] && [ $((n >> 24)) = "$wchunk" ] && [ "$n" != "$ino" ] || ok=0
done
if [ "$ok" = 1 ]; then
	pass preen_chunk_back_in_service
else
	fail preen_chunk_back_in_service "$(head -c 200 "$TESTDIR/after.err") $(ls -i "$mnt/w" | tr '\n' ' ')"
fi
same preen_file_intact "$(timeout 20 cat "$mnt/w/f1" 2>&1) $(stat -c %i "$mnt/w/f1")" "file 1 $ino"
unmount_fs "$mnt"
log_clean daemon_log_clean "$DAEMON_LOG" && pass daemon_log_clean
check_exit preen_fsck_clean_after 0 "$C" fsck -f -n "$img"
finish
