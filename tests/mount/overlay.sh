#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# chunkfs as the upper layer of overlayfs (issue 28 item 6): the kernel's
# overlay mount over a lower directory on tmpfs with upperdir and workdir
# on the chunkfs mount.  overlayfs refuses an upper on FUSE ("upper fs
# missing required features") unless it has RENAME_WHITEOUT, xattrs in
# trusted.* and d_type.  Through the merged view: files created, a lower
# file deleted (its whiteout, a character device 0/0, in the upper
# layer), a lower directory renamed (copied up with the default options,
# a trusted.overlay.redirect with redirect_dir=on), a lower directory
# removed and made again (opaque), a lower file changed (copy-up), hard
# links copied up with index=on, metadata alone with metacopy=on.  Then
# both unmounted, fsck -f -n clean, both mounted again and the merged
# view the same.
. "$(dirname "$0")/lib.sh"

need_fuse overlay_mount
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null
if ! grep -qw overlay /proc/filesystems; then
	echo "***** OVERLAY NOT TESTED: no overlayfs in this kernel *****" >&2
	skip overlay_mount "no overlay filesystem in this kernel: chunkfs as upper NOT tested"
	finish
fi

img=$TESTDIR/overlay.img
mnt=$PUB/mnt
low=$PUB/lower
ovl=$PUB/merged
mkdir "$mnt" "$low" "$ovl"

_ovl_cleanup() {
	local d
	for d in "$ovl" "$low"; do
		mountpoint -q "$d" 2>/dev/null && { umount "$d" 2>/dev/null || umount -l "$d"; }
	done
	_m_cleanup
}
trap _ovl_cleanup EXIT

ovl_mount() {
	timeout 30 mount -t overlay overlay \
		-o "lowerdir=$low,upperdir=$mnt/upper,workdir=$mnt/work${1:+,$1}" "$ovl" \
		2>"$TESTDIR/ovl.err"
}

ovl_umount() {
	timeout 30 umount "$ovl" || { umount -l "$ovl"; return 1; }
}

# The kernel log since now, for overlayfs's words about the upper fs
# (dmesg may be closed to us: then say so).  By time, not line count:
# the ring may wrap meanwhile.
klog_mark() {
	klog_from=
	dmesg >/dev/null 2>&1 && klog_from=$(awk '{ print $1 - 0.5 }' /proc/uptime)
}
klog_overlay() {
	[ -n "$klog_from" ] && dmesg 2>/dev/null | awk -v t="$klog_from" '
		/overlayfs/ { ts = substr($0, 2, index($0, "]") - 2) + 0; if (ts >= t) print }'
}

# path type mode size [cksum] of everything in DIR, sorted
view() {
	(cd "$1" && find . -mindepth 1 -printf '%p %y %m %u %s\n' | sort) &&
		(cd "$1" && find . -type f -print0 | sort -z | xargs -0 -r cksum)
}

xattr() {   # FILE NAME: the value, or nothing
	python3 -c 'import os, sys
try:
    sys.stdout.write(os.getxattr(sys.argv[1], sys.argv[2]).decode("latin-1").replace("\0", "."))
except OSError:
    pass' "$1" "$2"
}

xattr_set() {   # FILE NAME: status 0 if FILE has NAME (even empty)
	python3 -c 'import os, sys; os.getxattr(sys.argv[1], sys.argv[2])' "$1" "$2" 2>/dev/null
}

is_whiteout() {
	[ "$(stat -c '%F %t %T' "$1" 2>/dev/null)" = "character special file 0 0" ]
}

# the lower layer, on tmpfs
mount -t tmpfs -o size=16m tmpfs "$low" || { fail lower_tmpfs "cannot mount tmpfs"; finish; }
echo lower-file >"$low/f"
echo keep-me >"$low/keep"
mkdir -p "$low/d" "$low/d2/sub" "$low/r/deep"
echo a >"$low/d/a"
echo b >"$low/d2/sub/b"
echo rf >"$low/r/deep/rf"
echo linked >"$low/hl"
echo meta >"$low/meta"
ln "$low/hl" "$low/hl2"

"$CHUNKFS" mkfs -q -c 4 "$img" 128M || { fail mkfs "mkfs failed"; finish; }
mount_or_finish chunkfs_mount
mkdir "$mnt/upper" "$mnt/work"

klog_mark
if ovl_mount; then
	pass overlay_mount
else
	fail overlay_mount "$(cat "$TESTDIR/ovl.err"); kernel: $(klog_overlay | tail -3)"
	finish
fi
# What overlayfs says of the upper layer: only the missing O_TMPFILE
# (it then copies up through a file made in workdir) may remain.
if [ -z "$klog_from" ]; then
	echo "***** dmesg not readable: overlayfs's warnings NOT checked *****" >&2
	skip overlay_upper_warnings "dmesg not readable"
else
	warn=$(klog_overlay | grep -v "does not support tmpfile" || true)
	if [ -z "$warn" ]; then
		pass overlay_upper_warnings
	else
		fail overlay_upper_warnings "$warn"
	fi
	klog_overlay | sed 's/^/  kernel: /'
fi

# create
echo new >"$ovl/created" && mkdir "$ovl/newdir" && echo x >"$ovl/newdir/x" &&
	[ "$(cat "$mnt/upper/newdir/x")" = x ] && pass create || fail create "$(ls -la "$mnt/upper")"

# delete a lower file: gone from the merged view, a whiteout above it
rm "$ovl/f"
if [ ! -e "$ovl/f" ] && is_whiteout "$mnt/upper/f"; then
	pass delete_lower_whiteout
