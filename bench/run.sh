#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# chunkfs benchmarks side by side with e2fsck, fuse2fs and kernel ext4.
#
#   bench/run.sh [small|medium|large]      (what `make bench SCALE=...` runs)
#
# Writes bench/results/REPORT.md and the PNG plots it embeds; the raw
# measurements stay in bench/results/raw/ (not committed).  Needs root (drop
# caches, loop devices, mounts).  Everything is measured in this one run on
# this machine and reported as ratios.
#
# Environment:
#   CHUNKFS=PATH     the chunkfs binary (default build/chunkfs)
#   RUNS=N           repetitions per measurement, the report takes medians
#                    (default 5 for small, 3 for medium and large)
#   BENCH_DIR=DIR    where images and data sets go (default /var/tmp; must be
#                    a disk, not tmpfs, for cold-cache runs to mean anything)
#   BENCH_KEEP=1     keep the scratch directory at the end
#   BENCH_ONLY=ABCPMDSE run only these sections (A recovery, B I/O, C mkfs, P profiles,
#                    M metadata ops side by side with fuse2fs and FUSE requests per op,
#                    D dirty chunks under three workloads, bench/dirty.sh,
#                    S online scrub against a workload, bench/scrub.sh: raw/scrub.txt,
#                    E everyday work: ext4, fuse2fs, chunkfs on both transports,
#                    bench/everyday.sh)
#   BENCH_E_BIG=0    section E without its copy of the largest data set
#   BENCH_A_SETS="1 2 3"  which data sets section A measures (1: smallest)
#   BENCH_LARGEST_IMAGES=CHUNKFS_IMG,EXT4_IMG  images of the largest data set
#                    made elsewhere: a copy of the first is used, the second
#                    is only read (e2fsck -n), instead of making them
#   BENCH_DATASET=DIR  use DIR (read only) as the largest data set instead of
#                    generating it; it must be what gen_dataset.py makes for
#                    this scale (at large: /work/data/ds1m-like, --top 1000
#                    --big 8 --big-mib 64, 1,000,000 files)
#   BENCH_NO_DEPS=1  do not try to install missing packages
#   BENCH_RESULTS=DIR  write the report there instead of bench/results
set -uo pipefail
# The whole script is one compound command, so bash reads all of it before
# running any: editing this file during a run cannot derail the run.
{

cd "$(dirname "$0")/.."
ROOT=$(pwd)
BENCH=$ROOT/bench
SCALE=${1:-${SCALE:-small}}
CHUNKFS=${CHUNKFS:-build/chunkfs}
case $CHUNKFS in /*) ;; *) CHUNKFS=$ROOT/$CHUNKFS ;; esac
RUNS=${RUNS:-}
ONLY=${BENCH_ONLY:-ABCPMDSE}
RESULTS=${BENCH_RESULTS:-$BENCH/results}
case $RESULTS in /*) ;; *) RESULTS=$ROOT/$RESULTS ;; esac
RAW=$RESULTS/raw
# shellcheck source=lib.sh
. "$BENCH/lib.sh"

# ---- scale -----------------------------------------------------------------
#   A_FILES/A_IMG  the three data sets (small files) and their image sizes
#   A_BIG x A_BIGMIB  large files (MiB, +-50%) in each data set
#   B_*            the I/O section: image size, sequential MiB, random MiB
#                  (4 KiB operations), files for create/stat/unlink, files of
#                  64 KiB per writer for the 4 concurrent writers
#   E_*            everyday work: image size, files created/stat'ed/unlinked,
#                  files of the source-like tree copied, untarred, walked
case $SCALE in
small)
	A_FILES=(2000 4000 8000); A_IMG=(1G 2G 4G); A_BIG=2; A_BIGMIB=16
	B_IMG=2G; B_SEQ=256; B_RAND=16; B_N=10000; B_WF=200; M_N=(10000)
	E_IMG=4G; E_N=5000; E_DSF=8000 ;;
medium)
	A_FILES=(25000 50000 100000); A_IMG=(4G 8G 16G); A_BIG=3; A_BIGMIB=32
	B_IMG=4G; B_SEQ=1024; B_RAND=64; B_N=100000; B_WF=1000; M_N=(10000 100000)
	E_IMG=8G; E_N=20000; E_DSF=36000 ;;
large)
	# the issue's data set: 1,000 files per top-level directory, 8 files of
	# 64 MiB; the 1M one in 16 GiB with 1.4M inodes (the default 16 GiB
	# image has 1,048,576, too few for the crash workloads on top)
	A_FILES=(250000 500000 1000000); A_IMG=(8G 16G 16G); A_BIG=8; A_BIGMIB=64
	A_TOP=(250 500 1000); A_INODES=(0 0 1400000)
	B_IMG=8G; B_SEQ=1024; B_RAND=128; B_N=100000; B_WF=2000; M_N=(10000 100000)
	E_IMG=8G; E_N=20000; E_DSF=36000 ;;
*) die "SCALE must be small, medium or large (not $SCALE)" ;;
esac
[ -n "${A_TOP:-}" ] || A_TOP=(80 80 80)
[ -n "${A_INODES:-}" ] || A_INODES=(0 0 0)
[ -n "$RUNS" ] || { [ "$SCALE" = small ] && RUNS=5 || RUNS=3; }
SWEEP=(1 2 4 8 16 32 64)
MKFS_SIZES=(1G 64G 1T)
CHUNKS=64

[ "$(id -u)" = 0 ] || die "needs root (drop caches, loop devices, mounts); try sudo make bench"
[ -x "$CHUNKFS" ] || die "$CHUNKFS is not built (run make)"

# ---- dependencies ------------------------------------------------------------
need_cmds() {
	local c missing=()
	for c in e2fsck mkfs.ext4 fuse2fs fio gnuplot fusermount3 losetup python3 gcc; do
		command -v "$c" >/dev/null 2>&1 || missing+=("$c")
	done
	[ -x /usr/bin/time ] || missing+=(time)
	echo "${missing[*]}"
}
if [ -n "$(need_cmds)" ] && [ -z "${BENCH_NO_DEPS:-}" ]; then
	say "installing what is missing: $(need_cmds)"
	bash "$ROOT/scripts/deps.sh" e2fsprogs fuse2fs fio gnuplot-nox time python3 strace ||
		warn "scripts/deps.sh failed"
fi
[ -z "$(need_cmds)" ] || die "missing: $(need_cmds) (install them, or run scripts/deps.sh fio gnuplot-nox time)"

# ---- scratch space and cleanup -------------------------------------------------
mkdir -p "${BENCH_DIR:-/var/tmp}"
W=$(mktemp -d "${BENCH_DIR:-/var/tmp}/chunkfs-bench.XXXXXX") || die "mktemp failed"
SHM=$(mktemp -d /dev/shm/chunkfs-bench.XXXXXX 2>/dev/null) || SHM=$W/shm
mkdir -p "$SHM"
trap 'bench_cleanup; rm -rf "$SHM"' EXIT
trap 'warn "interrupted: cleaning up"; exit 130' INT TERM HUP
rm -rf "$RAW"
mkdir -p "$RAW"
: >"$RAW/data.tsv"
M=$W/mnt
# The data sets are the source of copies, not what is measured: on tmpfs
# when it has room (copies read them at memory speed, dropping caches does
# not touch them, removing them is instant), else in the scratch directory.
need_kib=$(( A_FILES[2] * 8 + A_BIG * A_BIGMIB * 1536 + 262144 ))
[ -n "${BENCH_DATASET:-}" ] && need_kib=$(( A_FILES[1] * 8 + A_BIG * A_BIGMIB * 1536 + 262144 ))
if [ "$SHM" != "$W/shm" ] && [ "$(df -k --output=avail "$SHM" | tail -1)" -gt $(( need_kib * 2 )) ]; then
	DSDIR=$SHM
else
	DSDIR=$W
fi
T_START=$EPOCHREALTIME

say "scale $SCALE, $RUNS runs each, scratch $W, chunkfs $CHUNKFS"
meta scale "$SCALE"
meta runs "$RUNS"
meta date "$(date -u '+%Y-%m-%d %H:%M UTC')"
meta kernel "$(uname -r)"
meta cpu "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) x $(nproc)"
meta loadavg_start "$(cut -d' ' -f1-3 /proc/loadavg)"
meta mem "$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
meta disk "$(findmnt -no FSTYPE -T "$W") on $(findmnt -no SOURCE -T "$W")"
meta dsdir "$(findmnt -no FSTYPE -T "$DSDIR")"
meta chunkfs_rev "$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet HEAD -- src include tools 2>/dev/null || echo ' + uncommitted changes in src/include/tools')"
meta chunkfs_bin "$CHUNKFS"
meta e2fsprogs "$(e2fsck -V 2>&1 | head -1)"
meta fuse2fs "$(dpkg-query -W -f='${Version}' fuse2fs 2>/dev/null)"
meta fio "$(fio --version)"
meta nproc "$(nproc)"
meta a_files "${A_FILES[*]}"
meta a_img "${A_IMG[*]}"

# helper programs
gcc -O2 -Wall -o "$W/metaops" "$BENCH/metaops.c" || die "cannot build bench/metaops.c"
gcc -O2 -Wall -o "$W/timeit" "$BENCH/timeit.c" || die "cannot build bench/timeit.c"
METAOPS=$W/metaops
TIMEIT=$W/timeit

# Run ahead of other work on the machine (builds, tests): everything started
# from here, FUSE daemons included, inherits the priority.
renice -n -10 $$ >/dev/null 2>&1 && meta nice "-10"

# ---- is the mount usable? ----------------------------------------------------------
MOUNT_OK=1
MOUNT_WHY=
check_mount() {
	local img=$W/probe.img pid
	if [ ! -c /dev/fuse ]; then MOUNT_WHY="/dev/fuse is missing"; return 1; fi
	"$CHUNKFS" mkfs -q -c 4 "$img" 256M || { MOUNT_WHY="mkfs failed"; return 1; }
	mount_chunkfs "$img" "$M" || { MOUNT_WHY="chunkfs mount failed"; return 1; }
	pid=$DAEMON_PID
	if ! timeout 60 bash -c 'mkdir -p "$1/a/b/c" && echo x >"$1/a/b/c/f" && cp -a "$2" "$1/a/src" &&
		[ "$(cat "$1/a/b/c/f")" = x ]' _ "$M" "$BENCH"; then
		MOUNT_WHY="the mount failed a smoke test (mkdir -p, write, cp -a): $(tail -2 "$RAW/daemon.log" | tr '\n' ' ')"
		crash_fs "$M" "$pid"
		return 1
	fi
	umount_fs "$M" "$pid"
	"$CHUNKFS" fsck -f -n "$img" >/dev/null 2>&1 || { MOUNT_WHY="fsck found problems after a clean unmount"; return 1; }
	rm -f "$img"
}
if ! check_mount; then
	MOUNT_OK=0
	warn "the chunkfs mount is not usable ($MOUNT_WHY): section A uses chunkfs put -r and an offline writer, section B skips chunkfs"
fi
meta mount_ok "$MOUNT_OK"
meta mount_why "$MOUNT_WHY"

# Warm the data set into the page cache (so copies measure the target).
warm_tree() { find "$1" -type f -exec cat {} + >/dev/null 2>&1; }

# populate_chunkfs N IMG DS KEY: data set N (in DS) into a fresh image,
# through the mount when it works (else put -r).  Sets POP_METHOD.
populate_chunkfs() {
	local n=$1 img=$2 ds=$3 key=$4 pid
	if [ "$MOUNT_OK" = 1 ] && mount_chunkfs "$img" "$M" clean_after=1; then
		pid=$DAEMON_PID
		wall "$key" cp -a "$ds/." "$M/"
		local rc=$T_RC
		umount_fs "$M" "$pid"
		if [ "$rc" = 0 ]; then POP_METHOD=mount; return 0; fi
		warn "cp -a through the mount failed; using chunkfs put -r"
		mkfs_chunkfs "$n" "$img" || return 1
	fi
	# put -r SRC DIR copies SRC into DIR: one put per top-level entry
	local t0=$EPOCHREALTIME e rc=0
	for e in "$ds"/*; do
		timeout -k 10 "$TO" "$CHUNKFS" put -r "$img" "$e" / >>"$RAW/put.log" 2>&1 || rc=1
	done
	[ -n "$key" ] && rec "$key.time" "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.6f", b - a }')"
	POP_METHOD=put
	[ "$rc" = 0 ]
}

# dataset N: data set N (1..3) of this scale in $DSDIR/dsN, generated when
# missing (the largest may be BENCH_DATASET, used in place, read only).
# Sets DS, DS_FILES, DS_DIRS, DS_BYTES and DS_OWN (0: not ours to delete).
dataset() {
	local i=$(( $1 - 1 ))
	DS=$DSDIR/ds$1
	DS_OWN=1
	if [ "$1" = "${#A_FILES[@]}" ] && [ -n "${BENCH_DATASET:-}" ]; then
		DS=${BENCH_DATASET%/}
		DS_OWN=0
		[ -d "$DS" ] || die "BENCH_DATASET=$DS is not a directory"
		# gen_dataset.py's own "files dirs bytes" line when it is beside it
		if [ -s "$DS.stats" ]; then
			cp "$DS.stats" "$DSDIR/ds$1.stats"
		elif [ ! -s "$DSDIR/ds$1.stats" ]; then
			find "$DS" -mindepth 1 -printf '%y %s\n' |
				awk '$1 == "f" { f++; b += $2 } $1 == "d" { d++ } END { print f, d, b }' >"$DSDIR/ds$1.stats"
		fi
	elif [ ! -d "$DS" ]; then
		python3 "$BENCH/gen_dataset.py" --top "${A_TOP[$i]}" --big "$A_BIG" --big-mib "$A_BIGMIB" \
			"$DS" "${A_FILES[$i]}" >"$DSDIR/ds$1.stats" || die "gen_dataset failed"
	fi
	read -r DS_FILES DS_DIRS DS_BYTES <"$DSDIR/ds$1.stats"
}

# mkfs_chunkfs N IMG: a fresh image for data set N
mkfs_chunkfs() {
	local i=$(( $1 - 1 )) n=()
	[ "${A_INODES[$i]}" = 0 ] || n=(-N "${A_INODES[$i]}")
	"$CHUNKFS" mkfs -q -F -c "$CHUNKS" "${n[@]}" "$2" "${A_IMG[$i]}"
}

# crash_workload IMG MODE ARG...: mount IMG (clean_after=0.5), let every
# chunk go clean, start one writer per ARG, and kill -9 the daemon once as
# many chunks as writers are dirty (after at least 1 s, at most 10 s; an
# fsync in each writer's place writes its changes back, so that its chunks
# are dirty as during a write-back), leaving the image as after a crash.
# Sets CRASH_METHOD.
#   fresh DIR...    metaops churn (create, write, rename, delete) in each new
#                   directory DIR: the chunk where new directories go
#   append LIST...  appends to the existing files named in each LIST (image
#                   paths, all in one of the fullest chunks: full_chunk_lists)
crash_workload() {
	local img=$1 mode=$2 pid d i want=$(( $# - 2 )) n
	shift 2
	WORKERS=()
	if [ "$MOUNT_OK" = 1 ] && mount_chunkfs "$img" "$M" clean_after=0.5; then
		pid=$DAEMON_PID
		[ "$mode" = fresh ] && for d in "$@"; do mkdir -p "$M$d"; done
		wait_clean "$img" 30 || warn "chunks still dirty before the crash workload: $(dirty_list "$img")"
		for d in "$@"; do
			if [ "$mode" = fresh ]; then
				timeout -k 5 300 "$METAOPS" churn "$M$d/churn" >/dev/null 2>&1 &
			else
				sed "s|^|$M|" "$d" >"$d.m"
				timeout -k 5 300 python3 "$BENCH/workloads.py" append "$d.m" >/dev/null 2>>"$RAW/workload.err" &
			fi
			WORKERS+=($!)
		done
		for i in $(seq 100); do
			sleep 0.1
			# Changes are marked on disk only when written back
			# (FORMAT.md 18): write them back, as a crash during a
			# write-back finds them, and crash before the checkpoint
			for d in "$@"; do
				if [ "$mode" = fresh ]; then
					sync "$M$d" 2>/dev/null
				else
					sync "$M$(head -n 1 "$d")" 2>/dev/null
				fi
			done
			n=$(dirty_count "$img")
			[ "${n:-0}" -ge "$want" ] && [ "$i" -ge 10 ] && break
		done
		crash_fs "$M" "$pid"
		CRASH_METHOD=mount
	else
		# Offline: one `chunkfs put -r` per directory, killed mid-copy.
		local src=$SHM/crashsrc
		[ -d "$src" ] || { mkdir -p "$src"; for i in $(seq 3000); do head -c 4096 /dev/urandom >"$src/f$i"; done; }
		[ "$mode" = fresh ] || set -- /zz_crash_append
		for d in "$@"; do "$CHUNKFS" mkdir -p "$img" "$d" 2>/dev/null; done
		# one writer at a time holds the image; kill each mid-copy
		for d in "$@"; do
			"$CHUNKFS" put -r "$img" "$src" "$d/churn" >/dev/null 2>&1 &
			local wp=$!
			sleep 0.3
			kill -KILL "$wp" 2>/dev/null
			wait "$wp" 2>/dev/null
		done
		CRASH_METHOD=offline-put
	fi
	# TERM: timeout passes it on to the writer it runs (KILL would orphan it)
	for d in "${WORKERS[@]}"; do kill -TERM "$d" 2>/dev/null; wait "$d" 2>/dev/null; done
	WORKERS=()
}

# full_chunk_lists IMG K: K lists of up to 200 files, each in one of the K
# fullest chunks, in $W/full.CHUNK; sets FULL_LISTS and FULL_CHUNKS ("7,8")
full_chunk_lists() {
	local img=$1 k=$2 c p
	"$CHUNKFS" info --json "$img" >"$W/info.json" &&
		"$CHUNKFS" ls -R -i -l "$img" / >"$W/ls.txt" || return 1
	rm -f "$W"/full.*
	python3 "$BENCH/workloads.py" full-chunks "$W/info.json" "$W/ls.txt" "$k" 200 >"$W/full.txt" ||
		return 1
	while read -r c p; do echo "$p" >>"$W/full.$c"; done <"$W/full.txt"
	FULL_LISTS=("$W"/full.[0-9]*)
	FULL_CHUNKS=$(cut -d' ' -f1 "$W/full.txt" | uniq | paste -sd,)
	[ "${#FULL_LISTS[@]}" = "$k" ]
}

# grow_one_chunk IMG COPY: COPY is IMG grown by one chunk (chunkfs resize,
# offline), the chunk the allocator gives the next new directory: the
# nearly empty chunk of issue 13's target 2 that a data set spread over
# every chunk has none of.  IMG stays as it was for the cases after.
grow_one_chunk() {
	local img=$1 copy=$2 size chunk
	cp --sparse=always "$img" "$copy" || return 1
	size=$(stat -c %s "$copy")
	chunk=$("$CHUNKFS" info --json "$copy" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(d["blocks_per_chunk"] * d["block_size"])') || return 1
	# whole chunks are added: one and a half chunks' worth adds one
	"$CHUNKFS" resize "$copy" $(( size + chunk + chunk / 2 )) >"$RAW/grow.out" 2>&1
}

# chunk_fill IMG LIST: "used/inodes" of the chunks in LIST ("3,7")
chunk_fill() {
	"$CHUNKFS" info --json "$1" | python3 -c '
import json, sys
cs = json.load(sys.stdin)["chunks"]
want = [int(x) for x in sys.argv[1].split(",") if x]
print(" ".join("%d:%d/%d" % (c["index"], c["used_inodes"], c["inodes"]) for c in cs if c["index"] in want))' "$2"
}

# repair IMG: bring a crashed image back to clean for the next round
repair() {
	"$CHUNKFS" fsck -p "$1" >"$RAW/repair.out" 2>&1
	local rc=$?
	if [ "$rc" -ge 4 ]; then
		"$CHUNKFS" fsck -y "$1" >>"$RAW/repair.out" 2>&1
		rc=$?
	fi
	return $(( rc >= 4 ))
}

# fsck_internal KEY: the seconds chunkfs fsck says it took ("... in 0.012s")
fsck_internal() {
	local s
	s=$(sed -n 's/.* in \([0-9.]*\)s$/\1/p' "$RAW/last.out" | tail -1)
	[ -n "$s" ] && rec "$1.internal" "$s"
	return 0
}

# ==== A. recovery ===================================================================
# make_images N: data set N into a fresh ext4 image ($W/aN.ext4, mkfs.ext4 -d)
# and a fresh 64-chunk chunkfs image ($W/aN.chunkfs, copied in); records
# the data set's figures and the copy times
make_images() {
	local n=$1 i=$(( $1 - 1 )) ic=$W/a$1.chunkfs ie=$W/a$1.ext4
	say "A $n/3: data set of ${A_FILES[$i]} small files + $A_BIG large ones"
	dataset "$n"
	meta "A.$n.files" "$DS_FILES"; meta "A.$n.dirs" "$DS_DIRS"; meta "A.$n.bytes" "$DS_BYTES"
	meta "A.$n.img" "${A_IMG[$i]}"
	[ "$DS_OWN" = 1 ] || meta "A.$n.dataset" "$DS (BENCH_DATASET)"
	say "A $n/3: ext4 image (${A_IMG[$i]}, mkfs.ext4 -d) and 64-chunk chunkfs image (copied in)"
	rm -f "$ie" "$ic"
	if [ "$n" = "${#A_FILES[@]}" ] && [ -n "${BENCH_LARGEST_IMAGES:-}" ]; then
		# images made elsewhere from this data set: a copy of the chunkfs one
		# (crashed and repaired here); the ext4 one is only read (e2fsck -n)
		cp --sparse=always "${BENCH_LARGEST_IMAGES%,*}" "$ic" &&
			ln -s "${BENCH_LARGEST_IMAGES#*,}" "$ie" || die "cannot use BENCH_LARGEST_IMAGES"
		meta "A.$n.populate" "a copy of ${BENCH_LARGEST_IMAGES%,*} (chunkfs put -r) and ${BENCH_LARGEST_IMAGES#*,} (mkfs.ext4 -d, read only) (BENCH_LARGEST_IMAGES)"
	else
		warm_tree "$DS"
		truncate -s "${A_IMG[$i]}" "$ie"
		wall "A.$n.populate.ext4" mkfs.ext4 -q -F -d "$DS" "$ie"
		[ "$T_RC" = 0 ] || die "mkfs.ext4 -d failed"
		mkfs_chunkfs "$n" "$ic" || die "chunkfs mkfs failed"
		populate_chunkfs "$n" "$ic" "$DS" "A.$n.populate.chunkfs" || die "could not fill the chunkfs image"
		meta "A.$n.populate" "$POP_METHOD"
	fi
	"$CHUNKFS" info "$ic" >"$RAW/A$n.info"
	meta "A.$n.cfs_used_blocks" "$(sed -n 's/^Data blocks: *\([0-9]*\) used.*/\1/p' "$RAW/A$n.info")"
	meta "A.$n.cfs_xrefs" "$(sed -n 's/^Cross-chunk refs: *//p' "$RAW/A$n.info")"
	meta "A.$n.cfs_conts" "$(sed -n 's/^Continuations: *//p' "$RAW/A$n.info")"
	meta "A.$n.cfs_inodes" "$(sed -n 's/^Inodes: *//p' "$RAW/A$n.info")"
	meta "A.$n.cfs_inodes_per_chunk" "$(sed -n 's/^Inodes per chunk: *//p' "$RAW/A$n.info")"
	# sanity: both clean
	"$CHUNKFS" fsck -f -n "$ic" >"$RAW/A$n.fsck.out" 2>&1
	meta "A.$n.cfs_fsck_clean_rc" "$?"
	e2fsck -f -n "$ie" >"$RAW/A$n.e2fsck.out" 2>&1
	meta "A.$n.e2fsck_rc" "$?"
}

