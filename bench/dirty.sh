# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# bench/dirty.sh: section D of bench/run.sh, the critic's question of 2007
# ("the more write load, the more chunks are dirty") answered with numbers.
# Sourced by run.sh (it uses lib.sh and run.sh's helpers: mount_chunkfs,
# crash_fs, dirty_count, repair, timed, rec, meta, $RUNS, $W, $M, $SHM).
#
# dirty_study IMG DS: IMG is a populated, clean chunkfs image; DS a source
# tree to untar.  For each workload and each clean_after (1, 5, 30 s):
# RUNS rounds of: mount with that clean_after, start the workload, let it
# run clean_after + 2 s (the steady state), sample the number of dirty
# chunks on disk (`chunkfs info`, read only, beside the live mount) at
# D_SAMPLES random instants, then at one more random instant kill -9 the
# daemon: that is the crash, and a cold `chunkfs fsck -n --json` says what
# it costs (time, chunks checked).  The image is repaired (fsck -p) for the
# next round.  Workloads:
#   untar   tar -x of a source tree (data set 1 without its big files) into
#           a new directory, over and over
#   mail    a mail spool in 100 random existing directories: create a
#           message, append to an earlier one, delete one (workloads.py mail),
#           as fast as it goes
#   mail20  the same at 20 messages a second (a busy mail server's day)
#   db      random 8 KiB rewrites of one big file, fsync every 64
#           (workloads.py db)
# Records D.WORKLOAD.CA.sample (dirty chunks at each sampled instant),
# D.WORKLOAD.CA.crash.{time,dirty,checked,inodes}, D.WORKLOAD.CA.ops.
#
# Environment: BENCH_D_WORKLOADS (default "untar mail mail20 db"),
# BENCH_D_CLEAN_AFTER (default "1 5 30"), BENCH_D_SAMPLES (default 10 a round).

D_WORKLOADS=(${BENCH_D_WORKLOADS:-untar mail mail20 db})
D_CA=(${BENCH_D_CLEAN_AFTER:-1 5 30})
D_SAMPLES=${BENCH_D_SAMPLES:-10}

# d_sleep MIN MAX: sleep a random time between MIN and MAX tenths of a second
d_sleep() {
	local t=$(( $1 + RANDOM % ($2 - $1 + 1) ))
	sleep "$(( t / 10 )).$(( t % 10 ))"
}

# d_start WORKLOAD TAG: start the workload on the mount at $M (WORKERS)
d_start() {
	local w=$1 tag=$2
	case $w in
	untar)
		mkdir -p "$M/untar"
		bash -c 'i=0; while :; do i=$((i + 1)); mkdir -p "$1/$2.$i" && tar -xf "$3" -C "$1/$2.$i" || exit 1; done' \
			_ "$M/untar" "$tag" "$D_TAR" >/dev/null 2>>"$RAW/workload.err" &
		;;
	mail*)
		local rate=${w#mail}
		python3 "$BENCH/workloads.py" mail "$W/d.dirs" "${rate:-0}" >/dev/null 2>>"$RAW/workload.err" &
		;;
	db)
		python3 "$BENCH/workloads.py" db "$M/dbfile" >/dev/null 2>>"$RAW/workload.err" &
		;;
	esac
	WORKERS+=($!)
}

# d_setup WORKLOAD IMG DS: what the workload needs in place before it starts
d_setup() {
	local w=$1 img=$2 ds=$3 pid
	case $w in
	untar)
		[ -f "$D_TAR" ] && return 0
		# the first top-level directories up to about 50,000 files, no big files
		local tops=() t n=0
		for t in "$ds"/*/; do
			tops+=("$(basename "$t")")
			n=$(( n + $(find "$t" -type f | wc -l) ))
			[ "$n" -ge 50000 ] && break
		done
		tar -cf "$D_TAR" --exclude='blob_*' -C "$ds" "${tops[@]}" || return 1
		meta D.untar_files "$(tar -tf "$D_TAR" | grep -vc '/$')"
		meta D.untar_bytes "$(stat -c %s "$D_TAR")"
		;;
	mail*)
		[ -s "$W/d.dirs" ] && return 0
		# a listing with an unreadable entry still names the directories
		"$CHUNKFS" ls -R -i -l "$img" / >"$W/d.ls" 2>>"$RAW/workload.err" ||
			warn "D: chunkfs ls -R exited $?: $(tail -1 "$RAW/workload.err")"
		[ -s "$W/d.ls" ] || return 1
		python3 "$BENCH/workloads.py" dirs "$W/d.ls" 100 | sed "s|^|$M|" >"$W/d.dirs" || return 1
		meta D.mail_dirs "$(wc -l <"$W/d.dirs")"
		meta D.mail_dir_chunks "$(sed "s|^$M||" "$W/d.dirs" | while read -r d; do
			"$CHUNKFS" stat "$img" "$d" 2>/dev/null | sed -n 's/.*(chunk \([0-9]*\),.*/\1/p'; done | sort -un | wc -l)"
		;;
	db)
		"$CHUNKFS" stat "$img" /dbfile >/dev/null 2>&1 && return 0
		mount_chunkfs "$img" "$M" clean_after=1 || return 1
		pid=$DAEMON_PID
		head -c "$(( D_DB_MIB << 20 ))" /dev/urandom >"$M/dbfile" && sync -f "$M/dbfile"
		umount_fs "$M" "$pid"
		meta D.db_mib "$D_DB_MIB"
		meta D.db_chunks "$("$CHUNKFS" stat "$img" /dbfile | sed -n 's/.*(chunk \([0-9]*\),.*/\1/p' | head -1)"
		;;
	esac
}

