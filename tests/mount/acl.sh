#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# POSIX ACLs through the mount (issue 28 item 3): setfacl/getfacl, and
# what other users may do, enforced by the kernel (FUSE_CAP_POSIX_ACL):
# read, write and exec of files and directories through named-user,
# named-group, mask and other entries, default ACLs inherited through
# mkdir and create (umask not applied under one), chmod changing the mask,
# the ACLs kept across unmount and mount with fsck -f -n clean, and
# -o noacl refusing them.  The same permission matrix runs on kernel ext4
# over a loop device where one can be had, and must come out the same.
. "$(dirname "$0")/lib.sh"

mount_test acl_mount acl.img
if ! command -v setfacl >/dev/null || ! command -v getfacl >/dev/null; then
	skip acl_tools "no setfacl/getfacl (Debian package acl): ACLs NOT tested"
	finish
fi

# ids: 1001 a named user, 1002 in the named group 2001, 1003 neither
as() { # UID [GID] -- CMD...: run CMD as UID (group GID, else 3000, no others)
	local u=$1 g=3000
	shift
	[ "$1" != -- ] && { g=$1; shift; }
	shift
	timeout 20 setpriv --reuid="$u" --regid="$g" --clear-groups "$@"
}
yn() { if "$@" >/dev/null 2>&1; then echo yes; else echo no; fi; }

# The tree the matrix looks at, made as root under BASE with umask 022.
setup() { # BASE
	local b=$1
	(
		umask 022
		cd "$b" || exit 1
		printf 'data\n' >f && chmod 640 f && setfacl -m u:1001:rw-,g:2001:r-- f
		printf '#!/bin/sh\nexit 0\n' >x && chmod 700 x && setfacl -m u:1001:r-x x
		printf 'data\n' >m && chmod 644 m && setfacl -m u:1001:rw- m && chmod 640 m
		mkdir d && chmod 750 d && setfacl -m u:1001:rwx,g:2001:r-x d &&
			setfacl -d -m u:1001:rwx,g:2001:rwx,o::--- d
		mkdir d/sub && printf 'data\n' >d/new
		mkdir t && chmod 700 t && printf 'data\n' >t/in && chmod 644 t/in &&
			setfacl -m u:1001:--x t
		mkdir s && chmod 2775 s
	) || return 1
	as 1001 -- touch "$b/d/byalice" || return 1
}

# What each user may do: one "CHECK RESULT" line each.
matrix() { # BASE
	local b=$1
	echo "f-read-named-user $(yn as 1001 -- cat "$b/f")"
	echo "f-write-named-user $(yn as 1001 -- sh -c "echo y >>'$b/f'")"
	echo "f-read-named-group $(yn as 1002 2001 -- cat "$b/f")"
	echo "f-write-named-group $(yn as 1002 2001 -- sh -c "echo y >>'$b/f'")"
	echo "f-read-other $(yn as 1003 -- cat "$b/f")"
	echo "x-exec-named-user $(yn as 1001 -- "$b/x")"
	echo "x-exec-other $(yn as 1003 -- "$b/x")"
	echo "m-read-after-chmod $(yn as 1001 -- cat "$b/m")"
	echo "m-write-after-chmod $(yn as 1001 -- sh -c "echo y >>'$b/m'")"
	echo "d-create-named-user $(yn as 1001 -- touch "$b/d/a1")"
	echo "d-list-named-group $(yn as 1002 2001 -- ls "$b/d")"
	echo "d-create-named-group $(yn as 1002 2001 -- touch "$b/d/g1")"
	echo "d-list-other $(yn as 1003 -- ls "$b/d")"
	echo "d-new-write-named-group $(yn as 1002 2001 -- sh -c "echo y >>'$b/d/new'")"
	echo "d-byalice-write-named-group $(yn as 1002 2001 -- sh -c "echo y >>'$b/d/byalice'")"
	echo "d-sub-create-named-group $(yn as 1002 2001 -- touch "$b/d/sub/g2")"
	echo "d-sub-create-other $(yn as 1003 -- touch "$b/d/sub/o1")"
	echo "t-traverse-named-user $(yn as 1001 -- cat "$b/t/in")"
	echo "t-list-named-user $(yn as 1001 -- ls "$b/t")"
	echo "t-traverse-other $(yn as 1003 -- cat "$b/t/in")"
	echo "d-new-mode $(stat -c %a "$b/d/new")"
	echo "d-sub-mode $(stat -c %a "$b/d/sub")"
	echo "m-mode $(stat -c %a "$b/m")"
	# setfacl by the owner outside the file's group clears setgid
	as 1001 -- touch "$b/d/sg"
	chgrp 2001 "$b/d/sg" && chmod 2775 "$b/d/sg"
	as 1001 -- setfacl -m u:1003:r "$b/d/sg"
	echo "sg-mode-after-setfacl $(stat -c %a "$b/d/sg")"
}

