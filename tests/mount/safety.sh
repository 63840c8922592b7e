#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The mount never destroys or misreports data (issue 10): fsck, mount and
# info right after umount see the image as the daemon left it; fsck -n on
# a mounted image warns; a dead mount at DIR is refused or replaced; a
# failed write-back (ENOSPC) leaves no stale size or bytes in the kernel;
# a read-only image file mounts read-only; -o remount,ro/rw; ext4 fstab
# options; info's live figures while mounted.
# shellcheck disable=SC1091
. "$(dirname "$0")/lib.sh"

need_fuse mount_safety

mnt=$PUB/mnt
mkdir "$mnt"
IMMUTABLE=()
_s_cleanup() {
	local f
	for f in "${IMMUTABLE[@]}"; do chattr -i "$f" 2>/dev/null; done
	_m_cleanup
}
trap _s_cleanup EXIT

mounts_at() { awk -v d="$1" '$2 == d' /proc/self/mounts | wc -l; }

# ==== item 5: right after umount ============================================
# umount returns before the daemon has written everything back and marked
# its chunks clean; fsck, mount and info must wait for it.  Each round
# writes 100 MiB, unmounts, and runs one of them first.
after_umount_first() {
	local what=$1 img=$2
	case $what in
	fsck)
		if expect_exit 0 "$CHUNKFS" fsck -n "$img" && grep -q "checked 0 of" "$OUT"; then
			pass fsck_right_after_umount_clean
		else
			fail fsck_right_after_umount_clean "$(head -c 300 "$OUT") $(head -c 300 "$ERR")"
		fi ;;
	info)
		if expect_exit 0 "$CHUNKFS" info "$img" &&
			[ -z "$(awk '$1 ~ /^[0-9]+$/ && $2 != "clean"' "$OUT")" ]; then
			pass info_right_after_umount_clean
		else
			fail info_right_after_umount_clean "dirty chunks right after umount"
		fi ;;
	mount)
		if expect_exit 0 "$CHUNKFS" mount "$img" "$mnt" && _m_is_mounted "$mnt"; then
			pass mount_right_after_umount
			[ "$(cat "$mnt/more" 2>/dev/null)" = more ] && pass data_after_quick_remount ||
				fail data_after_quick_remount "more lost"
			umount "$mnt"
		else
			fail mount_right_after_umount "$(head -c 300 "$ERR")"
		fi ;;
	esac
}

test_after_umount() {
	local img=$TESTDIR/after.img what
	"$CHUNKFS" mkfs -q -c 4 "$img" 256M || { fail after_umount "mkfs failed"; return; }
	for what in fsck mount info; do
		# a cache as big as what is written: all of it is left for the
		# daemon to write after umount returns
		if ! expect_exit 0 "$CHUNKFS" mount -o cache_size=256M "$img" "$mnt"; then
			fail "after_umount_$what" "mount: $(head -c 300 "$ERR")"
			return
		fi
		MOUNTS+=("$mnt")
		head -c 60M /dev/urandom >"$mnt/big"
		head -c 40M /dev/urandom >"$mnt/big2"
		echo more >"$mnt/more"
		umount "$mnt"
		forget_mount "$mnt"
		after_umount_first "$what" "$img"
		wait_unlocked "$img"
	done
}

# A writer that looks like a daemon and holds the locks for 2 s: the wait
# is said after a second, naming the pid.  The locks are those of the
# library's writer (src/bdev_file.c): a flock, and a POSIX write lock on
# the first byte, which is what the tools test (the writer's is its open
# file description's, this one the process's: F_OFD_GETLK sees both).
test_wait_message() {
	local img=$TESTDIR/wait.img holder t0 t1
	"$CHUNKFS" mkfs -q "$img" 16M || return
	rm -f "$TESTDIR/locked"
	python3 -c '
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
fcntl.flock(fd, fcntl.LOCK_EX)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
os.set_inheritable(fd, True)
open(sys.argv[2], "w").close()
os.execvp("sleep", ["mount.chunkfs", "2"])' "$img" "$TESTDIR/locked" &
	holder=$!
	for _ in $(seq 100); do [ -e "$TESTDIR/locked" ] && break; sleep 0.05; done
	t0=$(date +%s%N)
	if expect_exit 0 "$CHUNKFS" fsck -n "$img"; then
		t1=$(date +%s%N)
		if grep -q "waiting for the chunkfs daemon (pid $holder) to finish writing" "$ERR" &&
			[ $(((t1 - t0) / 1000000)) -ge 1000 ]; then
			pass wait_for_daemon_says_so
		else
			fail wait_for_daemon_says_so "$(head -c 300 "$ERR")"
		fi
	else
		fail wait_for_daemon_says_so "fsck did not wait"
	fi
	wait "$holder"
}

