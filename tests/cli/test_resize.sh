#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# chunkfs resize on image files: grow after truncate, or to a SIZE that
# extends the file; whole chunks are added, info shows them, fsck -f -n is
# clean, the old files are intact and the new space holds a file that did
# not fit before.  Refused, changing nothing: shrinking, an image in use,
# not a chunkfs image, a directory not a mount point, a bad SIZE.  Capped at 256 chunks.
. "$(dirname "$0")/lib.sh"

C=$CHUNKFS
img=$TESTDIR/grow.img
chunks() { "$C" info "$1" | awk '/^Chunks:/ { print $2 }'; }

# 32 MiB in 2 chunks of 4095 blocks of 4 KiB
"$C" mkfs -q -c 2 "$img" 32M || { fail setup mkfs; finish; }
head -c $((10 << 20)) /dev/urandom >keep
head -c $((40 << 20)) /dev/urandom >big
mkdir -p tree && for i in $(seq 1 30); do head -c $((i * 2000)) /dev/urandom >"tree/f$i"; done
"$C" put "$img" keep /keep && "$C" put -r "$img" tree /tree || { fail setup put; finish; }
data_intact() {
	"$C" cat "$img" /keep | cmp -s keep - || return 1
	for i in $(seq 1 30); do "$C" cat "$img" "/tree/f$i" | cmp -s "tree/f$i" - || return 1; done
}

# ---- nothing to do -------------------------------------------------------
cp "$img" before.img
if expect_exit 0 "$C" resize "$img" && grep -q 'already 8192 (4k) blocks long (2 chunks).  Nothing to do!' "$OUT" &&
   grep -q '^Another chunk needs a size of 50327552 bytes; this one is 33554432\.$' "$OUT" &&
   cmp -s before.img "$img"; then
	pass resize_nothing_to_do
else
	fail resize_nothing_to_do "$(cat "$OUT" "$ERR")"
fi
# the put below does not fit yet
if expect_exit '!0' "$C" put "$img" big /big && grep -q 'No space left' "$ERR"; then
	pass resize_full_before
else
	fail resize_full_before "$(cat "$ERR")"
fi
"$C" rm -f "$img" /big 2>/dev/null

# ---- grow after truncate ----------------------------------------------------
truncate -s 64M "$img"
if expect_exit 0 "$C" resize "$img" &&
   grep -q '^The filesystem on .*grow.img is now 16382 (4k) blocks long: 4 chunks, was 2\.$' "$OUT" &&
   grep -q '^8192 bytes at the end stay unused (less than a chunk, 16773120 bytes)\.$' "$OUT"; then
	pass resize_grow_truncated
else
	fail resize_grow_truncated "$(cat "$OUT" "$ERR")"
fi
if expect_exit 0 "$C" info "$img" && grep -q '^Chunks: *4$' "$OUT" &&
   grep -q '^Backup superblock: *16381$' "$OUT" && grep -q '^Total blocks: *16382$' "$OUT" &&
   grep -Eq '^ +3  clean +0 +3836 ' "$OUT"; then
	pass resize_info_new_chunks
else
	fail resize_info_new_chunks "$(cat "$OUT")"
fi
check_exit resize_fsck_clean 0 "$C" fsck -f -n "$img"
data_intact && pass resize_data_intact || fail resize_data_intact "a file differs"
if expect_exit 0 "$C" put "$img" big /big && "$C" cat "$img" /big | cmp -s big -; then
	pass resize_new_space_used
else
	fail resize_new_space_used "$(cat "$ERR")"
fi
check_exit resize_fsck_after_put 0 "$C" fsck -f -n "$img"

# ---- SIZE extends the file ---------------------------------------------------
if expect_exit 0 "$C" resize "$img" 100M && [ "$(stat -c %s "$img")" = $((100 << 20)) ] &&
   [ "$(chunks "$img")" = 6 ] && grep -q 'now 24572 (4k) blocks long: 6 chunks, was 4' "$OUT"; then
	pass resize_size_extends_file
else
	fail resize_size_extends_file "size $(stat -c %s "$img"): $(cat "$OUT" "$ERR")"
fi
check_exit resize_size_fsck_clean 0 "$C" fsck -f -n "$img"
data_intact && "$C" cat "$img" /big | cmp -s big - && pass resize_size_data_intact ||
	fail resize_size_data_intact "a file differs"

