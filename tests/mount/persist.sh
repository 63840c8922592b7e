#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Real programs over a mount, and persistence: cp -a of a source tree (a
# git clone, plus hard links, symlinks, a FIFO, a sparse file and xattrs)
# compared by diff -r and by a listing of modes, sizes, times and links;
# git status, make and tar inside the mount; a file larger than a chunk;
# then unmount, remount and compare again, and compare `chunkfs get -r`.
. "$(dirname "$0")/lib.sh"

mount_test persist_mount persist.img
host=$TESTDIR/host
mkdir "$host"
# 8 chunks of 32 MiB: the 80 MiB file must continue in other chunks
mkfs_or_finish -c 8 "$img" 256M

# ---- the host tree -----------------------------------------------------------------
if ! git clone -q "$CHUNKFS_SRC" "$host/tree" 2>"$TESTDIR/clone.err"; then
	# not a git checkout: copy the sources instead
	mkdir -p "$host/tree"
	(cd "$CHUNKFS_SRC" && tar --exclude=./build --exclude='*.img' -cf - .) |
		tar -C "$host/tree" -xf -
fi
extra=$host/tree/extra
mkdir -p "$extra/sub"
echo linked >"$extra/hard1"
ln "$extra/hard1" "$extra/hard2"
ln "$extra/hard1" "$extra/sub/hard3"
ln -s ../hard1 "$extra/sub/symlink"
ln -s /nonexistent/target "$extra/dangling"
mkfifo "$extra/fifo"
truncate -s 10M "$extra/sparse" && printf 'end' >>"$extra/sparse"
printf 'x%.0s' $(seq 300) >"$extra/not-inline"
chmod 4750 "$extra/not-inline"
chmod 1777 "$extra/sub"
python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.comment", b"kept")' "$extra/hard1"
touch -h -d '2001-02-03 04:05:06.123456789' "$extra/sub/symlink"
touch -d '1999-12-31 23:59:59.5' "$extra/sub"
head -c $((80 << 20)) /dev/urandom >"$host/big"

# A listing that must be identical: relative path, type, mode, link count,
# size (except directories), mtime in ns, symlink target.  The top
# directory itself is left out: make and rm -rf build changed its mtime.
listing() {
	(cd "$1" && find . -mindepth 1 -path ./.git -prune -o -printf '%P %y %m %n %s %T@ %l\n' |
		awk '$2 == "d" { $5 = "-" } { print }' | sort)
}

# diff -r compares contents (FIFOs are in the listing; git status rewrote
# the mount's .git/index, so that file is left out).
tree_diff() {
	timeout 120 diff -r --no-dereference -x fifo -x index "$@" >"$TESTDIR/diff.out" 2>&1
}

compare_tree() { # NAME DIR
	local name=$1 dir=$2
	: >"$TESTDIR/list.diff"
	if tree_diff "$host/tree" "$dir" &&
	   diff <(listing "$host/tree") <(listing "$dir") >"$TESTDIR/list.diff"; then
		pass "$name"
	else
		fail "$name" "$(head -c 600 "$TESTDIR/diff.out" "$TESTDIR/list.diff")"
	fi
}

if ! mount_fs "$img" "$mnt"; then
	fail persist_mount "mount failed"
	finish
fi
pass persist_mount

# ---- cp -a in, compare ----------------------------------------------------------------
if timeout 120 cp -a "$host/tree" "$mnt/tree" 2>"$TESTDIR/cp.err"; then
	pass cp_a_source_tree
else
	fail cp_a_source_tree "$(head -c 300 "$TESTDIR/cp.err")"
fi
compare_tree cp_a_identical "$mnt/tree"
if [ "$(python3 -c 'import os, sys; print(os.getxattr(sys.argv[1], "user.comment").decode())' "$mnt/tree/extra/hard2")" = kept ]; then
	pass cp_a_kept_xattr
else
	fail cp_a_kept_xattr "user.comment missing"