# ==== item 6: fsck -n on a mounted image warns ============================
test_fsck_mounted() {
	local img=$TESTDIR/busy.img
	"$CHUNKFS" mkfs -q "$img" 64M || return
	mount_fs "$img" "$mnt" || { fail fsck_mounted "mount failed"; return; }
	echo x >"$mnt/x"
	timeout 60 "$CHUNKFS" fsck -n "$img" >"$OUT" 2>"$ERR"
	if grep -q "is mounted on $mnt by the chunkfs daemon (pid $DAEMON_PID)" "$ERR"; then
		pass fsck_n_mounted_warns
	else
		fail fsck_n_mounted_warns "$(head -c 300 "$ERR")"
	fi
	# ==== item 12: info while mounted ====================================
	head -c 20M /dev/urandom >"$mnt/y"
	# and the transport that serves it: the one this run asked for
	via=/dev/fuse
	[ "${FUSE_URING_ENABLE:-0}" = 1 ] && via=io_uring
	if expect_exit 0 "$CHUNKFS" info "$img" &&
		grep -q "^Mounted on: *$mnt (chunkfs daemon, pid $DAEMON_PID, over $via)" "$OUT" &&
		grep -q "^Live (from the mount): " "$OUT" && grep -q "as last written" "$OUT"; then
		pass info_mounted_labelled
	else
		fail info_mounted_labelled "$(head -c 400 "$OUT")"
	fi
	local used
	used=$(sed -n 's/^Live (from the mount): \([0-9]*\) blocks used.*/\1/p' "$OUT")
	# 20 MiB in 4K blocks, at least
	if [ -n "$used" ] && [ "$used" -ge 5120 ]; then
		pass info_mounted_live_figures
	else
		fail info_mounted_live_figures "live used '$used'"
	fi
	if expect_exit 0 "$CHUNKFS" info --json "$img" &&
		python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); m=d["mounted"]; sys.exit(not (m["dir"]==sys.argv[2] and m["live"]["blocks"]-m["live"]["free_blocks"] >= 5120))' "$OUT" "$mnt"; then
		pass info_json_mounted_live
	else
		fail info_json_mounted_live "$(head -c 400 "$OUT")"
	fi
	unmount_fs "$mnt"
}

# ==== item 8: a dead mount at DIR ==========================================
test_dead_mount() {
	local img=$TESTDIR/dead.img other=$TESTDIR/other.img
	"$CHUNKFS" mkfs -q "$img" 64M && "$CHUNKFS" mkfs -q "$other" 16M || return
	mount_fs "$img" "$mnt" || { fail dead_mount "mount failed"; return; }
	echo kept >"$mnt/kept"
	sync "$mnt/kept"   # fsync: on the image before the kill
	kill -9 "$DAEMON_PID"
	wait "$DAEMON_PID" 2>/dev/null
	wait_unlocked "$img"
	# another image: refused with the fix in the message
	if expect_exit 1 "$CHUNKFS" mount "$other" "$mnt" &&
		grep -q "a dead mount is still attached: run umount $mnt (fusermount3 -u $mnt) first" "$ERR" &&
		[ "$(mounts_at "$mnt")" = 1 ]; then
		pass dead_mount_refused
	else
		fail dead_mount_refused "$(head -c 300 "$ERR"), $(mounts_at "$mnt") mounts"
	fi
	# the same image: replaced
	if expect_exit 0 "$CHUNKFS" mount "$img" "$mnt" && grep -q "replaced a dead mount" "$ERR" &&
		[ "$(mounts_at "$mnt")" = 1 ]; then
		pass dead_mount_replaced
	else
		fail dead_mount_replaced "$(head -c 300 "$ERR"), $(mounts_at "$mnt") mounts"
	fi
	if [ "$(timeout 10 cat "$mnt/kept" 2>/dev/null)" = kept ]; then
		pass dead_mount_replaced_serves
	else
		fail dead_mount_replaced_serves "cannot read kept"
	fi
	timeout 30 fusermount3 -u "$mnt" || umount -l "$mnt"
	forget_mount "$mnt"
	# whatever is still stacked there (a chunkfs that mounted on top)
	while [ "$(mounts_at "$mnt")" -gt 0 ]; do umount -l "$mnt" || break; done
	wait_unlocked "$img"
}

