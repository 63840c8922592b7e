#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Giving space back through the mount (issue 14 item 4): fstrim(8) on the
# mount point (FITRIM, a FUSE ioctl on the root directory) and -o discard
# punch holes in the image file for blocks freed by rm -rf, so the image's
# allocated size falls, and the files left read back unchanged.
. "$(dirname "$0")/lib.sh"

need_fuse trim_mount
command -v fstrim >/dev/null || { skip trim_mount "no fstrim (util-linux)"; finish; }

img=$TESTDIR/trim.img
mnt=$PUB/mnt
mkdir "$mnt"
alloc_mib() { echo $(( $(stat -c '%b * %B' "$1") >> 20 )); }

# fill DIR with MIB MiB of random data in 4 subdirectories, and a keeper
fill() {
	local i
	head -c 1M /dev/urandom >"$mnt/keep"
	for i in 1 2 3 4; do
		mkdir -p "$mnt/tree/d$i"
		timeout 60 dd if=/dev/urandom of="$mnt/tree/d$i/f" bs=1M count=$(( $1 / 4 )) \
			status=none
	done
	timeout 60 sync -f "$mnt"
	keep_sum=$(cksum <"$mnt/keep")
}

"$CHUNKFS" mkfs -q -c 4 "$img" 128M || { fail mkfs "mkfs failed"; finish; }
if ! mount_fs "$img" "$mnt" -o allow_other; then
	fail trim_mount "mount failed"
	finish
fi
pass trim_mount

fill 48
full=$(alloc_mib "$img")
timeout 30 rm -rf "$mnt/tree"
timeout 30 sync -f "$mnt"
after_rm=$(alloc_mib "$img")
# without a trim the image keeps the space (that is what fstrim is for)
if [ "$after_rm" -ge $(( full - 4 )) ]; then
	pass rm_alone_keeps_space
else
	fail rm_alone_keeps_space "allocated ${full} MiB, ${after_rm} MiB after rm alone"
fi

if out=$(timeout 60 "${NOBODY[@]}" fstrim "$mnt" 2>&1); then
	fail fstrim_needs_root "uid 65534 could trim: $out"
elif grep -q "Operation not permitted" <<<"$out"; then
	pass fstrim_needs_root
else
	fail fstrim_needs_root "expected EPERM, got: $out"
fi

if out=$(timeout 60 fstrim -v "$mnt" 2>&1); then
	pass fstrim_runs
else
	fail fstrim_runs "$out"
fi
trimmed=$(alloc_mib "$img")
if [ "$trimmed" -le $(( after_rm - 40 )) ]; then
	pass fstrim_gives_space_back
else
	fail fstrim_gives_space_back "allocated ${after_rm} MiB before fstrim, ${trimmed} after ($out)"
fi
# fstrim reports what was discarded: at least the 48 MiB freed
bytes=$(sed -n 's/.*(\([0-9]*\) bytes) trimmed.*/\1/p' <<<"$out")
if [ -n "$bytes" ] && [ "$bytes" -ge $(( 48 << 20 )) ]; then
	pass fstrim_reports_bytes
else
	fail fstrim_reports_bytes "fstrim said: $out"
fi
if [ "$(cksum <"$mnt/keep")" = "$keep_sum" ]; then
	pass trim_keeps_data
else
	fail trim_keeps_data "keep changed after fstrim"
fi
unmount_fs "$mnt"

if out=$("$CHUNKFS" fsck -f -n "$img" 2>&1); then
	pass fsck_after_fstrim
else
	fail fsck_after_fstrim "$out"
fi

# -o discard: freed blocks are discarded by the daemon itself, batched
# (once free space has grown and clean_after has passed)
if ! mount_fs "$img" "$mnt" -o discard,clean_after=0.5; then
	fail discard_mount "mount failed"
	finish
fi
pass discard_mount
rm -f "$mnt/keep"
fill 48
full=$(alloc_mib "$img")
timeout 30 rm -rf "$mnt/tree"
got=
for _ in $(seq 100); do
	now=$(alloc_mib "$img")
	if [ "$now" -le $(( full - 40 )) ]; then
		got=$now
		break
	fi
	sleep 0.1
done
if [ -n "$got" ]; then
	pass discard_gives_space_back
else
	fail discard_gives_space_back "allocated ${full} MiB, still $(alloc_mib "$img") after 10 s; free $(stat -f -c %f "$mnt"); $(tail -3 "$DAEMON_LOG")"
fi
if [ "$(cksum <"$mnt/keep")" = "$keep_sum" ]; then
	pass discard_keeps_data
else
	fail discard_keeps_data "keep changed"
fi
unmount_fs "$mnt"
log_clean discard_daemon_log "$DAEMON_LOG"
if out=$("$CHUNKFS" fsck -f -n "$img" 2>&1); then
	pass fsck_after_discard
else
	fail fsck_after_discard "$out"
fi

# read-only: FITRIM is refused with EROFS, nothing changes
if mount_fs "$img" "$mnt" -o ro; then
	if out=$(timeout 30 fstrim "$mnt" 2>&1); then
		fail fstrim_ro_refused "fstrim on a read-only mount succeeded"
	elif grep -q "Read-only file system" <<<"$out"; then
		pass fstrim_ro_refused
	else
		fail fstrim_ro_refused "expected EROFS, got: $out"
	fi
	unmount_fs "$mnt"
else
	fail fstrim_ro_refused "read-only mount failed"
fi
finish
