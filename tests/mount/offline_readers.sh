#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# ls, stat and cat on a mounted image read the live filesystem through its
# mount point; get refuses it and names the mount point; the writers
# refuse it (issue 25 item 7).  They used to read the image as last
# written: `cat img /note` printed the old content with exit 0, a new file
# was ENOENT, and `ls -R` during a copy failed most of the time.
# shellcheck disable=SC1091
. "$(dirname "$0")/lib.sh"

mount_test offline_readers r.img
mkfs_or_finish -c 4 "$img" 512M
mount_or_finish mount
CMD_TIMEOUT=60

# ---- the issue's recipe: a rewrite and a new file after the first write ---
echo v1 >"$mnt/note"
sleep 7
echo v2-longer >"$mnt/note"
echo new >"$mnt/new"
if expect_exit 0 "$CHUNKFS" cat "$img" /note /new && [ "$(cat "$OUT")" = "v2-longer
new" ]; then
	pass cat_reads_live
else
	fail cat_reads_live "$(head -c 200 "$OUT") $(head -c 300 "$ERR")"
fi
if expect_exit 0 "$CHUNKFS" ls "$img" / && grep -qx new "$OUT" && grep -qx note "$OUT"; then
	pass ls_sees_new_file
else
	fail ls_sees_new_file "$(head -c 300 "$OUT") $(head -c 300 "$ERR")"
fi
if expect_exit 0 "$CHUNKFS" stat "$img" /note && grep -q "Size: 10 " "$OUT" &&
	grep -q "Inode: $(stat -c %i "$mnt/note") " "$OUT"; then
	pass stat_reads_live
else
	fail stat_reads_live "$(head -c 300 "$OUT") $(head -c 300 "$ERR")"
fi

# ---- paths resolve inside the mount, as in the image ----------------------
mkdir -p "$mnt/d"
ln -s /etc/hostname "$mnt/d/hostlink"
ln -s ../.. "$mnt/d/up"
if expect_exit 1 "$CHUNKFS" cat "$img" /d/hostlink && grep -q "No such file" "$ERR" &&
	expect_exit 1 "$CHUNKFS" cat "$img" /../etc/hostname; then
	pass cat_stays_inside_mount
else
	fail cat_stays_inside_mount "read the host's file: $(head -c 200 "$OUT")"
fi
if expect_exit 0 "$CHUNKFS" cat "$img" /d/up/note && [ "$(cat "$OUT")" = v2-longer ]; then
	pass cat_follows_relative_link
else
	fail cat_follows_relative_link "$(head -c 300 "$ERR")"
fi
mkfifo "$mnt/fifo"
if expect_exit 0 "$CHUNKFS" cat "$img" /fifo && [ ! -s "$OUT" ]; then
	pass cat_fifo_empty_not_blocking
else
	fail cat_fifo_empty_not_blocking "$(head -c 300 "$ERR")"
fi

# ---- ls -R while a copy runs into the mount --------------------------------
# thousands of small files (what the issue copied: /usr/share); the
# source tree three times where there is no /usr/share/doc
if [ "$(find /usr/share/doc 2>/dev/null | head -2000 | wc -l)" -ge 2000 ]; then
	srcs=(/usr/share/doc)
else
	srcs=("$CHUNKFS_SRC" "$CHUNKFS_SRC" "$CHUNKFS_SRC")
fi
( i=0; for s in "${srcs[@]}"; do i=$((i + 1)); cp -a "$s" "$mnt/copy$i" || exit 1; done ) &
copier=$!
runs=0 bad=0 why=
while kill -0 "$copier" 2>/dev/null || [ "$runs" -lt 5 ]; do
	runs=$((runs + 1))
	if ! timeout 60 "$CHUNKFS" ls -R "$img" / >"$TESTDIR/lsR.out" 2>"$TESTDIR/lsR.err"; then
		bad=$((bad + 1))
		why=$(head -c 200 "$TESTDIR/lsR.err")
	fi
done
wait "$copier" && pass copy_ran || fail copy_ran "cp -a into the mount failed"
if [ "$bad" = 0 ]; then
	pass ls_R_during_copy
else
	fail ls_R_during_copy "$bad of $runs runs failed: $why"
fi

# ---- get refuses, and says where to copy from ------------------------------
if expect_exit 1 "$CHUNKFS" get "$img" /note "$TESTDIR/got" &&
	grep -qF "is mounted on $mnt" "$ERR" && grep -qF "cp -a $mnt/note DEST" "$ERR" &&
	[ ! -e "$TESTDIR/got" ]; then
	pass get_refuses_mounted
else
	fail get_refuses_mounted "$(head -c 300 "$ERR")"
fi

# ---- writers refuse, and change nothing -------------------------------------
echo x >"$TESTDIR/x"
writers_ok=1
for cmd in "put $img $TESTDIR/x /w" "mkdir $img /w" "rm $img /note" "ln $img /note /w" \
	"mv $img /note /w"; do
	# shellcheck disable=SC2086
	if ! expect_exit 1 "$CHUNKFS" $cmd || ! grep -q "in use" "$ERR"; then
		writers_ok=0
		fail "writer_refused_${cmd%% *}" "$(head -c 300 "$ERR")"
	fi
done
[ "$writers_ok" = 1 ] && pass writers_refused
if [ ! -e "$mnt/w" ] && [ "$(cat "$mnt/note")" = v2-longer ]; then
	pass writers_changed_nothing
else
	fail writers_changed_nothing "$(ls "$mnt")"
fi

# ---- the same listing through the mount as from the image ------------------
live=$("$CHUNKFS" ls -lR "$img" /d 2>&1)
unmount_ok unmount
offline=$("$CHUNKFS" ls -lR "$img" /d 2>&1)
same ls_live_as_offline "$live" "$offline"
if expect_exit 0 "$CHUNKFS" cat "$img" /note && [ "$(cat "$OUT")" = v2-longer ]; then
	pass cat_offline_after_unmount
else
	fail cat_offline_after_unmount "$(head -c 300 "$ERR")"
fi
finish
