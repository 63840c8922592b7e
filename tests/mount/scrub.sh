#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# chunkfs scrub: the checker of chunkfs fsck run on a mounted filesystem
# (issue 12 item 3).
#  - on a healthy filesystem with a workload running, scrub -n and scrub -y
#    find nothing (exit 0), the workload sees no error; on an idle one,
#    scrub -n leaves the image byte for byte as it was;
#  - an inode damaged on the image behind the daemon's back, in a chunk no
#    workload uses, while a workload runs in another chunk: the read fails,
#    the chunk is marked ERROR on disk, the workload sees no error, scrub -n
#    reports the damage as fsck does (same lines, exit 4, --json shape),
#    scrub -y repairs it (exit 1) and the file reads again; after umount
#    fsck -f -n is clean;
#  - kill -9 of the daemon half-way through an online repair leaves the
#    chunk marked, and fsck finishes the repair;
#  - a user other than root (or the one who mounted) gets EPERM; a
#    directory that is not a chunkfs mount is refused.
. "$(dirname "$0")/lib.sh"

C=$CHUNKFS
mount_test scrub_mount scrub.img

info_state() {   # IMG CHUNK -> "state errors"
	"$C" info --json "$1" | python3 -c 'import json,sys; c=json.load(sys.stdin)["chunks"][int(sys.argv[1])]; print(c["state"], c["errors"])' "$2"
}

# workload DIR TAG: create, write, read back, rename, remove files in DIR
# until $TESTDIR/stop appears; every failure is one line in TAG.err
workload() {
	local d=$1 i=0
	: >"$TESTDIR/$2.err"
	while [ ! -e "$TESTDIR/stop" ]; do
		i=$((i + 1))
		{ echo "data $i" >"$d/w$i" &&
		  [ "$(cat "$d/w$i")" = "data $i" ] &&
		  mv "$d/w$i" "$d/m$i" && mkdir "$d/d$i" && rmdir "$d/d$i" &&
		  { [ $((i % 3)) = 0 ] || rm "$d/m$i"; }; } 2>>"$TESTDIR/$2.err" ||
			echo "op $i failed" >>"$TESTDIR/$2.err"
	done
}

start_workload() {   # DIR TAG
	rm -f "$TESTDIR/stop"
	workload "$1" "$2" &
	WL_PID=$!
}

stop_workload() {   # TAG NAME
	touch "$TESTDIR/stop"
	wait "$WL_PID"
	if [ -s "$TESTDIR/$1.err" ]; then
		fail "$2" "$(head -c 300 "$TESTDIR/$1.err")"
	else
		pass "$2"
	fi
}

mkfs_or_finish -c 4 "$img" 128M
"$C" mkdir "$img" /a /b /c &&
	for i in 1 2 3 4 5; do echo "alpha $i" | "$C" put "$img" - "/a/f$i" || exit 1; done &&
	echo beta | "$C" put "$img" - /b/f || { fail setup "put failed"; finish; }
ino=$("$C" stat "$img" /a/f3 | awk '/Inode:/ { print $2; exit }')
chunk=$((ino >> 24))
bchunk=$(( $("$C" stat "$img" /b | awk '/Inode:/ { print $2; exit }') >> 24 ))
if [ "$chunk" = "$bchunk" ]; then
	fail setup "/a and /b in the same chunk $chunk"
	finish
fi
mount_or_finish scrub_mount -o allow_other,clean_after=0.5

# ---- healthy and busy ----
start_workload "$mnt/b" healthy
sleep 1
check_exit scrub_n_busy_clean 0 "$C" scrub -n "$mnt"
if grep -q "\[" "$OUT"; then
	fail scrub_n_busy_no_problem "$(head -c 300 "$OUT")"
else
	pass scrub_n_busy_no_problem
fi
check_exit scrub_y_busy_clean 0 "$C" scrub -y "$mnt"
stop_workload healthy workload_unaffected_by_scrub

