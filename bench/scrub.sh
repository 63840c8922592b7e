#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/scrub.sh: the online check (chunkfs scrub) against a metadata
# workload and against the offline check (issue 12's benchmark).
#
#   bench/scrub.sh            (root: drops caches between runs)
#
# 1. A filesystem of CHUNKS chunks holding FILES files in FILE_DIRS
#    top-level directories (spread over the chunks), mounted.
# 2. A metadata workload in a directory of its own (its own chunk):
#    ROUNDS rounds of create + unlink of WORK_FILES files (bench/metaops.c,
#    one process), timed alone, then timed again while `chunkfs scrub -n`
#    checks the whole filesystem over and over.  The drop in its
#    throughput is reported (issue 12: at most 20%).
# 3. One scrub of the idle filesystem (-n, then -p), caches dropped first,
#    against `chunkfs fsck -f -n` of the same image offline.
# e2scrub needs LVM snapshots and xfs_scrub an XFS mount: neither runs on
# an image file here, so they are not compared.
#
# Environment: CHUNKFS (default build/chunkfs), BENCH_DIR (scratch, default
# /var/tmp), CHUNKS (16), IMG_SIZE (4G), FILES (100000), FILE_DIRS (10),
# WORK_FILES (2000), ROUNDS (5), RUNS (3; medians).  With RAW set (bench/run.sh),
# the results are also appended to $RAW/data.tsv as scrub.* keys.
# Prints KEY VALUE lines.
set -eu
cd "$(dirname "$0")/.."
CHUNKFS=$(realpath "${CHUNKFS:-build/chunkfs}")
CHUNKS=${CHUNKS:-16}
IMG_SIZE=${IMG_SIZE:-4G}
FILES=${FILES:-100000}
FILE_DIRS=${FILE_DIRS:-10}
WORK_FILES=${WORK_FILES:-2000}
ROUNDS=${ROUNDS:-5}
RUNS=${RUNS:-3}
W=$(mktemp -d "${BENCH_DIR:-/var/tmp}/chunkfs-scrub.XXXXXX")
M=$W/m
IMG=$W/img
PID=
SPID=
mkdir "$M"
cleanup() {
	[ -z "$SPID" ] || kill "$SPID" 2>/dev/null || true
	if mountpoint -q "$M"; then fusermount3 -u -z "$M" 2>/dev/null || umount -l "$M"; fi
	[ -z "$PID" ] || kill "$PID" 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP
gcc -O2 -Wall -o "$W/metaops" bench/metaops.c

out() {   # KEY VALUE: printed, and recorded for bench/run.sh
	printf '%s %s\n' "$1" "$2"
	if [ -n "${RAW:-}" ]; then printf 'scrub.%s\t%s\n' "$1" "$2" >>"$RAW/data.tsv"; fi
}
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc -l; }
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; }

mount_it() {
	"$CHUNKFS" mount -f "$IMG" "$M" >>"$W/log" 2>&1 &
	PID=$!
	for _ in $(seq 100); do mountpoint -q "$M" && return 0; sleep 0.1; done
	echo "mount failed: $(tail -3 "$W/log")" >&2
	exit 1
}
umount_it() {
	fusermount3 -u "$M"
	wait "$PID" || true
	PID=
}

# ---- 1. the filesystem ----
"$CHUNKFS" mkfs -q -c "$CHUNKS" "$IMG" "$IMG_SIZE"
mount_it
per=$((FILES / FILE_DIRS))
for i in $(seq "$FILE_DIRS"); do
	mkdir "$M/data$i"
	timeout 600 "$W/metaops" create "$M/data$i" "$per" 64 >/dev/null
done
mkdir "$M/work"
out fs "chunks=$CHUNKS files=$FILES work_chunk=$(( $(stat -c %i "$M/work") >> 24 )) cpus=$(nproc)"

