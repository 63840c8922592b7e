# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# tests/mount/lib.sh: helpers for the mount tests.  Sourced, never run.
#
# A mount test is a bash script tests/mount/NAME.sh, run like a CLI test
# (tests/cli/lib.sh: CHUNKFS, TESTDIR, CHUNKFS_SRC; pass/fail/skip/finish).
# tests/run.sh (make check) runs each like the CLI scripts.
# By hand:  CHUNKFS=build/chunkfs bash tests/mount/NAME.sh
#
# Every mount made through mount_fs (or added to MOUNTS) is undone at exit whatever
# happens (fusermount3 -u, then umount -l; daemons still alive are killed),
# and every command that touches a mount should run under `timeout` (the
# helpers here do), so a hung filesystem cannot hang the run.
#
# Functions:
#   need_fuse NAME       SKIP (loudly) and exit unless /dev/fuse and
#                        fusermount3 are there; builds the helpers
#   mount_fs IMG DIR [MOUNT-ARGS...]
#                        mount in the foreground daemon mode (-f), in the
#                        background; sets DAEMON_PID and DAEMON_LOG
#   unmount_fs DIR       unmount, wait for the daemon; sets DAEMON_RC
#   forget_mount DIR     stop tracking DIR (it was unmounted otherwise)
#   wait_unlocked IMG    wait until no process holds IMG's lock
#   dirty_chunks IMG     print the chunks not clean, "0,3" ("" if none)
#   wait_clean IMG SECS  wait until every chunk is clean (status 1 if not)
#   log_clean NAME LOG   fail NAME if LOG holds a sanitizer report
#   mount_test NAME FILE need_fuse NAME; img=$TESTDIR/FILE and an empty
#                        mount point mnt=$PUB/mnt
#   mkfs_or_finish ARGS... chunkfs mkfs -q ARGS; fail mkfs and finish if
#                        it fails
#   mount_or_finish NAME [MOUNT-ARGS...]
#                        mount $img on $mnt: pass NAME, or fail it and finish
#   kill_daemon          kill -9 the daemon DAEMON_PID, detach its dead mount
#                        on $mnt
#   daemon_mount [ARGS...] IMG
#                        `chunkfs mount ARGS IMG $mnt` in daemon mode (its
#                        stderr in $ERR): status 0 if it exits 0 and $mnt
#                        is mounted; a mount made is undone at exit
#   daemon_unmount IMG   umount $mnt, wait until IMG's lock is free
#   unmount_ok NAME      unmount $mnt: NAME passes if the daemon exits 0,
#                        daemon_log_clean if its log has no sanitizer report
#   consistent NAME IMG  NAME passes if cfscheck finds IMG consistent
#   unmount_checked      unmount_ok unmount, then every chunk clean
#                        (all_clean_after_unmount) and consistent
#                        image_consistent
#   fsop_run PREFIX DIR [CMD-PREFIX...] < SCRIPT
#                        run tests/mount/fsop.c's script in DIR (as
#                        CMD-PREFIX, e.g. setpriv ...), counting its PASS
#                        and FAIL lines
#
# Variables: PUB is a world-readable scratch directory (mount points and
# helper binaries live there: run.sh's TESTDIR is private to root, and
# tests run programs as an unprivileged user); FSOP, CFSCHECK and
# CFSDAMAGE (tests/cfsdamage.c: damage through the format layer, never by
# hand-written offsets) are the helper binaries; "${NOBODY[@]}" CMD runs CMD as uid/gid 65534, no groups.

_m_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
_m_own_testdir=
# cli/lib.sh changes into TESTDIR: a relative CHUNKFS must be made absolute
if [ -n "${CHUNKFS:-}" ] && [ "${CHUNKFS#/}" = "$CHUNKFS" ] && [ -e "$CHUNKFS" ]; then
	CHUNKFS=$(cd "$(dirname "$CHUNKFS")" && pwd)/$(basename "$CHUNKFS")
fi
if [ -z "${TESTDIR:-}" ]; then
	TESTDIR=$(mktemp -d "${TMPDIR:-/tmp}/chunkfs-mount-test.XXXXXX") || exit 1
	_m_own_testdir=$TESTDIR
fi
# shellcheck source=../cli/lib.sh
. "$_m_lib_dir/../cli/lib.sh"

MOUNTS=()
DAEMONS=()
LOOPS=()
PUB=$(mktemp -d /tmp/chunkfs-mount.XXXXXX) || exit 1
chmod 755 "$PUB"
FSOP=$PUB/fsop
CFSCHECK=$PUB/cfscheck
CFSDAMAGE=$PUB/cfsdamage
_m_nlog=0