# idle: scrub -n changes nothing on the disk.  Chunks clean on disk may
# still have changes in memory (lazy marking): the next checkpoint, at
# most clean_after (0.5 s) plus a tick of the cleaner (1 s) after the
# last change, writes them, so wait past it before taking the sum.
if wait_clean "$img" 20 && sleep 2 && wait_clean "$img" 20; then
	sum0=$(md5sum <"$img")
	check_exit scrub_n_idle 0 "$C" scrub -n "$mnt"
	same scrub_n_changes_nothing "$(md5sum <"$img")" "$sum0"
else
	fail scrub_n_changes_nothing "chunks never clean: $(dirty_chunks "$img")"
fi

# ---- damage behind the daemon's back, a workload in another chunk ----
start_workload "$mnt/b" damaged
"$CFSDAMAGE" "$img" inode "$ino" 0x10 || { fail setup "could not damage the inode"; finish; }
if timeout 20 cat "$mnt/a/f3" >/dev/null 2>"$TESTDIR/cat.err"; then
	fail damage_read_fails "cat of the damaged file succeeded"
elif grep -q "Bad message" "$TESTDIR/cat.err"; then
	pass damage_read_fails
else
	fail damage_read_fails "$(head -c 200 "$TESTDIR/cat.err")"
fi
same damage_marked_on_disk "$(info_state "$img" "$chunk")" "error 1"
check_exit scrub_n_finds_exit_4 4 "$C" scrub -n "$mnt"
if grep -q "^$mnt: chunk $chunk: inode $ino: checksum mismatch.*\[INODE_CSUM_PLAUSIBLE\].*: not fixed: -n" "$OUT"; then
	pass scrub_n_reports_like_fsck
else
	fail scrub_n_reports_like_fsck "$(head -c 400 "$OUT")"
fi
expect_exit 4 "$C" scrub -n --json -c "$chunk" "$mnt"
if python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
need = {"image", "chunks", "checked", "problems", "fixed", "unfixed", "exit", "messages", "problem_list"}
assert need <= set(j), need - set(j)
assert j["checked"] == 1 and j["exit"] == 4 and j["unfixed"] >= 1, j
p = j["problem_list"][0]
assert p["code"] == "INODE_CSUM_PLAUSIBLE" and p["chunk"] == int(sys.argv[2]), p
assert p["inode"] == int(sys.argv[3]) and p["outcome"] == "not fixed: -n", p
assert len(j["messages"]) == len(j["problem_list"])
' "$OUT" "$chunk" "$ino" 2>"$TESTDIR/json.err"; then
	pass scrub_json_shape
else
	fail scrub_json_shape "$(tail -3 "$TESTDIR/json.err")"
fi
check_exit scrub_y_repairs_exit_1 1 "$C" scrub -y "$mnt"
if [ "$(timeout 20 cat "$mnt/a/f3")" = "alpha 3" ]; then
	pass repaired_file_reads
else
	fail repaired_file_reads "$(timeout 20 cat "$mnt/a/f3" 2>&1 | head -c 200)"
fi
st=$(info_state "$img" "$chunk")
case $st in
error*) fail repaired_chunk_not_error "chunk $chunk: $st" ;;
*) pass repaired_chunk_not_error ;;
esac
check_exit scrub_n_after_repair 0 "$C" scrub -n "$mnt"
stop_workload damaged workload_unaffected_by_damage

# ---- permissions ----
if expect_exit 8 "${NOBODY[@]}" "$C" scrub -n "$mnt" &&
   grep -q "only root or the user who mounted" "$ERR"; then
	pass scrub_nobody_eperm
else
	fail scrub_nobody_eperm "$(head -c 300 "$ERR")"
fi
mkdir -p "$PUB/plain"
if expect_exit 8 "$C" scrub -n "$PUB/plain" && grep -q "not a chunkfs mount point" "$ERR"; then
	pass scrub_not_a_mount
else
	fail scrub_not_a_mount "$(head -c 300 "$ERR")"
fi
check_exit scrub_one_mode_only 16 "$C" scrub -n -y "$mnt"
check_exit scrub_bad_chunk_refused 8 "$C" scrub -n -c 9 "$mnt"

unmount_fs "$mnt"
log_clean daemon_log_clean "$DAEMON_LOG" && pass daemon_log_clean
check_exit fsck_clean_after_online_repair 0 "$C" fsck -f -n "$img"

