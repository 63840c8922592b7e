#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# chunkfs resize IMAGE SIZE with a smaller SIZE: the last chunks' data
# moved into the chunks kept, the chunks dropped, the image file cut to
# SIZE, fsck -f -n clean, every file's bytes the same, the backup
# superblock at its new place; files whose own inode is in a chunk to
# drop renumbered, every name and hard link following; refused, the
# image unchanged, when the data does not fit, when directories live in
# the chunks to drop, and when SIZE cannot hold one chunk.
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

# files whose own inode is in the chunk to drop: renumbered into the
# chunks kept, every name (hard links from two directories) following
"$C" mkfs -q -F -c 4 "$img" 8M || { fail setup mkfs2; finish; }
for d in a b c d e f; do "$C" mkdir "$img" "/$d"; done
last=$(( $(chunks "$img") - 1 ))
there=$("$C" ls -i "$img" / | awk -v l="$last" 'int($1 / 16777216) == l { print $2 }')
d=$(echo "$there" | head -n 1)
printf 'small\n' >small
if [ -z "$d" ] || ! "$C" put "$img" f0 "/$d/big" || ! "$C" put "$img" small "/$d/small" ||
   ! "$C" ln "$img" "/$d/big" /big2 || ! "$C" ln "$img" "/$d/small" /a/small2 ||
   ! "$C" ln -s "$img" some/target "/$d/sl" || ! "$C" mv "$img" "/$d/big" /a/big ||
   ! "$C" mv "$img" "/$d/small" /small || ! "$C" mv "$img" "/$d/sl" /sl; then
	fail setup "files in chunk $last through /$d"
	finish
fi
for x in $there; do "$C" rm -d "$img" "/$x" || { fail setup "rm -d /$x"; finish; }; done
old=$("$C" stat "$img" /a/big | awk '/Inode:/ { print $2 }')
size=$(( (2 + last * cb) * bs ))
names_ok() {
	"$C" cat "$img" /a/big | cmp -s f0 - && "$C" cat "$img" /big2 | cmp -s f0 - &&
	"$C" cat "$img" /small | cmp -s small - && "$C" cat "$img" /a/small2 | cmp -s small - &&
	[ "$("$C" stat "$img" /a/big | awk '/Inode:/ { print $2 }')" = \
	  "$("$C" stat "$img" /big2 | awk '/Inode:/ { print $2 }')" ] &&
	"$C" stat "$img" /a/big | grep -q 'Links: 2 ' &&
	"$C" stat "$img" /a/small2 | grep -q 'Links: 2 ' &&
	"$C" ls -l "$img" /sl | grep -q -- '-> some/target$'
}
names_ok || fail setup "names before the shrink"
if expect_exit 0 "$C" resize "$img" "$size" && [ "$(chunks "$img")" = "$last" ]; then
	pass shrink_renumbers_files
else
	fail shrink_renumbers_files "last=$last: $(cat "$OUT" "$ERR")"
fi
new=$("$C" stat "$img" /a/big | awk '/Inode:/ { print $2 }')
if [ -n "$new" ] && [ "$new" != "$old" ] && [ $((new / 16777216)) -lt "$last" ] &&
   [ -z "$("$C" ls -i -R "$img" / | awk -v l="$last" 'int($1 / 16777216) >= l')" ]; then
	pass shrink_new_numbers
else
	fail shrink_new_numbers "old $old new $new"
fi
check_exit shrink_renumber_fsck_clean 0 "$C" fsck -f -n "$img"
names_ok && pass shrink_renumber_names_intact ||
	fail shrink_renumber_names_intact "$("$C" ls -l -R "$img" /)"

# a directory whose own inode is in a chunk to drop: not renumbered yet
last=$(( $(chunks "$img") - 1 ))
cp "$img" before.img
size=$(( (2 + last * cb) * bs ))
if expect_exit 1 "$C" resize "$img" "$size" &&
   grep -q "chunk $last holds [0-9]* directories: moving them would change their inode numbers" "$ERR" &&
   cmp -s before.img "$img"; then
	pass shrink_refuses_directories_there
else
	fail shrink_refuses_directories_there "last=$last: $(cat "$ERR")"
fi
finish