# ==== item 9: ENOSPC at write-back ========================================
# free_mb DIR: free space of the mount in MiB
free_mb() { df -Pm "$1" | awk 'NR == 2 { print $4 }'; }

# write_report FILE SRC: open FILE write-only, write SRC into it in 1 MiB
# writes, and say where ENOSPC came first: "write N" or "close" (or "ok").
write_report() {
	python3 - "$1" "$2" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
src = open(sys.argv[2], "rb").read()
n, where = 0, "ok"
try:
    while n < len(src):
        n += os.write(fd, src[n:n + (1 << 20)])
except OSError as e:
    where = "write %d %s" % (n, e.strerror)
try:
    os.close(fd)
except OSError as e:
    if where == "ok":
        where = "close " + e.strerror
print(where)
PY
}

test_enospc() {
	local img=$TESTDIR/full.img src=$TESTDIR/src100 size i free
	"$CHUNKFS" mkfs -q "$img" 192M || return
	head -c 100M /dev/urandom >"$src"
	mount_fs "$img" "$mnt" || { fail enospc "mount failed"; return; }
	# about 80 MiB free: the writeback cache takes the first writes
	# (docs/WRITEBACK.md), the failure comes at write or close
	free=$(free_mb "$mnt")
	head -c $(((free - 80) << 20)) /dev/zero >"$mnt/fill"
	if cp "$src" "$mnt/big" 2>"$TESTDIR/cp.err"; then
		fail enospc_reported "cp of 100M into 80M free succeeded"
	else
		grep -q "No space left" "$TESTDIR/cp.err" && pass enospc_reported ||
			fail enospc_reported "$(cat "$TESTDIR/cp.err")"
	fi
	# the kernel must let go of the size and pages it still holds
	for i in $(seq 30); do
		size=$(stat -c %s "$mnt/big")
		[ "$size" -lt 104857600 ] && break
		sleep 0.1
	done
	cp "$mnt/big" "$TESTDIR/seen" 2>/dev/null
	# 40 MiB free, near or below the reserve: write() itself says ENOSPC
	rm -f "$mnt/fill"
	free=$(free_mb "$mnt")
	head -c $(((free - 40) << 20)) /dev/zero >"$mnt/fill2"
	case $(write_report "$mnt/direct" "$src") in
	"write "*"No space left on device") pass enospc_at_write_below_reserve ;;
	*) fail enospc_at_write_below_reserve "$(write_report "$mnt/direct2" "$src")" ;;
	esac
	local dsize
	dsize=$(stat -c %s "$mnt/direct")
	unmount_fs "$mnt"
	if [ "$size" -lt 104857600 ] &&
		[ "$("$CHUNKFS" stat "$img" /big | sed -n 's/.*Size: *\([0-9]*\).*/\1/p')" = "$size" ]; then
		pass enospc_size_is_on_disk
	else
		fail enospc_size_is_on_disk "mount said $size, image $("$CHUNKFS" stat "$img" /big | grep Size)"
	fi
	if "$CHUNKFS" cat "$img" /big | cmp -s - "$TESTDIR/seen"; then
		pass enospc_bytes_are_on_disk
	else
		fail enospc_bytes_are_on_disk "reads through the mount differ from the image"
	fi
	if [ "$("$CHUNKFS" stat "$img" /direct | sed -n 's/.*Size: *\([0-9]*\).*/\1/p')" = "$dsize" ]; then
		pass enospc_direct_size_is_on_disk
	else
		fail enospc_direct_size_is_on_disk "mount said $dsize"
	fi
}