# crash_measure N KEY: after crash_workload on data set N's image: which
# chunks are dirty and how full they are, chunkfs fsck -n cold and warm
# (KEY: cfs_crash for the fresh directory, cfs_crash_full1/2 for appends in
# 1 or 2 full chunks), then the repair with fsck -p and a forced check
crash_measure() {
	local n=$1 key=$2 ic=${3:-$W/a$1.chunkfs} r dl
	dl=$(dirty_list "$ic")
	meta "A.$n.$key.method" "$CRASH_METHOD"
	meta "A.$n.$key.dirty" "$dl"
	meta "A.$n.$key.fill" "$(chunk_fill "$ic" "$dl")"
	say "  dirty after the crash: chunk(s) ${dl:-none} (used/inodes: $(chunk_fill "$ic" "$dl"))"
	"$CHUNKFS" fsck -n "$ic" >/dev/null 2>&1
	for r in $(seq "$RUNS"); do
		drop_caches; timed "A.$n.$key.cold" "$CHUNKFS" fsck -n "$ic"
		fsck_internal "A.$n.$key.cold"
		timed "A.$n.$key.warm" "$CHUNKFS" fsck -n "$ic"
		fsck_internal "A.$n.$key.warm"
	done
	head -c 2000 "$RAW/last.out" >"$RAW/A$n.$key-fsck.out"
	"$CHUNKFS" fsck -n --json "$ic" >"$RAW/A$n.$key.json" 2>/dev/null
	meta "A.$n.$key.checked_inodes" "$(sed -n 's/.*"inodes":\([0-9]*\).*/\1/p' "$RAW/A$n.$key.json")"
	if [ "$key" = cfs_crash ] && [ "$n" = 3 ] && command -v strace >/dev/null 2>&1; then
		drop_caches
		strace -f -c -S calls -o "$RAW/strace-crash-fsck.txt" "$CHUNKFS" fsck -n "$ic" >/dev/null 2>&1
	fi
	drop_caches; timev "A.$n.$key.cold" "$CHUNKFS" fsck -n "$ic"
	timed "A.$n.${key}_preen" "$CHUNKFS" fsck -p "$ic"
	meta "A.$n.${key}_preen_rc" "$T_RC"
	meta "A.$n.${key}_preen_msg" "$(tail -1 "$RAW/last.out")"
	"$CHUNKFS" fsck -f -n "$ic" >"$RAW/A$n.$key.after-repair.out" 2>&1
	meta "A.$n.${key}_after_repair_rc" "$?"
}