fi
if [ "$(stat -c %i "$mnt/tree/extra/hard1")" = "$(stat -c %i "$mnt/tree/extra/sub/hard3")" ]; then
	pass cp_a_kept_hard_links
else
	fail cp_a_kept_hard_links "different inodes"
fi

# ---- programs in the mount -----------------------------------------------------------
if [ -d "$mnt/tree/.git" ]; then
	if timeout 60 git -C "$mnt/tree" status --porcelain >"$TESTDIR/git.out" 2>&1 &&
	   [ "$(grep -vc '^?? extra/' "$TESTDIR/git.out")" = 0 ]; then
		pass git_status_in_mount
	else
		fail git_status_in_mount "$(head -c 400 "$TESTDIR/git.out")"
	fi
	if timeout 60 git -C "$mnt/tree" fsck --no-progress >"$TESTDIR/gitfsck.out" 2>&1; then
		pass git_fsck_in_mount
	else
		fail git_fsck_in_mount "$(head -c 400 "$TESTDIR/gitfsck.out")"
	fi
else
	skip git_status_in_mount "the source tree is not a git checkout"
fi
# The outer make's variables (B=..., through MAKEFLAGS) must not reach this
# build of the copied tree: it builds into its own build/.
if timeout 200 env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$mnt/tree" -j2 CFLAGS=-O0 build/libchunkfs.a build/chunkfs \
	>"$TESTDIR/make.out" 2>&1 && "$mnt/tree/build/chunkfs" --version >/dev/null; then
	pass make_in_mount
else
	fail make_in_mount "$(tail -c 600 "$TESTDIR/make.out")"
fi
rm -rf "$mnt/tree/build"
if timeout 60 tar -C "$mnt" -cf "$TESTDIR/tree.tar" tree &&
   mkdir "$mnt/untar" && timeout 60 tar -C "$mnt/untar" -xpf "$TESTDIR/tree.tar" &&
   tree_diff "$host/tree" "$mnt/untar/tree"; then
	pass tar_out_and_back_in
else
	fail tar_out_and_back_in "$(head -c 400 "$TESTDIR/diff.out")"
fi

# ---- a file larger than one chunk ----------------------------------------------------
if timeout 120 cp "$host/big" "$mnt/big" && timeout 60 cmp "$host/big" "$mnt/big"; then
	pass big_file_written_and_read
else
	fail big_file_written_and_read "cp or cmp failed"
fi

# ---- unmount, check, remount, compare --------------------------------------------------
unmount_ok unmount
nchunks=$("$CHUNKFS" stat "$img" /big | awk -F': *' 'tolower($1) ~ /chunks/ { print $2 }' |
	tr -cs '0-9' '\n' | grep -c .)
if [ "${nchunks:-0}" -ge 3 ]; then
	pass big_file_spans_chunks
else
	fail big_file_spans_chunks "chunkfs stat shows $nchunks chunks: $("$CHUNKFS" stat "$img" /big | head -20)"
fi
if [ -z "$(dirty_chunks "$img")" ] && "$CFSCHECK" "$img" >"$TESTDIR/check.out"; then
	pass image_clean_and_consistent
else
	fail image_clean_and_consistent "$(head -10 "$TESTDIR/check.out")"
fi
if mount_fs "$img" "$mnt" -o ro; then
	compare_tree remount_identical "$mnt/tree"
	if timeout 60 cmp "$host/big" "$mnt/big"; then
		pass remount_big_file_identical
	else
		fail remount_big_file_identical "differs"
	fi
	unmount_fs "$mnt"
else
	fail remount_identical "remount failed"
fi
if timeout 120 "$CHUNKFS" get -r "$img" /tree "$TESTDIR/back" 2>"$TESTDIR/get.err"; then
	compare_tree get_r_identical "$TESTDIR/back"
else
	fail get_r_identical "$(head -c 300 "$TESTDIR/get.err")"
fi
finish
