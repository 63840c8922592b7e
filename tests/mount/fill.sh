#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# test-timeout: 900
# Filling through the mount (issue 11): a 2 GiB filesystem of 64 chunks
# filled to 60% with 48 MiB files, then with small files (0-9,000 bytes)
# in 300 directories until the first ENOSPC.  Before the allocation policy
# this stopped with 29% of blocks and 61% of inodes free; ENOSPC may come
# only when less than 1% of the blocks or of the inodes are free, and df
# must then say so.  FILL_SIZE (e.g. 512M) makes it quicker by hand.
. "$(dirname "$0")/lib.sh"

mount_test fill_mount fill.img
mkfs_or_finish -c 64 "$img" "${FILL_SIZE:-2G}"
mount_or_finish fill_mount

# big files first, to 60% of the blocks
big_ok=1
while :; do
	read -r blocks bfree < <(stat -f -c '%b %f' "$mnt")
	[ $(( (blocks - bfree) * 100 )) -lt $(( blocks * 60 )) ] || break
	n=$(ls "$mnt" | grep -c '^big' || true)
	if ! timeout 120 dd if=/dev/zero of="$mnt/big$n" bs=1M count=48 conv=fsync \
		status=none 2>"$TESTDIR/dd.err"; then
		big_ok=0
		fail fill_big_files "dd: $(cat "$TESTDIR/dd.err") at $(( (blocks - bfree) * 100 / blocks ))% used"
		break
	fi
done
[ "$big_ok" = 1 ] && pass fill_big_files_to_60pct

# then small files, 300 directories, until the first ENOSPC
timeout 700 python3 - "$mnt" >"$TESTDIR/fill.out" 2>&1 <<'EOF'
import errno, os, random, sys
mnt = sys.argv[1]
rnd = random.Random(11)
payload = bytes(rnd.randrange(256) for _ in range(9001))
def statfs():
    v = os.statvfs(mnt)
    return v.f_blocks, v.f_bfree, v.f_bavail, v.f_files, v.f_ffree
before = statfs()
made = 0
try:
    dirs = []
    for d in range(300):
        p = os.path.join(mnt, "d%03d" % d)
        os.mkdir(p)
        dirs.append(p)
    while True:
        # a directory takes a run of files, as an unpacked tree does
        p = dirs[(made // 200) % len(dirs)]
        with open(os.path.join(p, "f%07d" % made), "wb") as f:
            f.write(payload[:rnd.randrange(9001)])
        made += 1
except OSError as e:
    if e.errno != errno.ENOSPC:
        print("error %s after %d files" % (e, made))
        sys.exit(2)
after = statfs()
print("files", made)
print("before", *before)
print("after", *after)
EOF
rc=$?
cat "$TESTDIR/fill.out" | sed 's/^/  /'
if [ "$rc" != 0 ]; then
	fail fill_small_files_until_enospc "python exit $rc"
else
	read -r _ blocks bfree bavail files ffree < <(grep '^after' "$TESTDIR/fill.out")
	read -r _ _ bfree0 bavail0 _ ffree0 < <(grep '^before' "$TESTDIR/fill.out")
	echo "  at ENOSPC: $bfree of $blocks blocks free ($bavail available), $ffree of $files inodes free"
	blocks_out=0 inodes_out=0
	[ $((bfree * 100)) -lt "$blocks" ] && blocks_out=1
	[ $((ffree * 100)) -lt "$files" ] && inodes_out=1
	if [ "$blocks_out" = 1 ] || [ "$inodes_out" = 1 ]; then
		pass enospc_only_when_full
	else
		fail enospc_only_when_full "ENOSPC with $bfree/$blocks blocks and $ffree/$files inodes free"
	fi
	# df told the truth: of what ran out, what it promised was got
	got_b=$((bfree0 - bfree)) got_i=$((ffree0 - ffree))
	if { [ "$blocks_out" = 1 ] && [ $((got_b * 100)) -ge $((bavail0 * 99)) ]; } ||
	   { [ "$inodes_out" = 1 ] && [ $((got_i * 100)) -ge $((ffree0 * 99)) ]; }; then
		pass df_promise_kept
	else
		fail df_promise_kept "df promised $bavail0 blocks and $ffree0 inodes; got $got_b and $got_i"
	fi
fi
unmount_checked
# where the space was left, and what the bookkeeping cost
"$CHUNKFS" info "$img" | grep -E 'Bookkeeping|Continuations|Cross-chunk' | sed 's/^/  /'
[ -z "${FILL_VERBOSE:-}" ] || "$CHUNKFS" info "$img" | sed -n '/^chunk /,$p'
finish