_m_cleanup() {
	local d p i
	# a mount whose daemon died can sit under a later one on the same
	# directory: unmount until nothing is left there
	for d in "${MOUNTS[@]}"; do
		for i in 1 2 3 4; do
			fusermount3 -u -z "$d" 2>/dev/null || umount -l "$d" 2>/dev/null || break
			mountpoint -q "$d" 2>/dev/null || break
		done
	done
	for p in "${DAEMONS[@]}"; do
		kill -0 "$p" 2>/dev/null || continue
		kill -TERM "$p" 2>/dev/null
		for i in $(seq 50); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$p" 2>/dev/null
	done
	for d in "${LOOPS[@]}"; do
		losetup -d "$d" 2>/dev/null
	done
	rm -rf "$PUB"
	if [ -n "$_m_own_testdir" ]; then
		cd / && rm -rf "$_m_own_testdir"
	fi
}
trap _m_cleanup EXIT
trap 'exit 143' TERM INT HUP

# loop_attach FILE: a loop device over FILE in LOOP (detached at exit);
# without one, returns 1 with the reason in LOOP_WHY.
loop_attach() {
	LOOP=
	if ! command -v losetup >/dev/null; then
		LOOP_WHY="no losetup"
		return 1
	fi
	if ! LOOP=$(losetup -f --show "$1" 2>"$TESTDIR/loop.err"); then
		LOOP=
		LOOP_WHY="no loop device: $(cat "$TESTDIR/loop.err")"
		return 1
	fi
	LOOPS+=("$LOOP")
}

# loop_detach: detach LOOP now, and forget it, so that the exit cleanup
# cannot detach a device another test has been given meanwhile.
loop_detach() {
	local d keep=()
	for d in "${LOOPS[@]}"; do [ "$d" = "$LOOP" ] || keep+=("$d"); done
	LOOPS=("${keep[@]}")
	losetup -d "$LOOP" && LOOP=
}

# Build the C helpers.  fsop and cfsdamage are sanitized like the chunkfs
# under test; cfscheck links the optimised library when there is one (the check of a
# big image under ASan takes long, and the library's own tests run it
# sanitized anyway).
_m_build_helpers() {
	local bdir lib flags=(-std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O1 -g)
	bdir=$(dirname "$CHUNKFS")
	lib=$bdir/libchunkfs.a
	case $bdir in
	*/san)
		[ -f "$bdir/../libchunkfs.a" ] && lib=$bdir/../libchunkfs.a
		cc "${flags[@]}" -fsanitize=address,undefined -fno-omit-frame-pointer \
			-o "$FSOP" "$_m_lib_dir/fsop.c" || return 1
		;;
	*) cc "${flags[@]}" -o "$FSOP" "$_m_lib_dir/fsop.c" || return 1 ;;
	esac
	[ "$lib" = "$bdir/libchunkfs.a" ] && [ "${bdir##*/}" = san ] &&
		flags+=(-fsanitize=address,undefined)
	cc "${flags[@]}" -O2 -I"$CHUNKFS_SRC/include" -o "$CFSCHECK" \
		"$_m_lib_dir/cfscheck.c" "$lib" -pthread || return 1
	cfsdamage_build "$CFSDAMAGE"
}

need_fuse() {
	local why=""
	if [ ! -c /dev/fuse ]; then
		why="/dev/fuse is missing (no FUSE in this kernel or container)"
	elif ! command -v fusermount3 >/dev/null; then
		why="fusermount3 is not installed (Debian package fuse3)"
	elif [ "$(id -u)" != 0 ]; then
		why="the mount tests need root (allow_other, setpriv, mknod)"
	fi
	if [ -n "$why" ]; then
		echo "***** MOUNT TESTS NOT RUN: $why *****" >&2
		skip "$1" "$why: the FUSE mount was NOT tested"
		finish
	fi
	if ! _m_build_helpers 2>"$TESTDIR/helpers.err"; then
		fail "$1" "cannot build the test helpers: $(head -c 400 "$TESTDIR/helpers.err")"
		finish
	fi
}

_m_is_mounted() {
	awk -v d="$1" '$2 == d { found = 1 } END { exit !found }' /proc/self/mounts
}

mount_fs() {
	local img=$1 dir=$2 i
	shift 2
	_m_nlog=$((_m_nlog + 1))
	DAEMON_LOG=$TESTDIR/daemon.$_m_nlog.log
	"$CHUNKFS" mount -f "$@" "$img" "$dir" >"$DAEMON_LOG" 2>&1 &
	DAEMON_PID=$!
	DAEMONS+=("$DAEMON_PID")
	dir=$(cd "$dir" && pwd)
	for i in $(seq 300); do
		if _m_is_mounted "$dir"; then
			MOUNTS+=("$dir")
			return 0
		fi
		if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
			wait "$DAEMON_PID"
			DAEMON_RC=$?
			echo "  mount of $img failed (exit $DAEMON_RC):" >&2
			sed 's/^/    /' "$DAEMON_LOG" >&2
			return 1
		fi
		sleep 0.05
	done
	echo "  $dir did not appear in /proc/self/mounts" >&2
	return 1
}

