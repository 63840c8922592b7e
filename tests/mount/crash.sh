#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Crash: kill -9 the daemon in the middle of a workload confined to one
# top-level directory.  Afterwards `chunkfs info` shows dirty exactly the
# chunk that directory lives in (chunks are marked dirty before their first
# change reaches the disk, and idle ones were marked clean again).  With
# lazy marking a chunk turns dirty on disk only when its changes are
# written back, so the test writes them back (syncfs) before it looks: a
# checkpoint in between may have cleaned it again, so "none" is allowed,
# any other chunk is not.  Data
# fsync'ed before the crash is there, and the library's check finds no
# problem in any chunk marked clean.  Mounting again checks (preens) just
# that chunk, says so, and leaves a consistent image.
. "$(dirname "$0")/lib.sh"

mount_test crash_mount crash.img
mkfs_or_finish -c 16 "$img" 256M
mount_or_finish crash_mount -o clean_after=1

# Other trees in other chunks, written before the workload.
for d in other1 other2 other3; do
	mkdir "$mnt/$d"
	cp -a "$CHUNKFS_SRC/src" "$mnt/$d/src"
done
mkdir "$mnt/work" "$mnt/work/a" "$mnt/work/b"
echo durable | dd of="$mnt/work/durable" conv=fsync status=none
work=$(( $(stat -c %i "$mnt/work") >> 24 ))
echo "  /work is in chunk $work"
if wait_clean "$img" 20; then
	pass idle_chunks_marked_clean
else
	fail idle_chunks_marked_clean "still dirty: $(dirty_chunks "$img")"
fi

# The workload: three processes inside /work only.
for w in 1 2 3; do
	own=work/a
	[ "$w" = 2 ] && own=work/b
	printf 'stress %s work 60 %s\n' "$own" "$w" |
		timeout -k 5 90 "$FSOP" -C "$mnt" >/dev/null 2>&1 &
done
sleep 3
sync -f "$mnt/work"
during=$(dirty_chunks "$img")
if [ "$during" = "$work" ] || [ -z "$during" ]; then
	pass only_work_chunk_dirty_while_running
else
	fail only_work_chunk_dirty_while_running "work is chunk $work, dirty: '$during'"
fi

sync -f "$mnt/work"
kill_daemon
wait   # the workers fail with ENOTCONN and end

after=$(dirty_chunks "$img")
echo "  dirty after the crash: '$after'"
if [ "$after" = "$work" ] || [ -z "$after" ]; then
	pass only_work_chunk_dirty_after_crash
else
	fail only_work_chunk_dirty_after_crash "work is chunk $work, dirty: '$after'"
fi
if [ "$("$CHUNKFS" cat "$img" /work/durable 2>&1)" = durable ]; then
	pass fsynced_data_survived
else
	fail fsynced_data_survived "$("$CHUNKFS" cat "$img" /work/durable 2>&1 | head -c 200)"
fi
ok=1
for d in other1 other2 other3; do
	"$CHUNKFS" get -r "$img" "/$d/src" "$TESTDIR/$d" 2>>"$TESTDIR/get.err" &&
		diff -r "$CHUNKFS_SRC/src" "$TESTDIR/$d" >/dev/null || ok=0
done
[ "$ok" = 1 ] && pass other_trees_intact || fail other_trees_intact "$(head -c 300 "$TESTDIR/get.err")"

# Problems the check finds must all be in dirty chunks.
"$CFSCHECK" "$img" >"$TESTDIR/check.out" 2>&1
bad=$(awk -v d=",$after," '/^chunk / { c = $2; sub(":", "", c);
	if (index(d, "," c ",") == 0) print }' "$TESTDIR/check.out")
if [ -z "$bad" ] && grep -q '^problems: ' "$TESTDIR/check.out"; then
	pass clean_chunks_consistent
	echo "  $(grep -c '^chunk ' "$TESTDIR/check.out") problem(s) reported, all in dirty chunk(s) $after"
else
	fail clean_chunks_consistent "problems in clean chunks: $(echo "$bad" | head -5) $(tail -2 "$TESTDIR/check.out")"
fi
# Mount again: the dirty chunk is checked first, and only it (none when a
# checkpoint cleaned it before the crash).
if [ -n "$after" ]; then
	want="checked 1 of 16 chunks \($work\) in [0-9.]+s: "
else
	want=""
fi
remount_ok() {
	if [ -n "$want" ]; then grep -Eq "$want" "$ERR"; else ! grep -q "checked [1-9]" "$ERR"; fi
}
if daemon_mount "$img" && remount_ok; then
	pass remount_checks_only_the_dirty_chunk
	sed 's/^/  /' "$ERR"
	[ "$(cat "$mnt/work/durable")" = durable ] || fail durable_after_check "lost"
	daemon_unmount "$img"
else
	fail remount_checks_only_the_dirty_chunk "$(head -c 400 "$ERR")"
fi
if [ -z "$(dirty_chunks "$img")" ] && "$CFSCHECK" "$img" >"$TESTDIR/check2.out" 2>&1; then
	pass consistent_and_clean_after_check
else
	fail consistent_and_clean_after_check "dirty '$(dirty_chunks "$img")': $(head -10 "$TESTDIR/check2.out")"
fi
finish
