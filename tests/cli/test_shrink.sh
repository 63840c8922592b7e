#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# chunkfs resize IMAGE SIZE with a smaller SIZE: the last chunks' data
# moved into the chunks kept, the chunks dropped, the image file cut to
# SIZE, fsck -f -n clean, every file's bytes the same, the backup
# superblock at its new place; refused, the image unchanged, when the
# data does not fit, when files live in the chunks to drop, and when
# SIZE cannot hold one chunk.
. "$(dirname "$0")/lib.sh"

C=$CHUNKFS
img=$TESTDIR/s.img
chunks() { "$C" info "$1" | awk '/^Chunks:/ { print $2 }'; }
same() { for i in "$@"; do "$C" cat "$img" "/f$i" | cmp -s "f$i" - || return 1; done; }

"$C" mkfs -q -c 4 "$img" 8M || { fail setup mkfs; finish; }
for i in 0 1 2 3 4; do head -c 1300000 /dev/urandom >"f$i"; "$C" put "$img" "f$i" "/f$i" || { fail "setup put f$i"; finish; }; done
"$C" rm "$img" /f1 /f3 || { fail setup rm; finish; }
cp "$img" before.img

# 2 chunks cannot take what is left
if expect_exit 1 "$C" resize "$img" 4200K && grep -q 'the data does not fit' "$ERR" &&
   cmp -s before.img "$img"; then
	pass shrink_refuses_no_room
else
	fail shrink_refuses_no_room "$(cat "$OUT" "$ERR")"
fi
if expect_exit 1 "$C" resize "$img" 1M && grep -q 'cannot shrink to 1048576 bytes' "$ERR" &&
   cmp -s before.img "$img"; then
	pass shrink_refuses_below_a_chunk
else
	fail shrink_refuses_below_a_chunk "$(cat "$ERR")"
fi

# every file's head is in chunk 0, so 3 chunks can be kept
cb=$("$C" info "$img" | awk '/^Blocks per chunk:/ { print $4 }')
bs=$("$C" info "$img" | awk '/^Block size:/ { print $3 }')
size=$(( (2 + 3 * cb) * bs ))
if [ -n "$cb" ] && [ -n "$bs" ] && expect_exit 0 "$C" resize "$img" "$size" &&
   grep -q ': 3 chunks, was 4\.$' "$OUT" && [ "$(chunks "$img")" = 3 ] &&
   [ "$(stat -c %s "$img")" = "$size" ] &&
   "$C" info "$img" | grep -q "^Backup superblock: *$((1 + 3 * cb))$"; then
	pass shrink_drops_chunk
else
	fail shrink_drops_chunk "cb=$cb bs=$bs size $(stat -c %s "$img"): $(cat "$OUT" "$ERR")"
fi
check_exit shrink_fsck_clean 0 "$C" fsck -f -n "$img"
same 0 2 4 && pass shrink_data_intact || fail shrink_data_intact "a file differs"
# and it grows back
if expect_exit 0 "$C" resize "$img" 8M && [ "$(chunks "$img")" = 4 ] &&
   expect_exit 0 "$C" fsck -f -n "$img" && same 0 2 4; then
	pass shrink_then_grow
else
	fail shrink_then_grow "$(cat "$OUT" "$ERR")"
fi

# a file whose own inode is in a chunk to drop: its number would change
"$C" mkfs -q -F -c 4 "$img" 8M || { fail setup mkfs2; finish; }
for d in a b c d e f; do "$C" mkdir "$img" "/$d"; done
"$C" put "$img" f0 /f/f0 || { fail setup put2; finish; }
last=$("$C" info --json "$img" | python3 -c "
import json, sys
print(max(c['index'] for c in json.load(sys.stdin)['chunks'] if c['used_inodes']))")
cp "$img" before.img
size=$(( (2 + last * cb) * bs ))
if [ "$last" -gt 0 ] && expect_exit 1 "$C" resize "$img" "$size" &&
   grep -q "chunk $last holds .* files or directories: moving them would change their inode numbers" "$ERR" &&
   cmp -s before.img "$img"; then
	pass shrink_refuses_files_there
else
	fail shrink_refuses_files_there "last=$last: $(cat "$ERR")"
fi
finish
