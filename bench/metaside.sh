#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/metaside.sh: create / stat / unlink of N files through the chunkfs
# mount and through fuse2fs, side by side in one run on the same machine,
# each from one process (bench/metaops.c: no process start per file).
#
#   bench/metaside.sh [N...]        (root: drops caches; default N = 10000)
#
# Environment: CHUNKFS (binary, default build/chunkfs), RUNS (default 3;
# the median is reported), BENCH_DIR (scratch, default /var/tmp),
# IMG_SIZE (default 2G), CHUNKFS_BEFORE (another chunkfs binary, say the
# build before a change: measured in the same runs, interleaved).  The stat
# pass runs after the caches are dropped, as in bench/run.sh section B.
# Prints one line per N and operation:
#   N OP chunkfs_s fuse2fs_s ratio       (ratio = fuse2fs time / chunkfs time)
# and with CHUNKFS_BEFORE one more, which bench/run.sh skips:
#   # before N OP before_s ratio_before chunkfs_speedup
set -eu
cd "$(dirname "$0")/.."
CHUNKFS=${CHUNKFS:-build/chunkfs}
RUNS=${RUNS:-3}
BEFORE=${CHUNKFS_BEFORE:-}
FSS="chunkfs${BEFORE:+ before} fuse2fs"
IMG_SIZE=${IMG_SIZE:-2G}
[ $# -gt 0 ] || set -- 10000
W=$(mktemp -d "${BENCH_DIR:-/var/tmp}/chunkfs-metaside.XXXXXX")
M=$W/m
PID=
mkdir "$M"
cleanup() {
	if mountpoint -q "$M"; then fusermount3 -u -z "$M" 2>/dev/null || umount -l "$M"; fi
	[ -z "$PID" ] || kill "$PID" 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP
gcc -O2 -Wall -o "$W/metaops" bench/metaops.c

mount_one() {
	local fs=$1
	rm -f "$W/img"
	if [ "$fs" != fuse2fs ]; then
		local bin=$CHUNKFS
		[ "$fs" = chunkfs ] || bin=$BEFORE
		"$bin" mkfs -q "$W/img" "$IMG_SIZE"
		"$bin" mount -f "$W/img" "$M" >>"$W/log" 2>&1 &
	else
		truncate -s "$IMG_SIZE" "$W/img"
		mkfs.ext4 -q -F "$W/img"
		fuse2fs "$W/img" "$M" -f >>"$W/log" 2>&1 &
	fi
	PID=$!
	for _ in $(seq 200); do
		mountpoint -q "$M" && return 0
		sleep 0.05
	done
	echo "metaside: $fs did not mount: $(tail -3 "$W/log")" >&2
	return 1
}

umount_one() {
	fusermount3 -u "$M"
	wait "$PID" || true
	PID=
}

# one OP N -> seconds (metaops prints "OPS SECONDS")
one() {
	timeout 1200 "$W/metaops" "$1" "$M/meta" "$2" | awk '{ print $2 }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

for n in "$@"; do
	for r in $(seq "$RUNS"); do
		for fs in $FSS; do
			mount_one "$fs"
			one create "$n" >>"$W/$fs.$n.create"
			sync
			echo 3 >/proc/sys/vm/drop_caches
			one stat "$n" >>"$W/$fs.$n.stat"
			one unlink "$n" >>"$W/$fs.$n.unlink"
			umount_one
		done
	done
	for op in create stat unlink; do
		c=$(median <"$W/chunkfs.$n.$op")
		f=$(median <"$W/fuse2fs.$n.$op")
		awk -v n="$n" -v op="$op" -v c="$c" -v f="$f" \
			'BEGIN { printf "%d %s %.3f %.3f %.2f\n", n, op, c, f, f / c }'
		[ -n "$BEFORE" ] || continue
		b=$(median <"$W/before.$n.$op")
		awk -v n="$n" -v op="$op" -v c="$c" -v f="$f" -v b="$b" \
			'BEGIN { printf "# before %d %s %.3f %.2f %.2f\n", n, op, b, f / b, b / c }'
	done
done
