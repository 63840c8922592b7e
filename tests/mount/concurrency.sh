#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Concurrency over a mount: several processes at once create, write,
# append, truncate, read back (checked), rename (across directories and
# chunks, and over each other's files), link and delete, in their own
# directories (spread over chunks) and in one shared directory; readers
# list the directories meanwhile; a second name of one file is made and
# removed while the first one's directory is listed.  Then unmount: the
# image must be clean and pass the library's consistency check, and every
# file must persist.
. "$(dirname "$0")/lib.sh"

mount_test concurrency_mount conc.img
SECS=${STRESS_SECS:-8}
mkfs_or_finish -c 8 "$img" 256M
mount_or_finish concurrency_mount -o clean_after=1
mkdir "$mnt/shared" "$mnt/p1" "$mnt/p2" "$mnt/p3" "$mnt/p4"
chunks=$(stat -c %i "$mnt"/p? "$mnt/shared" | while read -r i; do echo $((i >> 24)); done |
	sort -u | wc -l)
[ "$chunks" -ge 3 ] && pass dirs_spread_over_chunks ||
	fail dirs_spread_over_chunks "5 top-level directories in $chunks chunks"

# Workers 1-4 have their own directory, 5-6 work only in the shared one.
pids=()
for w in 1 2 3 4 5 6; do
	own=p$w
	[ "$w" -gt 4 ] && own=shared
	printf '== worker_%s\nstress %s shared %s %s => OK\n' "$w" "$own" "$SECS" "$w" |
		timeout -k 5 $((SECS + 100)) "$FSOP" -C "$mnt" >"$TESTDIR/worker$w.out" 2>&1 &
	pids+=($!)
done
# readers list and stat while the workers run
(
	end=$((SECONDS + SECS))
	while [ "$SECONDS" -lt "$end" ]; do
		ls -laR "$mnt" >/dev/null 2>&1
		stat -f "$mnt" >/dev/null
	done
) &
reader=$!
for p in "${pids[@]}"; do
	wait "$p"
done
wait "$reader"
for w in 1 2 3 4 5 6; do
	line=$(grep -E '^(PASS|FAIL) ' "$TESTDIR/worker$w.out")
	case $line in
	PASS*)
		pass "worker_$w"
		grep -h '^stress' "$TESTDIR/worker$w.out" | sed 's/^/  /'
		;;
	FAIL*) fail "worker_$w" "${line#FAIL worker_*: }" ;;
	*) fail "worker_$w" "no result: $(head -c 300 "$TESTDIR/worker$w.out")" ;;
	esac
done

# One name of a file made and removed again and again while the other's
# directory is listed: the kernel drops its cached link count after an
# unlink, and a readdirplus that read the count after the unlink must not
# be applied before that, or the kernel takes the file for unlinked and
# link(2) fails with ENOENT without asking the daemon (a stress worker's
# step 7 failed so in CI).
mkdir "$mnt/ha" "$mnt/hb"
: >"$mnt/ha/f"
RSECS=${RELINK_SECS:-4}
listers=()
for r in 1 2; do
	printf '== lister\nlistloop ha %s => OK\n' "$RSECS" |
		timeout -k 5 $((RSECS + 60)) "$FSOP" -C "$mnt" >"$TESTDIR/lister$r.out" 2>&1 &
	listers+=($!)
done
printf '== relink\nrelink ha/f hb/f.l %s => OK\n' "$RSECS" |
	timeout -k 5 $((RSECS + 60)) "$FSOP" -C "$mnt" >"$TESTDIR/relink.out" 2>&1
for p in "${listers[@]}"; do
	wait "$p"
done
if grep -q '^PASS relink' "$TESTDIR/relink.out"; then
	pass link_while_listed
else
	fail link_while_listed "$(head -c 300 "$TESTDIR/relink.out")"
fi

# Every file a worker left, as the mount shows it, for the comparison
# after remounting.
(cd "$mnt" && find . -type f -print0 | sort -z | xargs -0 md5sum) >"$TESTDIR/sums" 2>&1
unmount_checked
if mount_fs "$img" "$mnt" -o ro; then
	if (cd "$mnt" && timeout 120 md5sum --quiet -c "$TESTDIR/sums") >"$TESTDIR/md5.out" 2>&1; then
		pass files_persist
	else
		fail files_persist "$(head -c 400 "$TESTDIR/md5.out")"
	fi
	unmount_fs "$mnt"
fi
finish
