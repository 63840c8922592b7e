#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# chunkfs info --map and --svg: every cell agrees with info --json (state,
# tenths of blocks and inodes used, continuation and cross-chunk marks),
# the SVG parses as XML, hostile labels are escaped, bad uses are refused.
. "$(dirname "$0")/lib.sh"

C=$CHUNKFS
if ! command -v python3 >/dev/null; then
	skip info_map "python3 not installed"
	finish
fi
check() { python3 "$CHUNKFS_SRC/tests/cli/map_check.py" "$@"; }

# 8 chunks of 1 MiB: a 3 MiB file continues into other chunks, a hard
# link from a directory in another chunk is a cross-chunk reference, and
# many small files fill chunk 0's inodes part way.
img=$TESTDIR/map.img
"$C" mkfs -q -c 8 -N 256 -L 'a<b&"c"' "$img" 8M || { fail setup mkfs; finish; }
head -c 3145728 /dev/urandom >big
"$C" put "$img" big /big && "$C" mkdir "$img" /d &&
	for i in $(seq 1 12); do echo "$i" | "$C" put "$img" - "/d/f$i" || exit 1; done &&
	"$C" ln "$img" /big /d/biglink || { fail setup "put/ln failed"; finish; }
"$C" info --json "$img" >info.json || { fail setup "info --json"; finish; }

if expect_exit 0 "$C" info --map "$img" && cp "$OUT" map.txt &&
   expect_exit 0 check text info.json map.txt; then
	pass map_cells_match_json
else
	fail map_cells_match_json "$(head -c 600 "$OUT")"
fi
# the image really has what the map is to show, so the test above saw it
if python3 -c 'import json,sys; d=json.load(open("info.json"));
c=d["chunks"]; sys.exit(not (sum(x["conts"] for x in c) and sum(x["xrefs"] for x in c)
 and any(0 < x["used_blocks"] < x["blocks"] for x in c)))'; then
	pass map_image_has_links
else
	fail map_image_has_links "no continuation or no cross-chunk reference: $(cat info.json)"
fi
grep -Eq '^ +0  C[0-9#][0-9#.][c*x]' map.txt && pass map_chunk0_drawn ||
	fail map_chunk0_drawn "$(cat map.txt)"
grep -q 'mounted' map.txt && fail map_not_mounted_label "says mounted: $(head -3 map.txt)" ||
	pass map_not_mounted_label
# the checker itself sees a wrong cell
sed -E '0,/^ +0  C/s/^( +0  )C/\1D/' map.txt >map-bad.txt
if expect_exit 1 check text info.json map-bad.txt && grep -q 'chunk 0: drawn' "$OUT"; then
	pass map_check_sees_wrong_cell
else
	fail map_check_sees_wrong_cell "$(head -c 300 "$OUT")"
fi
# no colour codes when stdout is not a terminal
grep -q $'\033' map.txt && fail map_no_color_in_pipe "escape codes in a pipe" ||
	pass map_no_color_in_pipe

if expect_exit 0 "$C" info --svg map.svg "$img" && [ ! -s "$OUT" ] &&
   expect_exit 0 check svg info.json map.svg; then
	pass svg_valid_and_matches
else
	fail svg_valid_and_matches "$(head -c 600 "$OUT")"
fi
if grep -q 'a&lt;b&amp;&quot;c&quot;' map.svg; then
	pass svg_label_escaped
else
	fail svg_label_escaped "$(grep -o 'chunkfs [^<]*' map.svg | head -2)"
fi
if expect_exit 0 "$C" info --svg - "$img" && cmp -s "$OUT" map.svg; then
	pass svg_to_stdout
else
	fail svg_to_stdout "stdout differs from the file"
fi
if expect_exit 0 "$C" info --map --svg both.svg "$img" && cmp -s "$OUT" map.txt &&
   check svg info.json both.svg >/dev/null; then
	pass map_and_svg_together
else
	fail map_and_svg_together "$(head -c 300 "$ERR")"
fi

check_exit map_json_refused 2 "$C" info --json --map "$img"
if expect_exit 1 "$C" info --svg "$TESTDIR/no/such/dir/x.svg" "$img" &&
   grep -q 'no/such/dir/x.svg: No such file or directory' "$ERR"; then
	pass svg_unwritable_path
else
	fail svg_unwritable_path "$(cat "$ERR")"
fi
check_exit svg_needs_file 2 "$C" info "$img" --svg
finish
