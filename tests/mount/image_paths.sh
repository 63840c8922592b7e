#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A mounted image reached by another path (issue 25 item 6): through a
# hard link, a bind mount of its directory, or a mount whose source is no
# path (-o fsname=), info, fsck -n, put and mount must see that it is
# mounted and return at once.  They used to take the image for one whose
# daemon was still writing after umount, and wait for ever.
# shellcheck disable=SC1091
. "$(dirname "$0")/lib.sh"

need_fuse image_paths

mnt=$PUB/mnt
other=$PUB/other
bind=$PUB/bind
mkdir "$mnt" "$other" "$bind" "$TESTDIR/d"
img=$TESTDIR/d/a.img
mkfs_or_finish -c 2 "$img" 64M
ln "$img" "$TESTDIR/d/link.img" || { fail setup "ln failed"; finish; }

# Each command is given 30 seconds: seconds, where it used to hang.
CMD_TIMEOUT=30

# NAME PATH MNTNAME: what each command does on the mounted image at PATH;
# MNTNAME is the mount point it should name ("" when it cannot know it).
mounted_via() {
	local name=$1 path=$2 where=$3
	if expect_exit 0 "$CHUNKFS" info "$path" && grep -q "^Mounted on: *$where" "$OUT"; then
		pass "info_via_$name"
	else
		fail "info_via_$name" "$(head -c 300 "$OUT") $(head -c 300 "$ERR")"
	fi
	if expect_exit 0 "$CHUNKFS" fsck -n "$path" &&
		grep -q "warning: .*$path is .*\(mounted on $where\|written by another\)" "$ERR"; then
		pass "fsck_n_via_${name}_warns"
	else
		fail "fsck_n_via_${name}_warns" "$(head -c 300 "$ERR")"
	fi
	if echo x | expect_exit '!0' "$CHUNKFS" put "$path" - /x && grep -q "in use" "$ERR"; then
		pass "put_via_${name}_refused"
	else
		fail "put_via_${name}_refused" "$(head -c 300 "$ERR")"
	fi
	if expect_exit '!0' "$CHUNKFS" mount "$path" "$other" && ! _m_is_mounted "$other"; then
		pass "mount_via_${name}_refused"
	else
		fail "mount_via_${name}_refused" "$(head -c 300 "$ERR")"
		_m_is_mounted "$other" && umount "$other"
	fi
}

mount_or_finish mount
echo live >"$mnt/f"
mounted_via hardlink "$TESTDIR/d/link.img" "$mnt"
if mount --bind "$TESTDIR/d" "$bind"; then
	MOUNTS+=("$bind")
	mounted_via bind "$bind/a.img" "$mnt"
	umount "$bind" && forget_mount "$bind"
else
	skip bind "mount --bind failed"
fi
# remount names the image too: by the link, the same mount
if expect_exit 0 "$CHUNKFS" mount -o remount,ro "$TESTDIR/d/link.img" "$mnt" &&
	awk -v d="$mnt" '$2 == d { print $4 }' /proc/self/mounts | grep -q '^ro,'; then
	pass remount_via_hardlink
else
	fail remount_via_hardlink "$(head -c 300 "$ERR")"
fi
unmount_ok unmount

# A source the mount table cannot name as a file: the daemon is found
# by its open image, and is seen to serve a mount (it holds /dev/fuse).
mount_or_finish mount_fsname -o fsname=somename
info_mnt() { # the info output's "Mounted on" value, "" if none
	sed -n 's/^Mounted on: *\([^ ]*\).*/\1/p' "$OUT"
}
if expect_exit 0 "$CHUNKFS" info "$img" && [ -z "$(info_mnt)" ]; then
	pass info_via_fsname
else
	fail info_via_fsname "$(head -c 300 "$OUT") $(head -c 300 "$ERR")"
fi
if expect_exit 0 "$CHUNKFS" fsck -n "$img" && grep -q "warning: " "$ERR"; then
	pass fsck_n_via_fsname_warns
else
	fail fsck_n_via_fsname_warns "$(head -c 300 "$ERR")"
fi
if echo x | expect_exit '!0' "$CHUNKFS" put "$img" - /x && grep -q "in use" "$ERR"; then
	pass put_via_fsname_refused
else
	fail put_via_fsname_refused "$(head -c 300 "$ERR")"
fi
unmount_ok unmount_fsname
[ "$(timeout 30 "$CHUNKFS" cat "$img" /f 2>&1)" = live ] && pass data_kept ||
	fail data_kept "/f does not read back"
finish
