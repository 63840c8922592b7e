#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The mount command itself (issue 3 part 1 and 3): daemon and foreground
# modes, unmounting by umount/fusermount3/SIGTERM/SIGINT, the refusals
# (usage, missing directory, not an image, image in use, unknown incompat
# feature), chunks left dirty by a crash checked before mounting (and the
# mount refused when fsck needs a person), -o ro, -o nocheck, mount.chunkfs
# and mount(8) (-t fuse.chunkfs, fstab), live chunk states in `chunkfs
# info`, and make run.
. "$(dirname "$0")/lib.sh"

mount_test mount_cli cli.img
mkfs_or_finish -c 8 "$img" 128M

# ---- usage and refusals ---------------------------------------------------------
check_exit usage_needs_dir 2 "$CHUNKFS" mount "$img"
if expect_exit 1 "$CHUNKFS" mount "$img" "$PUB/nodir" && grep -q "nodir: No such file" "$ERR"; then
	pass refuse_missing_dir
else
	fail refuse_missing_dir "$(head -c 300 "$ERR")"
fi
printf 'not an image at all\n' >"$TESTDIR/junk"
if expect_exit 1 "$CHUNKFS" mount "$TESTDIR/junk" "$mnt" && grep -q "not a chunkfs image" "$ERR"; then
	pass refuse_not_an_image
else
	fail refuse_not_an_image "$(head -c 300 "$ERR")"
fi
# A bad option: one line from chunkfs (not libfuse's voice, no usage text),
# exit 2, nothing mounted.  The FUSE sizes each outside the range the
# kernel and libfuse serve: before, the mount exited 0 and its daemon died
# at the kernel's first request, leaving "Transport endpoint is not
# connected".
# refused NAME OPTION PATTERN: the mount with -o OPTION refused as above,
# its message matching PATTERN
refused() {
	if expect_exit 2 "$CHUNKFS" mount -o "$2" "$img" "$mnt" && ! _m_is_mounted "$mnt" &&
	   [ "$(wc -l <"$ERR")" = 1 ] && grep -Eq "^chunkfs: mount: $3" "$ERR"; then
		pass "$1"
	else
		fail "$1" "-o $2: $(head -c 300 "$ERR")"
		_m_is_mounted "$mnt" && { MOUNTS+=("$mnt"); umount -l "$mnt"; }
	fi
}
refused refuse_unknown_option no_such_option "unknown mount option 'no_such_option'"
refused refuse_unsupported_option dax "option 'dax' is not supported"
for o in max_write=1 max_write=4095 max_write=16777216; do
	refused "refuse_$o" "$o" "bad max_write '${o#*=}': 4096 to [0-9]+ bytes \\(.*\\)"
done
refused refuse_max_read=100 max_read=100 "bad max_read '100': 4096 to [0-9]+ bytes \\(.*\\)"
refused refuse_max_background=70000 max_background=70000 "bad max_background '70000': 1 to 65535"
refused refuse_time_gran=0 time_gran=0 "bad time_gran '0': 1 to 1000000000"
refused refuse_max_write_not_a_number max_write=1M "bad max_write '1M'"
if expect_exit 2 "$CHUNKFS" mount -o clean_after=soon "$img" "$mnt"; then
	pass refuse_bad_clean_after
else
	fail refuse_bad_clean_after "$(head -c 300 "$ERR")"
fi
# The smallest max_write and a max_read the kernel takes serve (a max_read
# libfuse 3 refused at the first request unless init repeats it), and so
# do the atime options libfuse does not know, which it refused.
# (written, then read back by a new mount: through the daemon, not the
# page cache)
head -c 300000 /dev/urandom >"$TESTDIR/sz.src"
for o in max_write=4096,max_read=8192 relatime,nodiratime strictatime,diratime; do
	if daemon_mount -o "$o" "$img" && cp "$TESTDIR/sz.src" "$mnt/sz" &&
	   daemon_unmount "$img" && daemon_mount -o "$o" "$img" &&
	   cmp -s "$TESTDIR/sz.src" "$mnt/sz" && rm "$mnt/sz"; then
		pass "serves_with_$o"
	else
		fail "serves_with_$o" "$(head -c 300 "$ERR")"
	fi
	_m_is_mounted "$mnt" && daemon_unmount "$img"
