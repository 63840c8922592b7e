#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# put -r and get -r: on a terminal (a pty from script(1)) a progress line
# whose counts only grow, at most ten updates a second, ending as a
# summary with the exact files and bytes; nothing at all when stderr is
# not a terminal; -v's summary on stdout; --no-progress; -C FD's lines.
. "$(dirname "$0")/lib.sh"

C=$CHUNKFS
if ! command -v script >/dev/null; then
	echo "***** script(1) is not installed: the progress line was NOT tested *****" >&2
	skip copy_progress "script (util-linux) not installed"
	finish
fi
img=$TESTDIR/c.img
"$C" mkfs -q "$img" 64M || { fail setup mkfs; finish; }
# 40 files of 100000 bytes in 2 directories: 43 entries with the top one
mkdir -p src/tree/a src/tree/b
for i in $(seq 20); do
	head -c 100000 /dev/urandom >"src/tree/a/f$i"
	head -c 100000 /dev/urandom >"src/tree/b/g$i"
done
files=43 bytes=4000000

# on_pty LOG CMD...: run CMD on a pseudo-terminal, its output in LOG with
# each \r made a line end
on_pty() {
	local log=$1 q
	shift
	q=$(printf '%q ' "$@")
	timeout -k 5 120 script -qec "$q" "$log.raw" </dev/null >/dev/null 2>&1
	tr '\r' '\n' <"$log.raw" | sed 's/\x1b\[K//g' | grep -v '^Script \|^$' >"$log"
}

# progress LOG WHAT: the counts of its progress lines only grow; prints how
# many there were
progress_lines() {
	awk -v w="$2: " 'index($0, w) == 1 && / files, .*\/s, [0-9]+:[0-9][0-9]:[0-9][0-9]$/ {
		split($0, f, " "); n = f[2] + 0
		if (n < last) { print "DOWN"; exit }
		last = n; c++ } END { print c + 0 }' "$1"
}

summary="put: $files files, $bytes bytes (3.8 MiB) in "
on_pty put.log env CHUNKFS_PROGRESS_MS=0 "$C" put -r "$img" src/tree /t
n=$(progress_lines put.log put)
if [ "$n" != DOWN ] && [ "$n" -ge 40 ] && grep -q "^$summary[0-9.]* s, .*/s$" put.log &&
   [ "$(grep -c "^put: .* bytes (" put.log)" = 1 ]; then
	pass put_progress_on_terminal
else
	fail put_progress_on_terminal "$n progress lines: $(tail -3 put.log)"
fi
on_pty get.log env CHUNKFS_PROGRESS_MS=0 "$C" get -r "$img" /t got
n=$(progress_lines get.log get)
if [ "$n" != DOWN ] && [ "$n" -ge 40 ] &&
   grep -q "^get: $files files, $bytes bytes (3.8 MiB) in [0-9.]* s" get.log &&
   diff -r src/tree got >/dev/null; then
	pass get_progress_on_terminal
else
	fail get_progress_on_terminal "$n progress lines: $(tail -3 get.log)"
fi

# the real interval: no more than ten updates a second (and the summary)
mkdir -p src/many
for i in $(seq 3000); do echo "$i" >"src/many/$i"; done
start=$(date +%s%N)
on_pty many.log "$C" put -r "$img" src/many /many
ms=$((($(date +%s%N) - start) / 1000000))
n=$(progress_lines many.log put)
if [ "$n" != DOWN ] && [ "$n" -le $((ms / 100 + 2)) ] &&
   grep -q "^put: 3001 files, 13893 bytes " many.log; then
	pass put_progress_at_most_10_per_second
else
	fail put_progress_at_most_10_per_second "$n updates in $ms ms: $(tail -2 many.log)"
fi
echo "  put -r of 3000 small files: $n progress updates in $ms ms"

# not a terminal: not a byte more than before
if expect_exit 0 "$C" put -r "$img" src/tree /quiet && [ ! -s "$OUT" ] && [ ! -s "$ERR" ] &&
   expect_exit 0 "$C" get -r "$img" /quiet q1 && [ ! -s "$OUT" ] && [ ! -s "$ERR" ]; then
	pass copy_silent_off_terminal
else
	fail copy_silent_off_terminal "$(cat "$OUT" "$ERR" | head -c 300)"
fi
# -v: the summary alone, on stdout
if expect_exit 0 "$C" put -r -v "$img" src/tree /verbose && [ ! -s "$ERR" ] &&
   [ "$(wc -l <"$OUT")" = 1 ] && grep -q "^$summary" "$OUT" &&
   expect_exit 0 "$C" get -rv "$img" /verbose q2 && [ ! -s "$ERR" ] &&
   grep -q "^get: $files files, $bytes bytes" "$OUT"; then
	pass copy_verbose_summary
else
	fail copy_verbose_summary "$(cat "$OUT" "$ERR" | head -c 300)"
fi
# -v on a terminal: one summary, on stdout, the line cleared
on_pty v.log env CHUNKFS_PROGRESS_MS=0 "$C" put -r -v "$img" src/tree /v2
[ "$(grep -c "^put: .* bytes (" v.log)" = 1 ] && pass copy_verbose_once_on_terminal ||
	fail copy_verbose_once_on_terminal "$(grep "bytes (" v.log)"
# --no-progress on a terminal: nothing
on_pty off.log env CHUNKFS_PROGRESS_MS=0 "$C" put -r --no-progress "$img" src/tree /off
if [ ! -s off.log ] && [ "$("$C" cat "$img" /off/a/f3 | cmp - src/tree/a/f3 && echo same)" = same ]; then
	pass copy_no_progress
else
	fail copy_no_progress "$(head -c 300 off.log)"
fi
# -C FD: lines "FILES BYTES SECONDS" on FD, the last one the totals
if expect_exit 0 "$C" put -r -C 3 "$img" src/tree /fd 3>fd.out && [ ! -s "$OUT" ] &&
   [ ! -s "$ERR" ] && tail -n 1 fd.out | grep -Eq "^$files $bytes [0-9]+\.[0-9]{3}$"; then
	pass copy_progress_fd
else
	fail copy_progress_fd "$(tail -n 2 fd.out) $(cat "$ERR")"
fi
# -C 0 is the default: nothing off a terminal
if expect_exit 0 "$C" get -r -C 0 "$img" /fd q3 && [ ! -s "$OUT" ] && [ ! -s "$ERR" ]; then
	pass copy_progress_c0
else
	fail copy_progress_c0 "$(cat "$OUT" "$ERR" | head -c 300)"
fi
if expect_exit 2 "$C" put -r -C x "$img" src/tree /bad && grep -q "bad progress descriptor 'x'" "$ERR" &&
   expect_exit 2 "$C" put -r -C 9 "$img" src/tree /bad && grep -q "progress descriptor 9" "$ERR" &&
   expect_exit '!0' "$C" stat "$img" /bad; then
	pass copy_progress_bad_fd
else
	fail copy_progress_bad_fd "$(cat "$ERR" | head -c 300)"
fi
check_exit copy_progress_image_checks 0 "$C" fsck -f -n "$img"
finish