section_a() {
	local n ic ie r k
	for n in ${BENCH_A_SETS:-1 2 3}; do
		ic=$W/a$n.chunkfs
		ie=$W/a$n.ext4
		make_images "$n"

		say "A $n/3: full checks, $RUNS runs cold and warm"
		e2fsck -f -n "$ie" >/dev/null 2>&1; "$CHUNKFS" fsck -f -n "$ic" >/dev/null 2>&1
		for r in $(seq "$RUNS"); do
			drop_caches; timed "A.$n.e2fsck.cold" e2fsck -f -n "$ie"; local te=$T_WALL
			drop_caches; timed "A.$n.cfs_full.cold" "$CHUNKFS" fsck -f -n "$ic"; local tc=$T_WALL
			fsck_internal "A.$n.cfs_full.cold"
			drop_caches; timed "A.$n.cfs_full_j1.cold" "$CHUNKFS" fsck -f -n -j 1 "$ic"
			timed "A.$n.e2fsck.warm" e2fsck -f -n "$ie"
			timed "A.$n.cfs_full.warm" "$CHUNKFS" fsck -f -n "$ic"
			fsck_internal "A.$n.cfs_full.warm"
			timed "A.$n.cfs_full_j1.warm" "$CHUNKFS" fsck -f -n -j 1 "$ic"
			if [ "$r" = 1 ]; then
				drop_caches; timev "A.$n.e2fsck.cold" e2fsck -f -n "$ie"
				drop_caches; timev "A.$n.cfs_full.cold" "$CHUNKFS" fsck -f -n "$ic"
				drop_caches; timev "A.$n.cfs_full_j1.cold" "$CHUNKFS" fsck -f -n -j 1 "$ic"
			fi
			printf '  run %d: e2fsck -f %.3fs, chunkfs fsck -f %.3fs (cold)\n' "$r" "$te" "$tc"
		done

		say "A $n/3: crash during a workload confined to a new directory /zz_crash"
		crash_workload "$ic" fresh /zz_crash
		crash_measure "$n" cfs_crash
		for k in 1 2; do
			say "A $n/3: crash during appends to existing files in $k full chunk(s)"
			if ! full_chunk_lists "$ic" "$k"; then
				warn "no $k chunk(s) with 20 files in data set $n: crash skipped"
				continue
			fi
			crash_workload "$ic" append "${FULL_LISTS[@]}"
			meta "A.$n.cfs_crash_full$k.chunks" "$FULL_CHUNKS"
			crash_measure "$n" "cfs_crash_full$k"
		done

		say "A $n/3: crash in a new directory in a nearly empty chunk (a copy grown by one chunk)"
		if grow_one_chunk "$ic" "$W/grown.img"; then
			crash_workload "$W/grown.img" fresh /zz_crash_empty
			crash_measure "$n" cfs_crash_empty "$W/grown.img"
		else
			warn "chunkfs resize of a copy of data set $n failed: crash skipped"
		fi
		rm -f "$W/grown.img"

		if [ "$n" = 3 ]; then
			case $ONLY in *P*) profile_fsck "$ic" "$ie" ;; esac
			sweep "$ic"
		fi
		# section D works on the largest images; A's e2fsck figure is its reference
		case "$n $ONLY" in 3\ *D*) rm -f "$ie" ;; *) rm -f "$ie" "$ic" ;; esac
		case "$n $ONLY" in 1\ *|3\ *D*) ;; *) [ "$DS_OWN" = 0 ] || rm -rf "$DS" ;; esac
	done
}

