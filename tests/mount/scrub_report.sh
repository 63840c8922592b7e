#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# chunkfs scrub tells each finding once, and points to itself (issue 25
# item 8 and its smaller items).
#  - /a/f hard-linked from /b and /c (three chunks), the hashes of its two
#    stubs damaged with their checksums valid: each directory's entry and
#    each stub is a finding that reaches another chunk, so the repair of
#    one chunk checks the others in the same run.  -p fixes none of them
#    (they need a person), and every chunk's scrub found them again: -p
#    told 15 findings where -n told 5.  Now -n and -p tell the same lines
#    (outcome aside) and count the same problems, and -p --json has one
#    problem_list entry per problem, none twice.
#  - online the summary says `chunkfs scrub -y MOUNTPOINT` (fsck refuses a
#    mounted filesystem), never "fsck"; `scrub -c 2` says the other chunks
#    were not selected, not that they were clean and skipped.
#  - -y then repairs them all and -n after finds nothing.
. "$(dirname "$0")/lib.sh"

C=$CHUNKFS
mount_test report_mount report.img
mkfs_or_finish -c 4 "$img" 64M
"$C" mkdir "$img" /a /b /c && echo hello | "$C" put "$img" - /a/f &&
	"$C" ln "$img" /a/f /b/l && "$C" ln "$img" /a/f /c/l ||
	{ fail setup "making the files failed"; finish; }
chunk_of() { echo $(( $("$C" stat "$img" "$1" | awk '/Inode:/ { print $2; exit }') >> 24 )); }
if [ "$(chunk_of /a)" = "$(chunk_of /b)" ] || [ "$(chunk_of /a)" = "$(chunk_of /c)" ] ||
   [ "$(chunk_of /b)" = "$(chunk_of /c)" ]; then
	fail setup "/a, /b, /c not in three chunks"
	finish
fi
ino=$("$C" stat "$img" /a/f | awk '/Inode:/ { print $2; exit }')
same damage_two_stubs "$("$CFSDAMAGE" "$img" stubs "$ino")" 2
mount_or_finish report_mount

# the problem lines of a scrub's output without their outcomes, sorted
problems() { grep ' \[[A-Z_]*\]; ' "$1" | sed 's/\(\]; [^:]*\): .*$/\1/' | sort; }

expect_exit 4 "$C" scrub -n "$mnt"
cp "$OUT" "$TESTDIR/n.out"
expect_exit 4 "$C" scrub -p "$mnt"
cp "$OUT" "$TESTDIR/p.out"
same scrub_n_finds_5 "$(problems "$TESTDIR/n.out" | wc -l)" 5
if [ -z "$(problems "$TESTDIR/p.out" | uniq -d)" ]; then
	pass scrub_p_tells_each_once
else
	fail scrub_p_tells_each_once "told twice: $(problems "$TESTDIR/p.out" | uniq -d | head -n 3)"
fi
same scrub_p_same_findings_as_n "$(problems "$TESTDIR/p.out")" "$(problems "$TESTDIR/n.out")"
same scrub_p_counts_as_n "$(grep -o '[0-9]* problems, .*' "$TESTDIR/p.out")" \
	"5 problems, 0 fixed, 5 left"
if grep -q 'RUN chunkfs scrub -y '"$mnt"' MANUALLY' "$TESTDIR/p.out" &&
   grep -q "problems found; run chunkfs scrub -y $mnt to repair them" "$TESTDIR/n.out" &&
   ! grep -qi 'chunkfs fsck' "$TESTDIR/p.out" "$TESTDIR/n.out"; then
	pass scrub_points_to_scrub
else
	fail scrub_points_to_scrub "$(tail -n 1 "$TESTDIR/p.out") / $(tail -n 1 "$TESTDIR/n.out")"
fi

expect_exit 4 "$C" scrub -p --json "$mnt"
if python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
l = [json.dumps(p, sort_keys=True) for p in d["problem_list"]]
assert len(l) == len(set(l)), "duplicates: %d entries, %d distinct" % (len(l), len(set(l)))
assert len(l) == d["problems"] == 5 == d["unfixed"], (len(l), d["problems"], d["unfixed"])
assert len(d["messages"]) == 5, d["messages"]
' "$OUT" 2>"$TESTDIR/json.err"; then
	pass scrub_p_json_no_duplicates
else
	fail scrub_p_json_no_duplicates "$(tail -n 2 "$TESTDIR/json.err")"
fi

expect_exit 4 "$C" scrub -n -c "$(chunk_of /b)" "$mnt"
if grep -q "checked 1 of 4 chunks (3 not selected)" "$OUT"; then
	pass scrub_c_not_selected
else
	fail scrub_c_not_selected "$(grep checked "$OUT")"
fi

check_exit scrub_y_repairs 1 "$C" scrub -y "$mnt"
if [ -z "$(problems "$OUT" | uniq -d)" ] && ! grep -q 'needs a person\|fix failed' "$OUT"; then
	pass scrub_y_tells_each_once
else
	fail scrub_y_tells_each_once "$(head -c 400 "$OUT")"
fi
check_exit scrub_n_after_repair 0 "$C" scrub -n "$mnt"
finish