# ---- a chunk nobody writes is checked without holding anybody up ----
# The check of chunk $chunk pauses at its end (the hook); meanwhile
# changes in /b go on at once; then a change in the chunk checked itself
# makes that check not count, and it is made again with changes held off.
if ! have_test_hooks; then
	skip quiet_scrub_holds_nobody_up "$C has no test hooks (build/san has them): NOT tested"
else
CHUNKFS_TEST_SCRUB_QUIET_PAUSE=4 mount_fs "$img" "$mnt" || { fail quiet_mount "mount failed"; finish; }
wait_clean "$img" 20
"$C" scrub -n -c "$chunk" "$mnt" >"$TESTDIR/quiet.out" 2>&1 &
spid=$!
for i in $(seq 100); do
	grep -q "scrub: test pause (CHUNKFS_TEST_SCRUB_QUIET_PAUSE)" "$DAEMON_LOG" && break
	sleep 0.1
done
t0=$(date +%s%N)
if timeout 10 mkdir "$mnt/b/during" && echo x >"$mnt/b/during/f" && sync -f "$mnt/b/during/f"; then
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	if [ "$ms" -lt 2000 ]; then
		pass quiet_scrub_holds_nobody_up
	else
		fail quiet_scrub_holds_nobody_up "a change in /b took ${ms} ms during the check"
	fi
else
	fail quiet_scrub_holds_nobody_up "mkdir/write in /b failed"
fi
echo changed >"$mnt/a/f1" && sync -f "$mnt/a/f1"
wait "$spid"
same quiet_scrub_changed_chunk_rechecked "$?" 0
unmount_fs "$mnt"
check_exit fsck_clean_after_quiet_scrub 0 "$C" fsck -f -n "$img"
fi

# ---- a read-only mount: -n only ----
mount_fs "$img" "$mnt" -o ro || { fail ro_mount "mount failed"; finish; }
check_exit scrub_n_read_only_mount 0 "$C" scrub -n "$mnt"
if expect_exit 8 "$C" scrub -y "$mnt" && grep -q "mounted read-only: use -n" "$ERR"; then
	pass scrub_y_read_only_refused
else
	fail scrub_y_read_only_refused "$(head -c 300 "$ERR")"
fi
unmount_fs "$mnt"

# ---- kill -9 half-way through an online repair ----
need_test_hooks kill_during_repair
"$CFSDAMAGE" "$img" inode "$ino" 0x10 || { fail setup "could not damage the inode"; finish; }
CHUNKFS_TEST_SCRUB_PAUSE=30 mount_fs "$img" "$mnt" || { fail kill_mount "mount failed"; finish; }
timeout 20 cat "$mnt/a/f3" >/dev/null 2>&1
"$C" scrub -y "$mnt" >"$TESTDIR/killed.out" 2>&1 &
spid=$!
# the repair's first write has marked the chunk dirty on disk: the daemon
# pauses there (and says so in its log)
for i in $(seq 300); do
	grep -q "scrub: test pause (CHUNKFS_TEST_SCRUB_PAUSE)" "$DAEMON_LOG" && break
	sleep 0.1
done
grep -q "scrub: test pause" "$DAEMON_LOG" || fail kill_during_repair "the repair never paused"
kill_daemon
wait "$spid"
src=$?
[ "$src" = 8 ] && pass killed_scrub_exit_8 || fail killed_scrub_exit_8 "exit $src: $(head -c 200 "$TESTDIR/killed.out")"
case $(info_state "$img" "$chunk") in
error*) pass killed_chunk_still_error ;;
*) fail killed_chunk_still_error "chunk $chunk: $(info_state "$img" "$chunk")" ;;
esac
# preen takes the chunk (it is still marked), and leaves this damage, which
# no crash explains, for a person; -y finishes the repair
if expect_exit 4 "$C" fsck -p "$img" && grep -q "chunk $chunk: inode $ino: .*needs a person" "$OUT"; then
	pass killed_preen_takes_chunk
else
	fail killed_preen_takes_chunk "$(head -c 300 "$OUT")"
fi
check_exit fsck_finishes_repair 1 "$C" fsck -y "$img"
check_exit fsck_clean_after_kill 0 "$C" fsck -f -n "$img"
finish