# Profiles of the checkers on the largest image (section P's share of A):
# perf of chunkfs fsck -f -j 1 and of e2fsck -f, warm, five runs each; the
# system calls of a cold chunkfs fsck -n after a crash.
profile_fsck() {
	local ic=$1 ie=$2
	if perf stat -e instructions true >/dev/null 2>&1; then
		say "P: perf of chunkfs fsck -f -n -j 1 and e2fsck -f -n (largest data set, warm)"
		perf record -q -F 5000 -g -o "$W/perf.fsck" -- bash -c \
			'for i in 1 2 3 4 5; do "$1" fsck -f -n -j 1 "$2"; done' _ "$CHUNKFS" "$ic" >/dev/null 2>&1
		perf report -i "$W/perf.fsck" --stdio --no-children --comm chunkfs --sort dso,symbol \
			--percent-limit 1.5 -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -20 >"$RAW/profile-fsck.txt"
		perf record -q -F 5000 -g -o "$W/perf.e2fsck" -- bash -c \
			'for i in 1 2 3 4 5; do e2fsck -f -n "$1"; done' _ "$ie" >/dev/null 2>&1
		perf report -i "$W/perf.e2fsck" --stdio --no-children --comm e2fsck --sort dso,symbol \
			--percent-limit 3 -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -10 >"$RAW/profile-e2fsck.txt"
		meta profiler perf
		if command -v strace >/dev/null 2>&1; then
			drop_caches
			strace -f -c -S calls -o "$RAW/strace-fsck-full.txt" "$CHUNKFS" fsck -f -n "$ic" >/dev/null 2>&1
			drop_caches
			strace -f -c -S calls -o "$RAW/strace-e2fsck-full.txt" e2fsck -f -n "$ie" >/dev/null 2>&1
		fi
	else
		say "P: callgrind of chunkfs fsck -f -n -j 1 (perf does not work here)"
		valgrind --tool=callgrind --callgrind-out-file="$W/cg.out" "$CHUNKFS" fsck -f -n -j 1 "$ic" >/dev/null 2>&1
		callgrind_annotate "$W/cg.out" 2>/dev/null | sed -n '/Ir/,$p' | head -30 >"$RAW/profile-fsck.txt"
		meta profiler callgrind
	fi
}

