#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# An online repair checks the chunk and the chunks its findings reach, not
# every chunk (issue 12 item 3), and a workload in another chunk goes on.
#  - a file of chunk A named only in /lost+found (chunk R) as "#INO", the
#    stub backing that name (in chunk A) damaged behind the daemon's back
#    with its checksum valid: the repair of A clears the stub, and the
#    entry naming it in /lost+found must go in the same run before the
#    file, now in no directory, goes back to /lost+found as "#INO" again
#    (a repair of chunk A alone made a second "#INO": DIR_INDEX at the
#    next check, inject.sh seed 777 before the repair checked every
#    chunk).  scrub -y exits 1, the file reads back under that name, there
#    is one such name, scrub -n after is clean, fsck -f -n after umount.
#  - the stub of /a (in /a's chunk, backing the name "a" in /) damaged:
#    scrub -y (every chunk) moves /a into /lost+found, and the kernel's
#    cached entry for "a" goes with it (the daemon invalidates the names
#    the repair removed, and those the inodes it changed were last looked
#    up under), so /a is gone from the mount at once.
#  - throughout, a workload in a directory of a third chunk creates, reads
#    back and removes files and sees no error; the operations it completes
#    during each scrub -y are counted and reported.  The first repair
#    sleeps a second at its first write (CHUNKFS_TEST_SCRUB_PAUSE): the
#    workload's chunk is not fenced, so operations must end during it (a
#    count over the second one's few unpaused milliseconds failed under
#    load); the longest single operation is reported.
. "$(dirname "$0")/lib.sh"

C=$CHUNKFS
need_test_hooks reach_scrub
mount_test reach_mount reach.img
mkfs_or_finish -c 4 "$img" 64M
"$C" mkdir "$img" /a /w && echo "lost file" | "$C" put "$img" - /a/f ||
	{ fail setup "put failed"; finish; }
chunk_of() { echo $(( $("$C" stat "$img" "$1" | awk '/Inode:/ { print $2; exit }') >> 24 )); }
ino=$("$C" stat "$img" /a/f | awk '/Inode:/ { print $2; exit }')
"$C" mv "$img" /a/f "/lost+found/#$ino" || { fail setup "mv failed"; finish; }
achunk=$((ino >> 24))
rchunk=$(chunk_of /lost+found)
wchunk=$(chunk_of /w)
if [ "$achunk" = "$rchunk" ] || [ "$wchunk" = "$achunk" ] || [ "$wchunk" = "$rchunk" ]; then
	fail setup "chunks not apart: file $achunk, lost+found $rchunk, workload $wchunk"
	finish
fi
check_exit reach_fsck_clean_before 0 "$C" fsck -f -n "$img"
CHUNKFS_TEST_SCRUB_PAUSE=1 mount_or_finish reach_mount -o clean_after=0.5
wait_clean "$img" 20 || { fail setup "chunks never clean: $(dirty_chunks "$img")"; finish; }

# workload: one line per operation completed, "START_US END_US", in ops;
# an operation is a create and write and read back (shell builtins, no
# process started, so that many fit in a short repair), every 20th the
# removal of the files made
workload() {
	local i=0 t0 t1 l
	: >"$TESTDIR/work.err"
	: >"$TESTDIR/ops"
	while [ ! -e "$TESTDIR/stop" ]; do
		i=$((i + 1))
		t0=${EPOCHREALTIME/./}
		if [ $((i % 20)) = 0 ]; then
			rm -f "$mnt"/w/f* 2>>"$TESTDIR/work.err" || echo "rm $i failed" >>"$TESTDIR/work.err"
		elif ! { echo "w $i" >"$mnt/w/f$i" && read -r l <"$mnt/w/f$i" &&
			 [ "$l" = "w $i" ]; } 2>>"$TESTDIR/work.err"; then
			echo "op $i failed" >>"$TESTDIR/work.err"
			continue
		fi
		t1=${EPOCHREALTIME/./}
		echo "$t0 $t1" >>"$TESTDIR/ops"
	done
}
rm -f "$TESTDIR/stop"
workload &
wpid=$!
sleep 1

n=$("$CFSDAMAGE" "$img" stubs "$ino") && [ "$n" = 1 ] ||
	{ fail setup "expected 1 stub of inode $ino, damaged: ${n:-none}"; finish; }
