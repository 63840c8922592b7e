#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The admin tools on a mounted image: info --map / --svg show the live
# state and say the image is mounted; tune and trim are refused while
# mounted; the default mount options tune stores are applied by the mount;
# trim discards on a block device (a loop device over an image file, which
# the loop driver turns into holes in the file).
. "$(dirname "$0")/lib.sh"

mount_test admin_mount adm.img
pass admin_mount
mkfs_or_finish -c 8 "$img" 32M

# ---- info --map / --svg, live ------------------------------------------------
# clean_after is long, so the chunk written stays dirty while we look
if mount_fs "$img" "$mnt" -o clean_after=600; then
	echo hello >"$mnt/hello" && sync "$mnt/hello"
	dirty=$(dirty_chunks "$img")
	if [ -n "$dirty" ] && expect_exit 0 "$CHUNKFS" info --map "$img" &&
	   grep -q '^(mounted: states are live' "$OUT" &&
	   grep -Eq "^ +0  .*D" "$OUT"; then
		pass map_live_dirty
	else
		fail map_live_dirty "dirty '$dirty': $(head -c 600 "$OUT")"
	fi
	if command -v python3 >/dev/null &&
	   "$CHUNKFS" info --json "$img" >live.json &&
	   expect_exit 0 "$CHUNKFS" info --svg live.svg "$img" &&
	   expect_exit 0 python3 "$CHUNKFS_SRC/tests/cli/map_check.py" svg live.json live.svg &&
	   grep -q 'class="chunk dirty"' live.svg && grep -q 'mounted: states live' live.svg; then
		pass svg_live_dirty
	else
		fail svg_live_dirty "$(head -c 400 "$OUT")"
	fi
	unmount_fs "$mnt"
else
	fail map_live_dirty "mount failed"
fi
# ---- tune ------------------------------------------------------------------
if mount_fs "$img" "$mnt"; then
	cp "$img" sb-before.img 2>/dev/null
	if expect_exit 1 "$CHUNKFS" tune -L busy -U random "$img" &&
	   grep -q 'in use by another process (mounted?).*unmount it first' "$ERR" &&
	   cmp -s -n 4096 sb-before.img "$img"; then
		pass tune_refused_mounted
	else
		fail tune_refused_mounted "$(cat "$ERR")"
	fi
	unmount_fs "$mnt"
else
	fail tune_refused_mounted "mount failed"
fi
# default mount options: ro from the superblock, rw on the command line wins
"$CHUNKFS" tune -o ro,noatime "$img" >/dev/null
if mount_fs "$img" "$mnt"; then
	if ! touch "$mnt/new" 2>err && grep -q 'Read-only file system' err &&
	   awk -v d="$mnt" '$2 == d && $4 ~ /(^|,)ro(,|$)/ { f = 1 } END { exit !f }' /proc/self/mounts; then
		pass tune_default_ro_applied
	else
		fail tune_default_ro_applied "touch: $(cat err)"
	fi
	unmount_fs "$mnt"
else
	fail tune_default_ro_applied "mount failed"
fi
if mount_fs "$img" "$mnt" -o rw; then
	if echo x >"$mnt/new" && [ "$(cat "$mnt/new")" = x ]; then
		pass tune_command_line_wins
	else
		fail tune_command_line_wins "could not write with -o rw"
	fi
	unmount_fs "$mnt"
else
	fail tune_command_line_wins "mount failed"
fi
"$CHUNKFS" tune -o "" "$img" >/dev/null

# ---- trim -------------------------------------------------------------------
if mount_fs "$img" "$mnt"; then
	if expect_exit 1 "$CHUNKFS" trim "$img" &&
	   grep -q 'in use by another process (mounted?): unmount it first' "$ERR"; then
		pass trim_refused_mounted
	else
		fail trim_refused_mounted "$(cat "$ERR")"
	fi
	unmount_fs "$mnt"
else
	fail trim_refused_mounted "mount failed"
fi

# a crash leaves a chunk dirty: its bitmap may call free a block a file
# uses, so trim must refuse (and change nothing) until fsck has run
if mount_fs "$img" "$mnt" -o clean_after=600; then
	head -c 2000000 /dev/urandom >"$mnt/crashfile" && sync "$mnt/crashfile"
	kill_daemon
	wait_unlocked "$img"
	sum_before=$(sum "$img")
	if [ -n "$(dirty_chunks "$img")" ] && expect_exit 1 "$CHUNKFS" trim "$img" &&
	   grep -q 'need checking' "$ERR" && [ "$(sum "$img")" = "$sum_before" ]; then
		pass trim_refuses_dirty
	else
		fail trim_refuses_dirty "dirty '$(dirty_chunks "$img")': $(cat "$ERR")"
	fi
	"$CHUNKFS" fsck -p "$img" >/dev/null
	if expect_exit 0 "$CHUNKFS" trim "$img" && "$CHUNKFS" fsck -f -n "$img" >/dev/null &&
	   [ "$("$CHUNKFS" cat "$img" /crashfile | wc -c)" = 2000000 ]; then
		pass trim_after_fsck
	else
		fail trim_after_fsck "$(cat "$ERR")"
	fi
else
	fail trim_refuses_dirty "mount failed"
fi

kib() { echo $(($(stat -c %b "$1") * $(stat -c %B "$1") / 1024)); }
if ! loop_attach "$img"; then
	skip trim_block_device "$LOOP_WHY"
else
	head -c $((8 << 20)) /dev/urandom >big
	head -c 100000 /dev/urandom >small
	"$CHUNKFS" put "$LOOP" big /big && "$CHUNKFS" put "$LOOP" small /small &&
		"$CHUNKFS" rm "$LOOP" /big
	sync
	before=$(kib "$img")
	if expect_exit 0 "$CHUNKFS" trim -v "$LOOP" && sync && after=$(kib "$img") &&
	   [ "$after" -le $((before - 8 * 1024)) ] &&
	   "$CHUNKFS" cat "$LOOP" /small | cmp -s small - &&
	   "$CHUNKFS" fsck -f -n "$LOOP" >/dev/null; then
		pass trim_block_device
	else
		fail trim_block_device "${before}K -> ${after:-?}K: $(cat "$OUT" "$ERR")"
	fi
	loop_detach
fi
finish
