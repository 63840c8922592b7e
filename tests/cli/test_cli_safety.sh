#!/usr/bin/env bash
# CLI tests that chunkfs never destroys or misreports data, whatever the
# user types (issue 10): mkfs over another filesystem, over a mounted or
# busy device, SIZE on a block device; fsck with conflicting modes; put
# onto a file with other hard links; info's times.  Loop devices are
# used when run as root, always detached in a trap.
# shellcheck disable=SC1091
. "$(dirname "$0")/lib.sh"

C=$CHUNKFS
LOOPS=()
MNTS=()
cleanup_devices() {
	local m l
	for m in "${MNTS[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
	for l in "${LOOPS[@]}"; do losetup -d "$l" 2>/dev/null; done
}
# keep lib.sh's own EXIT trap (it removes a TESTDIR it made)
_prev_exit=:
if [ -n "$(trap -p EXIT)" ]; then
	eval "set -- $(trap -p EXIT)"
	_prev_exit=$3
fi
trap 'cleanup_devices; eval "$_prev_exit"' EXIT

sum() { sha256sum "$1" | cut -d' ' -f1; }

# err_has NAME TEXT: pass if $ERR contains TEXT (a fixed string).
err_has() {
	if grep -qF -- "$2" "$ERR"; then
		pass "$1"
	else
		fail "$1" "stderr lacks '$2': $(head -c 300 "$ERR")"
	fi
}

# unchanged NAME FILE SUM: FILE still has the checksum SUM.
unchanged() {
	if [ "$(sum "$2")" = "$3" ]; then pass "$1"; else fail "$1" "$2 was changed"; fi
}

HAVE_EXT4=0
command -v mkfs.ext4 >/dev/null && HAVE_EXT4=1
HAVE_LOOP=0
if [ "$(id -u)" = 0 ] && command -v losetup >/dev/null && [ -e /dev/loop-control ]; then
	HAVE_LOOP=1
fi

# ==== mkfs over another filesystem (item 2) ==================================

test_mkfs_other_fs() {
	local img=$TESTDIR/ext4.img s
	if [ "$HAVE_EXT4" != 1 ]; then
		skip mkfs_other_fs "mkfs.ext4 not installed"
		return
	fi
	mkfs.ext4 -q -F -L data "$img" 16M >/dev/null || { fail mkfs_other_fs "mkfs.ext4 failed"; return; }
	s=$(sum "$img")
	if expect_exit 1 "$C" mkfs "$img" </dev/null; then
		err_has mkfs_names_other_fs "contains an ext4 file system labelled 'data'"
		err_has mkfs_other_fs_says_F "-F"
	else
		fail mkfs_refuses_other_fs "mkfs wrote over an ext4 image without -F"
	fi
	unchanged mkfs_other_fs_untouched "$img" "$s"
	# On a terminal it asks; "n" leaves the image alone, "y" goes on.
	if command -v script >/dev/null; then
		echo n | script -qec "'$C' mkfs '$img'" /dev/null >"$OUT" 2>&1
		if grep -q "contains an ext4 file system labelled 'data'" "$OUT" &&
			grep -q "Proceed anyway" "$OUT"; then
			pass mkfs_asks_on_terminal
		else
			fail mkfs_asks_on_terminal "$(head -c 300 "$OUT")"
		fi
		unchanged mkfs_terminal_no_untouched "$img" "$s"
		echo y | script -qec "'$C' mkfs -q '$img'" /dev/null >"$OUT" 2>&1
		check_exit mkfs_terminal_yes_made_it 0 "$C" info "$img"
		mkfs.ext4 -q -F -L data "$img" 16M >/dev/null
	else
		skip mkfs_asks_on_terminal "script(1) not installed"
	fi
	check_exit mkfs_F_over_other_fs 0 "$C" mkfs -q -F "$img"
	check_exit mkfs_F_result_opens 0 "$C" info "$img"
	# the old signature is gone: blkid (and mount) no longer see ext4
	if command -v blkid >/dev/null; then
		if blkid -p "$img" 2>/dev/null | grep -q ext4; then
			fail mkfs_wipes_old_signature "blkid still finds ext4"
		else
			pass mkfs_wipes_old_signature
		fi
	fi
	# a partition table counts too
	if ! command -v sfdisk >/dev/null; then
		skip mkfs_names_partition_table "sfdisk not installed"
	else
		rm -f "$img" && truncate -s 16M "$img"
		echo ',,L' | sfdisk -q "$img" >/dev/null 2>&1
		if expect_exit 1 "$C" mkfs "$img"; then
			err_has mkfs_names_partition_table "partition table"
		else
			fail mkfs_names_partition_table "mkfs wrote over a partition table"
		fi
	fi
}