# fsck time against the number of dirty chunks, on the largest image
sweep() {
	local img=$1 pid d c k r i
	declare -A dir_of=()
	say "A sweep: which top-level directory lives in which chunk"
	if [ "$MOUNT_OK" = 1 ] && mount_chunkfs "$img" "$M"; then
		pid=$DAEMON_PID
		for d in "$M"/*/; do
			d=${d%/}
			c=$(( $(stat -c %i "$d") >> 24 ))
			[ -n "${dir_of[$c]:-}" ] || dir_of[$c]=/${d##*/}
		done
		for i in $(seq 0 200); do
			[ "${#dir_of[@]}" -ge "$CHUNKS" ] && break
			mkdir "$M/sweep$i"
			c=$(( $(stat -c %i "$M/sweep$i") >> 24 ))
			[ -n "${dir_of[$c]:-}" ] || dir_of[$c]=/sweep$i
		done
		umount_fs "$M" "$pid"
	else
		for i in $(seq 0 $(( CHUNKS - 1 ))); do
			"$CHUNKFS" mkdir "$img" "/sweep$i" 2>/dev/null
			c=$(( $("$CHUNKFS" stat "$img" "/sweep$i" | sed -n 's/.*[Ii]node:* *\([0-9]*\).*/\1/p' | head -1) >> 24 ))
			dir_of[$c]=/sweep$i
		done
	fi
	meta sweep_chunks_covered "${#dir_of[@]}"
	local chunks_sorted=("${!dir_of[@]}")
	for k in "${SWEEP[@]}"; do
		[ "$k" -le "${#dir_of[@]}" ] || continue
		local dirs=()
		for c in "${chunks_sorted[@]:0:$k}"; do dirs+=("${dir_of[$c]}"); done
		crash_workload "$img" fresh "${dirs[@]}"
		local nd
		nd=$(dirty_count "$img")
		meta "S.$k.dirty" "$nd"
		say "A sweep: $k writer(s) killed, $nd chunk(s) dirty"
		"$CHUNKFS" fsck -n "$img" >/dev/null 2>&1
		for r in $(seq "$RUNS"); do
			drop_caches; timed "S.$k.cold" "$CHUNKFS" fsck -n "$img"
			timed "S.$k.warm" "$CHUNKFS" fsck -n "$img"
		done
		repair "$img" || warn "repair after the sweep step $k failed: $(tail -2 "$RAW/repair.out")"
	done
}

