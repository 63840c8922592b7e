#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# chunkfs probe where it is used: on a mounted image (no lock, no wait),
# on a loop device through the program line of udev/64-chunkfs.rules (the
# rule file parsed, its IMPORT run, its SYMLINK names worked out from what
# it imported), under `udevadm test` where udevadm is installed (UDEVADM
# names another), and `mount UUID=...` / `mount LABEL=...` -t chunkfs
# through mount(8) once the by-uuid and by-label links exist.  The links,
# the udev database and mount.chunkfs live in a private mount namespace
# (tmpfs over /dev, /run and /usr/sbin there): nothing is left on this
# machine.  The probe's output itself: tests/cli/test_probe.sh.
. "$(dirname "$0")/lib.sh"

mount_test probe_mounted p.img
label='chunk data ü'
"$CHUNKFS" mkfs -q -c 2 -L "$label" "$img" 32M || { fail setup mkfs; finish; }
uuid=$("$CHUNKFS" probe --export "$img" | sed -n 's/^ID_FS_UUID=//p')
[ -n "$uuid" ] || { fail setup "no ID_FS_UUID: $("$CHUNKFS" probe --export "$img" 2>&1)"; finish; }

# ---- a mounted image: the daemon holds its lock; the probe takes none -----
mount_or_finish probe_mount_image
echo data >"$mnt/f"
start=$(date +%s%N)
if expect_exit 0 timeout 10 "$CHUNKFS" probe --export "$img" &&
   grep -qx "ID_FS_UUID=$uuid" "$OUT"; then
	pass probe_mounted
else
	fail probe_mounted "$(cat "$OUT" "$ERR")"
fi
echo "  probe of a mounted image took $((($(date +%s%N) - start) / 1000000)) ms"
unmount_ok probe_unmount

# ---- the rule file, and its program run on a loop device -------------------
rules=$CHUNKFS_SRC/udev/64-chunkfs.rules.in
bindir=$(cd "$(dirname "$CHUNKFS")" && pwd)
if ! loop_attach "$img"; then
	echo "***** the udev rule was NOT tested on a device: $LOOP_WHY *****" >&2
	skip probe_rule_program "$LOOP_WHY"
	finish
fi
# the one IMPORT{program} line, with @BINDIR@ as make install fills it in
prog=$(sed -n 's/^IMPORT{program}="\(.*\)"$/\1/p' "$rules")
if [ "$(grep -c 'IMPORT{program}' "$rules")" = 1 ] &&
   [ "$prog" = '@BINDIR@/chunkfs probe --export $devnode' ]; then
	pass probe_rule_parsed
else
	fail probe_rule_parsed "the rule's program line: '$prog'"
fi
# every other line a comment, blank, or KEY[op]"value" pairs udev takes
bad=$(grep -v '^#' "$rules" | grep -v '^$' |
	grep -Ev '^([A-Z]+(\{[^}]+\})?(==|!=|=|\+=)"[^"]*"(, )?)+$' || true)