done
# A daemon that dies before it serves (killed at the kernel's first
# request) makes the mount fail, with the reason, and leaves no dead mount.
if ! have_test_hooks; then
	skip daemon_dead_before_serving_fails "$CHUNKFS has no test hooks (build/san has them): NOT tested"
elif CHUNKFS_TEST_KILL_AT_INIT=1 expect_exit 1 "$CHUNKFS" mount "$img" "$mnt" &&
   grep -q "the daemon was killed (signal 9) before it served" "$ERR" &&
   ! _m_is_mounted "$mnt"; then
	pass daemon_dead_before_serving_fails
else
	fail daemon_dead_before_serving_fails "$(head -c 300 "$ERR")"
	_m_is_mounted "$mnt" && { MOUNTS+=("$mnt"); umount -l "$mnt"; }
fi
wait_unlocked "$img"
# A typo ("chunkfs IMAGE DIR" without a command) must not mount.
if expect_exit 2 "$CHUNKFS" "$img" "$mnt" && ! _m_is_mounted "$mnt"; then
	pass no_mount_without_command
else
	fail no_mount_without_command "$(head -c 300 "$ERR")"
fi

# ---- daemon mode, live states, umount -------------------------------------------
if daemon_mount -o clean_after=1 "$img"; then
	pass daemon_mount
else
	fail daemon_mount "$(head -c 300 "$ERR")"
	finish
fi
src=$(awk -v d="$mnt" '$2 == d { print $1 " " $3 }' /proc/self/mounts)
same proc_mounts_source_and_type "$src" "$img fuse.chunkfs"
if expect_exit 1 "$CHUNKFS" mount "$img" "$PUB" && grep -q "in use by another process" "$ERR"; then
	pass refuse_image_in_use
else
	fail refuse_image_in_use "$(head -c 300 "$ERR")"
fi
if expect_exit 1 "$CHUNKFS" mkdir "$img" /offline && grep -q "in use" "$ERR"; then
	pass offline_write_refused_while_mounted
else
	fail offline_write_refused_while_mounted "$(head -c 300 "$ERR")"
fi
wait_clean "$img" 10
mkdir "$mnt/top" && echo data >"$mnt/top/file"
chunk=$(( $(stat -c %i "$mnt/top") >> 24 ))
# The changes are in the daemon's memory: on disk the chunks are as they
# were, clean (a checkpoint is due only a second after the first change)
d=$(dirty_chunks "$img")
if [ -z "$d" ]; then
	pass unwritten_changes_leave_chunks_clean
else
	fail unwritten_changes_leave_chunks_clean "dirty before any write-back: $d"
fi
# fsync writes them back, each chunk marked dirty first, and dirty it
# stays until the next checkpoint
sync "$mnt/top/file"
d=$(dirty_chunks "$img")
# mkdir in / dirties the root's chunk 0 and top's chunk, nothing else
case ",$d," in
*",$chunk,"*) pass info_shows_live_dirty ;;
*) fail info_shows_live_dirty "top is in chunk $chunk, dirty: '$d'" ;;
esac
if [ -z "$(echo "$d" | tr ',' '\n' | grep -vx -e 0 -e "$chunk")" ]; then
	pass only_touched_chunks_dirty
else
	fail only_touched_chunks_dirty "touched 0 and $chunk, dirty: $d"
fi
if wait_clean "$img" 6; then
	pass clean_after_idle_while_mounted
else
	fail clean_after_idle_while_mounted "still dirty after 6 s with clean_after=1: $(dirty_chunks "$img")"