else
	fail delete_lower_whiteout "merged: $(ls "$ovl"); upper f: $(stat -c '%F %t %T' "$mnt/upper/f" 2>&1)"
fi

# rename a lower directory: overlayfs without redirect_dir answers EXDEV,
# mv copies it up and removes the old one, leaving a whiteout
if timeout 30 mv "$ovl/d" "$ovl/d-moved" && [ ! -e "$ovl/d" ] &&
	[ "$(cat "$ovl/d-moved/a")" = a ] && is_whiteout "$mnt/upper/d"; then
	pass rename_lower_dir
else
	fail rename_lower_dir "merged: $(ls "$ovl"); upper: $(ls -la "$mnt/upper")"
fi

# remove a lower directory and make it again: opaque, the lower entries hidden
rm -r "$ovl/d2" && mkdir "$ovl/d2" && echo n >"$ovl/d2/n"
if [ "$(ls -A "$ovl/d2")" = n ] && [ "$(xattr "$mnt/upper/d2" trusted.overlay.opaque)" = y ]; then
	pass opaque_dir
else
	fail opaque_dir "merged d2: $(ls -A "$ovl/d2"); opaque: $(xattr "$mnt/upper/d2" trusted.overlay.opaque)"
fi

# change a lower file: copied up whole, the lower one untouched
echo more >>"$ovl/keep"
if [ "$(cat "$mnt/upper/keep")" = "$(printf 'keep-me\nmore')" ] && [ "$(cat "$low/keep")" = keep-me ]; then
	pass copy_up
else
	fail copy_up "upper keep: $(cat "$mnt/upper/keep" 2>&1)"
fi

view "$ovl" >"$TESTDIR/view1" || fail view1 "cannot list the merged view"
ovl_umount && pass overlay_umount || fail overlay_umount "busy"
unmount_ok chunkfs_unmount
if out=$("$CHUNKFS" fsck -f -n "$img" 2>&1); then
	pass fsck_clean
else
	fail fsck_clean "$out"
fi

# both again: the same merged view
mount_or_finish chunkfs_remount
if ovl_mount; then
	pass overlay_remount
	view "$ovl" >"$TESTDIR/view2"
	if cmp -s "$TESTDIR/view1" "$TESTDIR/view2"; then
		pass merged_view_persists
	else
		fail merged_view_persists "$(diff "$TESTDIR/view1" "$TESTDIR/view2" | head -20)"
	fi
	ovl_umount
else
	fail overlay_remount "$(cat "$TESTDIR/ovl.err")"
fi

# redirect_dir=on: a lower directory renamed in place (RENAME_WHITEOUT or
# an exchange with a whiteout, and trusted.overlay.redirect); index=on:
# hard links copied up as one (trusted.overlay.origin, workdir/index);
# metacopy=on: metadata copied up alone (trusted.overlay.metacopy)
if ovl_mount redirect_dir=on,index=on,metacopy=on; then
	pass overlay_mount_redirect_index_metacopy
	if timeout 30 mv "$ovl/r" "$ovl/r-moved" && [ ! -e "$ovl/r" ] &&
		[ "$(cat "$ovl/r-moved/deep/rf")" = rf ] && is_whiteout "$mnt/upper/r" &&
		[ "$(xattr "$mnt/upper/r-moved" trusted.overlay.redirect)" = r ]; then
		pass rename_lower_dir_redirect
	else
		fail rename_lower_dir_redirect "upper: $(ls -la "$mnt/upper"); redirect: $(xattr "$mnt/upper/r-moved" trusted.overlay.redirect)"
	fi
	echo more >>"$ovl/hl"
	if [ "$(cat "$ovl/hl2")" = "$(printf 'linked\nmore')" ] &&
		[ -n "$(xattr "$mnt/upper/hl" trusted.overlay.origin)" ] &&
		[ -n "$(ls "$mnt/work/index" 2>/dev/null)" ]; then
		pass index_hardlink_copy_up
	else
		fail index_hardlink_copy_up "hl2: $(cat "$ovl/hl2"); index: $(ls -la "$mnt/work/index" 2>&1)"
	fi
	# metacopy: a chown copies up the metadata alone
	chown 1234 "$ovl/meta"
	if [ "$(stat -c %u "$mnt/upper/meta")" = 1234 ] && [ "$(cat "$ovl/meta")" = meta ] &&
		xattr_set "$mnt/upper/meta" trusted.overlay.metacopy; then
		pass metacopy_chown
	else
		fail metacopy_chown "upper meta: $(stat -c '%u %s' "$mnt/upper/meta" 2>&1)"
	fi
	view "$ovl" >"$TESTDIR/view3"
	ovl_umount
else
	fail overlay_mount_redirect_index_metacopy "$(cat "$TESTDIR/ovl.err"); kernel: $(klog_overlay | tail -3)"
fi
unmount_ok chunkfs_unmount_2
if out=$("$CHUNKFS" fsck -f -n "$img" 2>&1); then
	pass fsck_clean_2
else
	fail fsck_clean_2 "$out"
fi
mount_or_finish chunkfs_remount_2
if ovl_mount redirect_dir=on,index=on,metacopy=on; then
	view "$ovl" >"$TESTDIR/view4"
	cmp -s "$TESTDIR/view3" "$TESTDIR/view4" && pass merged_view_persists_2 ||
		fail merged_view_persists_2 "$(diff "$TESTDIR/view3" "$TESTDIR/view4" | head -20)"
	ovl_umount
else
	fail overlay_remount_2 "$(cat "$TESTDIR/ovl.err")"
fi
unmount_ok chunkfs_unmount_3
finish
