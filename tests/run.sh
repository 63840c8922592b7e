#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Run every chunkfs test and sum the results.
#
#   tests/run.sh BUILDDIR        e.g. tests/run.sh build/san   (make check)
#                                     tests/run.sh build       (make tests)
#
# Runs each BUILDDIR/tests/test_* binary and each tests/cli/*.sh, tests/lib/*.sh, tests/fsck/*.sh, tests/fuzz/*.sh and
# tests/mount/*.sh script (except lib.sh, which they source; see
# SCRIPT_SUITES below).  Every one prints lines "PASS name",
# "FAIL name[: why]", "SKIP name: reason" and closes with
# "N passed, N failed, N skipped" (tests/test.h, tests/cli/lib.sh).
#
# Each runs under `timeout`, with stdin from /dev/null, in a fresh empty
# directory that is also its $TESTDIR and $TMPDIR; the scripts get
# CHUNKFS=BUILDDIR/chunkfs (absolute) and CHUNKFS_SRC=the source tree.
# A run counts as one extra failure when it times out, crashes, prints a
# sanitizer report, exits non-zero without having counted a failure, or
# ends without its closing line.  Skips are listed with their reasons and
# never counted as passes.  The output ends with exactly one line
# "N passed, N failed, N skipped"; the exit status is non-zero when
# anything failed or when no test ran.
#
# Environment: TEST_TIMEOUT (seconds per binary/script, default 300; a
# script may ask for more with a line "# test-timeout: SECONDS" near its
# top, a unit test with "test-timeout: SECONDS" in a comment near the top
# of its source, and those start first, so the longest do not finish last),
# TEST_JOBS (how many run at once, default: twice the number of CPUs, as
# many tests spend much of their time waiting on mounts and timers),
# TEST_FILTER (only run binaries/scripts whose name contains it),
# VERBOSE=1 (print every run's whole output), KEEP_TESTDIR=1 (keep the
# temporary directories even of passing runs).

set -uo pipefail