fi
echo more >>"$mnt/top/file"
if timeout 30 umount "$mnt" && forget_mount "$mnt" && wait_unlocked "$img"; then
	pass umount_stops_daemon
else
	fail umount_stops_daemon "still mounted or locked"
fi
if [ -z "$(dirty_chunks "$img")" ] &&
   [ "$("$CHUNKFS" cat "$img" /top/file 2>&1)" = "$(printf 'data\nmore')" ]; then
	pass umount_leaves_clean_image_with_data
else
	fail umount_leaves_clean_image_with_data "dirty: $(dirty_chunks "$img")"
fi

# ---- foreground, SIGTERM and SIGINT ---------------------------------------------
# rc: the daemon's exit status once it is gone (255: still there after 10 s)
daemon_wait() {
	rc=255
	for _ in $(seq 200); do
		if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
			wait "$DAEMON_PID"
			rc=$?
			return
		fi
		sleep 0.05
	done
}
for sig in TERM INT; do
	if mount_fs "$img" "$mnt" -o clean_after=60; then
		echo "$sig" >"$mnt/top/sig-$sig"
		kill -"$sig" "$DAEMON_PID"
		daemon_wait
		if [ "$rc" = 0 ] && ! _m_is_mounted "$mnt" && [ -z "$(dirty_chunks "$img")" ] &&
		   [ "$("$CHUNKFS" cat "$img" "/top/sig-$sig" 2>&1)" = "$sig" ]; then
			forget_mount "$mnt"
			pass "sig${sig}_unmounts_cleanly"
		else
			fail "sig${sig}_unmounts_cleanly" "exit $rc, dirty '$(dirty_chunks "$img")': $(tail -3 "$DAEMON_LOG")"
			unmount_fs "$mnt"
		fi
		log_clean "sig${sig}_daemon_log" "$DAEMON_LOG"
	else
		fail "sig${sig}_unmounts_cleanly" "mount failed"
	fi
done

# ---- one worker: the reader serves every request itself -------------------------
# (daemon/loop.c: with no idle worker to hand the reader role to, an
# fsync and the requests after it are served by the same thread)
if mount_fs "$img" "$mnt" -o max_threads=1; then
	head -c 300000 /dev/urandom >"$TESTDIR/one.src"
	ok=1
	for i in 1 2 3; do
		cp "$TESTDIR/one.src" "$mnt/top/one$i" && sync "$mnt/top/one$i" || ok=0
		stat "$mnt/top/one$i" >/dev/null || ok=0
	done
	mv "$mnt/top/one3" "$mnt/top/one3r" && rm "$mnt/top/one2" || ok=0
	kill -TERM "$DAEMON_PID"
	daemon_wait
	if [ "$ok" = 1 ] && [ "$rc" = 0 ] && ! _m_is_mounted "$mnt" &&
	   "$CHUNKFS" cat "$img" /top/one3r | cmp -s - "$TESTDIR/one.src" &&
	   ! "$CHUNKFS" cat "$img" /top/one2 >/dev/null 2>&1; then
		forget_mount "$mnt"
		pass one_worker_serves_and_unmounts
	else
		fail one_worker_serves_and_unmounts "ok $ok, exit $rc: $(tail -3 "$DAEMON_LOG")"
		unmount_fs "$mnt"
	fi
	log_clean one_worker_daemon_log "$DAEMON_LOG"
else
	fail one_worker_serves_and_unmounts "mount failed"
fi

# ---- read-only --------------------------------------------------------------------
if mount_fs "$img" "$mnt" -o ro; then
	if ! touch "$mnt/top/new" 2>"$TESTDIR/ro.err" && grep -q "Read-only" "$TESTDIR/ro.err" &&
	   [ "$(cat "$mnt/top/sig-TERM")" = TERM ]; then
		pass ro_reads_but_refuses_writes
	else
		fail ro_reads_but_refuses_writes "$(cat "$TESTDIR/ro.err")"
	fi
	if expect_exit 1 "$CHUNKFS" mount "$img" "$PUB" && grep -q "in use" "$ERR" &&
	   expect_exit 1 "$CHUNKFS" rm "$img" /top/sig-INT; then
		pass ro_mount_keeps_writers_out
	else
		fail ro_mount_keeps_writers_out "$(head -c 300 "$ERR")"
	fi
	[ -z "$(dirty_chunks "$img")" ] && pass ro_dirties_nothing ||
		fail ro_dirties_nothing "dirty: $(dirty_chunks "$img")"
	unmount_fs "$mnt"