# ==== B. I/O through the mount ========================================================
b_mount() {   # FS IMG: mount it at $M, sets BPID
	case $1 in
	chunkfs) mount_chunkfs "$2" "$M" ;;
	fuse2fs) mount_fuse2fs "$2" "$M" ;;
	ext4) mount_ext4 "$2" "$M" ;;
	esac
	BPID=$DAEMON_PID
}
b_umount() { umount_fs "$M" "$BPID"; }
b_remount() { b_umount; drop_caches; b_mount "$1" "$2"; }

# CPU seconds (user + system, all threads) used so far by the daemon BPID
dcpu() {
	[ -n "${BPID:-}" ] && [ -r "/proc/$BPID/stat" ] || { echo 0; return; }
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.2f", ($12 + $13) / hz }' "/proc/$BPID/stat"
}
# bw KEY CMD...: wall KEY CMD..., plus KEY.dcpu, the daemon's CPU time meanwhile
bw() {
	local key=$1 c0
	shift
	c0=$(dcpu)
	wall "$key" "$@"
	[ -n "${BPID:-}" ] && rec "$key.dcpu" "$(awk -v a="$c0" -v b="$(dcpu)" 'BEGIN { printf "%.2f", b - a }')"
	return 0
}

# metaops result "OPS SECONDS" -> record KEY.time SECONDS (and KEY.dcpu)
b_metaops() {
	local key=$1 c0
	shift
	c0=$(dcpu)
	wall "" "$METAOPS" "$@"
	local s
	s=$(awk '{ print $2 }' "$RAW/last.out")
	if [ "$T_RC" = 0 ] && [ -n "$s" ]; then rec "$key.time" "$s"; else rec "$key.fail" 1; fi
	[ -n "${BPID:-}" ] && rec "$key.dcpu" "$(awk -v a="$c0" -v b="$(dcpu)" 'BEGIN { printf "%.2f", b - a }')"
	return 0
}