# ==== mkfs on devices (items 1 and 3) ======================================

# new_loop FILE: attach FILE to a loop device, named in $LOOP
new_loop() {
	LOOP=$(losetup -f --show "$1") || return 1
	LOOPS+=("$LOOP")
}

test_mkfs_devices() {
	local img=$TESTDIR/dev.img l m=$TESTDIR/mnt s
	if [ "$HAVE_LOOP" != 1 ] || [ "$HAVE_EXT4" != 1 ]; then
		skip mkfs_mounted_device "needs root, losetup and mkfs.ext4"
		return
	fi
	mkfs.ext4 -q -F "$img" 64M >/dev/null
	if ! new_loop "$img"; then
		skip mkfs_mounted_device "losetup failed (no loop devices here)"
		return
	fi
	l=$LOOP
	mkdir -p "$m"
	if ! mount "$l" "$m"; then
		skip mkfs_mounted_device "cannot mount ext4 on $l"
		return
	fi
	MNTS+=("$m")
	echo keep >"$m/file"
	sync
	if expect_exit 1 "$C" mkfs -F "$l"; then
		err_has mkfs_mounted_device "is mounted on $m; will not make a filesystem here"
	else
		fail mkfs_mounted_device "mkfs -F wrote over a mounted device"
	fi
	# the image file itself, mounted through the loop device
	if expect_exit 1 "$C" mkfs -F "$img"; then
		err_has mkfs_loop_mounted_file "is mounted on $m"
	else
		fail mkfs_loop_mounted_file "mkfs -F wrote over a file mounted through $l"
	fi
	umount "$m" && MNTS=()
	if e2fsck -fn "$img" >/dev/null 2>&1 &&
		[ "$(debugfs -R 'cat /file' "$img" 2>/dev/null)" = keep ]; then
		pass mkfs_mounted_untouched
	else
		fail mkfs_mounted_untouched "the ext4 on $l was damaged"
	fi
	s=$(sum "$img")
	# held open exclusively by someone else
	if command -v python3 >/dev/null; then
		python3 -c 'import os,sys,time; fd=os.open(sys.argv[1], os.O_RDONLY|os.O_EXCL); time.sleep(30)' \
			"$l" &
		local holder=$!
		sleep 0.5
		if expect_exit 1 "$C" mkfs -F "$l"; then
			err_has mkfs_busy_device "in use by the system"
		else
			fail mkfs_busy_device "mkfs wrote over a device held with O_EXCL"
		fi
		kill "$holder" 2>/dev/null
		wait "$holder" 2>/dev/null
	fi
	# SIZE on a block device: smaller is honoured, larger refused
	if expect_exit 1 "$C" mkfs -F "$l" 300M; then
		err_has mkfs_device_size_larger "larger than the device"
	else
		fail mkfs_device_size_larger "mkfs accepted 300M on a 64M device"
	fi
	unchanged mkfs_device_size_larger_untouched "$img" "$s"
	check_exit mkfs_device_size_smaller 0 "$C" mkfs -q -F "$l" 32M
	if "$C" info --json "$l" >"$OUT" 2>"$ERR" &&
		python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d["total_blocks"]*d["block_size"] != 32<<20)' "$OUT"; then
		pass mkfs_device_size_honoured
	else
		fail mkfs_device_size_honoured "$(grep -i blocks "$OUT" | head -3)"
	fi
}

# ==== fsck: one mode only (item 4) ===========================================

test_fsck_modes() {
	local img=$TESTDIR/modes.img s a b
	"$C" mkfs -q "$img" 16M || { fail fsck_modes "mkfs failed"; return; }
	s=$(sum "$img")
	for a in -n -p -a -y; do
		for b in -n -p -a -y; do
			[ "$a" = "$b" ] && continue
			case "$a$b" in -p-a | -a-p) continue ;; esac   # one option, as in e2fsck
			if expect_exit 16 "$C" fsck "$a" "$b" -f "$img"; then
				err_has "fsck_refuses_${a#-}_${b#-}" "only one of the options -p/-a, -n or -y"
			else
				fail "fsck_refuses_${a#-}_${b#-}" "fsck $a $b did not exit 16"
			fi
		done
	done
	unchanged fsck_modes_untouched "$img" "$s"
	check_exit fsck_p_a_same_mode 0 "$C" fsck -p -a "$img"
	check_exit fsck_n_twice 0 "$C" fsck -n -n "$img"
}

test_mkfs_other_fs
test_mkfs_devices
test_fsck_modes
finish
