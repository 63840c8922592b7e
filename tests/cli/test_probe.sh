#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# chunkfs probe: what blkid prints of other filesystems, for chunkfs (udev
# imports --export): the exact lines for a fresh image, labels encoded as
# blkid encodes them (held to blkid itself on an ext4 image with the same
# label, where mkfs.ext4 and blkid are installed), exit 2 and silence on
# what is not chunkfs, a clear error and exit 4 on a damaged superblock,
# a truncated image, I/O and usage errors; an image from a newer chunkfs
# still named; nothing written.  The loop device, the udev rule and a
# mounted image: tests/mount/probe.sh.
. "$(dirname "$0")/lib.sh"

C=$CHUNKFS
img=$TESTDIR/p.img
uuid=0badc0de-1234-4abc-8def-0123456789ab
"$C" mkfs -q -c 2 -L plain -U "$uuid" "$img" 16M || { fail setup mkfs; finish; }

want="ID_FS_LABEL=plain
ID_FS_LABEL_ENC=plain
ID_FS_UUID=$uuid
ID_FS_UUID_ENC=$uuid
ID_FS_VERSION=1
ID_FS_BLOCK_SIZE=4096
ID_FS_TYPE=chunkfs
ID_FS_USAGE=filesystem"
if expect_exit 0 "$C" probe --export "$img" && [ ! -s "$ERR" ]; then
	same probe_export_fresh "$(cat "$OUT")" "$want"
else
	fail probe_export_fresh "$(cat "$ERR")"
fi
if expect_exit 0 "$C" probe "$img"; then
	same probe_human_line "$(cat "$OUT")" \
		"$img: LABEL=\"plain\" UUID=\"$uuid\" BLOCK_SIZE=\"4096\" TYPE=\"chunkfs\""
else
	fail probe_human_line "$(cat "$ERR")"
fi

# blkid's encodings: whitespace '_' in ID_FS_LABEL, \xNN for every byte
# unsafe in a link name in _ENC (UTF-8 kept), and in the human line M-
# for the eighth bit and '\' before '"' and '\'
label='my "data" ü\x'
"$C" tune -L "$label" "$img" >/dev/null || fail setup tune
if expect_exit 0 "$C" probe --export "$img"; then
	same probe_label_encoded "$(grep '^ID_FS_LABEL' "$OUT")" \
		"ID_FS_LABEL=my_\"data\"_ü\\x
ID_FS_LABEL_ENC=my\\x20\\x22data\\x22\\x20ü\\x5cx"
else
	fail probe_label_encoded "$(cat "$ERR")"
fi
expect_exit 0 "$C" probe "$img" &&
	same probe_label_human "$(cat "$OUT")" \
		"$img: LABEL=\"my \\\"data\\\" M-CM-<\\\\x\" UUID=\"$uuid\" BLOCK_SIZE=\"4096\" TYPE=\"chunkfs\"" ||
	fail probe_label_human "$(cat "$ERR")"

# the same label on ext4 (at most 16 bytes), through blkid itself, which
# drops trailing whitespace
if command -v blkid >/dev/null && command -v mkfs.ext4 >/dev/null; then
	ext=$TESTDIR/e.img
	for l in "$label" ' lead and trail ' 'tab	and $dollar' 'a/b' '日本 ラベ'; do
		rm -f "$ext"
		truncate -s 4M "$ext"
		mkfs.ext4 -q -F -L "$l" "$ext" >/dev/null 2>&1 || { fail probe_like_blkid "mkfs.ext4 -L '$l'"; continue; }
		"$C" tune -L "$l" "$img" >/dev/null || { fail probe_like_blkid "tune -L '$l'"; continue; }
		b=$(blkid -p -o udev "$ext" | grep '^ID_FS_LABEL')
		c=$("$C" probe --export "$img" | grep '^ID_FS_LABEL')
		bh=$(blkid -s LABEL "$ext" | sed "s|^$ext: ||")
		ch=$("$C" probe "$img" | sed "s|^$img: ||; s| UUID=.*||")
		if [ "$b" != "$c" ] || [ "$bh" != "$ch" ]; then
			fail "probe_like_blkid" "label '$l': blkid '$b' / '$bh', probe '$c' / '$ch'"
			continue
		fi
		pass "probe_like_blkid_$(echo "$l" | tr -c 'a-z' '_' | head -c 12)"
	done
else
	skip probe_like_blkid "blkid or mkfs.ext4 not installed: compared with literal strings only"
fi

# no label, nil UUID: left out, as blkid leaves them out
"$C" tune -L "" -U nil "$img" >/dev/null || fail setup tune_nil
if expect_exit 0 "$C" probe --export "$img" && ! grep -q 'LABEL\|UUID' "$OUT" &&
   grep -qx ID_FS_TYPE=chunkfs "$OUT" && expect_exit 0 "$C" probe "$img"; then
	same probe_no_label_nil_uuid "$(cat "$OUT")" "$img: BLOCK_SIZE=\"4096\" TYPE=\"chunkfs\""
