#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# kill -9 of the daemon under a random stress workload, then recovery with
# nobody to ask (issue 15).  Each round: mount, four processes run
# `fsop stress` over eight top-level directories (in different chunks):
# creates, writes, appends, truncates, renames and links across
# directories, mkdir/rmdir, and every 64th step a file that is fsync'ed
# (with its directory) and only then listed as durable; at a random moment
# the daemon is killed with SIGKILL.  Then:
#  - `chunkfs mount` (its own preen check, without -o nocheck) succeeds;
#  - every durable file reads back exactly through that mount;
#  - after unmounting, a forced `chunkfs fsck -f -n` finds nothing.
# The image carries over from round to round; each round starts by
# removing the last round's files once they are verified.
# CHUNKFS_KILL_ROUNDS (default 3; make crash-long runs 300),
# CHUNKFS_KILL_SEED replays a run: it is printed first; the daemon's
# cache is CHUNKFS_KILL_CACHE (default 256K: -o cache_size=).
. "$(dirname "$0")/lib.sh"

need_fuse kill_stress_mount

# A small cache in the daemon, so that write-back interleaves with the
# workload and a kill leaves half-written operations on the disk.
CACHE=${CHUNKFS_KILL_CACHE:-256K}

ROUNDS=${CHUNKFS_KILL_ROUNDS:-3}
SEED=${CHUNKFS_KILL_SEED:-$(( $(date +%s%N) % 1000000 ))}
echo "  seed $SEED (CHUNKFS_KILL_SEED=$SEED replays it), $ROUNDS rounds"
RANDOM=$SEED

img=$TESTDIR/stress.img
mnt=$PUB/mnt
man=$TESTDIR/durable.list
mkdir "$mnt"
: >"$man"
"$CHUNKFS" mkfs -q -c 32 "$img" 1G || { fail mkfs "mkfs failed"; finish; }

# round N: returns non-zero (having failed something) to stop the rounds
round() {
	local r=$1 w pids=() own shared ms out

	if ! mount_fs "$img" "$mnt" -o cache_size="$CACHE"; then
		fail "round_${r}_mount" "the mount (with its preen check) failed: $(tail -n 20 "$DAEMON_LOG")"
		"$CHUNKFS" fsck -n -f "$img" 2>&1 | head -n 30 | sed 's/^/    /'
		return 1
	fi
	grep -E 'checked|problem' "$DAEMON_LOG" | sed 's/^/    /'
	if [ "$r" -gt 1 ]; then
		out=$(printf 'durable_check %s => OK\n' "$man" | timeout -k 5 300 "$FSOP" -C "$mnt" 2>&1)
		if [ -n "$out" ]; then
			fail "round_${r}_fsynced_files_intact" "$out"
			return 1
		fi
	fi
	# verified: start over, so that hundreds of rounds fit in the image
	if ! timeout -k 5 300 rm -rf "$mnt"/s[0-7]; then
		fail "round_${r}_remove_tree" "rm -rf of the last round's files failed"
		return 1
	fi
	: >"$man"
	for w in 0 1 2 3 4 5 6 7; do
		mkdir -p "$mnt/s$w"
	done
	for w in 1 2 3 4; do
		own=s$(( (w * 2) % 8 ))
		shared=s$(( (w * 2 + 3) % 8 ))
		printf 'stress %s %s 60 %d %s\n' "$own" "$shared" $((SEED * 10 + r * 100 + w)) "$man" |
			timeout -k 5 90 "$FSOP" -C "$mnt" >/dev/null 2>&1 &
		pids+=($!)
	done
	ms=$(( 300 + RANDOM % 6000 ))
	sleep "$((ms / 1000)).$(printf %03d $((ms % 1000)))"
	kill -KILL "$DAEMON_PID"
	wait "$DAEMON_PID" 2>/dev/null
	fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt"
	forget_mount "$mnt"
	wait "${pids[@]}" 2>/dev/null   # the workers fail with ENOTCONN and end
	echo "  round $r: killed after ${ms} ms, dirty chunks: $(dirty_chunks "$img"), $(wc -l <"$man") fsync'ed files"
	wait_unlocked "$img"
	return 0
}

ok=1
for r in $(seq "$ROUNDS"); do
	round "$r" || { ok=0; break; }
done
# the last kill's recovery, then the checks of the last round
if [ "$ok" = 1 ]; then
	r=$((ROUNDS + 1))
	if ! mount_fs "$img" "$mnt" -o cache_size="$CACHE"; then
		fail "final_mount" "the mount (with its preen check) failed: $(tail -n 20 "$DAEMON_LOG")"
		ok=0
	else
		grep -E 'checked|problem' "$DAEMON_LOG" | sed 's/^/    /'
		out=$(printf 'durable_check %s => OK\n' "$man" | timeout -k 5 300 "$FSOP" -C "$mnt" 2>&1)
		[ -z "$out" ] || { fail fsynced_files_intact "$out"; ok=0; }
		unmount_fs "$mnt"
		log_clean daemon_log "$DAEMON_LOG" || ok=0
	fi
fi
[ "$ok" = 1 ] && pass "kill_9_rounds_recovered_by_preen ($ROUNDS rounds, seed $SEED)"
if [ "$ok" = 1 ]; then
	if timeout 300 "$CHUNKFS" fsck -f -n "$img" >"$TESTDIR/fsck.out" 2>&1; then
		pass forced_check_clean
	else
		fail forced_check_clean "$(head -n 20 "$TESTDIR/fsck.out")"
	fi
fi
finish
