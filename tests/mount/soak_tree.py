#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The tree and the workload of tests/mount/scrub_soak.sh (a shell loop
forking head and cmp for each of thousands of files is too slow).

  soak_tree.py make DIR N SEED
      N names under DIR, from SEED: 60 directories (20 of them nested),
      files inline (up to 100 bytes), of a few blocks and of up to 300 KB,
      symlinks, a hard link
  soak_tree.py work MNT TAG LOG STOP [ROUNDS]
      files MNT/w/soak-TAG-I and soak-TAG-I in directories of the tree,
      each read back and checked at once, every third removed again;
      each failure a line in LOG; until the file STOP exists, or ROUNDS
      rounds
"""
import os
import random
import sys


def blob(rnd, n):
    return rnd.getrandbits(8 * n).to_bytes(n, "little") if n else b""


def make(top, n, seed):
    rnd = random.Random(seed)
    for i in range(1, n + 1):
        d = os.path.join(top, "d%d" % (i % 60))
        if i % 60 >= 40:
            d = os.path.join(top, "d%d" % (i % 20), "s%d" % (i % 60))
        os.makedirs(d, exist_ok=True)
        kind = i % 10
        if kind == 0:
            os.symlink("target-%d" % i, os.path.join(d, "l%d" % i))
            continue
        if kind in (1, 2, 3):
            size = rnd.randrange(1, 101)
        elif kind == 9:
            size = rnd.randrange(5000, 300000)
        else:
            size = rnd.randrange(200, 16000)
        with open(os.path.join(d, "f%d" % i), "wb") as f:
            f.write(blob(rnd, size))
    os.link(os.path.join(top, "d1", "f1"), os.path.join(top, "d2", "hard1"))


def work(mnt, tag, log, stop, rounds):
    rnd = random.Random(tag)
    data = blob(rnd, 20000)
    i = 0
    with open(log, "a") as out:
        try:
            os.makedirs(os.path.join(mnt, "w"), exist_ok=True)
        except OSError as e:
            out.write("mkdir w: %s\n" % e)
        while (rounds and i < rounds) or (not rounds and not os.path.exists(stop)):
            i += 1
            if i % 3 == 0:
                d = os.path.join(mnt, "w")
            elif i % 3 == 1:
                d = os.path.join(mnt, "d%d" % (i % 40))
            else:
                d = os.path.join(mnt, "d%d" % (i % 20), "s%d" % (40 + i % 20))
            if not os.path.isdir(d):
                d = os.path.join(mnt, "w")
            p = os.path.join(d, "soak-%s-%d" % (tag, i))
            n = i * 131 % 20000 + 1
            try:
                with open(p, "wb") as f:
                    f.write(data[:n])
                with open(p, "rb") as f:
                    got = f.read()
                if got != data[:n] or os.stat(p).st_size != n:
                    out.write("%s: read back %d bytes, not the %d written\n" % (p, len(got), n))
                elif i % 3 == 0:
                    os.unlink(p)
            except OSError as e:
                out.write("%s: %s\n" % (p, e))
            out.flush()


def main(argv):
    if len(argv) == 5 and argv[1] == "make":
        make(argv[2], int(argv[3]), int(argv[4]))
    elif len(argv) in (6, 7) and argv[1] == "work":
        work(argv[2], argv[3], argv[4], argv[5], int(argv[6]) if len(argv) == 7 else 0)
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
