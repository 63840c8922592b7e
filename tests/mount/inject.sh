#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# test-timeout: 600
# Random damage to a mounted filesystem, repaired online (issue 12): each
# round flips random bits of one random metadata block (tests/cfsdamage.c
# meta: header, bitmaps, inode table, extent, directory and xattr blocks)
# of a chunk the workload does not use, behind the daemon's back, half the
# time with its checksum recomputed so that only the checker's other rules
# can see it; then `chunkfs scrub -y`.  Each round must be either
#   detected and repaired: scrub -y exits 1, and a scrub -n after it finds
#   the filesystem clean (exit 0); or
#   provably harmless: scrub -y exits 0 (the check of the disk finds
#   nothing) and every file reads back as before (names, types, sizes,
#   modes and contents through the mount).
# Meanwhile a workload writes and reads back files in a chunk of its own
# and must see no error; after umount, fsck -f -n is clean.
# INJECT_ROUNDS rounds (default 20; make crash-long: 200), INJECT_SEED.
. "$(dirname "$0")/lib.sh"

C=$CHUNKFS
ROUNDS=${INJECT_ROUNDS:-20}
SEED=${INJECT_SEED:-$((RANDOM * 32768 + RANDOM))}
echo "inject: $ROUNDS rounds, INJECT_SEED=$SEED"
mount_test inject_mount inject.img
mkfs_or_finish -c 6 "$img" 96M

# a tree on the chunks to damage: files of a few sizes (inline, one block,
# many blocks), a big directory, symlinks, an xattr
src=$TESTDIR/src
mkdir -p "$src/w"
for d in a b c d; do
	mkdir -p "$src/$d/sub" "$src/$d/big"
	for i in $(seq 12); do head -c $((i * 700)) /dev/urandom >"$src/$d/f$i"; done
	head -c 300000 /dev/urandom >"$src/$d/sub/large"
	for i in $(seq 150); do echo "$d $i" >"$src/$d/big/n$i"; done
	ln -s f1 "$src/$d/link"
done
"$C" put -r "$img" "$src/a" /a && "$C" put -r "$img" "$src/b" /b &&
	"$C" put -r "$img" "$src/c" /c && "$C" put -r "$img" "$src/d" /d &&
	"$C" mkdir "$img" /w || { fail setup "put failed"; finish; }
wchunk=$(( $("$C" stat "$img" /w | awk '/Inode:/ { print $2; exit }') >> 24 ))
rchunk=$(( $("$C" stat "$img" / | awk '/Inode:/ { print $2; exit }') >> 24 ))
targets=()
for d in a b c d; do
	c=$(( $("$C" stat "$img" /$d | awk '/Inode:/ { print $2; exit }') >> 24 ))
	[ "$c" != "$wchunk" ] && [ "$c" != "$rchunk" ] && targets+=("$c")
done
targets=($(printf '%s\n' "${targets[@]}" | sort -u))
if [ "${#targets[@]}" = 0 ]; then
	fail setup "no chunk apart from the workload's and the root's"
	finish
fi
mount_or_finish inject_mount -o clean_after=0.5

# the tree as the mount shows it: type, size, mode and content of each
tree() {
	(cd "$mnt" && timeout 60 find a b c d -printf '%p %y %s %m\n' | sort &&
		timeout 60 find a b c d -type f -print0 | sort -z | xargs -0 md5sum) 2>&1
}
workload() {
	local i=0
	: >"$TESTDIR/work.err"
	while [ ! -e "$TESTDIR/stop" ]; do
		i=$((i + 1))
		{ head -c $((i % 9000 + 1)) /dev/zero | tr '\0' x >"$mnt/w/f$i" &&
		  [ "$(wc -c <"$mnt/w/f$i")" = $((i % 9000 + 1)) ] &&
		  { [ $((i % 4)) = 0 ] || rm "$mnt/w/f$i"; }; } 2>>"$TESTDIR/work.err" ||
			echo "op $i failed" >>"$TESTDIR/work.err"
	done
}
rm -f "$TESTDIR/stop"
workload &
wpid=$!

RANDOM=$SEED
repaired=0 harmless=0 bad=0
tree >"$TESTDIR/ref"
for r in $(seq "$ROUNDS"); do
	c=${targets[$((RANDOM % ${#targets[@]}))]}
	s=$((RANDOM * 32768 + RANDOM))
	reseal=
	[ $((RANDOM % 2)) = 0 ] && reseal=reseal
	what=$("$CFSDAMAGE" "$img" meta "$c" "$s" $reseal) ||
		{ fail "inject_round_$r" "cfsdamage failed"; bad=$((bad + 1)); continue; }
	# INJECT_SAVE=DIR (by hand): the damaged image of each round, for replay
	[ -z "${INJECT_SAVE:-}" ] || cp --sparse=always "$img" "$INJECT_SAVE/round.$r.img"
	timeout 120 "$C" scrub -y "$mnt" >"$TESTDIR/round.out" 2>&1
	rc=$?
	case $rc in
	1)
		if timeout 120 "$C" scrub -n "$mnt" >"$TESTDIR/after.out" 2>&1; then
			repaired=$((repaired + 1))
		else
			bad=$((bad + 1))
			fail "inject_round_$r" "chunk $c $what ${reseal:-sealed-wrong}: repaired (exit 1) but scrub -n after: $(grep '\[' "$TESTDIR/after.out" | head -3)"
		fi
		;;
	0)
		tree >"$TESTDIR/now"
		if cmp -s "$TESTDIR/ref" "$TESTDIR/now"; then
			harmless=$((harmless + 1))
		else
			bad=$((bad + 1))
			fail "inject_round_$r" "chunk $c $what ${reseal:-}: scrub found nothing, the tree changed: $(diff "$TESTDIR/ref" "$TESTDIR/now" | head -4 | tr '\n' '|')"
		fi
		;;
	*)
		bad=$((bad + 1))
		fail "inject_round_$r" "chunk $c $what ${reseal:-}: scrub -y exit $rc: $(tail -4 "$TESTDIR/round.out" | tr '\n' '|')"
		;;
	esac
	# what a repair changed (a cleared inode, lost+found) is the new reference
	tree >"$TESTDIR/ref"
done
echo "inject: $repaired detected and repaired, $harmless harmless, $bad bad of $ROUNDS (INJECT_SEED=$SEED)"
[ "$bad" = 0 ] && pass inject_every_round_repaired_or_harmless
touch "$TESTDIR/stop"
wait "$wpid"
if [ -s "$TESTDIR/work.err" ]; then
	fail inject_workload_unaffected "$(head -c 300 "$TESTDIR/work.err")"
else
	pass inject_workload_unaffected
fi
unmount_fs "$mnt"
log_clean daemon_log_clean "$DAEMON_LOG" && pass daemon_log_clean
check_exit inject_fsck_clean_after 0 "$C" fsck -f -n "$img"
# nothing the daemon cached hid a damage the rounds called harmless: the
# tree read afresh from the disk is the last one seen
mount_or_finish inject_remount
tree >"$TESTDIR/now"
if cmp -s "$TESTDIR/ref" "$TESTDIR/now"; then
	pass inject_tree_same_after_remount
else
	fail inject_tree_same_after_remount "$(diff "$TESTDIR/ref" "$TESTDIR/now" | head -4 | tr '\n' '|')"
fi
unmount_fs "$mnt"
finish