section_b() {
	local fs r img ds fss=() pid
	dataset 1
	ds=$DS
	warm_tree "$ds"
	meta b_img "$B_IMG"; meta b_seq_mib "$B_SEQ"; meta b_rand_mib "$B_RAND"
	meta b_n "$B_N"; meta b_wf "$B_WF"
	meta b_ds_files "$(find "$ds" -type f | wc -l)"
	meta b_ds_bytes "$(du -sb "$ds" | cut -f1)"
	head -c "$(( B_SEQ << 20 ))" /dev/urandom >"$SHM/seq.src"
	[ "$MOUNT_OK" = 1 ] && fss+=(chunkfs)
	fss+=(fuse2fs ext4)
	for r in $(seq "$RUNS"); do
		for fs in "${fss[@]}"; do
			say "B run $r/$RUNS: $fs"
			img=$W/b.$fs
			rm -f "$img"
			if [ "$fs" = chunkfs ]; then
				"$CHUNKFS" mkfs -q -c "$CHUNKS" "$img" "$B_IMG" || die "chunkfs mkfs failed"
			else
				truncate -s "$B_IMG" "$img"
				mkfs.ext4 -q -F "$img" || die "mkfs.ext4 failed"
			fi
			b_mount "$fs" "$img" || { warn "$fs: mount failed, skipped"; rec "B.$fs.mountfail" 1; continue; }
			drop_caches
			bw "B.$fs.seqwrite" dd if="$SHM/seq.src" of="$M/seq" bs=1M conv=fsync status=none
			b_remount "$fs" "$img" || { rec "B.$fs.mountfail" 1; continue; }
			bw "B.$fs.seqread" dd if="$M/seq" of=/dev/null bs=1M status=none
			b_remount "$fs" "$img" || { rec "B.$fs.mountfail" 1; continue; }
			bw "B.$fs.randread" fio --name=randread --filename="$M/seq" --rw=randread --bs=4k \
				--ioengine=psync --size="${B_SEQ}M" --io_size="${B_RAND}M" --norandommap \
				--randrepeat=1 --invalidate=1 --output-format=terse
			bw "B.$fs.randwrite" fio --name=randwrite --filename="$M/seq" --rw=randwrite --bs=4k \
				--ioengine=psync --size="${B_SEQ}M" --io_size="${B_RAND}M" --norandommap \
				--randrepeat=1 --end_fsync=1 --output-format=terse
			b_metaops "B.$fs.create" create "$M/meta" "$B_N"
			drop_caches
			b_metaops "B.$fs.stat" stat "$M/meta" "$B_N"
			b_metaops "B.$fs.unlink" unlink "$M/meta" "$B_N"
			bw "B.$fs.cpa" bash -c 'cp -a "$1" "$2/ds" && sync -f "$2/ds"' _ "$ds" "$M"
			b_remount "$fs" "$img" || { rec "B.$fs.mountfail" 1; continue; }
			bw "B.$fs.find" find "$M/ds"
			b_remount "$fs" "$img" || { rec "B.$fs.mountfail" 1; continue; }
			bw "B.$fs.du" du -s "$M/ds"
			bw "B.$fs.writers4" bash -c 'for i in 1 2 3 4; do "$1" create "$2/w$i" "$3" 65536 & done; wait' \
				_ "$METAOPS" "$M" "$B_WF"
			b_umount
			rm -f "$img"
		done
	done
}

# ==== C. mkfs ===========================================================================
section_c() {
	local s r img=$W/mkfs.img
	for s in "${MKFS_SIZES[@]}"; do
		say "C: mkfs of a $s sparse image"
		for r in $(seq "$RUNS"); do
			rm -f "$img"
			drop_caches
			timed "C.$s.chunkfs" "$CHUNKFS" mkfs -q "$img" "$s"
			sync
			rec "C.$s.chunkfs.bytes" "$(du --block-size=1 "$img" | cut -f1)"
			[ "$r" = 1 ] && meta "C.$s.chunkfs_chunks" "$("$CHUNKFS" info "$img" | sed -n 's/^Chunks: *//p')"
			rm -f "$img"
			truncate -s "$s" "$img"
			drop_caches
			timed "C.$s.ext4" mkfs.ext4 -q -F "$img"
			sync
			rec "C.$s.ext4.bytes" "$(du --block-size=1 "$img" | cut -f1)"
			rm -f "$img"
		done
	done
}

# ==== P. profiles ======================================================================
# perf of the mount daemon, phase by phase, for the workloads of section B
# (the checkers are profiled in section A, on the largest image).
perf_phase() {   # NAME PID CMD...: perf record -p PID while CMD runs
	local name=$1 pid=$2 perfpid
	shift 2
	perf record -q -F 5000 -g -p "$pid" -o "$W/perf.$name" >/dev/null 2>&1 &
	perfpid=$!
	sleep 0.3
	timeout 300 "$@" >/dev/null 2>&1
	kill -INT "$perfpid" 2>/dev/null
	wait "$perfpid" 2>/dev/null
	perf report -i "$W/perf.$name" --stdio --no-children --sort dso,symbol --percent-limit 2 \
		-g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -16 >"$RAW/profile-$name.txt"
	perf report -i "$W/perf.$name" --stdio --no-children --sort dso -g none 2>/dev/null |
		grep -v '^#' | grep -v '^$' | head -6 >"$RAW/profile-$name-dso.txt"
}