s0=${EPOCHREALTIME/./}
check_exit reach_scrub_y_repairs 1 "$C" scrub -y -c "$achunk" "$mnt"
s1=${EPOCHREALTIME/./}
cp "$OUT" "$TESTDIR/repair.out"
if grep -q "chunk $achunk: stub .*backs no directory entry.*\[STUB_ORPHAN\].*: fixed" "$OUT" &&
   grep -q "chunk $rchunk: dir .*'#$ino'.*invalid.*\[ENTRY_INVALID\].*: fixed" "$OUT" &&
   grep -q "chunk $achunk: inode $ino: in no directory.*\[ORPHAN\].*: fixed" "$OUT"; then
	pass reach_both_halves_fixed
else
	fail reach_both_halves_fixed "$(grep '\[' "$OUT" | head -5 | tr '\n' '|')"
fi
# the chunk and the one its finding reached, in one run: not every chunk,
# and no second pass over a name made twice
if grep -q "checked 2 of 4 chunks" "$OUT" && ! grep -q "DIR_INDEX" "$OUT"; then
	pass reach_checks_two_chunks
else
	fail reach_checks_two_chunks "$(grep -E 'checked|DIR_INDEX' "$OUT" | head -3 | tr '\n' '|')"
fi
check_exit reach_scrub_n_clean_after 0 "$C" scrub -n "$mnt"
names=$(ls -a "$mnt/lost+found" | grep -c "^#$ino\$")
same reach_one_name_in_lost_found "$names" 1
same reach_file_reads "$(timeout 20 cat "$mnt/lost+found/#$ino" 2>&1)" "lost file"

# ---- what the kernel caches follows a repair that moves a directory ----
# /a's stub (its name in / lives in chunk R) damaged: the repair removes
# the name "a" from / and puts /a into /lost+found; the kernel's entry for
# "a", cached for the entry timeout (60 s), must go at once.  This scrub
# -y goes over every chunk, the workload still running.
ls "$mnt/a" >/dev/null && stat "$mnt/a" >/dev/null || { fail setup "no /a"; finish; }
aino=$(stat -c %i "$mnt/a")
# enough names made since that the daemon's table of recent names (by
# inode number, 256 slots) no longer holds "a": the name removed must
# come from the repair itself
for i in $(seq 600); do : >"$mnt/w/g$i"; done
# the two chunks clean (the workload's stays dirty): nothing of them the
# daemon holds dirty is written over the damage
for i in $(seq 200); do
	case ",$(dirty_chunks "$img")," in
	*",$achunk,"* | *",$rchunk,"*) sleep 0.1 ;;
	*) break ;;
	esac
done
n=$("$CFSDAMAGE" "$img" stubs "$aino") && [ "$n" = 1 ] ||
	{ fail setup "expected 1 stub of /a ($aino), damaged: ${n:-none}"; finish; }
s2=${EPOCHREALTIME/./}
check_exit reach_dir_scrub_y_repairs 1 "$C" scrub -y "$mnt"
s3=${EPOCHREALTIME/./}
if [ ! -e "$mnt/a" ] && [ -d "$mnt/lost+found/#$aino" ]; then
	pass reach_kernel_forgets_old_name
else
	fail reach_kernel_forgets_old_name "$(ls -a "$mnt" "$mnt/lost+found" 2>&1 | tr '\n' ' ')"
fi
check_exit reach_dir_scrub_n_clean_after 0 "$C" scrub -n "$mnt"

sleep 1
touch "$TESTDIR/stop"
wait "$wpid"
if [ -s "$TESTDIR/work.err" ]; then
	fail reach_workload_no_error "$(head -c 300 "$TESTDIR/work.err")"
else
	pass reach_workload_no_error
fi
# operations that ended while each scrub -y ran, and the longest one
during() {   # FROM TO (microseconds)
	awk -v s0="$1" -v s1="$2" '$2 >= s0 && $2 <= s1 { n++ } END { print n + 0 }' "$TESTDIR/ops"
}
d1=$(during "$s0" "$s1")
d2=$(during "$s2" "$s3")
longest=$(awk '$2 - $1 > m { m = $2 - $1 } END { print int(m / 1000) }' "$TESTDIR/ops")
echo "reach: the workload in chunk $wchunk completed $d1 operations during scrub -y -c $achunk ($(( (s1 - s0) / 1000 )) ms) and $d2 during scrub -y of every chunk ($(( (s3 - s2) / 1000 )) ms); $(wc -l <"$TESTDIR/ops") in all, the longest $longest ms"
if [ "$d1" -gt 0 ]; then
	pass reach_workload_goes_on_during_repair
else
	fail reach_workload_goes_on_during_repair "no operation ended in the $(( (s1 - s0) / 1000 )) ms of scrub -y -c $achunk"
fi

unmount_fs "$mnt"
log_clean daemon_log_clean "$DAEMON_LOG" && pass daemon_log_clean
check_exit reach_fsck_clean_after 0 "$C" fsck -f -n "$img"
finish
