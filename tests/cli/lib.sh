# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# tests/cli/lib.sh: helpers for the CLI test scripts.  Sourced, never run.
#
# A CLI test is a bash script tests/cli/NAME.sh.  tests/run.sh (make check)
# runs each one with bash, stdin from /dev/null, in a fresh empty directory,
# with this environment:
#   CHUNKFS      absolute path of the chunkfs binary under test
#                (build/san/chunkfs in make check)
#   TESTDIR      that scratch directory: the working directory and $TMPDIR
#                too; removed after a passing run, kept after a failing one.
#                lib.sh keeps its own files in $TESTDIR/.lib, so build the
#                trees you copy in subdirectories of it.
#   CHUNKFS_SRC  the source tree, for fixtures
# By hand:  CHUNKFS=build/chunkfs bash tests/cli/NAME.sh
# (unset, CHUNKFS defaults to build/chunkfs of this tree and TESTDIR to a
# new temporary directory removed at exit).
#
# Output protocol, shared with the unit tests (tests/test.h): one line per
# test, "PASS name", "FAIL name: why" or "SKIP name: reason", then a closing
# "N passed, N failed, N skipped" printed by finish.  A script that dies
# before finish counts as failed.
#
# Example:
#   #!/usr/bin/env bash
#   . "$(dirname "$0")/lib.sh"
#
#   img=$TESTDIR/a.img
#   check_exit mkfs_basic 0 "$CHUNKFS" mkfs "$img" 64M
#   if expect_exit '!0' "$CHUNKFS" info /etc/passwd &&
#      grep -q 'bad magic' "$ERR"; then
#       pass info_rejects_junk
#   else
#       fail info_rejects_junk "no clear error: $(head -c 200 "$ERR")"
#   fi
#   if command -v python3 >/dev/null; then ...; else
#       skip info_json "python3 not installed"; fi
#   finish
#
# Functions:
#   pass NAME            print "PASS NAME" and count a pass
#   fail NAME MSG        print "FAIL NAME: MSG" and count a failure
#   skip NAME REASON     print "SKIP NAME: REASON" and count a skip
#   expect_exit CODE CMD [ARG...]
#                        run CMD (at most CMD_TIMEOUT seconds, default 120)
#                        with its stdout in the file $OUT and stderr in $ERR;
#                        return 0 if it exited with CODE and printed no
#                        sanitizer report.  CODE '!0' accepts any ordinary
#                        failure (1..125, not a crash or timeout).  Otherwise
#                        print what happened to stderr and return 1.  $OUT
#                        and $ERR are overwritten by the next call; stdin is
#                        the caller's (redirect it: expect_exit 0 cmd <file).
#   check_exit NAME CODE CMD [ARG...]
#                        expect_exit, then pass NAME or fail NAME.
#   same NAME GOT WANT   pass NAME if the strings GOT and WANT are equal,
#                        else fail it showing both.
#   cfsdamage_build OUT  build tests/cfsdamage.c (damage an image through
#                        the format layer, never by hand-written offsets)
#                        as OUT, against the library next to $CHUNKFS
#   finish               print the counts line; exit 1 if anything failed.
# pass, fail and skip count even when called in a subshell or pipeline.

export LC_ALL=C

_t_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CHUNKFS_SRC=${CHUNKFS_SRC:-$(cd "$_t_lib_dir/../.." && pwd)}
CHUNKFS=${CHUNKFS:-$CHUNKFS_SRC/build/chunkfs}
if [ -z "${TESTDIR:-}" ]; then
	TESTDIR=$(mktemp -d "${TMPDIR:-/tmp}/chunkfs-cli.XXXXXX") || exit 1
	# shellcheck disable=SC2064  # expand now: TESTDIR is fixed from here
	trap "rm -rf '$TESTDIR'" EXIT
fi
export CHUNKFS CHUNKFS_SRC TESTDIR
cd "$TESTDIR" || exit 1

