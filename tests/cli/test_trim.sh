#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# chunkfs trim: after rm, the image file takes as much room on the host as
# before; after trim, the freed blocks are holes (st_blocks falls) and the
# files left are intact and the image checks clean.
. "$(dirname "$0")/lib.sh"

C=$CHUNKFS
img=$TESTDIR/trim.img
kib() { echo $(($(stat -c %b "$1") * $(stat -c %B "$1") / 1024)); }

"$C" mkfs -q -c 4 "$img" 64M || { fail setup mkfs; finish; }
head -c $((5 << 20)) /dev/urandom >keep
head -c $((30 << 20)) /dev/urandom >big
mkdir -p tree && for i in $(seq 1 40); do head -c $((i * 3000)) /dev/urandom >"tree/f$i"; done
"$C" put "$img" keep /keep && "$C" put "$img" big /big && "$C" put -r "$img" tree /tree ||
	{ fail setup put; finish; }
full=$(kib "$img")
"$C" rm -r "$img" /big /tree/f1 /tree/f3 /tree/f5
after_rm=$(kib "$img")
if [ "$after_rm" -ge $((full - 1024)) ]; then
	pass rm_gives_nothing_back     # the problem trim solves
else
	fail rm_gives_nothing_back "rm alone went from ${full}K to ${after_rm}K"
fi

if expect_exit 0 "$C" trim -v "$img" && grep -Eq '^.*trim.img: [0-9]+ bytes \([0-9]+ blocks in [0-9]+ runs\) trimmed$' "$OUT"; then
	pass trim_runs
else
	fail trim_runs "$(cat "$OUT" "$ERR")"
fi
trimmed=$(kib "$img")
echo "  allocated: ${full}K full, ${after_rm}K after rm, ${trimmed}K after trim"
# the 30 MiB file's blocks at least are given back
if [ "$trimmed" -le $((after_rm - 30 * 1024)) ]; then
	pass trim_shrinks_image
else
	fail trim_shrinks_image "${after_rm}K -> ${trimmed}K"
fi
[ "$(stat -c %s "$img")" = $((64 << 20)) ] && pass trim_keeps_size ||
	fail trim_keeps_size "size $(stat -c %s "$img")"

"$C" cat "$img" /keep | cmp -s keep - && pass trim_data_intact ||
	fail trim_data_intact "/keep differs"
ok=1
for i in $(seq 1 40); do
	case $i in 1 | 3 | 5) continue ;; esac
	"$C" cat "$img" "/tree/f$i" | cmp -s "tree/f$i" - || ok=0
done
[ $ok = 1 ] && pass trim_tree_intact || fail trim_tree_intact "a file of /tree differs"
check_exit trim_fsck_clean 0 "$C" fsck -f -n "$img"
# the space is usable again, and a second trim finds the same free space
if expect_exit 0 "$C" put "$img" big /big2 && "$C" cat "$img" /big2 | cmp -s big -; then
	pass trim_space_reusable
else
	fail trim_space_reusable "$(cat "$ERR")"
fi
"$C" rm "$img" /big2
expect_exit 0 "$C" trim "$img" && [ ! -s "$OUT" ] && pass trim_quiet ||
	fail trim_quiet "printed: $(cat "$OUT")"
[ "$(kib "$img")" -le $((trimmed + 64)) ] && pass trim_again ||
	fail trim_again "$(kib "$img")K, was ${trimmed}K"

# -m: runs shorter than the minimum are left alone
"$C" rm "$img" /tree/f7
before=$(kib "$img")
if expect_exit 0 "$C" trim -v -m 1G "$img" && grep -q ' 0 bytes (0 blocks in 0 runs)' "$OUT" &&
   [ "$(kib "$img")" = "$before" ]; then
	pass trim_minlen
else
	fail trim_minlen "$(cat "$OUT") ${before}K -> $(kib "$img")K"
fi

check_exit trim_bad_minlen 2 "$C" trim -m lots "$img"
check_exit trim_no_image 2 "$C" trim
head -c 1048576 /dev/urandom >junk.img
cp junk.img junk.orig
if expect_exit 1 "$C" trim junk.img && grep -q 'junk.img: not a chunkfs image' "$ERR" &&
   cmp -s junk.img junk.orig; then
	pass trim_not_chunkfs
else
	fail trim_not_chunkfs "$(cat "$ERR")"
fi
finish