else
	fail ro_reads_but_refuses_writes "ro mount failed"
fi
if mount_fs "$img" "$mnt"; then
	if expect_exit 1 "$CHUNKFS" mount -o ro "$img" "$PUB" && grep -q "in use" "$ERR"; then
		pass ro_refused_while_mounted_rw
	else
		fail ro_refused_while_mounted_rw "$(head -c 300 "$ERR")"
	fi
	unmount_fs "$mnt"
fi

# ---- the transport: io_uring by default where the kernel has it on ----------
# (issue 26 item 2) FUSE_URING_ENABLE, which picks it for every other
# mount of this run, is left out here; -o no_io_uring keeps /dev/fuse.
via_of() {
	"$CHUNKFS" info "$img" 2>/dev/null | sed -n 's/^Mounted on: .*, over \(.*\))$/\1/p'
}
if "$CHUNKFS" --version | grep -q 'io_uring: yes'; then
	want=io_uring
else
	want=/dev/fuse
fi
saved_uring=${FUSE_URING_ENABLE-none}
unset FUSE_URING_ENABLE
mount_fs "$img" "$mnt"
mounted=$?
[ "$saved_uring" = none ] || export FUSE_URING_ENABLE="$saved_uring"
if [ "$mounted" = 0 ]; then
	got=$(via_of)
	if [ "$got" = "$want" ]; then
		pass transport_default
	else
		fail transport_default "over '$got', want $want"
	fi
	unmount_fs "$mnt"
else
	fail transport_default "mount failed"
fi
if mount_fs "$img" "$mnt" -o no_io_uring; then
	got=$(via_of)
	if [ "$got" = /dev/fuse ] && ! grep -q "io_uring" "$DAEMON_LOG"; then
		pass transport_no_io_uring
	else
		fail transport_no_io_uring "over '$got'; log: $(head -c 300 "$DAEMON_LOG")"
	fi
	unmount_fs "$mnt"
else
	fail transport_no_io_uring "mount failed"
fi

# ---- unknown incompat feature ---------------------------------------------------
# An unknown bit in the superblock's incompat features, the checksum resealed.
cp --sparse=always "$img" "$TESTDIR/incompat.img"
"$CFSDAMAGE" "$TESTDIR/incompat.img" incompat 0x80000000 ||
	fail damage_incompat "cfsdamage failed"
if expect_exit 1 "$CHUNKFS" mount "$TESTDIR/incompat.img" "$mnt" &&
   grep -q "unsupported incompatible features 0x80000000" "$ERR" && ! _m_is_mounted "$mnt"; then
	pass refuse_unknown_incompat_feature
else
	fail refuse_unknown_incompat_feature "$(head -c 300 "$ERR")"
fi

# ---- dirty chunks: checked before mounting; refused if a person is needed -----------
# On copies of the image after a crash of the daemon.
dimg=$TESTDIR/dirty.img
cp --sparse=always "$img" "$dimg"
if mount_fs "$dimg" "$mnt" -o clean_after=600; then
	# fsync makes the file durable: it must survive the crash
	echo crash | dd of="$mnt/top/crashed" conv=fsync status=none
	echo lost >"$mnt/top/maybe-lost"
	kill_daemon
fi
dirty=$(dirty_chunks "$dimg")
[ -n "$dirty" ] || fail crash_left_dirty_chunks "no chunk dirty after kill -9"
if [ "$("$CHUNKFS" cat "$dimg" /top/crashed 2>&1)" = crash ]; then
	pass fsync_survives_kill_9