# d_round IMG WORKLOAD CA ROUND: one mount, samples, one crash, a repair
d_round() {
	local img=$1 w=$2 ca=$3 r=$4 key="D.$2.$3" pid i n t0
	mount_chunkfs "$img" "$M" "clean_after=$ca" || return 1
	pid=$DAEMON_PID
	wait_clean "$img" $(( ${ca%.*} + 10 )) || warn "D: chunks still dirty before $w: $(dirty_list "$img")"
	WORKERS=()
	d_start "$w" "r$ca.$r"
	t0=$EPOCHREALTIME
	sleep $(( ${ca%.*} + 2 ))
	for i in $(seq "$D_SAMPLES"); do
		d_sleep 2 8
		n=$(dirty_count "$img")
		[ -n "$n" ] && rec "$key.sample" "$n"
	done
	d_sleep 0 10
	n=$(dirty_count "$img")
	crash_fs "$M" "$pid"
	for i in "${WORKERS[@]}"; do kill -TERM "$i" 2>/dev/null; wait "$i" 2>/dev/null; done
	WORKERS=()
	rec "$key.crash.before" "$n"
	rec "$key.crash.run_s" "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')"
	rec "$key.crash.dirty" "$(dirty_count "$img")"
	drop_caches
	timed "$key.crash" "$CHUNKFS" fsck -n --json "$img"
	rec "$key.crash.checked" "$(sed -n 's/.*"checked":\([0-9]*\).*/\1/p' "$RAW/last.out")"
	rec "$key.crash.inodes" "$(sed -n 's/.*"inodes":\([0-9]*\).*/\1/p' "$RAW/last.out")"
	rec "$key.crash.internal" "$(sed -n 's/.*"seconds":\([0-9.]*\).*/\1/p' "$RAW/last.out")"
	grep -q '"escalated":true' "$RAW/last.out" && rec "$key.crash.escalated" 1
	printf '  %s clean_after=%s round %d: %s dirty at the crash, fsck -n checked %s in %.3f s\n' \
		"$w" "$ca" "$r" "$(dirty_count "$img")" \
		"$(sed -n 's/.*"checked":\([0-9]*\).*/\1/p' "$RAW/last.out")" "${T_WALL:-0}"
	repair "$img" || { warn "D: repair after $w failed: $(tail -2 "$RAW/repair.out")"; return 1; }
	# the untar trees go between rounds (offline, not measured), so the
	# inodes last and every round starts from the same image
	[ "$w" = untar ] && "$CHUNKFS" rm -r "$img" /untar >/dev/null 2>&1
	return 0
}

dirty_study() {
	local img=$1 ds=$2 w ca r
	RANDOM=2007
	D_TAR=$SHM/d-untar.tar
	case $SCALE in large) D_DB_MIB=1024 ;; medium) D_DB_MIB=512 ;; *) D_DB_MIB=128 ;; esac
	meta D.workloads "${D_WORKLOADS[*]}"
	meta D.clean_after "${D_CA[*]}"
	meta D.samples "$D_SAMPLES"
	meta D.chunks "$("$CHUNKFS" info "$img" | sed -n 's/^Chunks: *//p')"
	for w in "${D_WORKLOADS[@]}"; do
		d_setup "$w" "$img" "$ds" || { warn "D: setting up $w failed"; continue; }
		for ca in "${D_CA[@]}"; do
			say "D: $w with clean_after=$ca, $RUNS crash(es)"
			for r in $(seq "$RUNS"); do
				d_round "$img" "$w" "$ca" "$r" || { warn "D: $w clean_after=$ca round $r failed"; break; }
			done
		done
	done
	rm -f "$D_TAR"
}