# ==== item 10: a read-only image file =====================================
test_readonly_image() {
	local img=$TESTDIR/ro.img
	"$CHUNKFS" mkfs -q "$img" 16M && echo hello | "$CHUNKFS" put "$img" - /hello || return
	if ! chattr +i "$img" 2>/dev/null; then
		skip readonly_image "chattr +i not supported here"
		return
	fi
	IMMUTABLE+=("$img")
	if mount_fs "$img" "$mnt" && grep -q "is not writable (Operation not permitted): mounting read-only" "$DAEMON_LOG"; then
		pass readonly_image_mounts_ro
		[ "$(cat "$mnt/hello")" = hello ] && pass readonly_image_reads ||
			fail readonly_image_reads "hello unreadable"
		if ! touch "$mnt/new" 2>"$TESTDIR/touch.err" && grep -q "Read-only file system" "$TESTDIR/touch.err"; then
			pass readonly_image_erofs
		else
			fail readonly_image_erofs "$(cat "$TESTDIR/touch.err")"
		fi
		unmount_fs "$mnt"
	else
		fail readonly_image_mounts_ro "$(head -c 300 "$DAEMON_LOG")"
	fi
	chattr -i "$img"
}

# ==== item 11: remount, ext4 options ======================================
test_remount() {
	local img=$TESTDIR/re.img
	"$CHUNKFS" mkfs -q "$img" 64M || return
	mount_fs "$img" "$mnt" || { fail remount "mount failed"; return; }
	echo before >"$mnt/a"
	if expect_exit 0 "$CHUNKFS" mount -o remount,ro "$img" "$mnt" &&
		awk -v d="$mnt" '$2 == d { split($4, o, ","); exit o[1] != "ro" }' /proc/self/mounts; then
		pass remount_ro
	else
		fail remount_ro "$(head -c 300 "$ERR")"
	fi
	if ! echo x 2>/dev/null >"$mnt/b"; then pass remount_ro_refuses_writes; else
		fail remount_ro_refuses_writes "wrote after remount,ro"; fi
	[ "$(cat "$mnt/a")" = before ] && pass remount_ro_reads || fail remount_ro_reads "a"
	check_exit remount_rw 0 "$CHUNKFS" mount -o remount,rw "$img" "$mnt"
	if echo after >"$mnt/b" && [ "$(cat "$mnt/b")" = after ]; then pass remount_rw_writes; else
		fail remount_rw_writes "cannot write after remount,rw"; fi
	unmount_fs "$mnt"
	# a mount made -o ro holds no write lock: rw needs a new mount
	mount_fs "$img" "$mnt" -o ro || { fail remount_ro_mount "mount -o ro failed"; return; }
	if expect_exit 1 "$CHUNKFS" mount -o remount,rw "$img" "$mnt" && grep -q "mounted read-only" "$ERR"; then
		pass remount_rw_of_ro_mount_refused
	else
		fail remount_rw_of_ro_mount_refused "$(head -c 300 "$ERR")"
	fi
	unmount_fs "$mnt"
	if expect_exit 1 "$CHUNKFS" mount -o remount,ro "$img" "$mnt" && grep -q "not a chunkfs mount" "$ERR"; then
		pass remount_needs_a_mount
	else
		fail remount_needs_a_mount "$(head -c 300 "$ERR")"
	fi
}

test_ext4_options() {
	local img=$TESTDIR/opts.img
	"$CHUNKFS" mkfs -q "$img" 16M || return
	if mount_fs "$img" "$mnt" -o user_xattr,lazytime,nobarrier,errors=panic,noatime; then
		if grep -q "option 'user_xattr' means nothing to chunkfs: ignored" "$DAEMON_LOG" &&
			grep -q "'lazytime'" "$DAEMON_LOG" && grep -q "'nobarrier'" "$DAEMON_LOG" &&
			grep -q "'errors=panic'" "$DAEMON_LOG"; then
			pass ext4_options_ignored_named
		else
			fail ext4_options_ignored_named "$(head -c 300 "$DAEMON_LOG")"
		fi
		echo x >"$mnt/x" && pass ext4_options_mount_works || fail ext4_options_mount_works "x"
		unmount_fs "$mnt"
	else
		fail ext4_options_ignored_named "mount failed: $(head -c 300 "$DAEMON_LOG")"
	fi
	if expect_exit 2 "$CHUNKFS" mount -o usrquota "$img" "$mnt" &&
		grep -q "option 'usrquota' is not supported by chunkfs" "$ERR" && ! _m_is_mounted "$mnt"; then
		pass ext4_quota_refused_by_name
	else
		fail ext4_quota_refused_by_name "$(head -c 300 "$ERR")"
	fi
}

test_after_umount
test_wait_message
test_fsck_mounted
test_dead_mount
test_enospc
test_readonly_image
test_remount
test_ext4_options
finish