# ---- 2. the workload, alone and during scrubs ----
workload() {   # seconds for ROUNDS rounds of create + unlink
	local t0
	t0=$(now)
	for _ in $(seq "$ROUNDS"); do
		timeout 600 "$W/metaops" create "$M/work" "$WORK_FILES" >/dev/null
		timeout 600 "$W/metaops" unlink "$M/work" "$WORK_FILES" >/dev/null
	done
	since "$t0"
}
scrub_loop() {   # scrubs (of chunks $1, "" all) until $W/stop appears
	local n=0 t0
	t0=$(now)
	while [ ! -e "$W/stop" ]; do
		timeout 600 "$CHUNKFS" scrub -n ${1:+-c "$1"} "$M" >"$W/scrub.out" 2>&1 ||
			{ echo "scrub failed: $(tail -3 "$W/scrub.out")" >&2; break; }
		n=$((n + 1))
	done
	echo "$n $(since "$t0")" >"$W/scrubs"
}
# during_scrubs KEY CHUNKS: the workload alone and during scrubs of CHUNKS
# ("" = the whole filesystem), medians of RUNS, and the drop
during_scrubs() {
	local base=() busy=() passes=0 n secs b s ops
	for _ in $(seq "$RUNS"); do
		base+=("$(workload)")
		rm -f "$W/stop"
		scrub_loop "$2" &
		SPID=$!
		busy+=("$(workload)")
		touch "$W/stop"
		wait "$SPID"
		SPID=
		read -r n secs <"$W/scrubs"
		passes=$((passes + n))
	done
	b=$(printf '%s\n' "${base[@]}" | median)
	s=$(printf '%s\n' "${busy[@]}" | median)
	ops=$((ROUNDS * WORK_FILES * 2))
	out "$1.workload_alone_ops_per_s" "$(echo "$ops / $b" | bc -l | xargs printf '%.0f')"
	out "$1.workload_during_scrub_ops_per_s" "$(echo "$ops / $s" | bc -l | xargs printf '%.0f')"
	out "$1.workload_throughput_drop_pct" "$(echo "(1 - $b / $s) * 100" | bc -l | xargs printf '%.1f')"
	out "$1.scrub_passes_during_workload" "$passes"
}
wchunk=$(( $(stat -c %i "$M/work") >> 24 ))
others=$(seq 0 $((CHUNKS - 1)) | grep -vx "$wchunk" | paste -sd, -)
# the chunks the workload does not write (each checked without holding it up)
during_scrubs other_chunks "$others"
# every chunk, the workload's own included (that one with changes held off)
during_scrubs whole_fs ""

# ---- 3. scrub speed, idle, against fsck -f offline ----
sleep 6    # every chunk clean again (clean_after 5 s)
t=()
for _ in $(seq "$RUNS"); do
	drop_caches
	t0=$(now)
	"$CHUNKFS" scrub -n "$M" >/dev/null
	t+=("$(since "$t0")")
done
out scrub_n_idle_s "$(printf '%s\n' "${t[@]}" | median | xargs printf '%.3f')"
drop_caches
t0=$(now)
"$CHUNKFS" scrub -p "$M" >/dev/null
out scrub_p_idle_s "$(since "$t0" | xargs printf '%.3f')"
umount_it
t=()
for _ in $(seq "$RUNS"); do
	drop_caches
	t0=$(now)
	"$CHUNKFS" fsck -f -n "$IMG" >/dev/null
	t+=("$(since "$t0")")
done
out fsck_f_n_offline_s "$(printf '%s\n' "${t[@]}" | median | xargs printf '%.3f')"
t=()
for _ in $(seq "$RUNS"); do
	drop_caches
	t0=$(now)
	"$CHUNKFS" fsck -f -n -j 1 "$IMG" >/dev/null
	t+=("$(since "$t0")")
done
out fsck_f_n_j1_offline_s "$(printf '%s\n' "${t[@]}" | median | xargs printf '%.3f')"