expected="f-read-named-user yes
f-write-named-user yes
f-read-named-group yes
f-write-named-group no
f-read-other no
x-exec-named-user yes
x-exec-other no
m-read-after-chmod yes
m-write-after-chmod no
d-create-named-user yes
d-list-named-group yes
d-create-named-group no
d-list-other no
d-new-write-named-group yes
d-byalice-write-named-group yes
d-sub-create-named-group yes
d-sub-create-other no
t-traverse-named-user yes
t-list-named-user no
t-traverse-other no
d-new-mode 660
d-sub-mode 770
m-mode 640
sg-mode-after-setfacl 775"

mkfs_or_finish "$img" 64M
mount_or_finish acl_mount -o allow_other
chmod 755 "$mnt"

# the values the kernel hands over, and getfacl reading them back
if setup "$mnt"; then pass acl_setup; else fail acl_setup "setfacl or setup failed"; fi
want_f="user::rw-
user:1001:rw-
group::r--
group:2001:r--
mask::rw-
other::---"
got=$(getfacl -p -n --omit-header "$mnt/f" | sed '/^$/d')
[ "$got" = "$want_f" ] && pass getfacl_named_entries || fail getfacl_named_entries "$got"
got=$(getfacl -p -n --omit-header "$mnt/m" | sed '/^$/d')
if grep -qx 'user:1001:rw-.*#effective:r--' <<<"$got" && grep -qx 'mask::r--' <<<"$got"; then
	pass chmod_sets_mask
else
	fail chmod_sets_mask "$got"
fi
got=$(getfacl -p -n --omit-header "$mnt/d/sub" | sed '/^$/d')
if grep -qx 'default:group:2001:rwx' <<<"$got" && grep -qx 'group:2001:rwx' <<<"$got"; then
	pass mkdir_inherits_default
else
	fail mkdir_inherits_default "$got"
fi
got=$(getfacl -p -n --omit-header "$mnt/d/new" | sed '/^$/d')
if grep -qx 'user:1001:rwx.*#effective:rw-' <<<"$got" && ! grep -q default <<<"$got"; then
	pass create_inherits_default
else
	fail create_inherits_default "$got"
fi

m1=$(matrix "$mnt")
if [ "$m1" = "$expected" ]; then
	pass acl_permission_matrix
else
	fail acl_permission_matrix "$(diff <(echo "$expected") <(echo "$m1") | head -20)"
fi

# an ACL equal to mode bits is only the mode; -b removes; a default ACL
# on a file is refused (EACCES, the kernel's own check, as on ext4)
printf 'e\n' >"$mnt/e"
setfacl -m u::rwx,g::r-x,o::r-- "$mnt/e"
if [ "$(stat -c %a "$mnt/e")" = 754 ] &&
	[ "$(getfacl -p -n --omit-header "$mnt/e" | grep -c :)" = 3 ]; then
	pass equivalent_acl_is_mode
else
	fail equivalent_acl_is_mode "$(stat -c %a "$mnt/e"); $(getfacl -p -n "$mnt/e" 2>&1)"
fi
setfacl -b "$mnt/f"
[ "$(getfacl -p -n --omit-header "$mnt/f" | grep -c :)" = 3 ] && pass setfacl_b_removes ||
	fail setfacl_b_removes "$(getfacl -p -n "$mnt/f")"
if setfacl -d -m u:1001:r "$mnt/e" 2>"$TESTDIR/err"; then
	fail default_on_file_refused "setfacl -d on a file succeeded"
else
	pass default_on_file_refused
fi

getfacl -R -n -P "$mnt" 2>&1 | sed "s|$mnt|MNT|" >"$TESTDIR/before"
unmount_checked
if "$CHUNKFS" fsck -f -n "$img" >"$TESTDIR/fsck.out" 2>&1; then
	pass fsck_clean
