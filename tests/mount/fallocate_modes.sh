#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# fallocate's modes through the mount (issue 28 item 4): fallocate(1) -z
# (zero range, with and without --keep-size) gives the bytes and sizes the
# same operations give on a file of the scratch directory's filesystem (a
# reference, ext4 or tmpfs), and the image checks clean.  Collapse (-c)
# and insert (-i) range: the kernel's FUSE refuses them itself with
# EOPNOTSUPP (Linux 6.x), so the library's own tests cover them
# (test_falloc_modes, test_model); if a kernel ever passes them on, they
# are compared like zero range.
. "$(dirname "$0")/lib.sh"

need_fuse fallocate_modes
command -v fallocate >/dev/null || { skip fallocate_modes "no fallocate (util-linux)"; finish; }

img=$TESTDIR/fa.img
mnt=$PUB/mnt
ref=$TESTDIR/ref
mkdir "$mnt" "$ref"
mkfs_or_finish -c 4 "$img" 64M
mount_or_finish fallocate_mount

# the same sequence on both; prints each step's result
run() {
	local f=$1 out
	head -c 300000 "$TESTDIR/seed" >"$f"
	for step in "-z -o 5000 -l 20000" "-z -n -o 290000 -l 50000" "-z -o 299000 -l 8192" \
		    "-c -o 8192 -l 16384" "-i -o 4096 -l 8192"; do
		# shellcheck disable=SC2086
		if out=$(timeout 30 fallocate $step "$f" 2>&1); then
			echo "$step: OK $(stat -c %s "$f") $(cksum <"$f")"
		else
			case $out in
			*"not supported"*) echo "$step: EOPNOTSUPP" ;;
			*) echo "$step: ERR $out" ;;
			esac
		fi
	done
}
head -c 300000 /dev/urandom >"$TESTDIR/seed"
want=$(run "$ref/f")
got=$(run "$mnt/f")
if ! grep -q "^-c .*: OK" <<<"$want"; then
	skip fallocate_modes_ref "the reference filesystem has no collapse range: compared what it has"
fi
zero_want=$(grep '^-z' <<<"$want")
zero_got=$(grep '^-z' <<<"$got")
if [ "$zero_got" = "$zero_want" ] && grep -q "OK" <<<"$zero_got"; then
	pass fallocate_zero_range
else
	fail fallocate_zero_range "chunkfs: $zero_got; reference: $zero_want"
fi
shift_got=$(grep -E '^-(c|i)' <<<"$got")
if grep -q "EOPNOTSUPP" <<<"$shift_got" && ! grep -q ": OK" <<<"$shift_got"; then
	skip fallocate_shift_mount "the kernel's FUSE refuses collapse/insert range itself (EOPNOTSUPP)"
elif [ "$got" = "$want" ]; then
	pass fallocate_shift_mount
else
	fail fallocate_shift_mount "chunkfs: $got; reference: $want"
fi
# errors the daemon answers: zero range on a directory
mkdir "$mnt/d"
if out=$(fallocate -z -o 0 -l 4096 "$mnt/d" 2>&1); then
	fail fallocate_zero_dir "zero range on a directory succeeded"
else
	case $out in
	*"Is a directory"*|*"Bad file descriptor"*) pass fallocate_zero_dir ;;
	*) fail fallocate_zero_dir "$out" ;;
	esac
fi
unmount_checked
finish
