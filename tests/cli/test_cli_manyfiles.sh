#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# "Done means" of issue 2: put -r of a tree of 100,000 small files into a
# 64-chunk image and get -r back is identical, and files under the inline
# limit use no data block.  CLI_MANY_FILES overrides the count.
# shellcheck disable=SC1091,SC2015
. "$(dirname "$0")/lib.sh"

C=$CHUNKFS
per_dir=1000
img=$TESTDIR/many.img

# 200,000 host files are slow to create and remove on many disks; tmpfs
# makes it seconds.  Without one, a smaller tree keeps make check quick.
work=$TESTDIR
shm_kib=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')
if [ -d /dev/shm ] && [ -w /dev/shm ] && [ "${shm_kib:-0}" -gt $((2 * 1024 * 1024)) ] &&
   work=$(mktemp -d /dev/shm/chunkfs-many.XXXXXX); then
	files=${CLI_MANY_FILES:-100000}
	# Under tests/run.sh lib.sh sets no EXIT trap; by hand, its trap
	# stays and the end of this script cleans up.
	[ -n "$(trap -p EXIT)" ] || trap 'rm -rf "$work"' EXIT
else
	work=$TESTDIR
	files=${CLI_MANY_FILES:-20000}
	[ "$files" -ge 100000 ] || skip manyfiles_100k "no tmpfs with 2 GiB free at /dev/shm; ran with $files files"
fi
cd "$work" || exit 1

if ! command -v python3 >/dev/null; then
	skip manyfiles "python3 not installed"
	finish
fi
check_exit manyfiles_mkfs 0 "$C" mkfs -q -c 64 -N $((files * 2)) "$img" 1G
inline=$("$C" info --json "$img" | python3 -c 'import json,sys; print(json.load(sys.stdin)["inline_max"])')
# Sizes 0..inline: every file fits in its inode.
python3 - "$files" "$per_dir" "$inline" <<'PY'
import os, sys
n, per, inline = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
for i in range(n):
    d = "tree/d%03d" % (i // per)
    if i % per == 0:
        os.makedirs(d)
    with open("%s/f%05d" % (d, i), "wb") as f:
        f.write(os.urandom(i % (inline + 1)))
PY
check_exit manyfiles_put_r 0 "$C" put -r "$img" tree /tree
if expect_exit 0 "$C" info --json "$img"; then
	# the blocks of inode clusters (4 a cluster at 4 KiB, FORMAT.md 10.4)
	# hold inodes, not data
	read -r used_inodes used_blocks < <(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
t = d["totals"]
print(t["used_inodes"], t["used_blocks"] - 4 * sum(c["clusters"] for c in d["chunks"]))' "$OUT")
	[ "$used_inodes" -ge "$files" ] && pass manyfiles_inodes_used || fail manyfiles_inodes_used "$used_inodes"
	# Directory blocks (and cluster map blocks) only: far fewer than one
	# block per file.
	[ "$used_blocks" -lt $((files / 20)) ] && pass manyfiles_inline_no_blocks ||
		fail manyfiles_inline_no_blocks "$used_blocks data blocks for $files inline-sized files"
fi
if expect_exit 0 "$C" stat "$img" "/tree/d000/f$(printf %05d "$inline")" && grep -q 'Blocks: 0 ' "$OUT"; then
	pass manyfiles_largest_inline_no_block
else
	fail manyfiles_largest_inline_no_block "$(grep Blocks "$OUT")"
fi
check_exit manyfiles_get_r 0 "$C" get -r "$img" /tree out
if diff -r tree out >diff.out 2>&1; then
	pass manyfiles_identical
else
	fail manyfiles_identical "$(head -n 5 diff.out)"
fi
cd "$TESTDIR" || exit 1
[ "$work" = "$TESTDIR" ] || rm -rf "$work"
finish
