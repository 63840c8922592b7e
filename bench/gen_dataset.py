#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Deterministic source-tree-like data set for the chunkfs benchmarks.

    gen_dataset.py [--seed S] [--top T] [--big K] [--big-mib M] OUT FILES

Makes OUT (which must not exist) with FILES regular files spread over T
top-level directories, each a little tree of subdirectories (depth 1-3,
5-40 files per directory) named like a source tree.  File sizes are mostly
small: 55% 0-2 KiB, 35% 2-6 KiB, 10% 6-8 KiB.  K more files of about M MiB
each (M/2 .. 3M/2) go into the first top-level directories, like build
artefacts or test fixtures.  Contents are pseudo-random bytes from the
seed, and every time stamp is fixed, so the same arguments always give the
same tree, byte for byte.  Prints "files dirs bytes" on stdout.
"""
import argparse
import os
import random
import sys

EXTS = [".c", ".h", ".c", ".h", ".py", ".md", ".txt", ".sh", ".json", ".S", ".mk", ""]
WORDS = ["core", "net", "fs", "mm", "lib", "util", "io", "drv", "sched", "crypto",
         "block", "sound", "arch", "tools", "test", "doc", "kernel", "init",
         "ipc", "virt", "sec", "usr", "misc", "mod", "api", "cfg", "gen", "pkg"]
STAMP = 1700000000  # fixed mtime/atime


def small_size(rng):
    r = rng.random()
    if r < 0.55:
        return rng.randint(0, 2048)
    if r < 0.90:
        return rng.randint(2049, 6144)
    return rng.randint(6145, 8192)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=20061)
    ap.add_argument("--top", type=int, default=80)
    ap.add_argument("--big", type=int, default=3)
    ap.add_argument("--big-mib", type=int, default=16)
    ap.add_argument("out")
    ap.add_argument("files", type=int)
    a = ap.parse_args()

    rng = random.Random(a.seed)
    pool = rng.randbytes(1 << 20)  # content is sliced from this pool
    os.makedirs(a.out)
    dirs = []       # every directory made, in creation order
    tops = []
    for t in range(a.top):
        name = "%s%02d" % (WORDS[t % len(WORDS)], t)
        p = os.path.join(a.out, name)
        os.mkdir(p)
        tops.append(p)
        dirs.append(p)

    # Files go round the top-level dirs; each dir takes 5-40 files before a
    # new subdirectory (of it or of one of its subdirs, depth <= 3) is made.
    per_top = [[p] for p in tops]      # candidate dirs per top
    fill = {p: 0 for p in tops}
    cap = {p: rng.randint(5, 40) for p in tops}
    nbytes = 0
    for i in range(a.files):
        t = i % a.top
        cands = per_top[t]
        d = cands[-1]
        if fill[d] >= cap[d]:
            parent = rng.choice(cands)
            if parent.count(os.sep) - a.out.count(os.sep) >= 3:
                parent = per_top[t][0]
            d = os.path.join(parent, "%s%d" % (rng.choice(WORDS), len(cands)))
            os.mkdir(d)
            cands.append(d)
            dirs.append(d)
            fill[d] = 0
            cap[d] = rng.randint(5, 40)
        fill[d] += 1
        size = small_size(rng)
        off = rng.randrange(0, len(pool) - 8192)
        fn = os.path.join(d, "%s_%d%s" % (rng.choice(WORDS), i, rng.choice(EXTS)))
        with open(fn, "wb") as f:
            f.write(pool[off:off + size])
        os.utime(fn, (STAMP, STAMP))
        nbytes += size

    for k in range(a.big):
        mib = a.big_mib
        size = rng.randint(mib * 512 * 1024, mib * 3 * 512 * 1024)
        fn = os.path.join(tops[k % len(tops)], "blob_%d.bin" % k)
        with open(fn, "wb") as f:
            left = size
            while left > 0:
                n = min(left, len(pool))
                f.write(pool[:n] if k % 2 else pool[len(pool) - n:])
                left -= n
        os.utime(fn, (STAMP, STAMP))
        nbytes += size

    for d in reversed(dirs):
        os.utime(d, (STAMP, STAMP))
    print(a.files + a.big, len(dirs), nbytes)


if __name__ == "__main__":
    sys.exit(main())