# a SIZE between two blocks is its whole blocks (it used to be refused:
# "the device holds only" the bytes the file was just extended to)
if expect_exit 0 "$C" resize "$img" $((28667 * 4096 + 4095)) &&
   [ "$(stat -c %s "$img")" = $((28667 * 4096)) ] && [ "$(chunks "$img")" = 7 ]; then
	pass resize_size_partial_block
else
	fail resize_size_partial_block "size $(stat -c %s "$img"): $(cat "$OUT" "$ERR")"
fi
check_exit resize_partial_fsck_clean 0 "$C" fsck -f -n "$img"

# ---- refusals ---------------------------------------------------------------
cp "$img" before.img
if expect_exit 1 "$C" resize "$img" 8M &&
   grep -q 'grow.img: cannot shrink to 8388608 bytes: one chunk and the two superblocks need 16781312$' "$ERR" &&
   cmp -s before.img "$img"; then
	pass resize_refuses_shrink
else
	fail resize_refuses_shrink "$(cat "$ERR")"
fi
if expect_exit 2 "$C" resize "$img" 12Q && grep -q "bad size '12Q'" "$ERR" &&
   expect_exit 2 "$C" resize && expect_exit 2 "$C" resize "$img" 1G extra &&
   cmp -s before.img "$img"; then
	pass resize_usage_errors
else
	fail resize_usage_errors "$(cat "$ERR")"
fi
# past the host filesystem's limit on a file's size (ext4: 16 TiB less a
# block): ftruncate's EFBIG is the host's, not a device "holding only"
# what the image has (issue 25)
case $(stat -f -c %T "$TESTDIR") in
ext2/ext3)
	if expect_exit 1 "$C" resize "$img" 16T &&
	   grep -q "cannot extend the image file to 17592186044416 bytes: the host filesystem's limit on a file's size is smaller (ftruncate: File too large)" "$ERR" &&
	   ! grep -q "holds only" "$ERR" && cmp -s before.img "$img"; then
		pass resize_names_host_file_limit
	else
		fail resize_names_host_file_limit "$(cat "$ERR")"
	fi ;;
*) skip resize_names_host_file_limit "$TESTDIR is on $(stat -f -c %T "$TESTDIR"), whose file size limit is not known here; ext4 has one below 16 TiB" ;;
esac
# a writer (what a mount is to the image) holds its lock
flock -x "$img" sleep 30 &
holder=$!
for _ in $(seq 50); do flock -n -x "$img" true 2>/dev/null || break; sleep 0.1; done
if expect_exit 1 "$C" resize "$img" 200M && grep -q 'unmount it first' "$ERR" &&
   cmp -s before.img "$img"; then
	pass resize_refuses_in_use
else
	fail resize_refuses_in_use "$(cat "$ERR")"
fi
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
head -c 1M /dev/urandom >junk.img
cp junk.img junk.before
if expect_exit 1 "$C" resize junk.img 2M && grep -q 'not a chunkfs image' "$ERR" &&
   cmp -s junk.before junk.img; then
	pass resize_refuses_junk
else
	fail resize_refuses_junk "$(cat "$ERR")"
fi
mkdir adir
# a directory is taken for a mount point (tests/mount/resize.sh)
if expect_exit 1 "$C" resize adir && grep -q 'adir: not the mount point of a chunkfs mount' "$ERR" &&
   expect_exit 1 "$C" resize nosuch.img && grep -q 'nosuch.img: No such file' "$ERR"; then
	pass resize_refuses_directory
else
	fail resize_refuses_directory "$(cat "$ERR")"
fi

# ---- at most 256 chunks --------------------------------------------------------
# 255 chunks of 15 blocks of 1 KiB, then room for 272
small=$TESTDIR/many.img
if "$C" mkfs -q -b 1024 -c 255 -N 4080 "$small" $((255 * 15 + 2))K &&
   [ "$(chunks "$small")" = 255 ] && truncate -s 4M "$small" &&
   expect_exit 0 "$C" resize "$small" && [ "$(chunks "$small")" = 256 ] &&
   grep -q '^260096 bytes at the end stay unused (256 chunks is the most a filesystem can have)\.$' "$OUT" &&
   expect_exit 0 "$C" fsck -f -n "$small" &&
   truncate -s 8M "$small" && expect_exit 0 "$C" resize "$small" &&
   grep -q 'the most a filesystem can have' "$OUT"; then
	pass resize_caps_at_256
else
	fail resize_caps_at_256 "$(chunks "$small") chunks: $(cat "$OUT" "$ERR")"
fi
finish