forget_mount() {
	local d keep=()
	for d in "${MOUNTS[@]}"; do
		[ "$d" = "$1" ] || keep+=("$d")
	done
	MOUNTS=("${keep[@]}")
}

# Unmount DIR and wait (at most 60 s) for the daemon DAEMON_PID to exit;
# DAEMON_RC is its exit status (255 if it did not exit).
unmount_fs() {
	local dir i
	dir=$(cd "$1" && pwd)
	timeout 30 fusermount3 -u "$dir" 2>/dev/null || timeout 30 umount "$dir" ||
		umount -l "$dir"
	forget_mount "$dir"
	DAEMON_RC=255
	for i in $(seq 600); do
		if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
			wait "$DAEMON_PID"
			DAEMON_RC=$?
			return 0
		fi
		sleep 0.1
	done
	echo "  the daemon $DAEMON_PID did not exit after unmounting $dir" >&2
	return 1
}

wait_unlocked() {
	local i
	for i in $(seq 300); do
		flock -n -x "$1" true 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

dirty_chunks() {
	"$CHUNKFS" info "$1" | awk '$1 ~ /^[0-9]+$/ && $2 != "clean" { print $1 }' |
		paste -sd, -
}

wait_clean() {
	local i n=$(($2 * 10))
	for i in $(seq "$n"); do
		[ -z "$(dirty_chunks "$1")" ] && return 0
		sleep 0.1
	done
	return 1
}

log_clean() {
	if grep -Eq "$_t_san_re" "$2"; then
		fail "$1" "sanitizer report in the daemon's log $2"
		sed 's/^/    /' "$2" | head -40
		return 1
	fi
	return 0
}

mount_test() {
	need_fuse "$1"
	img=$TESTDIR/$2
	mnt=$PUB/mnt
	mkdir "$mnt"
}

mkfs_or_finish() {
	"$CHUNKFS" mkfs -q "$@" || { fail mkfs "mkfs $* failed"; finish; }
}

# A new 4-chunk $img holding /a/f ("alpha") and /b/f ("beta"), the two
# top-level directories in different chunks: damage to one, a workload in
# the other (errors.sh, errors_records.sh).
image_ab() {
	rm -f "$img"
	mkfs_or_finish -c 4 "$img" 64M
	"$CHUNKFS" mkdir "$img" /a /b &&
		echo alpha | "$CHUNKFS" put "$img" - /a/f &&
		echo beta | "$CHUNKFS" put "$img" - /b/f || { fail setup "put failed"; finish; }
}

mount_or_finish() {
	local name=$1
	shift
	if ! mount_fs "$img" "$mnt" "$@"; then
		fail "$name" "mount failed"
		finish
	fi
	pass "$name"
}

kill_daemon() {
	kill -KILL "$DAEMON_PID"
	wait "$DAEMON_PID" 2>/dev/null
	fusermount3 -u -z "$mnt" 2>/dev/null || umount -l "$mnt"
	forget_mount "$mnt"
}

daemon_mount() {
	local rc=1
	expect_exit 0 "$CHUNKFS" mount "$@" "$mnt" && _m_is_mounted "$mnt" && rc=0
	_m_is_mounted "$mnt" && MOUNTS+=("$mnt")
	return $rc
}

daemon_unmount() {
	timeout 30 umount "$mnt" && forget_mount "$mnt"
	wait_unlocked "$1"
}

unmount_ok() {
	if unmount_fs "$mnt" && [ "$DAEMON_RC" = 0 ]; then
		pass "$1"
	else
		fail "$1" "daemon exit $DAEMON_RC: $(tail -5 "$DAEMON_LOG")"
	fi
	log_clean daemon_log_clean "$DAEMON_LOG" && pass daemon_log_clean
}

consistent() {
	if "$CFSCHECK" "$2" >"$TESTDIR/check.out" 2>&1; then
		pass "$1"
	else
		fail "$1" "$(head -20 "$TESTDIR/check.out")"
	fi
}

unmount_checked() {
	unmount_ok unmount
	if [ -z "$(dirty_chunks "$img")" ]; then
		pass all_clean_after_unmount
	else
		fail all_clean_after_unmount "dirty: $(dirty_chunks "$img")"
	fi
	consistent image_consistent "$img"
}

NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)

fsop_run() {
	local prefix=$1 dir=$2 line name
	shift 2
	while IFS= read -r line; do
		case $line in
		PASS\ *) pass "$prefix${line#PASS }" ;;
		FAIL\ *)
			name=${line#FAIL }
			fail "$prefix${name%%: *}" "${name#*: }"
			;;
		'EXIT 0') ;;
		EXIT\ *) fail "${prefix}fsop" "fsop ${line}: $(head -c 300 "$TESTDIR/fsop.err")" ;;
		*) echo "  $line" ;;
		esac
	done < <(timeout -k 5 120 "$@" "$FSOP" -C "$dir" 2>"$TESTDIR/fsop.err"
		echo "EXIT $?")
}
