#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Space from deleted small files comes back while mounted, without a sync
# (issue 25 item 5, FORMAT.md 10.4): files past a tiny inode table live in
# inode clusters made from free blocks; once they are deleted, df counts
# those blocks free again at once and a writer gets them, as on ext4.
# clean_after=600 keeps the idle checkpoint away, so nothing but the
# deletion and the write itself can give the space back.  Empty files
# (their only space is their cluster), then files of one data block each
# (freed at unlink, plus their clusters).  Last, with clean_after=1, the
# checkpoint alone gives the clusters back on disk.
. "$(dirname "$0")/lib.sh"

avail_kb() {
	timeout 30 df -k --output=avail "$mnt" | tail -1 | tr -d ' '
}

# make N files in $mnt/d with touch (empty) or of 1000 bytes each
make_files() {
	local n=$1 kind=$2
	mkdir "$mnt/d" || return 1
	if [ "$kind" = empty ]; then
		(cd "$mnt/d" && seq -f f%g 1 "$n" | timeout 300 xargs touch)
	else
		local i data
		data=$(printf '%01000d' 0)
		for i in $(seq "$n"); do
			printf '%s' "$data" >"$mnt/d/f$i" || return 1
		done
	fi
}

# NAME N KIND: the space N files of KIND took comes back once they are
# deleted, and a file as big as the space before them fits
round() {
	local name=$1 n=$2 kind=$3 a0 a1 a2 mb
	a0=$(avail_kb)
	make_files "$n" "$kind" || { fail "${name}_make" "could not make $n files"; return; }
	a1=$(avail_kb)
	# each cluster of 64 inodes takes 16 KiB: the test means nothing
	# unless the files took that much
	if [ $((a0 - a1)) -ge $((n / 64 * 16)) ]; then
		pass "${name}_took_space"
	else
		fail "${name}_took_space" "$n files took only $((a0 - a1)) KiB"
	fi
	timeout 300 find "$mnt/d" -name 'f*' -delete
	a2=$(avail_kb)
	echo "  $name: df avail ${a0} KiB, ${a1} with $n files, ${a2} after deleting them"
	# what stays: the directory's blocks and a few map blocks
	if [ $((a0 - a2)) -le 256 ]; then
		pass "${name}_df_back"
	else
		fail "${name}_df_back" "df avail ${a0} KiB before, ${a1} with the files, ${a2} after deleting them"
	fi
	mb=$(((a0 - 256) / 1024))
	if timeout 120 dd if=/dev/zero of="$mnt/big" bs=1M count="$mb" status=none 2>"$TESTDIR/dd.err" &&
		[ "$(stat -c %s "$mnt/big")" = $((mb << 20)) ] &&
		timeout 60 cmp -s -n $((mb << 20)) /dev/zero "$mnt/big"; then
		pass "${name}_dd_fits"
	else
		fail "${name}_dd_fits" "dd of $mb MiB (df said ${a2} KiB free): $(cat "$TESTDIR/dd.err")"
	fi
	rm -rf "$mnt/big" "$mnt/d"
}

mount_test space_mount space.img
# each round on a new image: one chunk with a 64-inode table, so that
# nearly every file is in a cluster
for kind in empty:20000 small:3000; do
	rm -f "$img"
	mkfs_or_finish -N 64 "$img" 24M
	mount_or_finish "${kind%:*}_mount" -o clean_after=600
	round "${kind%:*}" "${kind#*:}" "${kind%:*}"
	unmount_checked
	check_exit "${kind%:*}_fsck" 0 "$CHUNKFS" fsck -f -n "$img"
done

# The idle checkpoint (clean_after) gives the emptied clusters back on
# disk too, with nobody writing: the image as last written lists none.
clusters_on_disk() {
	timeout 10 "$CHUNKFS" info "$img" | awk '/^Inode clusters:/ { print $3 }'
}
rm -f "$img"
mkfs_or_finish -N 64 "$img" 24M
mount_or_finish idle_mount -o clean_after=1
make_files 5000 empty || fail idle_make "could not make 5000 files"
timeout 60 find "$mnt/d" -name 'f*' -delete
# polled for 20 s at most, whatever each info takes
n=
end=$((SECONDS + 20))
while [ $SECONDS -lt $end ]; do
	n=$(clusters_on_disk)
	[ "$n" = 0 ] && break
	sleep 0.2
done
if [ "$n" = 0 ]; then
	pass idle_clusters_given_back
else
	fail idle_clusters_given_back "info lists '$n' clusters 20 s after the files went"
fi
unmount_checked
finish
