#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/fillstress.sh: issue 28's defrag figure.  A SIZE image of CHUNKS
# chunks, mounted, filled by 4 processes of mixed creates, appends,
# renames, hard links and unlinks (fsstress's mix; Debian packages no
# fsstress) until it is full; `chunkfs info` Bookkeeping before and after
# `chunkfs defrag`, with the time defrag took and fsck -f -n after.
#   CHUNKFS=build/chunkfs bash bench/fillstress.sh [DIR [SIZE [CHUNKS]]]
set -u
C=${CHUNKFS:-build/chunkfs}
W=${1:-/tmp/fillstress}
SIZE=${2:-4G}
CHUNKS=${3:-64}
img=$W/fill.img
mnt=$W/mnt
mkdir -p "$mnt" || exit 1
DPID=
cleanup() {
	if mountpoint -q "$mnt"; then
		fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt"
	fi
	[ -n "$DPID" ] && wait "$DPID" 2>/dev/null
}
trap cleanup EXIT

"$C" mkfs -q -F -c "$CHUNKS" "$img" "$SIZE" || exit 1
"$C" mount -f "$img" "$mnt" &
DPID=$!
for _ in $(seq 1 100); do mountpoint -q "$mnt" && break; sleep 0.1; done
mountpoint -q "$mnt" || { echo "mount failed" >&2; exit 1; }

t0=$(date +%s)
timeout 3600 python3 - "$mnt" <<'EOF'
import errno, os, random, sys
from multiprocessing import Process

root = sys.argv[1]

def worker(w):
    rnd = random.Random(w)
    base = os.path.join(root, "w%d" % w)
    os.makedirs(base, exist_ok=True)
    dirs = [base]
    files = []
    full = 0
    n = 0
    while full < 200:
        n += 1
        op = rnd.random()
        try:
            if op < 0.04 or not files:
                d = os.path.join(rnd.choice(dirs), "d%d" % n)
                os.mkdir(d)
                dirs.append(d)
                continue
            if op < 0.45:
                p = os.path.join(rnd.choice(dirs), "f%d" % n)
                size = rnd.choice([0, 100, 2000, 9000, 40000, 200000]) \
                    if rnd.random() < 0.97 else rnd.randrange(1 << 20, 8 << 20)
                with open(p, "wb") as f:
                    f.write(os.urandom(size) if size < 65536 else b"\xa5" * size)
                files.append(p)
            elif op < 0.75:
                p = rnd.choice(files)
                with open(p, "ab") as f:
                    f.write(b"\x5a" * rnd.choice([512, 4096, 30000, 300000]))
            elif op < 0.85:
                i = rnd.randrange(len(files))
                q = os.path.join(rnd.choice(dirs), "r%d" % n)
                os.rename(files[i], q)
                files[i] = q
            elif op < 0.90:
                q = os.path.join(rnd.choice(dirs), "l%d" % n)
                os.link(rnd.choice(files), q)
                files.append(q)
            else:
                i = rnd.randrange(len(files))
                os.unlink(files[i])
                files[i] = files[-1]
                files.pop()
            full = 0
        except OSError as e:
            if e.errno not in (errno.ENOSPC, errno.ENOENT, errno.EMLINK):
                raise
            if e.errno == errno.ENOSPC:
                full += 1

ps = [Process(target=worker, args=(w,)) for w in range(4)]
for p in ps:
    p.start()
for p in ps:
    p.join()
sys.exit(max(p.exitcode for p in ps))
EOF
rc=$?
t1=$(date +%s)
echo "fill: exit $rc, $((t1 - t0)) s"
df -k "$mnt"; df -i "$mnt"
fusermount3 -u "$mnt"
wait "$DPID"
DPID=
echo "== before defrag"
"$C" info "$img" | sed -n '/^Data blocks/,/^Bookkeeping/p'
t0=$(date +%s.%N)
"$C" defrag "$img"
t1=$(date +%s.%N)
echo "defrag: $(echo "$t1 - $t0" | bc) s"
echo "== after defrag"
"$C" info "$img" | sed -n '/^Data blocks/,/^Bookkeeping/p'
"$C" fsck -f -n "$img" >/dev/null && echo "fsck -f -n: clean" || echo "fsck -f -n: exit $?"
