#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# libFuzzer over the image-open, read-only walk and fsck paths
# (tests/fuzz/fuzz_open_fsck.c), for FUZZ_SECONDS seconds (default 20;
# `make fuzz` runs 300).
#
# The harness is built with clang -fsanitize=fuzzer,address,undefined from
# the library sources into BUILD/fuzz/ (BUILD = the directory of $CHUNKFS;
# rebuilt only when a source is newer).  The seed corpus is made at run time
# with $CHUNKFS (mkfs, mkdir, put, ln): small 1 KiB-block images with
# several chunks, directories, inline and multi-block files, a file
# continued into other chunks, cross-chunk hard links and symlinks, each
# once as is and once with the "reseal checksums" flag.  The corpus grows in
# BUILD/fuzz/corpus (FUZZ_CORPUS overrides) between runs; crashing inputs
# are written to BUILD/fuzz/artifacts and named in the FAIL line.  Replay
# one with: BUILD/fuzz/fuzz_open_fsck ARTIFACT
#
# Without a clang that links -fsanitize=fuzzer this prints a SKIP (never a
# PASS): on Debian, apt-get install clang (libclang-rt-*-dev provides the
# libFuzzer runtime).  FUZZ_JOBS=N runs N fuzzing processes.

. "$(dirname "${BASH_SOURCE[0]}")/../cli/lib.sh"

HERE=$CHUNKFS_SRC/tests/fuzz
BUILD=$(cd "$(dirname "$CHUNKFS")" && pwd)
OUTDIR=$BUILD/fuzz
FUZZER=$OUTDIR/fuzz_open_fsck
SECONDS_TO_RUN=${FUZZ_SECONDS:-20}
CORPUS=${FUZZ_CORPUS:-$OUTDIR/corpus}
ARTIFACTS=$OUTDIR/artifacts
CLANG=${FUZZ_CC:-clang}
JOBS=${FUZZ_JOBS:-1}

mkdir -p "$OUTDIR" "$CORPUS" "$ARTIFACTS" || exit 1

# ---- can we build a libFuzzer binary at all? -----------------------------------
probe=$TESTDIR/.lib/probe
printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$probe.c"
if ! command -v "$CLANG" >/dev/null 2>&1; then
	skip fuzz_open_fsck "NOT FUZZED: no $CLANG (apt-get install clang)"
	finish
fi
if ! "$CLANG" -fsanitize=fuzzer,address,undefined "$probe.c" -o "$probe" 2>"$probe.err"; then
	skip fuzz_open_fsck "NOT FUZZED: $CLANG cannot link -fsanitize=fuzzer ($(head -c 200 "$probe.err"); apt-get install libclang-rt-dev or the libclang-rt-NN-dev of your clang)"
	finish
fi

# ---- the harness ------------------------------------------------------------------------
# the library's sources, in src/ and any folder below it (src/fsck/)
mapfile -t LIB_SRCS < <(find "$CHUNKFS_SRC/src" -name '*.c' | sort)
stale=1
if [ -x "$FUZZER" ]; then
	stale=$(find "$CHUNKFS_SRC/src" "$CHUNKFS_SRC/include" "$HERE" \
		"$CHUNKFS_SRC"/tests/*.h -newer "$FUZZER" \
		\( -name '*.c' -o -name '*.h' \) | head -n 1 | wc -l)
fi
if [ "$stale" != 0 ]; then
	if ! "$CLANG" -std=c11 -D_GNU_SOURCE -g -O1 -Wall -Wextra \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-I"$CHUNKFS_SRC/include" -I"$CHUNKFS_SRC/src" \
		"$HERE/fuzz_open_fsck.c" "${LIB_SRCS[@]}" -pthread \
		-o "$FUZZER.new" 2>"$TESTDIR/.lib/build.err"; then
		fail fuzz_build "$(head -c 800 "$TESTDIR/.lib/build.err")"
		finish
	fi
	mv "$FUZZER.new" "$FUZZER"
fi
pass fuzz_build

# ---- seeds ---------------------------------------------------------------------------------
# seed NAME SIZE CHUNKS INODES: an image made with the command, written
# into the corpus with flag byte 0 (as is) and 1 (checksums resealed).
seed() {
	local name=$1 size=$2 chunks=$3 inodes=$4 img=$TESTDIR/seed.img
	shift 4
	rm -f "$img"
	"$CHUNKFS" mkfs -q -b 1024 -c "$chunks" -N "$inodes" -U 0e1d2c3b-4a59-4687-a5b4-c3d2e1f00112 \
		"$img" "$size" || return 1
	"$@" "$img" || return 1
	{ printf '\0'; cat "$img"; } >"$CORPUS/seed-$name-raw"
	{ printf '\1'; cat "$img"; } >"$CORPUS/seed-$name-reseal"
}

fill() {
	local img=$1 t=$TESTDIR/tree
	rm -rf "$t"
	mkdir -p "$t/a/sub" "$t/b"
	printf 'hello\n' >"$t/a/small"
	head -c 9000 /dev/urandom >"$t/a/multi"
	head -c 300 /dev/urandom >"$t/b/f"
	"$CHUNKFS" put -r "$img" "$t/a" /a >/dev/null &&
	"$CHUNKFS" put -r "$img" "$t/b" /b >/dev/null &&
	"$CHUNKFS" ln "$img" /a/multi /b/link-multi &&
	"$CHUNKFS" ln "$img" /b/f /link-f &&
	"$CHUNKFS" ln -s "$img" /a/small /b/sym
}

fill_big() {
	local img=$1
	fill "$img" || return 1
	head -c 40000 /dev/urandom >"$TESTDIR/big"
	"$CHUNKFS" put "$img" "$TESTDIR/big" /b/big >/dev/null
}

empty() { :; }

if ! seed empty 64K 2 32 empty ||
   ! seed tree 96K 2 32 fill ||
   ! seed cont 128K 4 64 fill_big; then
	fail fuzz_seeds "making the seed images with $CHUNKFS failed"
	finish
fi
pass fuzz_seeds

# ---- fuzz ------------------------------------------------------------------------------------
echo "fuzzing $FUZZER for ${SECONDS_TO_RUN}s ($JOBS job(s)); corpus $CORPUS ($(ls "$CORPUS" | wc -l) inputs)"
log=$TESTDIR/fuzz.log
extra=()
if [ "$JOBS" -gt 1 ]; then
	extra=(-jobs="$JOBS" -workers="$JOBS")
fi
# ASan's leak check at exit stays on; libFuzzer reports leaks per input.
timeout -k 10 $((SECONDS_TO_RUN + 120)) "$FUZZER" -max_total_time="$SECONDS_TO_RUN" \
	-timeout=30 -rss_limit_mb=4096 -max_len=200000 -print_final_stats=1 \
	-artifact_prefix="$ARTIFACTS/" "${extra[@]}" "$CORPUS" >"$log" 2>&1
rc=$?
grep -E '^stat::(number_of_executed_units|peak_rss_mb|new_units_added)' "$log" | sed 's/^/  /'
if [ "$rc" = 0 ]; then
	pass fuzz_open_fsck
else
	art=$(grep -Eo "$ARTIFACTS/[^ ]+" "$log" | tail -n 1)
	why=$(grep -E 'ERROR: |SUMMARY: |ALARM|Timeout|deadly signal' "$log" | head -n 3 | tr '\n' ' ')
	fail fuzz_open_fsck "exit $rc: $why; input: ${art:-none written}; replay: $FUZZER ${art:-ARTIFACT}"
	tail -n 60 "$log" | sed 's/^/    | /'
fi
finish