if [ $# -ne 1 ] || [ ! -d "$1" ]; then
	echo "usage: tests/run.sh BUILDDIR  (e.g. build/san after make check's build)" >&2
	exit 2
fi

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILDDIR=$(cd "$1" && pwd)
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
TEST_JOBS=${TEST_JOBS:-$((2 * $(nproc 2>/dev/null || echo 1)))}
TEST_FILTER=${TEST_FILTER:-}
VERBOSE=${VERBOSE:-0}
KEEP_TESTDIR=${KEEP_TESTDIR:-0}

# Sanitizer settings (the caller's own options are appended, so they win).
# abort_on_error makes a UBSan report exit by SIGABRT rather than with
# status 1, which a CLI test could mistake for an ordinary error exit.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:abort_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-}"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/chunkfs-tests.XXXXXX") || exit 2
cleanup() {
	# Leave running jobs no chance to outlive us.
	local p
	for p in $(jobs -p); do kill "$p" 2>/dev/null; done
	if [ "$KEEP_TESTDIR" != 1 ] && [ ! -e "$WORK/.keep" ]; then
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- collect what to run ----------------------------------------------------
# Directories of shell test scripts, all run the same way (tests/cli/lib.sh).
# Those of SERIAL_SUITES run alone, after all the others: tests/deb installs
# the Debian packages, which changes /usr/sbin under any test running then.
SCRIPT_SUITES=(cli lib mount fsck fuzz deb)
SERIAL_SUITES=" deb "

# The mount tests run on both FUSE transports: /dev/fuse, and io_uring
# where the build (libfuse >= 3.18) and the kernel (the fuse module's
# enable_uring) have it; otherwise, or with CHUNKFS_TEST_IO_URING=0, each
# io_uring run is a loud SKIP.
# libfuse's own FUSE_URING_ENABLE picks the transport of every mount a
# script makes (chunkfs mount honours it as libfuse does).
CHUNKFS="$BUILDDIR/chunkfs"
uring_skip=""
if [ "${CHUNKFS_TEST_IO_URING:-1}" = 0 ]; then
	uring_skip="CHUNKFS_TEST_IO_URING=0: NOT tested on io_uring"
elif ! "$CHUNKFS" --version 2>/dev/null | grep -q 'io_uring: yes'; then
	uring_skip=$("$CHUNKFS" --version 2>/dev/null | sed -n 's/.*FUSE over io_uring: //p')
	uring_skip="FUSE over io_uring: ${uring_skip:-no chunkfs binary}: NOT tested on io_uring"
fi

names=() kinds=() paths=() limits=() serial=() envs=()
for f in "$BUILDDIR"/tests/test_*; do
	if [ ! -f "$f" ] || [ ! -x "$f" ]; then continue; fi
	case $f in *.d | *.o) continue ;; esac
	n=$(basename "$f")
	[ -z "$TEST_FILTER" ] || [[ $n == *"$TEST_FILTER"* ]] || continue
	# a unit test may ask for more, as a script does, in its source
	t=$(sed -n '1,30s/.*test-timeout: \([0-9][0-9]*\).*/\1/p' "$SRC/tests/unit/$n.c" 2>/dev/null | head -n 1)
	[ -n "$t" ] && [ "$t" -gt "$TEST_TIMEOUT" ] || t=$TEST_TIMEOUT
	names+=("$n") kinds+=(bin) paths+=("$f") limits+=("$t") serial+=(0) envs+=("")
done
for suite in "${SCRIPT_SUITES[@]}"; do
	for f in "$SRC/tests/$suite"/*.sh; do
		[ -f "$f" ] || continue
		n=$(basename "$f")
		[ "$n" = lib.sh ] && continue
		n="$suite/$n"
		[ -z "$TEST_FILTER" ] || [[ $n == *"$TEST_FILTER"* ]] || continue
		t=$(sed -n '1,30s/^# test-timeout: \([0-9][0-9]*\).*/\1/p' "$f" | head -n 1)
		[ -n "$t" ] && [ "$t" -gt "$TEST_TIMEOUT" ] || t=$TEST_TIMEOUT
		ser=0
		[[ $SERIAL_SUITES == *" $suite "* ]] && ser=1
		if [ "$suite" = mount ]; then
			names+=("$n") kinds+=(cli) paths+=("$f") limits+=("$t") serial+=("$ser")
			envs+=(FUSE_URING_ENABLE=0)
			n="$n@io_uring"
			if [ -n "$uring_skip" ]; then
				names+=("$n") kinds+=(skip) paths+=("$uring_skip") limits+=("$t")
				serial+=("$ser") envs+=("")
				continue
			fi
			names+=("$n") kinds+=(cli) paths+=("$f") limits+=("$t") serial+=("$ser")
			envs+=(FUSE_URING_ENABLE=1)
			continue
		fi
		names+=("$n") kinds+=(cli) paths+=("$f") limits+=("$t") serial+=("$ser") envs+=("")
	done
done

cli_count=0
for k in "${kinds[@]}"; do [ "$k" = cli ] && cli_count=$((cli_count + 1)); done
if [ "$cli_count" -gt 0 ] && [ ! -x "$CHUNKFS" ]; then
	echo "warning: $CHUNKFS does not exist; the shell test scripts will fail" >&2
fi

echo "running ${#names[@]} test programs from $BUILDDIR (timeout ${TEST_TIMEOUT}s each, $TEST_JOBS at a time)"

# ---- run one ----------------------------------------------------------------
# run_one INDEX: runs entry INDEX, leaving its output in $WORK/INDEX.log,
# its exit status in $WORK/INDEX.rc and its seconds in $WORK/INDEX.time.
run_one() {
	local i=$1 dir rc start end
	dir="$WORK/$i.dir"
	mkdir -p "$dir"
	start=$(date +%s.%N)
	if [ "${kinds[$i]}" = skip ]; then
		printf 'SKIP %s: %s\n0 passed, 0 failed, 1 skipped\n' "${names[$i]}" \
			"${paths[$i]}" >"$WORK/$i.log"
	elif [ "${kinds[$i]}" = bin ]; then
		(cd "$dir" && TESTDIR="$dir" TMPDIR="$dir" \
			timeout -k 10 "${limits[$i]}" "${paths[$i]}") \
			</dev/null >"$WORK/$i.log" 2>&1
	else
		(cd "$dir" && env ${envs[$i]} TESTDIR="$dir" TMPDIR="$dir" CHUNKFS="$CHUNKFS" \
			CHUNKFS_SRC="$SRC" timeout -k 10 "${limits[$i]}" \
			bash "${paths[$i]}") </dev/null >"$WORK/$i.log" 2>&1
	fi
	rc=$?
	end=$(date +%s.%N)
	echo "$rc" >"$WORK/$i.rc"
	awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f\n", b - a }' >"$WORK/$i.time"
}

# the ones that asked for a longer limit first
order=() last=()
for i in "${!names[@]}"; do
	[ "${serial[$i]}" = 0 ] && [ "${limits[$i]}" -gt "$TEST_TIMEOUT" ] && order+=("$i")
done
for i in "${!names[@]}"; do
	if [ "${serial[$i]}" = 1 ]; then
		last+=("$i")
	elif [ "${limits[$i]}" -le "$TEST_TIMEOUT" ]; then
		order+=("$i")
	fi
done

running=0
for i in "${order[@]}"; do
	while [ "$running" -ge "$TEST_JOBS" ]; do
		wait -n
		running=$((running - 1))
	done
	run_one "$i" 2>/dev/null &
	running=$((running + 1))
done
wait
for i in "${last[@]}"; do
	run_one "$i" 2>/dev/null
done

# ---- judge and sum ------------------------------------------------------------
passed=0 failed=0 skipped=0
failures=() skips=()
SAN_RE='ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: (AddressSanitizer|UndefinedBehaviorSanitizer|LeakSanitizer)|WARNING: ThreadSanitizer'
CLOSE_RE='^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$'

for i in "${!names[@]}"; do
	n=${names[$i]} log="$WORK/$i.log"
	rc=$(cat "$WORK/$i.rc" 2>/dev/null || echo 255)
	secs=$(cat "$WORK/$i.time" 2>/dev/null || echo '?')
	close=$(grep -E "$CLOSE_RE" "$log" | tail -n 1)
	problem=""
	if [ -n "$close" ]; then
		read -r p _ f _ s _ <<<"${close//,/}"
	else
		p=$(grep -c '^PASS ' "$log")
		f=$(grep -c '^FAIL ' "$log")
		s=$(grep -c '^SKIP ' "$log")
	fi
	if [ "$rc" = 124 ]; then
		problem="timed out after ${limits[$i]}s"
	elif [ "$rc" -gt 128 ]; then
		problem="killed by signal $((rc - 128))"
	fi
	# A sanitizer report fails the run even when it came after the closing
	# line (leaks are reported at exit) or inside a check that passed.
	if grep -Eq "$SAN_RE" "$log" && { [ -n "$problem" ] || [ "$f" = 0 ]; }; then
		problem="${problem:+$problem; }sanitizer report"
	fi
	if [ -z "$problem" ]; then
		if [ -z "$close" ]; then
			problem="exit status $rc without the closing 'N passed, N failed, N skipped' line"
		elif [ "$rc" != 0 ] && [ "$f" = 0 ]; then
			problem="exit status $rc although it counted no failure"
		fi
	fi
	if [ -n "$problem" ]; then
		f=$((f + 1))
	fi
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))

	if [ "$f" -gt 0 ]; then
		status=FAIL
		failures+=("$i")
		: >"$WORK/.keep"
		[ -n "$problem" ] && echo "$problem" >"$WORK/$i.problem"
	else
		status=ok
		[ "$KEEP_TESTDIR" = 1 ] || rm -rf "$WORK/$i.dir"
	fi
	printf '%-4s  %-32s  pass=%s fail=%s skip=%s  (%ss)%s\n' \
		"$status" "$n" "$p" "$f" "$s" "$secs" "${problem:+  [$problem]}"
	while IFS= read -r line; do
		skips+=("$n: ${line#SKIP }")
	done < <(grep '^SKIP ' "$log")
	if [ "$VERBOSE" = 1 ]; then
		sed 's/^/    | /' "$log"
	fi
