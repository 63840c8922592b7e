#!/usr/bin/env bash
# "Done means" of issue 2: put -r of a tree of 100,000 small files into a
# 64-chunk image and get -r back is identical, and files under the inline
# limit use no data block.  CLI_MANY_FILES overrides the count.
# shellcheck disable=SC1091,SC2015
. "$(dirname "$0")/lib.sh"

C=$CHUNKFS
files=${CLI_MANY_FILES:-100000}
per_dir=1000
img=$TESTDIR/many.img

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
	read -r used_inodes used_blocks < <(python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
print(t["used_inodes"], t["used_blocks"])' "$OUT")
	[ "$used_inodes" -ge "$files" ] && pass manyfiles_inodes_used || fail manyfiles_inodes_used "$used_inodes"
	# Directory blocks only: far fewer than one block per file.
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
finish