# lib.sh's own files live in $TESTDIR/.lib: build test trees in
# subdirectories of $TESTDIR, not in $TESTDIR itself.
mkdir -p "$TESTDIR/.lib" || exit 1
OUT=$TESTDIR/.lib/out
ERR=$TESTDIR/.lib/err
CMD_TIMEOUT=${CMD_TIMEOUT:-120}
# Results go to a file, so pass/fail/skip count even inside a subshell or a
# pipeline (echo x | { ...; pass y; }).
_t_results=$TESTDIR/.lib/results
: >"$_t_results"
_t_san_re='ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: (AddressSanitizer|UndefinedBehaviorSanitizer)'

pass() {
	echo P >>"$_t_results"
	echo "PASS $1"
}

fail() {
	echo F >>"$_t_results"
	echo "FAIL $1: ${2:-failed}"
}

skip() {
	echo S >>"$_t_results"
	echo "SKIP $1: ${2:-no reason given}"
}

expect_exit() {
	local want=$1 rc ok=1
	shift
	if declare -F "$1" >/dev/null; then
		"$@" >"$OUT" 2>"$ERR"
	else
		timeout -k 5 "$CMD_TIMEOUT" "$@" >"$OUT" 2>"$ERR"
	fi
	rc=$?
	if [ "$want" = '!0' ]; then
		if [ "$rc" -lt 1 ] || [ "$rc" -gt 125 ]; then ok=0; fi
	else
		[ "$rc" = "$want" ] || ok=0
	fi
	if grep -Eq "$_t_san_re" "$ERR"; then
		ok=0
		echo "  sanitizer report from: $*" >&2
	fi
	if [ "$ok" = 1 ]; then
		return 0
	fi
	{
		echo "  command: $*"
		if [ "$rc" = 124 ]; then
			echo "  timed out after ${CMD_TIMEOUT}s (expected exit $want)"
		elif [ "$rc" -gt 128 ]; then
			echo "  killed by signal $((rc - 128)) (expected exit $want)"
		else
			echo "  exit status $rc, expected $want"
		fi
		echo "  stderr (last 20 lines):"
		tail -n 20 "$ERR" | sed 's/^/    /'
	} >&2
	return 1
}

check_exit() {
	local name=$1 want=$2
	shift 2
	if expect_exit "$want" "$@"; then
		pass "$name"
	else
		fail "$name" "'$*' did not exit $want"
	fi
}

same() {
	if [ "$2" = "$3" ]; then
		pass "$1"
	else
		fail "$1" "got '$2', expected '$3'"
	fi
}

# The library with its internal names, next to a chunkfs binary: build/
# has libchunkfs-internal.a (libchunkfs.a there exports only the API);
# build/san's libchunkfs.a is never installed and has them all.
internal_lib() {
	if [ -f "$1/libchunkfs-internal.a" ]; then
		echo "$1/libchunkfs-internal.a"
	else
		echo "$1/libchunkfs.a"
	fi
}

# The test hooks (CHUNKFS_CACHE_KB, CHUNKFS_TEST_*: environment variables
# that steer the library and the daemon) are built into the test builds
# only (CFS_TEST_HOOKS: build/san, make check); build/chunkfs, as
# installed, reads none of them (tests/lib/hooks.sh).
have_test_hooks() {
	grep -qaF CHUNKFS_TEST_SCRUB_PAUSE "$CHUNKFS"
}

# Without them: NAME skipped, loudly, and the script ends.
need_test_hooks() {
	have_test_hooks && return 0
	echo "***** $1 NOT RUN: $CHUNKFS has no test hooks *****" >&2
	skip "$1" "$CHUNKFS was built without the test hooks (build/san has them): NOT tested"
	finish
}

cfsdamage_build() {
	local bdir flags=(-std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O1 -g)
	bdir=$(dirname "$CHUNKFS")
	[ "${bdir##*/}" = san ] && flags+=(-fsanitize=address,undefined)
	cc "${flags[@]}" -I"$CHUNKFS_SRC/include" -I"$CHUNKFS_SRC/src" -I"$CHUNKFS_SRC/tests" \
		-o "$1" "$CHUNKFS_SRC/tests/cfsdamage.c" "$(internal_lib "$bdir")" -pthread
}

finish() {
	local p f s
	p=$(grep -c '^P$' "$_t_results")
	f=$(grep -c '^F$' "$_t_results")
	s=$(grep -c '^S$' "$_t_results")
	echo "$p passed, $f failed, $s skipped"
	[ "$f" -eq 0 ] && exit 0
	exit 1
}