else
	fail fsync_survives_kill_9 "$("$CHUNKFS" cat "$dimg" /top/crashed 2>&1 | head -c 200)"
fi
cp --sparse=always "$dimg" "$TESTDIR/dirty2.img"
if mount_fs "$dimg" "$mnt" -o nocheck && grep -q "unchecked chunk" "$DAEMON_LOG" &&
   [ "$(cat "$mnt/top/crashed")" = crash ]; then
	unmount_fs "$mnt"
	if [ "$(dirty_chunks "$dimg")" = "$dirty" ]; then
		pass nocheck_mounts_and_unchecked_stay_dirty
	else
		fail nocheck_mounts_and_unchecked_stay_dirty "dirty before '$dirty', after '$(dirty_chunks "$dimg")'"
	fi
else
	fail nocheck_mounts_and_unchecked_stay_dirty "$(head -c 300 "$DAEMON_LOG")"
	unmount_fs "$mnt"
fi
n=$(echo "$dirty" | tr ',' '\n' | grep -c .)
if daemon_mount "$dimg" && grep -Eq "checked $n of 8 chunks \($dirty\) in [0-9.]+s: " "$ERR"; then
	pass dirty_chunks_checked_before_mount
	sed 's/^/  /' "$ERR"
	[ "$(cat "$mnt/top/crashed")" = crash ] || fail checked_image_has_data "crashed file lost"
	daemon_unmount "$dimg"
	[ -z "$(dirty_chunks "$dimg")" ] ||
		fail checked_image_clean_after_unmount "dirty: $(dirty_chunks "$dimg")"
else
	fail dirty_chunks_checked_before_mount "$(head -c 400 "$ERR")"
fi
# Damage an inode in a dirty chunk (the /top directory's): preening cannot
# decide for the user, so the mount is refused and fsck named.
top_ino=$("$CHUNKFS" ls -di "$TESTDIR/dirty2.img" /top | awk '{ print $1 }')
"$CFSDAMAGE" "$TESTDIR/dirty2.img" inode "$top_ino" || fail damage_inode "cfsdamage failed"
if expect_exit 1 "$CHUNKFS" mount "$TESTDIR/dirty2.img" "$mnt" && ! _m_is_mounted "$mnt" &&
   grep -q "need.* a person: run chunkfs fsck" "$ERR"; then
	pass refuse_when_fsck_needs_a_person
	sed 's/^/  /' "$ERR"
else
	fail refuse_when_fsck_needs_a_person "top is $top_ino: $(head -c 400 "$ERR")"
fi
"$CHUNKFS" fsck -y "$TESTDIR/dirty2.img" >/dev/null 2>&1
if daemon_mount -o ro "$TESTDIR/dirty2.img"; then
	pass mounts_after_fsck_y
	daemon_unmount "$TESTDIR/dirty2.img"
else
	fail mounts_after_fsck_y "$(head -c 400 "$ERR")"
fi

# ---- default mount options stored in the superblock ---------------------------------
# What an older chunkfs tune -o stored unchecked: an option chunkfs refuses,
# an unknown one, a size the daemon cannot serve.  Each is ignored with a
# warning that names the superblock (no usage text), the good ones apply,
# and the command line overrides them.  Before, every mount failed (exit 2
# and the usage text, or exit 1 from libfuse) whatever the command line.
simg=$TESTDIR/stored.img
cp --sparse=always "$img" "$simg"
"$CFSDAMAGE" "$simg" mountopts "dax,foo=bar,max_write=1,noatime,ro" ||
	fail stored_setup "cfsdamage mountopts failed"
