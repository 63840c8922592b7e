#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Locality of the dirty state (issue 3 part 3, "done means"): untarring a
# 10,000-file tree into one subdirectory of a 64-chunk image leaves at most
# a few chunks dirty while it runs, and none 10 seconds after it ends with
# the default clean_after of 5 seconds.
. "$(dirname "$0")/lib.sh"

mount_test locality_mount loc.img
pass locality_mount

# 10,000 files in 100 directories, most small (like a source tree)
python3 - "$TESTDIR/tree.tar" <<'EOF'
import io, random, sys, tarfile
random.seed(3)
with tarfile.open(sys.argv[1], 'w') as t:
    for d in range(100):
        info = tarfile.TarInfo(f'tree/d{d:03}')
        info.type = tarfile.DIRTYPE
        info.mode = 0o755
        t.addfile(info)
        for f in range(100):
            size = int(random.lognormvariate(6.5, 1.2)) % 20000
            info = tarfile.TarInfo(f'tree/d{d:03}/f{f:03}.c')
            info.size = size
            info.mode = 0o644
            info.mtime = 1700000000 + f
            data = ((b'chunkfs %d %d\n' % (d, f)) * (size // 10 + 1))[:size]
            t.addfile(info, io.BytesIO(data))
EOF
# untar_into LABEL: mount $img, untar into /sub, watch the chunk states.
untar_into() {
	local label=$1 sub start tarpid max=0 seen="" d n rc secs chunks_seen t0
	# /sub is made offline, so every chunk is clean when the untar starts
	"$CHUNKFS" mkdir "$img" /sub
	if ! mount_fs "$img" "$mnt" -o noatime; then
		fail "${label}_mount" "mount failed"
		return
	fi
	sub=$(( $(stat -c %i "$mnt/sub") >> 24 ))
	[ -z "$(dirty_chunks "$img")" ] || fail "${label}_setup" "dirty before the untar: $(dirty_chunks "$img")"
	start=$SECONDS
	timeout 200 tar -C "$mnt/sub" -xf "$TESTDIR/tree.tar" &
	tarpid=$!
	while kill -0 "$tarpid" 2>/dev/null; do
		d=$(dirty_chunks "$img")
		n=$(echo "$d" | tr ',' '\n' | grep -c .)
		[ "$n" -gt "$max" ] && max=$n
		seen="$seen,$d"
		sleep 0.2
	done
	wait "$tarpid"
	rc=$?
	secs=$((SECONDS - start))
	chunks_seen=$(echo "$seen" | tr ',' '\n' | grep . | sort -un | paste -sd, -)
	echo "  $label: /sub in chunk $sub; untar ${secs}s; at most $max chunk(s) dirty at once; dirty at some point: $chunks_seen"
	if [ "$rc" = 0 ] && [ "$(find "$mnt/sub/tree" -type f | wc -l)" = 10000 ]; then
		pass "${label}_untar_10000_files"
	else
		fail "${label}_untar_10000_files" "tar exit $rc"
	fi
	if [ "$max" -le 3 ]; then
		pass "${label}_at_most_a_few_chunks_dirty"
	else
		fail "${label}_at_most_a_few_chunks_dirty" "$max chunks dirty at once ($chunks_seen)"
	fi
	t0=$SECONDS
	if wait_clean "$img" 10; then
		pass "${label}_all_clean_within_10s"
		echo "  $label: all chunks clean $((SECONDS - t0))s after the untar ended"
	else
		fail "${label}_all_clean_within_10s" "dirty 10 s after the untar: $(dirty_chunks "$img")"
	fi
	if unmount_fs "$mnt" && [ "$DAEMON_RC" = 0 ]; then
		pass "${label}_unmount"
	else
		fail "${label}_unmount" "daemon exit $DAEMON_RC"
	fi
	log_clean "${label}_daemon_log_clean" "$DAEMON_LOG"
}

# Enough inodes per chunk for the whole tree: the mount keeps it in one.
"$CHUNKFS" mkfs -q -F -c 64 -N 1000000 "$img" 4G
untar_into roomy
# mkfs's default inode ratio (4096 inodes per 64 MiB chunk): the tree
# needs three chunks' inodes, and allocation must spill into few chunks.
"$CHUNKFS" mkfs -q -F -c 64 "$img" 4G
untar_into default
finish
