#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# kill -9 of the daemon while idle chunks are being marked clean
# (clean_after=1) and others stay busy: an untar loop into /u and a churn
# of creates, renames and unlinks in /churn.R, a directory it makes in
# another chunk than the root's.  Each round, at a random instant (seeded, printed):
#  - the check of the dirty chunks checks just those (no escalation to
#    every chunk: bench/results/large section D saw 3-4 dirty chunks make
#    fsck -n check all 64), unless it rebuilt a directory tree (a crash in
#    a split that lost entries naming other chunks looks like damage);
#  - fsck -p repairs alone, and then a forced check finds nothing;
#  - ls -R of the whole tree works, and /churn.R is there when the root's
#    chunk was clean at the crash (the benchmark's lost directory: the
#    root's entry survived, the directory past its busy chunk's stale
#    inode-table watermark did not).
. "$(dirname "$0")/lib.sh"

mount_test crash_clean_mount crash_clean.img
seed=${CHUNKFS_CRASH_SEED:-$((RANDOM * 32768 + RANDOM))}
echo "  seed $seed (CHUNKFS_CRASH_SEED=$seed replays it)"
RANDOM=$seed
rounds=${CHUNKFS_CRASH_CLEAN_ROUNDS:-3}
mkfs_or_finish -c 8 -N 12000 "$img" 256M

# the tree the untar loop unpacks: 6 directories of 60 small files
mkdir -p "$TESTDIR/tree"
for d in 1 2 3 4 5 6; do
	mkdir "$TESTDIR/tree/d$d"
	for f in $(seq 60); do printf 'file %s of %s\n' "$f" "$d" >"$TESTDIR/tree/d$d/f$f"; done
done
tar -cf "$TESTDIR/tree.tar" -C "$TESTDIR/tree" . || { fail tar "cannot make the tarball"; finish; }

# fsck's --json field NAME of $TESTDIR/fsck.json
json_field() {
	sed -n "s/.*\"$1\":\\([a-z0-9]*\\).*/\\1/p" "$TESTDIR/fsck.json"
}

for r in $(seq "$rounds"); do
	if ! mount_fs "$img" "$mnt" -o clean_after=1; then
		fail "round${r}_mount" "$(tail -3 "$DAEMON_LOG")"
		break
	fi
	mkdir -p "$mnt/u"
	wait_clean "$img" 20 || echo "  round $r: still dirty before the workload: $(dirty_chunks "$img")"
	timeout -k 5 120 bash -c 'i=0; while :; do i=$((i + 1)); mkdir "$1/u/$2.$i" &&
		tar -xf "$3" -C "$1/u/$2.$i" || exit 1; done' _ "$mnt" "$r" "$TESTDIR/tree.tar" \
		>/dev/null 2>&1 &
	untar=$!
	# the directory is made by the workload, in a chunk that stays busy
	timeout -k 5 120 bash -c 'mkdir "$1" || exit 1; i=0; while :; do i=$((i + 1));
		f=$1/c$((i % 200)); echo "$i" >"$f" || exit 1;
		[ $((i % 3)) = 0 ] && mv "$f" "$1/r$((i % 40))";
		[ $((i % 7)) = 0 ] && rm -f "$1/r$((i % 40))"; done' _ "$mnt/churn.$r" \
		>/dev/null 2>&1 &
	churn=$!
	sleep "$((2 + RANDOM % 3)).$((RANDOM % 10))"
	# crash once the root's chunk is clean again (its one change, the
	# mkdir of /churn.R, is a second or two old by now), so that the
	# round can say whether /churn.R survived
	for _ in $(seq 60); do
		case ",$(dirty_chunks "$img")," in *,0,*) sleep 0.1 ;; *) break ;; esac
	done
	dirty=$(dirty_chunks "$img")
	stopped=
	kill -0 "$untar" 2>/dev/null || stopped="untar"
	kill -0 "$churn" 2>/dev/null || stopped="$stopped churn"
	kill_daemon
	wait "$untar"
	rc_untar=$?
	wait "$churn"
	rc_churn=$?
	if [ -z "$stopped" ]; then
		pass "round${r}_workload_ran"
	else
		fail "round${r}_workload_ran" "stopped before the crash: $stopped (exit $rc_untar, $rc_churn)"
	fi
	after=$(dirty_chunks "$img")
	root_clean=1
	case ",$after," in *,0,*) root_clean=0 ;; esac
	ndirty=$(echo "$after" | tr ',' '\n' | grep -c .)
	echo "  round $r: dirty at the crash: $after (sampled just before: $dirty)"

	timeout -k 5 120 "$CHUNKFS" fsck -n --json "$img" >"$TESTDIR/fsck.json" 2>"$TESTDIR/fsck.err"
	if [ "$(json_field escalated)" = false ] && [ "$(json_field checked)" = "$ndirty" ]; then
		pass "round${r}_checks_only_dirty_chunks"
	elif [ "$(json_field escalated)" = true ] && grep -q '"code":"DIR_INDEX"' "$TESTDIR/fsck.json"; then
		# entries lost from a tree rebuilt from its leaves: a crash in a
		# split, or damage, which the checker cannot tell apart
		pass "round${r}_checks_only_dirty_chunks"
		echo "  round $r: a directory tree rebuilt: every chunk checked"
	else
		fail "round${r}_checks_only_dirty_chunks" "dirty $after, checked $(json_field checked), escalated $(json_field escalated)"
		timeout -k 5 120 "$CHUNKFS" fsck -n "$img" 2>&1 | grep -E 'DIR_INDEX|ENTRY_INVALID|DIR_COUNTS' | head -5
		cp --sparse=always "$img" "$TESTDIR/escalated.$r.img"
	fi
	timeout -k 5 120 "$CHUNKFS" fsck -p "$img" >"$TESTDIR/preen.out" 2>&1
	rc=$?
	if [ "$rc" -le 1 ] && ! grep -Eq "$_t_san_re" "$TESTDIR/preen.out"; then
		pass "round${r}_preen"
	else
		fail "round${r}_preen" "exit $rc: $(tail -5 "$TESTDIR/preen.out")"
		break
	fi
	if expect_exit 0 "$CHUNKFS" fsck -f -n "$img"; then
		pass "round${r}_forced_check_clean"
	else
		fail "round${r}_forced_check_clean" "$(grep -v '^$' "$ERR" | head -5)"
		break
	fi
	if expect_exit 0 "$CHUNKFS" ls -R "$img" /; then
		pass "round${r}_ls_R"
	else
		fail "round${r}_ls_R" "$(tail -3 "$ERR")"
	fi
	# the root's chunk went dirty when /churn.R was made: clean at the
	# crash, it was marked clean since, which flushed /churn.R
	# the untar trees go between rounds (offline), so the inodes last
	"$CHUNKFS" rm -r "$img" /u >/dev/null 2>&1 || fail "round${r}_rm" "rm -r /u failed"
	if [ "$root_clean" = 0 ]; then
		skip "round${r}_churn_dir_kept" "the root's chunk was still dirty at the crash: /churn.$r may be lost"
	elif "$CHUNKFS" stat "$img" "/churn.$r" >/dev/null 2>&1; then
		pass "round${r}_churn_dir_kept"
	else
		fail "round${r}_churn_dir_kept" "/churn.$r lost, the root's chunk clean at the crash"
	fi
done
finish
