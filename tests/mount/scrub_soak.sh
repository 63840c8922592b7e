#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# test-timeout: 900
# Online-repair soak (issue 25): the online repair held to the offline
# one.  A populated image (SOAK_FILES files in many directories, spread
# over 8 chunks, with inode clusters), then for each seed:
#   random damage: 8 random bytes over each of SOAK_BLOCKS random
#   allocated blocks (tests/cfsdamage.c blocks: metadata and file data
#   alike, never a superblock or chunk header);
#   the reference: a copy repaired offline (fsck -f -y), and its tree;
#   the mount: every name looked at (find -ls), scrub -y while a
#   workload runs (its errors before the repair ended are the damage's,
#   not counted), scrub -n clean, more workload, which must see no error
#   (files made, in new and in old directories, read back, some removed);
#   umount, then fsck -f -n must be clean (exit 0), and after a remount
#   every file the offline repair left as it was (path, type, size, mode,
#   link target, content) reads back exactly, and so do the workload's
#   files made after the repair.
# SOAK_SEEDS seeds (default 3; make crash-long: 200) from SOAK_SEED (each
# printed: SOAK_SEEDS=1 SOAK_SEED=N replays one); SOAK_FILES (3000),
# SOAK_SIZE (256M) and SOAK_BLOCKS (300) set the scale (make crash-long:
# 30000 files in 2G).
. "$(dirname "$0")/lib.sh"
export LC_ALL=C   # sort and comm agree

C=$CHUNKFS
SEEDS=${SOAK_SEEDS:-3}
FIRST=${SOAK_SEED:-$((RANDOM * 32768 + RANDOM))}
NFILES=${SOAK_FILES:-3000}
NBLOCKS=${SOAK_BLOCKS:-300}
SIZE=${SOAK_SIZE:-256M}
echo "scrub_soak: $SEEDS seeds from SOAK_SEED=$FIRST, $NFILES files in $SIZE, $NBLOCKS blocks damaged"
mount_test soak_setup pop.img
base=$TESTDIR/pop.img
work=$TESTDIR/s.img
ref=$TESTDIR/ref.img
mkdir -p "$TESTDIR/rmnt"
rmnt=$TESTDIR/rmnt
# few inodes in each chunk's table: the files need inode clusters
mkfs_or_finish -c 8 -N 1024 "$base" "$SIZE"

# the tree (tests/mount/soak_tree.py), copied in through the mount as a
# user's cp -a would
src=$TESTDIR/src
TREE=$CHUNKFS_SRC/tests/mount/soak_tree.py
if ! python3 "$TREE" make "$src" "$NFILES" "$FIRST"; then
	fail soak_setup "soak_tree.py make failed"
	finish
fi
mount_fs "$base" "$mnt" || { fail soak_setup "mount failed"; finish; }
if ! timeout 600 cp -a "$src/." "$mnt/"; then
	fail soak_setup "cp -a failed"
	finish
fi
unmount_fs "$mnt"
if ! "$C" fsck -f -n "$base" >"$TESTDIR/setup.fsck" 2>&1; then
	fail soak_setup "the populated image is not clean: $(tail -3 "$TESTDIR/setup.fsck")"
	finish
fi
pass soak_setup
"$C" info "$base" | grep -E '^(Inodes|Inode clusters|Data blocks):' | sed 's/^/  /'

# The tree under a mount point, one line a name (lost+found and the
# workload's names left out): path, type, size (not a directory's: the
# workload adds names), mode, link target, and the content's md5 for a
# regular file (not one of 2 MiB or more, which no file of the tree is:
# damage that made a size plausible but huge, item 4 of issue 25, is
# not read through).
tree() {
	(cd "$1" && timeout 300 find . -path ./lost+found -prune -o -path ./w -prune -o \
		-name 'soak-*' -prune -o -type d -printf '%p %y %m\n' -o -printf '%p %y %s %m %l\n' |
		sort >"$TESTDIR/t.names" &&
		timeout 300 find . -path ./lost+found -prune -o -path ./w -prune -o \
			-name 'soak-*' -prune -o -type f -size -2M -print0 | sort -z |
			timeout 300 xargs -0 -r md5sum | sed 's/^\([0-9a-f]*\)  \(.*\)$/\2 md5 \1/' |
			sort >"$TESTDIR/t.sums") 2>/dev/null
	sort "$TESTDIR/t.names" "$TESTDIR/t.sums"
}

# The workload (soak_tree.py work): $1 the tag of its file names, $2 its
# error log, $3 rounds (none: until $TESTDIR/stop).
workload() {
	python3 "$TREE" work "$mnt" "$1" "$2" "$TESTDIR/stop" ${3:+"$3"}
}

# what the workload after the repair left, to be read back after remount
kept_sums() {
	(cd "$mnt" && find . -name 'soak-after-*' -type f -print0 | sort -z |
		xargs -0 -r md5sum) 2>&1
}

tree_orig=$TESTDIR/orig.tree
mount_fs "$base" "$rmnt" -o ro || { fail soak_setup "read-only mount failed"; finish; }
tree "$rmnt" >"$tree_orig"
unmount_fs "$rmnt"

