# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# bench/lib.sh: helpers for bench/run.sh.  Sourced, never run.
#
# Globals used: W (scratch directory), RAW (raw results directory), CHUNKFS.
# Every mount made here is recorded in MOUNTS (and its daemon in DAEMONS,
# its loop device in LOOPS); bench_cleanup, run from the EXIT trap, undoes
# them all whatever happened.  Every command that touches a mount runs
# under `timeout`, so a hung filesystem cannot hang the benchmark.

MOUNTS=()
DAEMONS=()
LOOPS=()
WORKERS=()
declare -A MOUNT_KIND=()
TO=${BENCH_TIMEOUT:-600}     # seconds allowed for one measured command

say() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
warn() { printf '[bench %s] WARNING: %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf '[bench] error: %s\n' "$*" >&2; exit 1; }

# rec KEY VALUE: one measurement (several lines per key = several runs)
rec() { printf '%s\t%s\n' "$1" "$2" >>"$RAW/data.tsv"; }
# meta KEY VALUE: a fact about the run (last one wins)
meta() { printf 'meta:%s\t%s\n' "$1" "$2" >>"$RAW/data.tsv"; }

drop_caches() {
	sync
	echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || {
		[ -z "${_warned_drop:-}" ] && warn "cannot drop caches: cold runs are warm"
		_warned_drop=1
	}
}

# timeit_run CMD...: run CMD under bench/timeit.c and set T_WALL, T_RSS,
# T_RC; in the background and waited for, so an interrupt is handled at once
timeit_run() {
	"$TIMEIT" "$W/timeit.out" "$TO" "$@" >"$RAW/last.out" 2>"$RAW/last.err" </dev/null &
	CHILD=$!
	wait "$CHILD"
	T_RC=$?
	CHILD=
	read -r T_WALL T_RSS _ <"$W/timeit.out" 2>/dev/null || { T_WALL=; T_RSS=; }
}

# timed KEY CMD...: run CMD under bench/timeit.c (wall clock around
# fork..wait4, ru_maxrss) with a timeout; record KEY.time (seconds), KEY.rss
# (KiB), KEY.rc and set T_WALL, T_RSS, T_RC.  Output: $RAW/last.out, last.err.
timed() {
	local key=$1
	shift
	timeit_run "$@"
	[ -n "$key" ] || return 0
	[ -n "$T_WALL" ] && rec "$key.time" "$T_WALL"
	[ -n "$T_RSS" ] && rec "$key.rss" "$T_RSS"
	rec "$key.rc" "$T_RC"
	return 0
}

# timev KEY CMD...: one run under /usr/bin/time -v; records KEY.timev_rss,
# its "Maximum resident set size" (KiB)
timev() {
	local key=$1
	shift
	timeout -k 10 "$TO" /usr/bin/time -v -o "$W/time.v" "$@" >/dev/null 2>&1
	local r
	r=$(sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): //p' "$W/time.v" 2>/dev/null)
	[ -n "$r" ] && rec "$key.timev_rss" "$r"
	return 0
}

# wall KEY CMD...: like timed, warning when CMD fails; records KEY.time only
wall() {
	local key=$1
	shift
	timeit_run "$@"
	[ -n "$key" ] && [ -n "$T_WALL" ] && [ "$T_RC" = 0 ] && rec "$key.time" "$T_WALL"
	if [ "$T_RC" != 0 ]; then
		[ -n "$key" ] && rec "$key.fail" 1
		warn "$* exited $T_RC: $(head -c 300 "$RAW/last.err")"
	fi
	return 0
}

is_mounted() {
	local d
	d=$(cd "$1" 2>/dev/null && pwd -P) || return 1
	awk -v d="$d" '$2 == d { f = 1 } END { exit !f }' /proc/self/mounts
}

wait_mounted() {   # DIR PID: until DIR is a mount point (10 s), PID alive
	local i
	for i in $(seq 200); do
		is_mounted "$1" && return 0
		[ -n "${2:-}" ] && ! kill -0 "$2" 2>/dev/null && return 1
		sleep 0.05
	done
	return 1
}

forget() {   # remove a mount point from MOUNTS
	local d keep=()
	for d in "${MOUNTS[@]}"; do [ "$d" = "$1" ] || keep+=("$d"); done
	MOUNTS=("${keep[@]}")
}

# daemon_start KIND DIR COMMAND...: a FUSE daemon run in the foreground
# mode, in the background (so its pid is known: DAEMON_PID), until DIR is
# a mount point; on failure it is killed and 1 returned.
daemon_start() {
	local kind=$1 dir=$2
	shift 2
	mkdir -p "$dir"
	"$@" >>"$RAW/daemon.log" 2>&1 &
	DAEMON_PID=$!
	DAEMONS+=("$DAEMON_PID")
	MOUNTS+=("$dir")
	if ! wait_mounted "$dir" "$DAEMON_PID"; then
		warn "$kind mount at $dir failed: $(tail -3 "$RAW/daemon.log")"
		kill -KILL "$DAEMON_PID" 2>/dev/null
		forget "$dir"
		return 1
	fi
	MOUNT_KIND[$dir]=$kind
	return 0
}

# mount_chunkfs IMG DIR [OPTIONS]
mount_chunkfs() {
	local img=$1 dir=$2 opts=${3:-}
	if [ -n "$opts" ]; then
		daemon_start chunkfs "$dir" "$CHUNKFS" mount -f -o "$opts" "$img" "$dir"
	else
		daemon_start chunkfs "$dir" "$CHUNKFS" mount -f "$img" "$dir"
	fi
}

mount_fuse2fs() {
	daemon_start fuse2fs "$2" fuse2fs "$1" "$2" -f
}

mount_ext4() {
	local img=$1 dir=$2 loop
	mkdir -p "$dir"
	loop=$(losetup -f --show "$img") || { warn "losetup $img failed"; return 1; }
	LOOPS+=("$loop")
	DAEMON_PID=
	MOUNTS+=("$dir")
	if ! timeout 60 mount -t ext4 "$loop" "$dir"; then
		warn "mount $loop failed"
		forget "$dir"
		return 1
	fi
	MOUNT_KIND[$dir]=ext4:$loop
	return 0
}

# umount_fs DIR: clean unmount; waits for the FUSE daemon to finish writing
# (DAEMON_PID of that mount) or detaches the loop device.
umount_fs() {
	local dir=$1 kind=${MOUNT_KIND[$1]:-} pid=${2:-$DAEMON_PID} i
	timeout 120 umount "$dir" 2>/dev/null || timeout 60 fusermount3 -u "$dir" 2>/dev/null ||
		{ warn "unmount of $dir failed; lazy unmount"; umount -l "$dir" 2>/dev/null; }
	forget "$dir"
	if [ -n "$pid" ] && [ "${kind%%:*}" != ext4 ]; then
		for i in $(seq 1200); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.05
		done
		kill -0 "$pid" 2>/dev/null && { warn "daemon $pid still running; killed"; kill -KILL "$pid"; }
		wait "$pid" 2>/dev/null
	fi
	if [ "${kind%%:*}" = ext4 ]; then
		losetup -d "${kind#ext4:}" 2>/dev/null
	fi
	unset "MOUNT_KIND[$dir]"
}

# crash_fs DIR PID: kill -9 the daemon, lazily detach the dead mount
crash_fs() {
	kill -KILL "$2" 2>/dev/null
	wait "$2" 2>/dev/null
	fusermount3 -u -z "$1" 2>/dev/null || umount -l "$1" 2>/dev/null
	forget "$1"
	unset "MOUNT_KIND[$1]"
}

# dirty_count IMG: how many chunks are not clean; dirty_list IMG: "0,3"
dirty_count() { "$CHUNKFS" info "$1" 2>/dev/null | sed -n 's/^Dirty chunks: *//p'; }
dirty_list() {
	"$CHUNKFS" info "$1" 2>/dev/null |
		awk '$1 ~ /^[0-9]+$/ && NF >= 3 && $2 != "clean" { printf "%s%s", s, $1; s = "," }'
}
wait_clean() {   # IMG SECS
	local i
	for i in $(seq $(( $2 * 10 ))); do
		[ "$(dirty_count "$1")" = 0 ] && return 0
		sleep 0.1
	done
	return 1
}

bench_cleanup() {
	local d p l i
	trap '' INT TERM
	[ -n "${CHILD:-}" ] && kill -TERM "$CHILD" 2>/dev/null
	for d in "${MOUNTS[@]}"; do
		[ -n "$d" ] || continue
		fusermount3 -u -z "$d" 2>/dev/null || fusermount -u -z "$d" 2>/dev/null ||
			umount -l "$d" 2>/dev/null
	done
	for p in "${WORKERS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	for p in "${DAEMONS[@]}"; do
		kill -0 "$p" 2>/dev/null || continue
		kill -TERM "$p" 2>/dev/null
		for i in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null
	done
	for l in "${LOOPS[@]}"; do losetup -d "$l" 2>/dev/null; done
	if [ -n "${W:-}" ] && [ -d "$W" ] && [ -z "${BENCH_KEEP:-}" ]; then
		rm -rf "$W"
	fi
}