opts_of() { awk -v d="$mnt" '$2 == d { print $4 }' /proc/self/mounts; }
if daemon_mount "$simg" && [ "$(grep -c "default mount options in the superblock: .*: ignored (chunkfs tune -o changes them)" "$ERR")" = 3 ] &&
   grep -q "option 'dax' is not supported" "$ERR" && grep -q "'foo=bar'" "$ERR" &&
   grep -q "bad max_write '1'" "$ERR" && ! grep -q usage: "$ERR" &&
   [[ ,$(opts_of), == *,ro,*noatime,* ]]; then
	pass stored_bad_options_ignored_named
else
	fail stored_bad_options_ignored_named "opts '$(opts_of)': $(head -c 600 "$ERR")"
fi
_m_is_mounted "$mnt" && daemon_unmount "$simg"
if daemon_mount -o rw,relatime "$simg" && [[ ,$(opts_of), == *,rw,relatime,* ]] &&
   echo w >"$mnt/top/stored-rw"; then
	pass stored_options_overridden_by_command_line
else
	fail stored_options_overridden_by_command_line "opts '$(opts_of)': $(head -c 300 "$ERR")"
fi
_m_is_mounted "$mnt" && daemon_unmount "$simg"
# nocheck stored: check on the command line checks the dirty chunks again
"$CFSDAMAGE" "$TESTDIR/dirty.img" mountopts nocheck
if mount_fs "$TESTDIR/dirty.img" "$mnt" -o clean_after=600; then
	echo x >"$mnt/top/dirtied" && sync "$mnt/top/dirtied"
	kill_daemon
fi
if [ -n "$(dirty_chunks "$TESTDIR/dirty.img")" ] &&
   daemon_mount -o check "$TESTDIR/dirty.img" && grep -Eq "checked [0-9]+ of 8 chunks" "$ERR"; then
	pass stored_nocheck_overridden_by_check
else
	fail stored_nocheck_overridden_by_check "dirty '$(dirty_chunks "$TESTDIR/dirty.img")': $(head -c 300 "$ERR")"
fi
_m_is_mounted "$mnt" && daemon_unmount "$TESTDIR/dirty.img"

# ---- mount(8) helper conventions ----------------------------------------------------
bin=$PUB/bin
mkdir "$bin"
ln -s "$CHUNKFS" "$bin/mount.chunkfs"
ln -s "$CHUNKFS" "$bin/mount.fuse.chunkfs"
ln -s "$CHUNKFS" "$bin/chunkfs"
if expect_exit 0 "$bin/mount.chunkfs" "$img" "$mnt" -f -o rw && ! _m_is_mounted "$mnt"; then
	pass helper_dash_f_is_fake
else
	fail helper_dash_f_is_fake "$(head -c 300 "$ERR")"
fi
# mount(8) passes a helper's exit status on: the same one line and 2
if expect_exit 2 "$bin/mount.chunkfs" "$img" "$mnt" -o rw,bogus && ! _m_is_mounted "$mnt" &&
   [ "$(cat "$ERR")" = "mount.chunkfs: unknown mount option 'bogus' (see mount.chunkfs(8))" ]; then
	pass helper_unknown_option_one_line
else
	fail helper_unknown_option_one_line "$(head -c 300 "$ERR")"
fi
for helper in mount.chunkfs mount.fuse.chunkfs; do
	if expect_exit 0 "$bin/$helper" "$img" "$mnt" -o rw,noatime,nofail,_netdev -n -s &&
	   _m_is_mounted "$mnt"; then
		MOUNTS+=("$mnt")
		echo "$helper" >"$mnt/top/$helper"
		timeout 30 umount "$mnt" && forget_mount "$mnt"
		wait_unlocked "$img"
		if [ "$("$CHUNKFS" cat "$img" "/top/$helper")" = "$helper" ]; then
			pass "helper_$helper"
		else
			fail "helper_$helper" "file not written"
		fi
	else
		fail "helper_$helper" "$(head -c 300 "$ERR")"
	fi
