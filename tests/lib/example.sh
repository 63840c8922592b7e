#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# examples/cfs-tree.c built as another project would: against the library
# `make install` put in a staging tree, found through pkg-config, once
# with the shared library and once static; then run: it makes an image,
# lists it, and checks it.
. "$(dirname "$0")/../cli/lib.sh"

inst=$TESTDIR/inst
if ! make -s -C "$CHUNKFS_SRC" install DESTDIR="$inst" PREFIX=/usr >"$OUT" 2>"$ERR"; then
	fail example_install "make install failed: $(tail -c 300 "$ERR")"
	finish
fi
pass example_install
pc=$inst/usr/lib/pkgconfig
flags() {       # pkg-config, the staged tree standing for /
	PKG_CONFIG_PATH=$pc PKG_CONFIG_SYSROOT_DIR=$inst pkg-config "$@" chunkfs
}
for how in shared static; do
	bin=$TESTDIR/cfs-tree-$how
	extra=()
	[ "$how" = static ] && extra=(-static-libgcc "$inst/usr/lib/libchunkfs.a" -pthread)
	if [ "$how" = shared ]; then
		cmd=(cc -std=c11 -Wall -Wextra -Werror -o "$bin" "$CHUNKFS_SRC/examples/cfs-tree.c"
			$(flags --cflags --libs) -Wl,-rpath,"$inst/usr/lib")
	else
		cmd=(cc -std=c11 -Wall -Wextra -Werror -o "$bin" "$CHUNKFS_SRC/examples/cfs-tree.c"
			$(flags --cflags) "${extra[@]}")
	fi
	check_exit "example_build_$how" 0 "${cmd[@]}"
	img=$TESTDIR/ex-$how.img
	check_exit "example_mkfs_$how" 0 "$bin" --mkfs "$img"
	if expect_exit 0 "$bin" "$img" / && grep -q '^hello.txt  *chunk   0 *22 bytes$' "$OUT" &&
	   grep -q 'chunks checked, 0 problems' "$OUT"; then
		pass "example_lists_$how"
	else
		fail "example_lists_$how" "$(head -c 300 "$OUT") $(head -c 200 "$ERR")"
	fi
	# and what the command sees of the same image
	if expect_exit 0 "$CHUNKFS" cat "$img" /hello.txt && grep -qx 'hello from libchunkfs' "$OUT"; then
		pass "example_image_readable_$how"
	else
		fail "example_image_readable_$how" "$(head -c 300 "$ERR")"
	fi
done
finish
