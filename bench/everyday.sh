# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# Section E of bench/run.sh, "everyday work" (issue 26): what people do to
# a filesystem every day, side by side in one run on kernel ext4 (a loop
# device), fuse2fs, and chunkfs over /dev/fuse and over io_uring.
# Sourced by run.sh, whose helpers (wall, rec, meta, drop_caches, mount_*,
# umount_fs, dataset) it uses; everyday_study runs it.
#
# Per run and filesystem, on a fresh image of $E_IMG:
#   create / stat (caches dropped) / unlink of $E_N empty files (metaops),
#   4 processes creating $E_N/4 empty files each in their own directory,
#   `cp -a` and `tar x` of a source-like tree (gen_dataset.py, $E_DSF files),
#   `find` and `du -s` of it cold (remount + drop caches), lstat of every
#   entry warm (`git status`), `rm -rf` of it,
#   300 rounds of a 4 KiB pwrite + fsync, alone and beside a 1 GiB writer
#   (dd into another file of the same filesystem): median and 99th
#   percentile of the rounds.
# And once per filesystem but fuse2fs (hours at this size): the largest
# data set of section A copied in with `cp -a` (BENCH_E_BIG=0 skips it).

E_FSS=(ext4 fuse2fs chunkfs chunkfs-uring)

e_mount() {   # FS IMG
	case $1 in
	ext4) mount_ext4 "$2" "$M" ;;
	fuse2fs) mount_fuse2fs "$2" "$M" ;;
	chunkfs) mount_chunkfs "$2" "$M" no_io_uring ;;
	chunkfs-uring) mount_chunkfs "$2" "$M" io_uring ;;
	esac
	BPID=$DAEMON_PID
}
e_umount() { umount_fs "$M" "$BPID"; }
e_remount() { e_umount; drop_caches; e_mount "$1" "$2"; }

e_mkfs() {   # FS IMG SIZE [INODES]
	rm -f "$2"
	case $1 in
	chunkfs*)
		local n=()
		[ "${4:-0}" = 0 ] || n=(-N "$4")
		"$CHUNKFS" mkfs -q -F -c "$CHUNKS" "${n[@]}" "$2" "$3" ;;
	*)
		truncate -s "$3" "$2" && mkfs.ext4 -q -F "$2" ;;
	esac
}

# e_fsync KEY FILE: the fsync rounds, recording KEY.med and KEY.p99 (ms)
e_fsync() {
	local out
	if out=$(timeout "$TO" "$METAOPS" fsync "$2" 300 2>>"$RAW/last.err"); then
		rec "$1.med" "$(echo "$out" | awk '{ print $3 }')"
		rec "$1.p99" "$(echo "$out" | awk '{ print $4 }')"
	else
		rec "$1.fail" 1
		warn "fsync rounds on $2 failed"
	fi
}

# One run on FS: every row but the big copy.
e_run() {
	local fs=$1 img=$W/e.img k=E.$1 dd_pid
	e_mkfs "$fs" "$img" "$E_IMG" || { warn "$fs: mkfs failed"; rec "$k.mountfail" 1; return; }
	e_mount "$fs" "$img" || { warn "$fs: mount failed, skipped"; rec "$k.mountfail" 1; return; }
	b_metaops "$k.create" create "$M/meta" "$E_N"
	drop_caches
	b_metaops "$k.stat" stat "$M/meta" "$E_N"
	b_metaops "$k.unlink" unlink "$M/meta" "$E_N"
	bw "$k.par4" bash -c 'for i in 1 2 3 4; do "$1" create "$2/p$i" "$3" >/dev/null & done; wait' \
		_ "$METAOPS" "$M" $(( E_N / 4 ))
	bw "$k.cpa" bash -c 'cp -a "$1" "$2/ds" && sync -f "$2/ds"' _ "$E_DS" "$M"
	bw "$k.tarx" bash -c 'mkdir "$2/tx" && tar -C "$2/tx" -xf "$1" && sync -f "$2/tx"' _ "$E_TAR" "$M"
	e_remount "$fs" "$img" || { rec "$k.mountfail" 1; return; }
	bw "$k.find" find "$M/ds"
	e_remount "$fs" "$img" || { rec "$k.mountfail" 1; return; }
	bw "$k.du" du -s "$M/ds"
	"$METAOPS" lstat-tree "$M/ds" >/dev/null
	b_metaops "$k.lstat" lstat-tree "$M/ds"
	bw "$k.rmrf" bash -c 'rm -rf "$1/ds" "$1/tx" && sync -f "$1"' _ "$M"
	e_fsync "$k.fsync" "$M/db"
	dd if=/dev/zero of="$M/big" bs=1M count=1024 status=none 2>>"$RAW/last.err" &
	dd_pid=$!
	sleep 0.5
	e_fsync "$k.fsyncbusy" "$M/db"
	wait "$dd_pid" || warn "$fs: the 1 GiB writer failed"
	e_umount
	rm -f "$img"
}

everyday_study() {
	local r fs n=${#A_FILES[@]} i
	E_DS=$DSDIR/everyday
	E_TAR=$DSDIR/everyday.tar
	if [ ! -d "$E_DS" ]; then
		python3 "$BENCH/gen_dataset.py" --top 40 --big 0 "$E_DS" "$E_DSF" >"$DSDIR/everyday.stats" ||
			die "gen_dataset failed"
	fi
	[ -f "$E_TAR" ] || tar -C "$E_DS" -cf "$E_TAR" . || die "tar of the everyday tree failed"
	warm_tree "$E_DS"
	meta e_img "$E_IMG"; meta e_n "$E_N"
	meta e_ds_entries "$(find "$E_DS" -mindepth 1 | wc -l)"
	meta e_ds_bytes "$(du -sb "$E_DS" | cut -f1)"
	meta e_uring_param "$(cat /sys/module/fuse/parameters/enable_uring 2>/dev/null || echo absent)"
	[ "$MOUNT_OK" = 1 ] || warn "E: the chunkfs mount is not usable: only ext4 and fuse2fs"
	for r in $(seq "$RUNS"); do
		for fs in "${E_FSS[@]}"; do
			case $fs in chunkfs*) [ "$MOUNT_OK" = 1 ] || continue ;; esac
			say "E run $r/$RUNS: $fs"
			e_run "$fs"
		done
	done
	[ "${BENCH_E_BIG:-1}" = 1 ] || return 0
	dataset "$n"
	i=$(( n - 1 ))
	meta e_big_files "$DS_FILES"; meta e_big_bytes "$DS_BYTES"; meta e_big_img "${A_IMG[$i]}"
	warm_tree "$DS"
	for fs in ext4 chunkfs chunkfs-uring; do
		case $fs in chunkfs*) [ "$MOUNT_OK" = 1 ] || continue ;; esac
		say "E: cp -a of $DS_FILES files into $fs"
		e_mkfs "$fs" "$W/e.big" "${A_IMG[$i]}" "${A_INODES[$i]}" || { rec "E.$fs.bigcpa.fail" 1; continue; }
		e_mount "$fs" "$W/e.big" || { rec "E.$fs.mountfail" 1; continue; }
		bw "E.$fs.bigcpa" bash -c 'cp -a "$1" "$2/ds" && sync -f "$2/ds"' _ "$DS" "$M"
		e_umount
		rm -f "$W/e.big"
	done
}