done
# mount.fuse3's way: "chunkfs IMAGE DIR -o OPTS"
if expect_exit 0 "$bin/chunkfs" "$img" "$mnt" -o rw,dev,suid && _m_is_mounted "$mnt"; then
	MOUNTS+=("$mnt")
	timeout 30 fusermount3 -u "$mnt" && forget_mount "$mnt"
	wait_unlocked "$img"
	pass mount_fuse3_calling_convention
else
	fail mount_fuse3_calling_convention "$(head -c 300 "$ERR")"
fi
# mount(8) itself, in a private mount namespace where chunkfs is in
# /usr/local/bin (mount(8) drops PATH, so that is where mount.fuse3 looks).
if command -v unshare >/dev/null; then
	cat >"$PUB/fstab" <<EOF
$img $mnt fuse.chunkfs defaults,clean_after=1,nofail,x-test=1 0 0
EOF
	timeout -k 5 60 unshare -m --propagation private bash -c '
		set -e
		trap "umount -l $2 2>/dev/null || true" EXIT
		mount --bind "$1" /usr/local/bin
		mount -t fuse.chunkfs "$3" "$2" -o clean_after=1
		grep -q " $2 fuse.chunkfs " /proc/self/mounts
		echo viamount >"$2/top/viamount"
		umount "$2"
		for i in $(seq 100); do flock -n -x "$3" true && break; sleep 0.1; done
		mount -T "$4" "$2"
		grep -q " $2 fuse.chunkfs " /proc/self/mounts
		echo viafstab >"$2/top/viafstab"
		umount "$2"
		for i in $(seq 100); do flock -n -x "$3" true && break; sleep 0.1; done
	' _ "$bin" "$mnt" "$img" "$PUB/fstab" >"$TESTDIR/mount8.log" 2>&1
	rc=$?
	if [ "$rc" = 0 ] && [ "$("$CHUNKFS" cat "$img" /top/viamount)" = viamount ] &&
	   [ "$("$CHUNKFS" cat "$img" /top/viafstab)" = viafstab ]; then
		pass mount8_type_fuse_chunkfs_and_fstab
	else
		fail mount8_type_fuse_chunkfs_and_fstab "exit $rc: $(tail -5 "$TESTDIR/mount8.log")"
	fi
else
	skip mount8_type_fuse_chunkfs_and_fstab "unshare is not installed"
fi
# ---- make run (scripts/run.sh) ------------------------------------------------------
runimg=$TESTDIR/run.img
runmnt=$PUB/runmnt
if MNT=$runmnt CHUNKFS=$CHUNKFS timeout 60 bash "$CHUNKFS_SRC/scripts/run.sh" "$runimg" \
	>"$TESTDIR/run.out" 2>&1 && _m_is_mounted "$runmnt" &&
   grep -q "chunkfs is mounted at $runmnt" "$TESTDIR/run.out" &&
   grep -q "umount $runmnt" "$TESTDIR/run.out"; then
	MOUNTS+=("$runmnt")
	echo hello >"$runmnt/hello"
	if MNT=$runmnt timeout 60 bash "$CHUNKFS_SRC/scripts/run.sh" "$runimg" \
		>"$TESTDIR/run2.out" 2>&1 && grep -q "already mounted" "$TESTDIR/run2.out"; then
		pass make_run_mounts_and_says_what_next
	else
		fail make_run_mounts_and_says_what_next "second run: $(tail -3 "$TESTDIR/run2.out")"
	fi
	timeout 30 umount "$runmnt" && forget_mount "$runmnt"
	wait_unlocked "$runimg"
	[ "$("$CHUNKFS" cat "$runimg" /hello)" = hello ] ||
		fail make_run_image_keeps_data "hello not in $runimg"
else
	fail make_run_mounts_and_says_what_next "$(tail -5 "$TESTDIR/run.out")"
fi

if [ -z "$(dirty_chunks "$img")" ] && "$CFSCHECK" "$img" >"$TESTDIR/check.out"; then
	pass image_clean_and_consistent_at_end
else
	fail image_clean_and_consistent_at_end "$(head -5 "$TESTDIR/check.out")"
fi
finish