else
	fail fsck_clean "$(head -c 400 "$TESTDIR/fsck.out")"
fi
mount_or_finish acl_remount -o allow_other
getfacl -R -n -P "$mnt" 2>&1 | sed "s|$mnt|MNT|" >"$TESTDIR/after"
if cmp -s "$TESTDIR/before" "$TESTDIR/after" && grep -q 'default:group:2001:rwx' "$TESTDIR/after"; then
	pass acls_survive_remount
else
	fail acls_survive_remount "$(diff "$TESTDIR/before" "$TESTDIR/after" | head -20)"
fi
[ "$(yn as 1002 2001 -- touch "$mnt/d/sub/g3")" = yes ] && pass enforced_after_remount ||
	fail enforced_after_remount "named group lost create in d/sub"
unmount_ok unmount_again

# -o noacl: refused as ext4 mounted noacl refuses them, none inherited
mount_or_finish noacl_mount -o allow_other,noacl
if setfacl -m u:1001:r "$mnt/e" 2>"$TESTDIR/err"; then
	fail noacl_refuses "setfacl succeeded under noacl"
elif grep -q 'Operation not supported' "$TESTDIR/err"; then
	pass noacl_refuses
else
	fail noacl_refuses "$(cat "$TESTDIR/err")"
fi
(umask 022; printf 'n\n' >"$mnt/d/nf")
[ "$(stat -c %a "$mnt/d/nf")" = 644 ] && pass noacl_umask_no_inherit ||
	fail noacl_umask_no_inherit "mode $(stat -c %a "$mnt/d/nf")"
unmount_ok unmount_noacl

# chunkfs put -r and get -r copy ACLs, as cp -a does
h=$TESTDIR/host
mkdir -p "$h/t/d" && printf 'h\n' >"$h/t/f"
if setfacl -m u:1001:rw "$h/t/f" 2>/dev/null && setfacl -d -m g:2001:rwx "$h/t/d"; then
	(cd "$h" && getfacl -p -R -n t) >"$TESTDIR/host.acl"
	if "$CHUNKFS" put -r "$img" "$h/t" /copied 2>"$TESTDIR/err" &&
		"$CHUNKFS" get -r "$img" /copied "$h/back" 2>>"$TESTDIR/err"; then
		(cd "$h" && mv back t2 && getfacl -p -R -n t2) | sed 's|^# file: t2|# file: t|' \
			>"$TESTDIR/back.acl"
		if cmp -s "$TESTDIR/host.acl" "$TESTDIR/back.acl" &&
			grep -q 'default:group:2001:rwx' "$TESTDIR/back.acl"; then
			pass put_get_copy_acls
		else
			fail put_get_copy_acls "$(diff "$TESTDIR/host.acl" "$TESTDIR/back.acl" | head)"
		fi
	else
		fail put_get_copy_acls "$(head -c 300 "$TESTDIR/err")"
	fi
else
	skip put_get_copy_acls "the host's $TESTDIR has no ACLs: put/get of ACLs NOT tested"
fi

# the same matrix on kernel ext4
ext=$TESTDIR/ext4.img
emnt=$PUB/ext4
mkdir "$emnt"
truncate -s 32M "$ext"
if ! command -v mkfs.ext4 >/dev/null; then
	skip acl_matches_ext4 "no mkfs.ext4: the ext4 comparison was NOT made"
elif ! mkfs.ext4 -q -F "$ext" >/dev/null 2>&1 || ! loop_attach "$ext"; then
	skip acl_matches_ext4 "no loop device (${LOOP_WHY:-mkfs.ext4 failed}): the ext4 comparison was NOT made"
elif ! mount -t ext4 "$LOOP" "$emnt" 2>"$TESTDIR/err"; then
	skip acl_matches_ext4 "ext4 mount failed: $(cat "$TESTDIR/err"): the comparison was NOT made"
else
	MOUNTS+=("$emnt")
	chmod 755 "$emnt"
	if setup "$emnt"; then
		m2=$(matrix "$emnt")
		if [ "$m2" = "$m1" ]; then
			pass acl_matches_ext4
		else
			fail acl_matches_ext4 "$(diff <(echo "$m2") <(echo "$m1") | head -20)"
		fi
	else
		fail acl_matches_ext4 "setup on ext4 failed"
	fi
	umount "$emnt" && forget_mount "$emnt"
	loop_detach
fi
finish