bad=0
for n in $(seq "$SEEDS"); do
	seed=$((FIRST + n - 1))
	what="seed $seed (SOAK_SEEDS=1 SOAK_SEED=$seed SOAK_FILES=$NFILES SOAK_SIZE=$SIZE SOAK_BLOCKS=$NBLOCKS)"
	echo "scrub_soak: $what"
	ok=1
	cp --sparse=always "$base" "$work"
	if ! "$CFSDAMAGE" "$work" blocks "$seed" "$NBLOCKS" >"$TESTDIR/damaged"; then
		fail "soak_$seed" "cfsdamage failed"
		bad=$((bad + 1))
		continue
	fi
	# the offline repair of the same damage, and its tree
	cp --sparse=always "$work" "$ref"
	timeout 300 "$C" fsck -f -y "$ref" >"$TESTDIR/ref.fsck" 2>&1
	rc=$?
	if [ "$rc" -gt 1 ]; then
		fail "soak_$seed" "offline fsck -f -y exit $rc: $(tail -2 "$TESTDIR/ref.fsck" | tr '\n' '|')"
		bad=$((bad + 1))
		continue
	fi
	mount_fs "$ref" "$rmnt" -o ro || { fail "soak_$seed" "mount of the reference failed"; bad=$((bad + 1)); continue; }
	tree "$rmnt" >"$TESTDIR/ref.tree"
	unmount_fs "$rmnt"
	# untouched: as it was, and so after the offline repair
	comm -12 "$tree_orig" "$TESTDIR/ref.tree" >"$TESTDIR/keep"

	# the online repair, a workload running
	if ! mount_fs "$work" "$mnt"; then
		fail "soak_$seed" "mount of the damaged image failed: $(tail -3 "$DAEMON_LOG" | tr '\n' '|')"
		bad=$((bad + 1))
		continue
	fi
	# every inode looked at first, as a user's ls -lR before the repair:
	# the mount holds them, and each chunk's inode-cluster map, in memory
	timeout 300 find "$mnt" -ls >/dev/null 2>&1
	rm -f "$TESTDIR/stop"
	: >"$TESTDIR/during.err"
	workload during "$TESTDIR/during.err" &
	wpid=$!
	timeout 300 "$C" scrub -y "$mnt" >"$TESTDIR/scrub.out" 2>&1
	rc=$?
	touch "$TESTDIR/stop"
	wait "$wpid"
	tail -1 "$TESTDIR/scrub.out" | sed 's/^/  /'
	if [ "$rc" -gt 1 ]; then
		fail "soak_$seed" "scrub -y exit $rc: $(tail -3 "$TESTDIR/scrub.out" | tr '\n' '|')"
		ok=0
	fi
	if ! timeout 300 "$C" scrub -n "$mnt" >"$TESTDIR/scrub2.out" 2>&1; then
		fail "soak_$seed" "scrub -n after scrub -y: $(grep '\[' "$TESTDIR/scrub2.out" | head -3 | tr '\n' '|')"
		ok=0
	fi
	: >"$TESTDIR/after.err"
	workload after "$TESTDIR/after.err" 300
	if [ -s "$TESTDIR/after.err" ]; then
		fail "soak_$seed" "the workload after the repair: $(head -c 300 "$TESTDIR/after.err")"
		ok=0
	fi
	kept_sums >"$TESTDIR/after.sums"
	unmount_fs "$mnt"
	if [ "$DAEMON_RC" != 0 ]; then
		fail "soak_$seed" "daemon exit $DAEMON_RC: $(tail -3 "$DAEMON_LOG" | tr '\n' '|')"
		ok=0
	fi
	log_clean "soak_${seed}_daemon_log" "$DAEMON_LOG" || ok=0
	if ! "$C" fsck -f -n "$work" >"$TESTDIR/fsck.out" 2>&1; then
		fail "soak_$seed" "fsck -f -n after umount: $(grep '\[' "$TESTDIR/fsck.out" | head -4 | tr '\n' '|')"
		ok=0
	fi

	# every file the damage did not touch reads back as it was
	if mount_fs "$work" "$mnt" -o ro; then
		tree "$mnt" >"$TESTDIR/on.tree"
		comm -23 "$TESTDIR/keep" "$TESTDIR/on.tree" >"$TESTDIR/lost"
		if [ -s "$TESTDIR/lost" ]; then
			fail "soak_$seed" "$(wc -l <"$TESTDIR/lost") untouched names differ after the online repair: $(head -3 "$TESTDIR/lost" | tr '\n' '|')"
			ok=0
		fi
		if [ "$(kept_sums)" != "$(cat "$TESTDIR/after.sums")" ]; then
			fail "soak_$seed" "files written after the repair differ after remount"
			ok=0
		fi
		unmount_fs "$mnt"
	else
		fail "soak_$seed" "remount failed"
		ok=0
	fi
	echo "  $(wc -l <"$TESTDIR/keep") names untouched of $(wc -l <"$tree_orig"); $(wc -l <"$TESTDIR/during.err") workload errors during the repair"
	if [ "$ok" = 1 ]; then
		pass "soak_$seed"
	else
		bad=$((bad + 1))
		# SOAK_SAVE=DIR (by hand): the damaged image, for replay
		[ -z "${SOAK_SAVE:-}" ] || { cp --sparse=always "$base" "$SOAK_SAVE/pop.img" &&
			"$CFSDAMAGE" "$SOAK_SAVE/pop.img" blocks "$seed" "$NBLOCKS" >/dev/null &&
			mv "$SOAK_SAVE/pop.img" "$SOAK_SAVE/seed.$seed.img"; }
	fi
done
echo "scrub_soak: $bad of $SEEDS seeds bad (SOAK_SEED=$FIRST)"
finish
