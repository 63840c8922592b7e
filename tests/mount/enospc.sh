#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# test-timeout: 900
# write() reports a full disk (issue 25 item 2, docs/WRITEBACK.md): every
# kind of writer, its file opened while space was free, fills a 160 MiB
# image and must get ENOSPC from the call that writes (write, msync,
# fallocate), not only at close.  The documented bound, checked for each:
#   - what write() accepted exceeds what the image stored by at most one
#     write() call (1 MiB here) per writer, and then fsync or close fails;
#   - stat through the mount shows at most that much more than stored;
#   - the error comes only when the disk is full: the writer got all but
#     ENOSPC_SLACK of the space df offered, and df shows under 1 MiB free;
#   - the stored bytes are the ones written, in place.
# Before the fix the writes were taken into the page cache without end
# and the error came only at close.
. "$(dirname "$0")/lib.sh"

MiB=$((1 << 20))
ENOSPC_SLACK=$((2 * MiB))       # metadata the data needs (extent blocks)
IMG_SIZE=96M

mount_test enospc_mount enospc.img

# writer.py MODE FILE: write 1 MiB blocks (block k: k in its first 8
# bytes, then a fixed body) until an error; print one JSON line.
cat >"$PUB/writer.py" <<'PY'
import errno, json, mmap, os, sys
mode, path = sys.argv[1], sys.argv[2]
B = 1 << 20
LIMIT = 4096                   # blocks: far more than the image holds
body = bytes(range(256)) * (B // 256)
def ename(e):
    return errno.errorcode.get(e, str(e))
flags = {"buffered": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
         "append": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
         "rdwr": os.O_RDWR | os.O_CREAT | os.O_TRUNC,
         "direct": os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_DIRECT,
         "mmap": os.O_RDWR | os.O_CREAT | os.O_TRUNC,
         "fallocate": os.O_RDWR | os.O_CREAT | os.O_TRUNC}[mode]
fd = os.open(path, flags, 0o644)
r = {"mode": mode, "err": None, "where": None, "accepted": 0}
buf = mmap.mmap(-1, B)         # page-aligned, as O_DIRECT needs
buf[:] = body
try:
    if mode == "mmap":
        os.ftruncate(fd, LIMIT * B)
        m = mmap.mmap(fd, LIMIT * B)
        for k in range(LIMIT):
            m[k * B:(k + 1) * B] = buf
            m[k * B:k * B + 8] = k.to_bytes(8, "little")
            try:
                m.flush(k * B, B)
            except OSError as e:
                r["err"], r["where"] = ename(e.errno), "msync"
                break
            r["accepted"] = (k + 1) * B
        m.close()
    elif mode == "fallocate":
        for k in range(LIMIT):
            try:
                os.posix_fallocate(fd, k * B, B)
            except OSError as e:
                r["err"], r["where"] = ename(e.errno), "fallocate"
                break
            r["accepted"] = (k + 1) * B
    else:
        for k in range(LIMIT):
            buf[0:8] = k.to_bytes(8, "little")
            try:
                n = os.write(fd, buf)
            except OSError as e:
                r["err"], r["where"] = ename(e.errno), "write"
                break
            r["accepted"] += n
            if n < B:          # short: the next write must say why
                try:
                    os.write(fd, buf[n:])
                    r["where"] = "no error after a short write"
                except OSError as e:
                    r["err"], r["where"] = ename(e.errno), "write"
                break
except OSError as e:
    r["err"], r["where"] = ename(e.errno), "other"
r["stat_size"] = os.fstat(fd).st_size
v = os.statvfs(path)
r["free"] = v.f_bavail * v.f_frsize
for name, call in (("fsync", lambda: os.fsync(fd)), ("close", lambda: os.close(fd))):
    try:
        call()
        r[name] = "0"
    except OSError as e:
        r[name] = ename(e.errno)
print(json.dumps(r))
PY

# check.py STORED-FILE KIND: the stored bytes are the blocks written
# (fallocate: zeros); print how many bytes were stored.
cat >"$PUB/check.py" <<'PY'
import sys
path, kind = sys.argv[1], sys.argv[2]
B = 1 << 20
body = bytes(range(256)) * (B // 256)
data = open(path, "rb").read()
for k in range(0, len(data), B):
    got = data[k:k + B]
    if kind == "fallocate":
        want = bytes(len(got))
    else:
        want = ((k // B).to_bytes(8, "little") + body[8:])[:len(got)]
    if got != want:
        print("block %d differs" % (k // B))
        sys.exit(1)
print(len(data))
PY

free_bytes() { stat -f -c '%a %S' "$1" | awk '{ print $1 * $2 }'; }

# fresh: a new image, mounted; CAP is the space df offers
fresh() {
	rm -f "$img"
	mkfs_or_finish "$img" "$IMG_SIZE"
	mount_fs "$img" "$mnt" || { fail "$1" "mount failed"; return 1; }
	CAP=$(free_bytes "$mnt")
}

# stored NAME FILE KIND [BYTES]: after the unmount, FILE's bytes in the
# image (checked against what was written; only the first BYTES) in
# STORED, or fail NAME
stored() {
	STORED=
	"$CHUNKFS" cat "$img" "/$2" 2>"$TESTDIR/cat.err" | head -c "${4:-$((1 << 40))}" \
		>"$TESTDIR/stored"
	[ "${PIPESTATUS[0]}" = 0 ] || [ -n "${4:-}" ] ||
		{ fail "$1" "chunkfs cat: $(cat "$TESTDIR/cat.err")"; return 1; }
	local out
	out=$(python3 "$PUB/check.py" "$TESTDIR/stored" "$3") ||
		{ fail "$1" "stored bytes are not the ones written: $out"; return 1; }
	STORED=$out
}

# down NAME: unmount; the daemon must exit 0 with no sanitizer report
down() {
	unmount_fs "$mnt"
	[ "$DAEMON_RC" = 0 ] || fail "${1}_daemon_exit" "daemon exit $DAEMON_RC: $(tail -3 "$DAEMON_LOG")"
	log_clean "${1}_daemon_log" "$DAEMON_LOG"
}

field() { python3 -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

# judge NAME JSON FILE KIND [SHARE]: the assertions of the header for one
# writer; SHARE: the writer had to share the space (two at once), so its
# own fill is not checked.
judge() {
	local name=$1 r=$2 file=$3 kind=$4 share=${5:-} acc err where ss fr fs cl want_where
	err=$(field "$r" err) where=$(field "$r" where) acc=$(field "$r" accepted)
	ss=$(field "$r" stat_size) fr=$(field "$r" free)
	fs=$(field "$r" fsync) cl=$(field "$r" close)
	case $kind in
	mmap) want_where=msync ;;
	fallocate) want_where=fallocate ;;
	*) want_where=write ;;
	esac
	if [ "$err" = ENOSPC ] && [ "$where" = "$want_where" ]; then
		pass "${name}_enospc_at_$want_where"
	else
		fail "${name}_enospc_at_$want_where" "got $err at $where: $r"
	fi
	if [ "$fr" -lt "$MiB" ]; then
		pass "${name}_disk_full_at_error"
	else
		fail "${name}_disk_full_at_error" "$fr bytes free at the error"
	fi
	down "$name"
	# mmap: the file is as large as ftruncate made it, and what msync
	# accepted is what must be there
	if [ "$kind" = mmap ]; then
		stored "${name}_stored_is_written" "$file" "$kind" "$acc" || return
	else
		stored "${name}_stored_is_written" "$file" "$kind" || return
	fi
	pass "${name}_stored_is_written"
	if [ $((acc - STORED)) -le "$MiB" ]; then
		pass "${name}_overshoot_within_one_write"
	else
		fail "${name}_overshoot_within_one_write" "accepted $acc, stored $STORED"
	fi
	if [ "$acc" -le "$STORED" ] || [ "$fs" != 0 ] || [ "$cl" != 0 ]; then
		pass "${name}_lost_writes_reported"
	else
		fail "${name}_lost_writes_reported" "accepted $acc, stored $STORED, fsync and close 0"
	fi
	# mmap: the size is ftruncate's
	if [ "$kind" = mmap ] || [ $((ss - STORED)) -le "$MiB" ]; then
		pass "${name}_stat_size_near_stored"
	else
		fail "${name}_stat_size_near_stored" "stat $ss, stored $STORED"
	fi
	if [ -n "$share" ] || [ $((STORED + ENOSPC_SLACK)) -ge "$CAP" ]; then
		pass "${name}_got_the_space"
	else
		fail "${name}_got_the_space" "df offered $CAP, stored $STORED"
	fi
}

# each kind of writer, its file opened while the image was empty
for kind in buffered append rdwr direct mmap fallocate; do
	fresh "$kind" || continue
	r=$(timeout 300 python3 "$PUB/writer.py" "$kind" "$mnt/f") ||
		{ fail "$kind" "writer failed: $r"; unmount_fs "$mnt"; continue; }
	echo "  $r"
	judge "$kind" "$r" f "$kind"
done

# read-write, opened when the space was already low (below the reserve,
# above the kernel's dirty limit): its cached attributes must not let it by
if fresh late; then
	head -c $((CAP - 24 * MiB)) /dev/zero >"$mnt/fill"
	CAP=$(free_bytes "$mnt")
	r=$(timeout 300 python3 "$PUB/writer.py" rdwr "$mnt/f") && echo "  $r" &&
		judge late_rdwr "$r" f rdwr
	mountpoint -q "$mnt" && unmount_fs "$mnt"
fi

# two writers at once, one buffered, one read-write
if fresh two; then
	timeout 300 python3 "$PUB/writer.py" buffered "$mnt/f1" >"$TESTDIR/w1" &
	p1=$!
	timeout 300 python3 "$PUB/writer.py" rdwr "$mnt/f2" >"$TESTDIR/w2"
	wait "$p1"
	r1=$(cat "$TESTDIR/w1") r2=$(cat "$TESTDIR/w2")
	echo "  $r1"
	echo "  $r2"
	if [ -n "$r1" ] && [ -n "$r2" ]; then
		judge two_first "$r1" f1 buffered share
		s1=${STORED:-0}
		mount_fs "$img" "$mnt" || fail two "remount failed"
		judge two_second "$r2" f2 rdwr share
		s2=${STORED:-0}
		if [ $((s1 + s2 + ENOSPC_SLACK)) -ge "$CAP" ]; then
			pass two_got_the_space
		else
			fail two_got_the_space "df offered $CAP, stored $s1 + $s2"
		fi
	else
		fail two "a writer failed: '$r1' '$r2'"
		unmount_fs "$mnt"
	fi
fi

# program NAME FILE MESSAGE BOUND CMD...: CMD (writing $mnt/FILE) stops
# with exit 1 and MESSAGE; the kernel's size exceeds the stored one by at
# most BOUND (one write() of CMD), and it got the space.  (dd prints no
# count when close fails too: the size the kernel shows stands for what
# it took.)
program() {
	local name=$1 file=$2 msg=$3 bound=$4 rc size stored_size
	shift 4
	fresh "$name" || return
	timeout 120 "$@" 2>"$TESTDIR/$name.err"
	rc=$?
	if [ "$rc" = 1 ] && grep -q "$msg" "$TESTDIR/$name.err"; then
		pass "${name}_enospc_at_write"
	else
		fail "${name}_enospc_at_write" "exit $rc (124: never stopped): $(cat "$TESTDIR/$name.err")"
	fi
	size=$(stat -c %s "$mnt/$file")
	down "$name"
	stored_size=$("$CHUNKFS" cat "$img" "/$file" | wc -c)
	if [ $((size - stored_size)) -le "$bound" ] &&
		[ $((stored_size + ENOSPC_SLACK)) -ge "$CAP" ]; then
		pass "${name}_size_is_stored"
	else
		fail "${name}_size_is_stored" "stat said $size, the image holds $stored_size of $CAP"
	fi
}

# the programs of the report: dd without a count, cat /dev/zero
program dd dd "error writing.*No space left on device" "$MiB" \
	dd if=/dev/zero of="$mnt/dd" bs=1M
program cat cat "write error: No space left on device" $((128 * 1024)) \
	sh -c "cat /dev/zero >'$mnt/cat'"

finish
