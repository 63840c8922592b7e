#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A repair holds up only the operations on the chunks it checks (issue 12
# item 3; docs/LOCKING.md, "Scrub").
#  - an inode of /a's chunk damaged behind the daemon's back; scrub -y of
#    that chunk pauses at its repair's first write (the test hook).  While
#    it is paused, create, write, stat, readdir, rename and unlink in /b
#    (another chunk) complete; a read of the damaged file, started during
#    the pause, has not completed while the repair is still paused, and
#    reads the repaired bytes once it ends; the held repair is written (the
#    trace hook says the fence held);
#  - the same with a change meanwhile to a chunk the check read (the root
#    directory, /a's parent): the held repair is thrown away and made again
#    with changes held off (the trace says so), and the result is as right;
#    the scrub tells the damage once (not also what the check thrown away
#    found);
#  - after umount, fsck -f -n is clean and the bytes written during the
#    pauses read back.
. "$(dirname "$0")/lib.sh"

C=$CHUNKFS
need_test_hooks fence_scrub
mount_test fence_mount fence.img
TRACE=$TESTDIR/trace

mkfs_or_finish -c 4 "$img" 128M
"$C" mkdir "$img" /a /b &&
	for i in 1 2 3 4 5; do echo "alpha $i" | "$C" put "$img" - "/a/f$i" || exit 1; done &&
	echo beta | "$C" put "$img" - /b/old || { fail setup "put failed"; finish; }
ino=$("$C" stat "$img" /a/f3 | awk '/Inode:/ { print $2; exit }')
chunk=$((ino >> 24))
bchunk=$(( $("$C" stat "$img" /b | awk '/Inode:/ { print $2; exit }') >> 24 ))
rchunk=$(( $("$C" stat "$img" / | awk '/Inode:/ { print $2; exit }') >> 24 ))
if [ "$chunk" = "$bchunk" ] || [ "$chunk" = "$rchunk" ]; then
	fail setup "/a in chunk $chunk, /b in $bchunk, / in $rchunk"
	finish
fi

# the kernel stacks of the processes using the mount, and the daemon's
stacks() {
	local p
	for p in $(pgrep -f "$mnt"); do
		echo "== $p $(tr '\0' ' ' </proc/$p/cmdline | head -c 120)"
		grep -v "entry_SYSCALL\|do_syscall" "/proc/$p/stack"
	done 2>/dev/null
	command -v gdb >/dev/null &&
		gdb -batch -p "$DAEMON_PID" -ex "thread apply all bt" 2>/dev/null |
		grep -E "^Thread|^#[0-9]+ .* (in|at) .*(cfs_|fence|loop_|op_|scrub)" | head -60
}

wait_paused() {
	for _ in $(seq 300); do
		grep -q "scrub: test pause (CHUNKFS_TEST_SCRUB_PAUSE)" "$DAEMON_LOG" && return 0
		sleep 0.1
	done
	return 1
}

