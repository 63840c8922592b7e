#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/fuse_requests.sh: which FUSE requests the kernel sends to the
# chunkfs daemon per operation (create, stat, unlink, mkdir, rename, a
# write+close), from the daemon's own counts ($CHUNKFS_REQUEST_COUNTS,
# written at unmount).
#
#   bench/fuse_requests.sh [CHUNKFS] [N]     (root or a user allowed to mount FUSE)
#
# Each operation is measured twice on a fresh image: the preparation alone
# (mount, prepare N files, unmount) and the preparation followed by the
# operation on N files in the same mount; the difference divided by N is
# printed as "op: OPCODE x.xx ..." per operation.  MOUNT_OPTS="-o ..."
# adds mount options (e.g. -o no_writeback_cache).
set -eu
CHUNKFS=${1:-build/chunkfs}
N=${2:-500}
W=$(mktemp -d /tmp/chunkfs-fusereq.XXXXXX)
M=$W/m
mkdir "$M"
cleanup() {
	fusermount3 -u -z "$M" 2>/dev/null || true
	rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP

# py PHASE OP: the preparation (PHASE=prep) or the operation (PHASE=op)
py() {
	timeout 120 python3 - "$M/d" "$N" "$1" "$2" <<'PY'
import os, sys
d, n, phase, op = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
names = [os.path.join(d, "f%06d" % i) for i in range(n)]
if phase == "prep":
    os.mkdir(d)
    if op in ("stat", "unlink", "rename", "write"):
        for p in names:
            os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o644))
    sys.exit(0)
buf = b"x" * 4096
for p in names:
    if op == "create":
        os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o644))
    elif op == "stat":
        os.lstat(p)
    elif op == "unlink":
        os.unlink(p)
    elif op == "mkdir":
        os.mkdir(p)
    elif op == "rename":
        os.rename(p, p + "r")
    elif op == "write":
        fd = os.open(p, os.O_WRONLY)
        os.write(fd, buf)
        os.close(fd)
PY
}

# run OP PHASES... -> counts file
run() {
	local op=$1 out=$2
	shift 2
	rm -f "$W/img"
	"$CHUNKFS" mkfs -q "$W/img" 256M
	CHUNKFS_REQUEST_COUNTS=$out timeout 300 "$CHUNKFS" mount -f ${MOUNT_OPTS:-} "$W/img" "$M" &
	local pid=$!
	for _ in $(seq 100); do
		mountpoint -q "$M" && break
		sleep 0.05
	done
	for phase in "$@"; do
		py "$phase" "$op"
	done
	fusermount3 -u "$M"
	wait "$pid"
}

for op in create stat unlink mkdir rename write; do
	run "$op" "$W/base" prep
	run "$op" "$W/full" prep op
	python3 - "$op" "$N" "$W/base" "$W/full" <<'PY'
import sys
op, n = sys.argv[1], int(sys.argv[2])
def load(p):
    return {k: int(v) for k, v in (l.split() for l in open(p))}
b, f = load(sys.argv[3]), load(sys.argv[4])
per = {k: (f.get(k, 0) - b.get(k, 0)) / n for k in set(b) | set(f)}
items = sorted((k for k in per if abs(per[k]) >= 0.01), key=lambda k: -per[k])
tot = sum(per[k] for k in items)
print("%-7s %5.2f requests: %s" % (op, tot, " ".join("%s %.2f" % (k, per[k]) for k in items)))
PY
done
