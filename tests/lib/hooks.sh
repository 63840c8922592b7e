#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The test hooks (environment variables that steer the library and the
# daemon: CHUNKFS_CACHE_KB, CHUNKFS_TEST_*) are in the test builds only
# (CFS_TEST_HOOKS: build/san, and build/libchunkfs-hooks.a, which the
# unit tests of `make tests` link).  What is installed, build/'s
# libchunkfs.so, libchunkfs.a and chunkfs, holds not even their names,
# and the shared library calls no getenv at all.  Run by tests/run.sh
# (make check); by hand: CHUNKFS=$PWD/build/san/chunkfs bash tests/lib/hooks.sh
. "$(dirname "$0")/../cli/lib.sh"

lib_hooks=(CHUNKFS_CACHE_KB CHUNKFS_TEST_SCRUB_PAUSE CHUNKFS_TEST_SCRUB_QUIET_PAUSE
	CHUNKFS_TEST_SCRUB_TRACE)
daemon_hooks=("${lib_hooks[@]}" CHUNKFS_TEST_KILL_AT_INIT)

bdir=$(cd "$(dirname "$CHUNKFS")" && pwd)
if [ "${bdir##*/}" = san ]; then
	ship=${bdir%/san}
	san=$bdir
else
	ship=$bdir
	san=$bdir/san
fi

# has FILE NAME...: the names of NAME... that FILE holds, one a line
has() {
	local f=$1 n
	shift
	for n in "$@"; do
		grep -qaF "$n" "$f" && echo "$n"
	done
}

for f in libchunkfs.so libchunkfs.a chunkfs; do
	t=hooks_not_in_installed_${f//[.-]/_}
	if [ ! -f "$ship/$f" ]; then
		fail "$t" "no $ship/$f (make all builds it)"
		continue
	fi
	found=$(has "$ship/$f" "${daemon_hooks[@]}" | tr '\n' ' ')
	# and any hook added later under the same prefix
	more=$(grep -aoE 'CHUNKFS_TEST_[A-Z0-9_]+' "$ship/$f" | sort -u | tr '\n' ' ')
	if [ -z "$found$more" ]; then
		pass "$t"
	else
		fail "$t" "$ship/$f holds test hooks: $found$more"
	fi
done

if [ -f "$ship/libchunkfs.so" ]; then
	calls=$(nm -D --undefined-only "$ship/libchunkfs.so" | awk '{ print $NF }' |
		grep -E '^(secure_)?getenv(@|$)' || true)
	if [ -z "$calls" ]; then
		pass hooks_installed_library_reads_no_environment
	else
		fail hooks_installed_library_reads_no_environment "libchunkfs.so calls $calls"
	fi
fi

# The test builds do have them: the hooks are compiled out only where
# they should be, and the tests that set them are not quietly testing
# nothing.
tested=0
check_has() {   # NAME FILE HOOK...
	local t=$1 f=$2 missing n
	shift 2
	missing=$(for n in "$@"; do grep -qaF "$n" "$f" || echo "$n"; done | tr '\n' ' ')
	if [ -z "$missing" ]; then
		pass "$t"
	else
		fail "$t" "$f lacks the test hooks $missing"
	fi
}
if [ -f "$san/chunkfs" ] && [ -f "$san/libchunkfs.a" ]; then
	check_has hooks_in_san_chunkfs "$san/chunkfs" "${daemon_hooks[@]}"
	check_has hooks_in_san_library "$san/libchunkfs.a" "${lib_hooks[@]}"
	tested=1
fi
if [ -f "$ship/libchunkfs-hooks.a" ]; then
	check_has hooks_in_unit_test_library "$ship/libchunkfs-hooks.a" "${lib_hooks[@]}"
	tested=1
fi
[ $tested = 1 ] || skip hooks_in_test_build "no build/san (make check builds it): the test build's hooks NOT checked"
finish
