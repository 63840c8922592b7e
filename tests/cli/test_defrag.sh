#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# chunkfs defrag and evacuate on an image fragmented by files bigger than
# a chunk, some of them deleted: the Bookkeeping figure of chunkfs info
# falls, fsck -f -n is clean after, every file's bytes are the same;
# evacuate empties a chunk holding only continuations and says what stays
# in one holding directories (exit 1); defrag -i renumbers files named
# from another chunk only into it; usage errors.
. "$(dirname "$0")/lib.sh"

C=$CHUNKFS
img=$TESTDIR/frag.img
books() { "$C" info "$1" | awk '/^Continuations:/ { c = $2 } /^Cross-chunk refs:/ { x = $3 }
	END { print c + x }'; }
same() {
	for i in 0 2 4; do "$C" cat "$img" "/f$i" | cmp -s "f$i" - || return 1; done
	"$C" ls "$img" /d | sort | cmp -s names - || return 1
}

"$C" mkfs -q -c 4 "$img" 8M || { fail setup mkfs; finish; }
mkdir -p .d && for i in $(seq 1 60); do : >".d/name-$i-$(printf '%0180d' "$i")"; done
(cd .d && ls) | sort >names
for i in 0 1 2 3 4; do head -c 1300000 /dev/urandom >"f$i"; "$C" put "$img" "f$i" "/f$i" || { fail "setup put f$i"; finish; }; done
"$C" put -r "$img" .d /d || { fail setup put d; finish; }
"$C" rm "$img" /f1 /f3 || { fail setup rm; finish; }
before=$(books "$img")
[ "$before" -gt 0 ] || { fail setup "no continuations to defragment"; finish; }
cp "$img" frag0.img

if expect_exit 0 "$C" defrag "$img" && grep -q '^before: .* bookkeeping ' "$OUT" &&
   grep -q '^after: .* bookkeeping ' "$OUT" && grep -q 'continuations freed' "$OUT" &&
   [ "$(books "$img")" -lt "$before" ]; then
	pass defrag_fewer_continuations
else
	fail defrag_fewer_continuations "before $before after $(books "$img"): $(cat "$OUT" "$ERR")"
fi
check_exit defrag_fsck_clean 0 "$C" fsck -f -n "$img"
same && pass defrag_data_intact || fail defrag_data_intact "a file or name differs"
after=$(books "$img")
if expect_exit 0 "$C" defrag "$img" && [ "$(books "$img")" = "$after" ] &&
   grep -q ' 0 continuations freed' "$OUT"; then
	pass defrag_again_nothing
else
	fail defrag_again_nothing "$(cat "$OUT" "$ERR")"
fi

# evacuate: the chunk with continuations and no file of its own
cp frag0.img "$img"
target=
for c in 3 2 1; do
	row=$("$C" info --json "$img" | python3 -c "
import json, sys
ch = json.load(sys.stdin)['chunks'][$c]
print(ch.get('conts', 0), ch['used_inodes'])")
	set -- $row
	[ "$1" -gt 0 ] && [ "$1" = "$2" ] && { target=$c; break; }
done
if [ -z "$target" ]; then
	skip evacuate_empties "no chunk with continuations only in this layout"
elif expect_exit 0 "$C" evacuate "$img" "$target" && grep -q "chunk $target is empty" "$OUT" &&
     "$C" info --json "$img" | python3 -c "
import json, sys
ch = json.load(sys.stdin)['chunks'][$target]
sys.exit(0 if ch['used_inodes'] == 0 and ch.get('conts', 0) == 0 else 1)"; then
	pass evacuate_empties
else
	fail evacuate_empties "chunk $target: $(cat "$OUT" "$ERR")"
fi
check_exit evacuate_fsck_clean 0 "$C" fsck -f -n "$img"
same && pass evacuate_data_intact || fail evacuate_data_intact "a file or name differs"
# chunk 0 holds the root: it stays, said so, exit 1
if expect_exit 1 "$C" evacuate "$img" 0 && grep -q 'Directories whose own inode is in the chunk stay' "$OUT"; then
	pass evacuate_says_what_stays
else
	fail evacuate_says_what_stays "$(cat "$OUT" "$ERR")"
fi
check_exit evacuate_stays_fsck_clean 0 "$C" fsck -f -n "$img"
same && pass evacuate_stays_data_intact || fail evacuate_stays_data_intact "a file or name differs"

# defrag -i: files named only from another chunk's directories go there
xrefs() { "$C" info "$1" | awk '/^Cross-chunk refs:/ { print $3 }'; }
"$C" mkfs -q -F -c 4 "$img" 8M || { fail setup mkfs-i; finish; }
for d in a b c; do "$C" mkdir "$img" "/$d"; done
head -c 60000 f0 >small
for d in a b c; do
	"$C" put "$img" small "/$d/big" && "$C" mv "$img" "/$d/big" "/big-$d" &&
	"$C" ln "$img" "/big-$d" "/link-$d" || { fail setup "files in /$d"; finish; }
done
"$C" mkdir "$img" /a/sub && "$C" put "$img" f2 /a/sub/x && "$C" ln "$img" /a/sub/x /a/sub/y ||
	{ fail setup sub; finish; }
x0=$(xrefs "$img")
old=$("$C" stat "$img" /big-a | awk '/Inode:/ { print $2 }')
# each big-X is in X's chunk, both its names in the root's: 6 refs gone
if expect_exit 0 "$C" defrag -i "$img" && [ "$(xrefs "$img")" -le $((x0 - 6)) ] &&
   [ "$("$C" stat "$img" /big-a | awk '/Inode:/ { print $2 }')" != "$old" ]; then
	pass defrag_i_fewer_refs
else
	fail defrag_i_fewer_refs "refs $x0 -> $(xrefs "$img"): $(cat "$OUT" "$ERR")"
fi
check_exit defrag_i_fsck_clean 0 "$C" fsck -f -n "$img"
ok=1
for d in a b c; do
	"$C" cat "$img" "/big-$d" | cmp -s small - && "$C" cat "$img" "/link-$d" | cmp -s small - &&
		"$C" stat "$img" "/link-$d" | grep -q 'Links: 2 ' || ok=0
done
"$C" cat "$img" /a/sub/y | cmp -s f2 - || ok=0
[ $ok = 1 ] && pass defrag_i_data_intact || fail defrag_i_data_intact "a file or name differs"

cp "$img" before.img
if expect_exit 2 "$C" defrag && expect_exit 2 "$C" defrag "$img" extra &&
   expect_exit 2 "$C" defrag -x "$img" &&
   expect_exit 2 "$C" evacuate "$img" && expect_exit 2 "$C" evacuate "$img" x &&
   grep -q "bad chunk number 'x'" "$ERR" && expect_exit 2 "$C" defrag -z "$img" &&
   expect_exit 1 "$C" evacuate "$img" 9 && grep -q 'no chunk 9' "$ERR" &&
   expect_exit 1 "$C" defrag nosuch.img && cmp -s before.img "$img"; then
	pass move_usage_errors
else
	fail move_usage_errors "$(cat "$ERR")"
fi
finish