# one round: damage f3, mount, start scrub -y of its chunk, run $1 (the
# changes made during the pause), check the ordering and the outcome
round() {   # NAME CHANGES EXPECT(held|checked again)
	local name=$1 changes=$2 expect=$3 spid cpid chpid pina pinb
	"$CFSDAMAGE" "$img" inode "$ino" 0x10 || { fail "${name}_setup" "could not damage"; return; }
	: >"$TRACE"
	CHUNKFS_TEST_SCRUB_PAUSE=15 CHUNKFS_TEST_SCRUB_TRACE=$TRACE \
		mount_fs "$img" "$mnt" -o allow_other || { fail "${name}_mount" "mount failed"; return; }
	# /a and /b held in the kernel's name cache (two idle processes in
	# them): a first lookup of a name whose inode is in the chunk under
	# repair waits, and the kernel holds the directory it looks in
	# meanwhile (without FUSE's parallel dirops, against other first
	# lookups in it too; docs/LOCKING.md, "Scrub"); a busy machine may
	# otherwise drop the names between here and the changes below
	(cd "$mnt/a" && exec sleep 120) &
	pina=$!
	(cd "$mnt/b" && exec sleep 120) &
	pinb=$!
	"$C" scrub -y -c "$chunk" "$mnt" >"$TESTDIR/$name.out" 2>&1 &
	spid=$!
	if ! wait_paused; then
		fail "${name}_paused" "the repair never paused: $(tail -3 "$DAEMON_LOG")"
		wait "$spid"
		kill "$pina" "$pinb"
		wait "$pina" "$pinb"
		unmount_fs "$mnt"
		return
	fi
	# an operation on the chunk under repair: waits for the repair
	timeout 60 cat "$mnt/a/f3" >"$TESTDIR/$name.cat" 2>&1 &
	cpid=$!
	$changes 2>"$TESTDIR/$name.err" &
	chpid=$!
	for _ in $(seq 90); do
		kill -0 "$chpid" 2>/dev/null || break
		sleep 0.1
	done
	# still waiting: where, for the failure message
	kill -0 "$chpid" 2>/dev/null && stacks >"$TESTDIR/$name.stacks"
	if wait "$chpid"; then
		pass "${name}_other_chunks_go_on"
	else
		fail "${name}_other_chunks_go_on" "$(head -c 300 "$TESTDIR/$name.err"; cat "$TESTDIR/$name.stacks" 2>/dev/null)"
	fi
	# the repair is still paused: nothing above waited for it
	if kill -0 "$spid" 2>/dev/null; then
		pass "${name}_done_while_paused"
	else
		fail "${name}_done_while_paused" "the scrub ended before the changes did"
	fi
	sleep 0.5
	if kill -0 "$cpid" 2>/dev/null && kill -0 "$spid" 2>/dev/null; then
		pass "${name}_chunk_under_repair_waits"
	else
		fail "${name}_chunk_under_repair_waits" "cat of /a/f3 ended during the repair: $(head -c 200 "$TESTDIR/$name.cat")"
	fi
	wait "$spid"
	same "${name}_scrub_exit_1" "$?" 1
	# what a check thrown away found is not told: the damage once
	same "${name}_damage_told_once" "$(grep -c "inode $ino: .*: fixed" "$TESTDIR/$name.out")" 1
	wait "$cpid"
	same "${name}_waiting_read_sees_repair" "$(cat "$TESTDIR/$name.cat")" "alpha 3"
	if grep -q "fence of chunk $chunk.*$expect" "$TRACE"; then
		pass "${name}_fence_$(echo "$expect" | tr ' ' _)"
	else
		fail "${name}_fence_$(echo "$expect" | tr ' ' _)" "trace: $(cat "$TRACE")"
	fi
	same "${name}_reads_after" "$(timeout 20 cat "$mnt/a/f3")" "alpha 3"
	kill "$pina" "$pinb"
	wait "$pina" "$pinb"
	unmount_ok "${name}_unmount"
	check_exit "${name}_fsck_clean" 0 "$C" fsck -f -n "$img"
}

# changes in /b only: the fence holds
b_changes() {
	head -c 100000 /dev/urandom >"$TESTDIR/big"
	timeout 10 sh -c "
	echo 'new bytes' >'$mnt/b/new' && cp '$TESTDIR/big' '$mnt/b/big' &&
	stat '$mnt/b/new' >/dev/null && ls '$mnt/b' | grep -q '^new\$' &&
	mv '$mnt/b/old' '$mnt/b/old2' && rm '$mnt/b/old2' && mkdir '$mnt/b/d' &&
	cmp '$TESTDIR/big' '$mnt/b/big'"
}
round fence b_changes held
if [ "$("$C" cat "$img" /b/new)" = "new bytes" ] &&
   "$C" cat "$img" /b/big | cmp -s - "$TESTDIR/big" &&
   ! "$C" stat "$img" /b/old >/dev/null 2>&1; then
	pass fence_changes_on_disk
else
	fail fence_changes_on_disk "$("$C" ls "$img" /b 2>&1 | head -c 300)"
fi

# a change in the root directory, which the check of /a's chunk reads
root_changes() {
	timeout 10 sh -c "echo top >'$mnt/top' && echo more >'$mnt/b/more'"
}
round conflict root_changes "checked again"
if [ "$("$C" cat "$img" /top)" = top ] && [ "$("$C" cat "$img" /b/more)" = more ]; then
	pass conflict_changes_on_disk
else
	fail conflict_changes_on_disk "$("$C" ls "$img" / 2>&1 | head -c 300)"
fi
finish