section_p() {
	local ds img=$W/p.chunkfs e=$W/p.ext4 pid
	perf stat -e instructions true >/dev/null 2>&1 || { say "P: perf does not work here; mount profiles skipped"; return; }
	dataset 1
	ds=$DS
	[ -f "$SHM/seq.src" ] || head -c "$(( B_SEQ << 20 ))" /dev/urandom >"$SHM/seq.src"
	"$CHUNKFS" mkfs -q -c "$CHUNKS" "$img" "$B_IMG"
	truncate -s "$B_IMG" "$e"; mkfs.ext4 -q -F "$e"
	local fs
	for fs in chunkfs fuse2fs; do
		[ "$fs" = chunkfs ] && [ "$MOUNT_OK" != 1 ] && continue
		local im=$img
		[ "$fs" = fuse2fs ] && im=$e
		b_mount "$fs" "$im" || continue
		say "P: perf of the $fs daemon: create, stat, unlink, cp -a, find, sequential write"
		perf_phase "$fs-create" "$BPID" "$METAOPS" create "$M/pm" "$B_N"
		drop_caches
		perf_phase "$fs-stat" "$BPID" "$METAOPS" stat "$M/pm" "$B_N"
		perf_phase "$fs-unlink" "$BPID" "$METAOPS" unlink "$M/pm" "$B_N"
		perf_phase "$fs-cpa" "$BPID" cp -a "$ds" "$M/ds"
		drop_caches
		perf_phase "$fs-find" "$BPID" find "$M/ds"
		perf_phase "$fs-seqwrite" "$BPID" dd if="$SHM/seq.src" of="$M/pseq" bs=1M conv=fsync status=none
		b_umount
	done
	rm -f "$img" "$e"

	# Two experiments that explain the profiles: the FUSE thread pool's cost
	# on serial metadata work (max_threads=1 against the default), and the
	# daemon's system calls during the sequential write and read.
	[ "$MOUNT_OK" = 1 ] || return
	local mt opt
	for mt in 1 default; do
		opt=
		[ "$mt" = 1 ] && opt=max_threads=1
		"$CHUNKFS" mkfs -q -c "$CHUNKS" "$img" "$B_IMG"
		mount_chunkfs "$img" "$M" "$opt" || continue
		pid=$DAEMON_PID
		say "P: create/stat/unlink with max_threads=$mt"
		local ph
		for ph in create stat unlink; do
			[ "$ph" = stat ] && drop_caches
			wall "" "$METAOPS" "$ph" "$M/pm" "$B_N"
			[ "$T_RC" = 0 ] && rec "P.mt_$mt.$ph.time" "$(awk '{ print $2 }' "$RAW/last.out")"
		done
		if [ "$mt" = default ] && command -v strace >/dev/null 2>&1; then
			say "P: system calls of the daemon during the sequential write and read"
			strace -f -c -S calls -p "$pid" -o "$RAW/strace-seqwrite.txt" 2>/dev/null &
			local sp=$!
			sleep 0.5
			timeout 300 dd if="$SHM/seq.src" of="$M/pseq" bs=1M conv=fsync status=none
			kill -INT "$sp"; wait "$sp" 2>/dev/null
			umount_fs "$M" "$pid"
			drop_caches
			mount_chunkfs "$img" "$M" || continue
			pid=$DAEMON_PID
			strace -f -c -S calls -p "$pid" -o "$RAW/strace-seqread.txt" 2>/dev/null &
			sp=$!
			sleep 0.5
			timeout 300 dd if="$M/pseq" of=/dev/null bs=1M status=none
			kill -INT "$sp"; wait "$sp" 2>/dev/null
		fi
		umount_fs "$M" "$pid"
		rm -f "$img"
	done
}

# ==== M. metadata operations side by side (issue 13 item 4) ==========================
# bench/metaside.sh: create / stat (cold) / unlink of N files from one process,
# chunkfs and fuse2fs in turn, RUNS times each (it reports medians); and
# bench/fuse_requests.sh: the FUSE requests the kernel sends per operation.
section_m() {
	local n nn op c f r
	for n in "${M_N[@]}"; do
		say "M: create/stat/unlink of $n files, chunkfs and fuse2fs"
		if ! CHUNKFS=$CHUNKFS RUNS=$RUNS BENCH_DIR=$W IMG_SIZE=$B_IMG \
			bash "$BENCH/metaside.sh" "$n" >"$RAW/metaside.$n" 2>>"$RAW/daemon.log"; then
			warn "bench/metaside.sh $n failed"
			continue
		fi
		while read -r nn op c f r; do
			[[ $nn =~ ^[0-9]+$ ]] || continue
			rec "M.$nn.$op.chunkfs" "$c"
			rec "M.$nn.$op.fuse2fs" "$f"
		done <"$RAW/metaside.$n"
	done
	say "M: FUSE requests per operation"
	bash "$BENCH/fuse_requests.sh" "$CHUNKFS" 500 >"$RAW/fuse_requests.txt" 2>>"$RAW/daemon.log" ||
		warn "bench/fuse_requests.sh failed"
}

# ==== D. dirty chunks under load (bench/dirty.sh) ===================================
# On the largest data set's chunkfs image (section A leaves it; made here when
# A did not run), with the e2fsck -f -n cold time of the same data as the
# reference: A's median, or measured here.
section_d() {
	local n=${#A_FILES[@]} ic ie r
	ic=$W/a$n.chunkfs
	if [ ! -f "$ic" ]; then
		make_images "$n"
		ie=$W/a$n.ext4
		for r in $(seq "$RUNS"); do drop_caches; timed "A.$n.e2fsck.cold" e2fsck -f -n "$ie"; done
		rm -f "$ie"
	fi
	dataset "$n"
	. "$BENCH/dirty.sh"
	dirty_study "$ic" "$DS"
	rm -f "$ic"
}

# Scrub of the whole filesystem while a metadata workload runs in another
# chunk (issue 12's benchmark); its own table goes to raw/scrub.txt.
section_s() {
	BENCH_DIR=$W CHUNKFS=$CHUNKFS bash "$BENCH/scrub.sh" >"$RAW/scrub.txt" 2>>"$RAW/daemon.log" ||
		warn "bench/scrub.sh failed (see $RAW/scrub.txt)"
}

# ==== E. everyday work (bench/everyday.sh) =============================================
section_e() {
	. "$BENCH/everyday.sh"
	everyday_study
}

# section X FUNCTION: run it, recording how long it took (the report says)
section() {
	local t0=$EPOCHREALTIME
	"$2"
	meta "section_$1_seconds" "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')"
}
case $ONLY in *A*) section A section_a ;; esac
case $ONLY in *B*) section B section_b ;; esac
case $ONLY in *C*) section C section_c ;; esac
case $ONLY in *P*) section P section_p ;; esac
case $ONLY in *M*) section M section_m ;; esac
case $ONLY in *D*) section D section_d ;; esac
case $ONLY in *S*) section S section_s ;; esac
case $ONLY in *E*) section E section_e ;; esac

meta loadavg_end "$(cut -d' ' -f1-3 /proc/loadavg)"
meta total_seconds "$(awk -v a="$T_START" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }')"
say "writing $RESULTS/REPORT.md"
python3 "$BENCH/report.py" "$RAW" "$RESULTS" || die "report.py failed"
say "done in $(( ${EPOCHREALTIME%.*} - ${T_START%.*} )) s: $RESULTS/REPORT.md"
exit 0
}
