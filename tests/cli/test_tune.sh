#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# chunkfs tune: label, UUID and default mount options round trip through
# the superblock and its backup; the data stays readable and the image
# checks clean; bad input changes nothing.
. "$(dirname "$0")/lib.sh"

C=$CHUNKFS
img=$TESTDIR/t.img
"$C" mkfs -q -c 4 -L before "$img" 16M || { fail setup mkfs; finish; }
head -c 300000 /dev/urandom >data
"$C" mkdir "$img" /d && "$C" put "$img" data /d/data || { fail setup put; finish; }

if ! command -v python3 >/dev/null; then
	skip tune "python3 not installed"
	finish
fi
# jinfo EXPR: a field of info --json (d is the object)
jinfo() {
	"$C" info --json "$img" | python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"
}
orig_uuid=$(jinfo 'd["uuid"]')

if expect_exit 0 "$C" tune "$img" && grep -q '^Filesystem label: *before$' "$OUT" &&
   grep -q "^Filesystem UUID: *$orig_uuid\$" "$OUT" &&
   grep -q '^Default mount options: *(none)$' "$OUT"; then
	pass tune_lists
else
	fail tune_lists "$(cat "$OUT" "$ERR")"
fi

u=0badc0de-1234-4abc-8def-0123456789ab
label='new label <&> ü'
if expect_exit 0 "$C" tune -L "$label" -U "$u" -o noatime,clean_after=2,cache_size=16M "$img" &&
   [ "$(jinfo 'd["label"]')" = "$label" ] && [ "$(jinfo 'd["uuid"]')" = "$u" ] &&
   [ "$(jinfo 'd["features"]["compat"] & 1, d["features"]["incompat"] & 1')" = "1 1" ] &&
   expect_exit 0 "$C" tune -l "$img" &&
   grep -q '^Default mount options: *noatime,clean_after=2,cache_size=16M$' "$OUT"; then
	pass tune_round_trip
else
	fail tune_round_trip "$(jinfo 'd')"
fi
# metadata is still bound to the old UUID: every checksum verifies
"$C" cat "$img" /d/data >back 2>/dev/null
cmp -s data back && pass tune_data_intact || fail tune_data_intact "data differs"
check_exit tune_fsck_clean 0 "$C" fsck -f -n "$img"
if expect_exit 0 "$C" put "$img" data /d/data2 && "$C" cat "$img" /d/data2 | cmp -s data -; then
	pass tune_writable_after
else
	fail tune_writable_after "$(cat "$ERR")"
fi

# random: a version 4 UUID, a new one each time
"$C" tune -U random "$img" >/dev/null && r1=$(jinfo 'd["uuid"]')
"$C" tune -U random "$img" >/dev/null && r2=$(jinfo 'd["uuid"]')
if [[ $r1 =~ ^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$ ]] &&
   [ "$r1" != "$r2" ] && [ "$r1" != "$u" ]; then
	pass tune_uuid_random
else
	fail tune_uuid_random "'$r1' '$r2'"
fi
"$C" tune -U nil "$img" >/dev/null
[ "$(jinfo 'd["uuid"]')" = 00000000-0000-0000-0000-000000000000 ] &&
	pass tune_uuid_nil || fail tune_uuid_nil "$(jinfo 'd["uuid"]')"
# back to the UUID it was made with: no feature needed any more
if expect_exit 0 "$C" tune -U "$orig_uuid" -o "" "$img" &&
   [ "$(jinfo 'd["features"]["compat"] & 1, d["features"]["incompat"] & 1')" = "0 0" ] &&
   [ "$(jinfo 'd["uuid"]')" = "$orig_uuid" ] && "$C" fsck -f -n "$img" >/dev/null; then
	pass tune_uuid_back_clears_feature
else
	fail tune_uuid_back_clears_feature "$(jinfo 'd["features"]')"
fi

# the backup superblock has the change: destroy the primary, fsck restores
"$C" tune -L from-backup -U "$u" "$img" >/dev/null
cp "$img" nosb.img
dd if=/dev/zero of=nosb.img bs=1024 count=1 conv=notrunc status=none
expect_exit '!0' "$C" fsck -y nosb.img
if expect_exit 0 "$C" info --json nosb.img &&
   python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
sys.exit(not (d["label"] == "from-backup" and d["uuid"] == sys.argv[2]))' "$OUT" "$u" &&
   "$C" cat nosb.img /d/data | cmp -s data -; then
	pass tune_backup_written
else
	fail tune_backup_written "$(head -c 300 "$OUT") $(head -c 300 "$ERR")"
fi

# bad input: usage errors, the image byte for byte unchanged
cp "$img" before.img
check_exit tune_label_too_long 2 "$C" tune -L "$(printf 'x%.0s' $(seq 64))" "$img"
check_exit tune_bad_uuid 2 "$C" tune -U 0badc0de-1234-4abc-8def-0123456789 "$img"
check_exit tune_bad_opts_space 2 "$C" tune -o "noatime, ro" "$img"
check_exit tune_bad_opts_empty 2 "$C" tune -o "ro,,noatime" "$img"
check_exit tune_no_image 2 "$C" tune -L x
# Default mount options are checked as the mount checks them (tune2fs -o
# too refuses what it does not know): before, each was stored, and then
# every mount of the image failed.  One line, naming the cause; no usage.
# tune_refuses NAME OPTIONS PATTERN
tune_refuses() {
	if expect_exit 2 "$C" tune -o "$2" "$img" && [ "$(wc -l <"$ERR")" = 1 ] &&
	   grep -Eq "^chunkfs: tune: $3" "$ERR"; then
		pass "$1"
	else
		fail "$1" "-o $2: $(head -c 300 "$ERR")"
	fi
}
tune_refuses tune_refuses_unsupported_opt noatime,dax "option 'dax' is not supported by chunkfs"
tune_refuses tune_refuses_unknown_opt foo=bar "unknown mount option 'foo=bar'"
tune_refuses tune_refuses_bad_size max_write=1 "bad max_write '1': 4096 to [0-9]+ bytes"
tune_refuses tune_refuses_bad_value errors=sometimes "bad errors 'sometimes'"
tune_refuses tune_refuses_small_cache cache_size=4K "bad cache_size '4K': 64K to 1T"
tune_refuses tune_refuses_bad_cache cache_size=lots "bad cache_size 'lots': 64K to 1T"
tune_refuses tune_refuses_ignored_opt user_xattr "option 'user_xattr' means nothing to chunkfs"
tune_refuses tune_refuses_fstab_opt nofail "option 'nofail' is for fstab only"
tune_refuses tune_refuses_not_a_default ro,remount "option 'remount' cannot be a default"
cmp -s before.img "$img" && pass tune_bad_input_no_change || fail tune_bad_input_no_change "image changed"
head -c 1048576 /dev/urandom >junk.img
cp junk.img junk.orig
if expect_exit 1 "$C" tune -L x junk.img && grep -q 'junk.img: not a chunkfs image' "$ERR" &&
   cmp -s junk.img junk.orig; then
	pass tune_not_chunkfs
else
	fail tune_not_chunkfs "$(cat "$ERR")"
fi
finish
