#!/usr/bin/env bash
# The admin tools on a mounted image: info --map / --svg show the live
# state and say the image is mounted.
. "$(dirname "$0")/lib.sh"

need_fuse admin_mount
pass admin_mount

img=$TESTDIR/adm.img
mnt=$PUB/mnt
mkdir "$mnt"
"$CHUNKFS" mkfs -q -c 8 "$img" 32M || { fail admin_mkfs mkfs; finish; }

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
finish