[ -z "$bad" ] && pass probe_rule_syntax || fail probe_rule_syntax "$bad"
cmd=${prog//@BINDIR@/$bindir}
cmd=${cmd//\$devnode/$LOOP}
# shellcheck disable=SC2086  # udev splits the program line at spaces too
if expect_exit 0 $cmd; then
	got=$(cat "$OUT")
	enc=$(sed -n 's/^ID_FS_LABEL_ENC=//p' "$OUT")
	same probe_rule_program "$(grep -E '^ID_FS_(UUID|TYPE|USAGE|LABEL)=' "$OUT")" \
		"ID_FS_LABEL=chunk_data_ü
ID_FS_UUID=$uuid
ID_FS_TYPE=chunkfs
ID_FS_USAGE=filesystem"
	# the links the rule's SYMLINK lines name, from what was imported
	links=$(sed -n 's/.*SYMLINK+="\(.*\)"$/\1/p' "$rules" |
		sed "s|\$env{ID_FS_UUID_ENC}|$uuid|; s|\$env{ID_FS_LABEL_ENC}|${enc//\\/\\\\}|")
	same probe_rule_links "$links" "disk/by-uuid/$uuid
disk/by-label/chunk\\x20data\\x20ü"
else
	fail probe_rule_program "$(cat "$ERR")"
fi
# a device that is not chunkfs: exit 2 (udev imports nothing)
loop_detach
truncate -s 4M "$TESTDIR/zero.img"
if loop_attach "$TESTDIR/zero.img"; then
	cmd=${prog//@BINDIR@/$bindir}
	# shellcheck disable=SC2086
	check_exit probe_rule_not_chunkfs 2 ${cmd//\$devnode/$LOOP}
	loop_detach
fi

# ---- udevadm test, and mount(8) by UUID= and LABEL= ------------------------
# in a namespace of its own: /dev a tmpfs with the few nodes needed, /run a
# tmpfs (udev's database and the rule), /usr/sbin a tmpfs with
# mount.chunkfs (mount(8) looks in /sbin)
loop_attach "$img" || { fail probe_loop "$LOOP_WHY"; finish; }
UDEVADM=${UDEVADM:-$(command -v udevadm || true)}
sed "s|@BINDIR@|$bindir|g" "$rules" >"$PUB/64-chunkfs.rules"
ns_log=$TESTDIR/ns.log
timeout -k 5 120 unshare -m --propagation private bash -c '
	set -e
	loop=$1 mnt=$2 rules=$3 udevadm=$4 chunkfs=$5 uuid=$6 label=$7
	trap "umount -l $mnt 2>/dev/null || true" EXIT
	maj() { printf %d "0x$(stat -c %t "$1")"; }
	min() { printf %d "0x$(stat -c %T "$1")"; }
	lmaj=$(maj "$loop") lmin=$(min "$loop") fmaj=$(maj /dev/fuse) fmin=$(min /dev/fuse)
	mount -t tmpfs tmpfs /dev
	mknod /dev/null c 1 3; mknod /dev/zero c 1 5; mknod /dev/urandom c 1 9
	mknod /dev/fuse c "$fmaj" "$fmin"; mknod "$loop" b "$lmaj" "$lmin"
	chmod 666 /dev/null /dev/zero /dev/urandom /dev/fuse
	mount -t tmpfs tmpfs /run
	mkdir -p /run/udev/rules.d /run/mount
	cp "$rules" /run/udev/rules.d/
	if [ -n "$udevadm" ]; then
		"$udevadm" test --action=add "/sys/class/block/${loop#/dev/}" >/run/udevadm.out 2>&1 ||
			{ echo "udevadm test failed:"; tail -20 /run/udevadm.out; exit 3; }
		grep "^ID_FS_\|^DEVLINKS" /run/udevadm.out
	else
		# what the rule would have made
		mkdir -p /dev/disk/by-uuid /dev/disk/by-label
		ln -s "../../${loop#/dev/}" "/dev/disk/by-uuid/$uuid"
		ln -s "../../${loop#/dev/}" "/dev/disk/by-label/$(printf %s "$label" | sed "s/ /\\\\x20/g")"
	fi
	[ "$(readlink -f "/dev/disk/by-uuid/$uuid")" = "$loop" ] || { echo "no by-uuid link"; exit 4; }
	ls -l /dev/disk/by-label
	mount -t tmpfs tmpfs /usr/sbin
	ln -s "$chunkfs" /usr/sbin/mount.chunkfs
	mount -t chunkfs "UUID=$uuid" "$mnt" -o clean_after=1
	grep " $mnt fuse.chunkfs " /proc/self/mounts
	cat "$mnt/f"
	echo viauuid >"$mnt/viauuid"
	umount "$mnt"
	for i in $(seq 100); do flock -n -x "$loop" true && break; sleep 0.1; done
	mount -t chunkfs "LABEL=$label" "$mnt"
	grep " $mnt fuse.chunkfs " /proc/self/mounts
	echo vialabel >"$mnt/vialabel"
	umount "$mnt"
	for i in $(seq 100); do flock -n -x "$loop" true && break; sleep 0.1; done
' _ "$LOOP" "$mnt" "$PUB/64-chunkfs.rules" "$UDEVADM" "$CHUNKFS" "$uuid" "$label" >"$ns_log" 2>&1
rc=$?
loop_detach
wait_unlocked "$img"
if [ -n "$UDEVADM" ]; then
	if [ "$rc" = 0 ] && grep -qx "ID_FS_TYPE=chunkfs" "$ns_log" &&
	   grep -q "^DEVLINKS=.*/dev/disk/by-uuid/$uuid" "$ns_log" &&
	   grep -q '^DEVLINKS=.*/dev/disk/by-label/chunk\\x20data\\x20ü' "$ns_log"; then
		pass probe_udevadm_test
	else
		fail probe_udevadm_test "exit $rc: $(tail -8 "$ns_log")"
	fi
else
	echo "***** udevadm is not installed: the rule was NOT run by udev (udevadm test); its links were made by hand *****" >&2
	skip probe_udevadm_test "udevadm not installed (UDEVADM= names one): rule checked by parsing only"
fi
if [ "$rc" = 0 ] && [ "$("$CHUNKFS" cat "$img" /viauuid)" = viauuid ] &&
   [ "$("$CHUNKFS" cat "$img" /vialabel)" = vialabel ]; then
	pass probe_mount_uuid_and_label
else
	fail probe_mount_uuid_and_label "exit $rc: $(tail -8 "$ns_log")"
fi
finish