done

if [ ${#skips[@]} -gt 0 ]; then
	echo
	echo "==== SKIPPED (${#skips[@]}) — not run, not counted as passed ===="
	for s in "${skips[@]}"; do echo "  SKIP $s"; done
fi

# The last 40 lines of a log; if it holds a sanitizer report, rather the 10
# lines before the report and the report itself without its shadow-byte map.
show_tail() {
	awk -v re="$SAN_RE" '
	{ line[NR] = $0 }
	END {
		for (i = 1; i <= NR; i++) if (line[i] ~ re) { start = i; break }
		if (!start) {
			for (i = (NR > 40 ? NR - 39 : 1); i <= NR; i++) print line[i]
			exit
		}
		n = 0; skip = 0
		for (i = (start > 10 ? start - 10 : 1); i <= NR && n < 80; i++) {
			if (line[i] ~ /Shadow bytes around the buggy address/) skip = 1
			if (!skip) { print line[i]; n++ }
			if (skip && line[i] ~ /Right alloca redzone/) skip = 0
		}
	}' "$1"
}

if [ ${#failures[@]} -gt 0 ]; then
	for i in "${failures[@]}"; do
		n=${names[$i]} log="$WORK/$i.log"
		echo
		echo "==== FAILED: $n ===="
		[ -f "$WORK/$i.problem" ] && echo "  $(cat "$WORK/$i.problem")"
		grep -E '^FAIL ' "$log" | sed 's/^/  /'
		echo "  -- end of its output, or its sanitizer report (whole log and test dir: $WORK/$i.*) --"
		show_tail "$log" | sed 's/^/    | /'
	done
fi

echo
if [ "$KEEP_TESTDIR" = 1 ] || [ -e "$WORK/.keep" ]; then
	echo "logs and test directories kept in $WORK"
fi
total=$((passed + failed))
if [ "$total" -eq 0 ]; then
	echo "no test ran: no test programs or scripts found, or every one skipped"
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$total" -gt 0 ]
