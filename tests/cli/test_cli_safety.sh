#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
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

# ==== mkfs into an existing file (issue 25 item 3) ==========================
# mkfs used to cut a longer file to SIZE, data and all, without -F.  A file
# is never made shorter; one holding data needs -F; an empty or all-zero
# (sparse) one, as truncate makes it, is taken as it is.

size_of() { stat -c %s "$1"; }

test_mkfs_existing_file() {
	local f=$TESTDIR/data.bin s
	rm -f "$f"
	truncate -s 1G "$f"
	echo precious | dd of="$f" bs=1M seek=900 conv=notrunc status=none
	s=$(sum "$f")
	if expect_exit 1 "$C" mkfs "$f" 100M </dev/null; then
		err_has mkfs_names_data_in_file "contains data (a byte that is not zero at offset 943718400); use -F"
	else
		fail mkfs_refuses_file_with_data "mkfs went on without -F"
	fi
	same mkfs_refused_file_keeps_length "$(size_of "$f")" 1073741824
	unchanged mkfs_refused_file_untouched "$f" "$s"
	check_exit mkfs_F_into_longer_file 0 "$C" mkfs -q -F "$f" 100M
	same mkfs_F_never_shrinks "$(size_of "$f")" 1073741824
	if [ "$(dd if="$f" bs=1M skip=900 count=1 status=none | head -c 8)" = precious ]; then
		pass mkfs_F_keeps_bytes_past_size
	else
		fail mkfs_F_keeps_bytes_past_size "the bytes at 900 MiB are gone"
	fi
	if expect_exit 0 "$C" info --json "$f" &&
		[ "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["total_blocks"] * d["block_size"])' "$OUT")" -le 104857600 ]; then
		pass mkfs_F_filesystem_is_size
	else
		fail mkfs_F_filesystem_is_size "$(head -c 300 "$OUT") $(head -c 300 "$ERR")"
	fi
	check_exit mkfs_F_file_fsck_clean 0 "$C" fsck -f -n "$f"
	# sparse and all-zero files need no -F; a longer one keeps its length
	rm -f "$f" && truncate -s 1G "$f"
	check_exit mkfs_sparse_file_no_F 0 "$C" mkfs -q "$f" 100M
	same mkfs_sparse_file_keeps_length "$(size_of "$f")" 1073741824
	rm -f "$f" && dd if=/dev/zero of="$f" bs=1M count=8 status=none
	check_exit mkfs_zero_file_no_F 0 "$C" mkfs -q "$f" 16M
	same mkfs_grows_shorter_file "$(size_of "$f")" 16777216
	check_exit mkfs_grown_file_fsck_clean 0 "$C" fsck -f -n "$f"
	rm -f "$f" && touch "$f"
	check_exit mkfs_empty_file_no_F 0 "$C" mkfs -q "$f" 16M
	same mkfs_empty_file_made_size "$(size_of "$f")" 16777216
	check_exit mkfs_empty_file_fsck_clean 0 "$C" fsck -f -n "$f"
}

# ==== mkfs reports the inodes info and df -i show (issue 25) ================
# It used to print the inode tables' size (65536 for 1 GiB) while info and
# df -i count the inodes the free blocks can still make (2 million).

test_mkfs_inode_count() {
	local img=$TESTDIR/count.img said total opt name
	for opt in -Odyninodes -O^dyninodes; do
		name=mkfs_inode_count_as_info_${opt#-O}
		name=${name/^/no}
		rm -f "$img"
		said=$("$C" mkfs "$opt" "$img" 1G | sed -n 's/^Creating .* and \([0-9]*\) inodes$/\1/p')
		total=$("$C" info --json "$img" |
			python3 -c 'import json,sys; print(json.load(sys.stdin)["totals"]["inodes"])')
		same "$name" "$said" "$total"
	done
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
		rm -f "$TESTDIR/held"
		python3 -c 'import os,sys,time; fd=os.open(sys.argv[1], os.O_RDONLY|os.O_EXCL); open(sys.argv[2], "w").close(); time.sleep(60)' \
			"$l" "$TESTDIR/held" &
		local holder=$! i
		for i in $(seq 200); do
			[ -e "$TESTDIR/held" ] && break
			sleep 0.05
		done
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

# ==== put onto a file with other hard links (item 13) =======================

test_put_hardlinks() {
	local img=$TESTDIR/links.img d=$TESTDIR/linksrc
	mkdir -p "$d"
	"$C" mkfs -q "$img" 16M || { fail put_hardlinks "mkfs failed"; return; }
	echo old >"$d/old" && echo "new content" >"$d/new"
	"$C" put "$img" "$d/old" /a && "$C" ln "$img" /a /b || { fail put_hardlinks "setup"; return; }
	check_exit put_over_linked_file 0 "$C" put "$img" "$d/new" /a
	# as cp: the file is written into, so every name sees the new bytes
	if [ "$("$C" cat "$img" /b)" = "new content" ] && [ "$("$C" cat "$img" /a)" = "new content" ]; then
		pass put_writes_into_existing_inode
	else
		fail put_writes_into_existing_inode "/b has '$("$C" cat "$img" /b)'"
	fi
	"$C" ls -i "$img" / >"$OUT"
	if [ "$(awk '$2 == "a" || $2 == "b" { print $1 }' "$OUT" | sort -u | wc -l)" = 1 ]; then
		pass put_keeps_links_together
	else
		fail put_keeps_links_together "$(cat "$OUT")"
	fi
	# from standard input too, and a shorter file leaves no old tail
	echo hi | "$C" put "$img" - /b
	[ "$("$C" cat "$img" /a)" = hi ] && pass put_stdin_into_existing_inode ||
		fail put_stdin_into_existing_inode "/a has '$("$C" cat "$img" /a)'"
	check_exit put_links_fsck_clean 0 "$C" fsck -n -f "$img"
}

# ==== info shows last write and last check (item 12) =======================

test_info_times() {
	local img=$TESTDIR/times.img lw lc
	"$C" mkfs -q "$img" 16M || return
	echo x | "$C" put "$img" - /x
	"$C" info --json "$img" >"$OUT" || { fail info_times "info --json failed"; return; }
	lw=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(max(c["last_write"] for c in d["chunks"]))' "$OUT")
	lc=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(min(c["last_check"] for c in d["chunks"]))' "$OUT")
	"$C" info "$img" >"$OUT"
	if grep -q "^Last write time: *$(date -d "@$lw" '+%Y-%m-%d %H:%M:%S')" "$OUT" &&
		grep -q "^Last checked: *$(date -d "@$lc" '+%Y-%m-%d %H:%M:%S')" "$OUT"; then
		pass info_shows_last_write_and_check
	else
		fail info_shows_last_write_and_check "$(grep -i last "$OUT")"
	fi
}

test_mkfs_other_fs
test_mkfs_existing_file
test_mkfs_inode_count
test_mkfs_devices
test_fsck_modes
test_put_hardlinks
test_info_times
finish
