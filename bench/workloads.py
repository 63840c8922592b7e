#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Write workloads for the crash benchmarks (bench/run.sh section A,
bench/dirty.sh), and the pickers that choose where they write.

    workloads.py append LIST               append 64 bytes to each file named in
                                           LIST, round and round, forever
    workloads.py mail DIRLIST [RATE]       mail spool in the directories of DIRLIST:
                                           create a message (1-8 KiB), append to
                                           an earlier one, delete one once 500 are
                                           live; RATE rounds a second (0: flat out)
    workloads.py db FILE                   rewrite random 8 KiB pages of the
                                           existing FILE, fsync every 64 pages
    workloads.py full-chunks INFO LS K N   the K fullest chunks (most inodes in
                                           use) of those with 20 files or more, up
                                           to N files of each: "CHUNK PATH" lines
    workloads.py dirs LS N                 N random directories, one a line

INFO is `chunkfs info --json IMAGE`, LS is `chunkfs ls -R -i -l IMAGE /`
(inode numbers: chunk = inode >> 24).  The writers run until killed (the
benchmarks kill them, and the mount daemon under them, with SIGKILL).
Everything random is seeded, so the same image gives the same choices.
"""
import json
import os
import random
import sys
import time

CHUNK_SHIFT = 24


def ls_entries(path):
    """(inode, type char, image path) for every entry of an ls -R -i -l listing"""
    cur = "/"
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            if line.endswith(":") and line.startswith("/"):
                cur = line[:-1]
                continue
            p = line.split(None, 8)
            if len(p) < 9 or not p[0].isdigit():
                continue
            name = p[8]
            if name in (".", ".."):
                continue
            yield int(p[0]), p[1][0], (cur.rstrip("/") + "/" + name)


def full_chunks(info, ls, k, n):
    with open(info) as f:
        chunks = json.load(f)["chunks"]
    used = {c["index"]: c["used_inodes"] for c in chunks}
    files = {}
    for ino, t, path in ls_entries(ls):
        if t == "-" and not path.startswith("/lost+found"):
            files.setdefault(ino >> CHUNK_SHIFT, []).append(path)
    # the fullest chunks (of those with enough files to append to)
    cands = sorted((c for c in files if len(files[c]) >= 20), key=lambda c: (-used[c], c))
    if len(cands) < k:
        sys.exit("workloads.py: only %d chunks with 20 files (want %d)" % (len(cands), k))
    rng = random.Random(20070)
    for c in sorted(cands[:k]):
        for path in sorted(rng.sample(files[c], min(n, len(files[c])))):
            print(c, path)


def dirs(ls, n):
    ds = sorted(path for _, t, path in ls_entries(ls)
                if t == "d" and not path.startswith("/lost+found"))
    for d in sorted(random.Random(20071).sample(ds, min(n, len(ds)))):
        print(d)


def append(listfile):
    with open(listfile) as f:
        paths = [ln.rstrip("\n") for ln in f if ln.strip()]
    if not paths:
        sys.exit("workloads.py: no files to append to in " + listfile)
    buf = b"appended line of 64 bytes, as a log or a mailbox would get....\n"
    while True:
        for p in paths:
            with open(p, "ab") as f:
                f.write(buf)


def mail(dirlist, rate):
    with open(dirlist) as f:
        ds = [ln.rstrip("\n") for ln in f if ln.strip()]
    rng = random.Random(20072)
    body = rng.randbytes(16384)
    live, n, t0 = [], 0, time.monotonic()
    while True:
        d = rng.choice(ds)
        p = os.path.join(d, "msg.%d.%d" % (os.getpid(), n))
        with open(p, "wb") as f:
            f.write(body[:rng.randint(1024, 8192)])
        live.append(p)
        with open(rng.choice(live), "ab") as f:
            f.write(body[:rng.randint(512, 2048)])
        if len(live) > 500:
            os.unlink(live.pop(rng.randrange(len(live))))
        n += 1
        if rate > 0:
            wait = t0 + n / rate - time.monotonic()
            if wait > 0:
                time.sleep(wait)


def db(path):
    fd = os.open(path, os.O_WRONLY)
    pages = os.fstat(fd).st_size // 8192
    rng = random.Random(20073)
    page = rng.randbytes(8192)
    n = 0
    while True:
        os.pwrite(fd, page, rng.randrange(pages) * 8192)
        n += 1
        if n % 64 == 0:
            os.fsync(fd)


def main(a):
    if len(a) >= 2 and a[0] == "append":
        append(a[1])
    elif len(a) >= 2 and a[0] == "mail":
        mail(a[1], float(a[2]) if len(a) > 2 else 0.0)
    elif len(a) == 2 and a[0] == "db":
        db(a[1])
    elif len(a) == 5 and a[0] == "full-chunks":
        full_chunks(a[1], a[2], int(a[3]), int(a[4]))
    elif len(a) == 3 and a[0] == "dirs":
        dirs(a[1], int(a[2]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