else
	fail probe_no_label_nil_uuid "$(cat "$OUT" "$ERR")"
fi
"$C" tune -L plain -U "$uuid" "$img" >/dev/null || fail setup tune_back

# not chunkfs: exit 2, not a byte on stdout or stderr
: >empty
truncate -s 1M zeros
head -c 1M /dev/urandom >random
head -c 100 /dev/urandom >tiny
for f in empty zeros random tiny ${ext:+"$ext"}; do
	for mode in --export ""; do
		if expect_exit 2 "$C" probe $mode "$f" && [ ! -s "$OUT" ] && [ ! -s "$ERR" ]; then
			pass "probe_not_chunkfs_${f##*/}${mode:+_export}"
		else
			fail "probe_not_chunkfs_${f##*/}${mode:+_export}" "$(cat "$OUT" "$ERR" | head -c 300)"
		fi
	done
done

# nothing written: the image's bytes and times stay as they were
sum=$(md5sum <"$img")
touch -d '2001-01-01' "$img"
mt=$(stat -c %Y "$img")
"$C" probe --export "$img" >/dev/null
[ "$(md5sum <"$img")" = "$sum" ] && [ "$(stat -c %Y "$img")" = "$mt" ] &&
	pass probe_writes_nothing || fail probe_writes_nothing "the image changed"

# errors: exit 4 with a message, nothing on stdout
errcase() { # NAME GREP ARGS...
	local name=$1 re=$2
	shift 2
	if expect_exit 4 "$C" probe "$@" && [ ! -s "$OUT" ] && grep -q "$re" "$ERR"; then
		pass "$name"
	else
		fail "$name" "$(cat "$OUT" "$ERR" | head -c 400)"
	fi
}
errcase probe_missing_file 'No such file' --export "$TESTDIR/none"
errcase probe_directory 'not a block device or a regular file' "$TESTDIR"
errcase probe_usage_no_device 'no DEVICE given' --export
errcase probe_usage_two 'too many arguments' "$img" "$img"
errcase probe_usage_bad_option "unknown option '--bogus'" --bogus "$img"
if expect_exit 0 "$C" probe --help && grep -q -- '--export' "$OUT"; then
	pass probe_help
else
	fail probe_help "$(cat "$ERR")"
fi

# a damaged primary superblock: said, not taken for "not chunkfs"; the
# backup is not searched (that is fsck's), and fsck brings it back
CFSDAMAGE=$TESTDIR/cfsdamage
if cfsdamage_build "$CFSDAMAGE"; then
	cp "$img" bad.img
	"$CFSDAMAGE" bad.img sbflip 0 || fail setup sbflip
	errcase probe_bad_checksum 'superblock checksum mismatch (chunkfs fsck restores it' \
		--export bad.img
	"$C" fsck -y bad.img >/dev/null 2>&1
	if expect_exit 0 "$C" probe --export bad.img && grep -qx "ID_FS_UUID=$uuid" "$OUT"; then
		pass probe_after_fsck_restores
	else
		fail probe_after_fsck_restores "$(cat "$OUT" "$ERR")"
	fi
	# a damaged backup is no concern of the probe's
	cp "$img" badb.img
	"$CFSDAMAGE" badb.img sbflip 1 || fail setup sbflip1
	check_exit probe_ignores_backup 0 "$C" probe --export badb.img
	# made by a newer chunkfs: still named (a newer one can mount it)
	cp "$img" newer.img
	"$CFSDAMAGE" newer.img incompat 0x80000000 || fail setup incompat
	if expect_exit 0 "$C" probe --export newer.img && grep -qx "ID_FS_UUID=$uuid" "$OUT" &&
	   [ ! -s "$ERR" ] && expect_exit 0 "$C" probe newer.img && grep -q 'newer chunkfs' "$ERR"; then
		pass probe_newer_features
	else
		fail probe_newer_features "$(cat "$OUT" "$ERR")"
	fi
	cp "$img" zero.img
	"$CFSDAMAGE" zero.img super 0 || fail setup super0
	check_exit probe_zeroed_primary_not_chunkfs 2 "$C" probe --export zero.img
else
	fail probe_damage "cannot build cfsdamage"
fi

# a truncated image: the superblock promises more than the file holds
cp "$img" trunc.img
truncate -s 8M trunc.img
errcase probe_truncated 'image is truncated (filesystem larger than device)' --export trunc.img
head -c 600 "$img" >short.img
errcase probe_truncated_in_superblock 'shorter than its superblock' short.img

finish
