#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# libchunkfs.so exports exactly the functions include/chunkfs.h declares
# (the library is built with -fvisibility=hidden, the header sets default
# visibility around its declarations), so a program's own names never
# meet the library's internal ones.  Run by tests/run.sh (make check);
# by hand: CHUNKFS=$PWD/build/chunkfs bash tests/lib/exports.sh
. "$(dirname "$0")/../cli/lib.sh"

so=
for d in "$(dirname "$CHUNKFS")" "$(dirname "$CHUNKFS")/.."; do
	if [ -f "$d/libchunkfs.so" ]; then
		so=$(cd "$d" && pwd)/libchunkfs.so
		break
	fi
done
if [ -z "$so" ]; then
	fail exports_found "no libchunkfs.so beside $CHUNKFS or one level up (make all builds it)"
	finish
fi
# The installed archive, beside the .so (build/san's libchunkfs.a is the
# sanitizer build's own, with every internal name, and is never installed).
ar=$(dirname "$so")/libchunkfs.a

lib=$TESTDIR/.lib
# Functions the header declares: after the preprocessor, so comments and
# macros do not count; function-pointer typedefs, "(*cfs_x_t)(", do not match.
cc -E -P -I"$CHUNKFS_SRC/include" "$CHUNKFS_SRC/include/chunkfs.h" |
	grep -oE '\bcfs_[a-z0-9_]+ *\(' | sed 's/ *($//' | sort -u >"$lib/declared"
# What the linker itself may define in any shared object is not ours.
# nm shows a symbol's version after @@; the version nodes themselves are
# absolute symbols (A).
nm -D --defined-only "$so" | awk 'NF == 3 && $2 != "A" { print $3 }' >"$lib/versioned"
sed 's/@.*//' "$lib/versioned" |
	grep -vxE '_init|_fini|_edata|_end|__bss_start' | sort -u >"$lib/exported"

if [ "$(wc -l <"$lib/declared")" -lt 30 ]; then
	fail exports_header_parsed "only $(wc -l <"$lib/declared") functions found in chunkfs.h"
else
	pass exports_header_parsed
fi
extra=$(comm -13 "$lib/declared" "$lib/exported")
if [ -z "$extra" ]; then
	pass exports_only_api
else
	fail exports_only_api "$so exports $(echo "$extra" | wc -l) names chunkfs.h does not declare: $(echo $extra | head -c 400)"
fi
missing=$(comm -23 "$lib/declared" "$lib/exported")
if [ -z "$missing" ]; then
	pass exports_whole_api
else
	fail exports_whole_api "chunkfs.h declares but $so does not export: $(echo $missing | head -c 400)"
fi
# every export is in a version node of src/libchunkfs.map
unversioned=$(grep -v '@@*CHUNKFS_[0-9]' "$lib/versioned" |
	grep -vxE '_init|_fini|_edata|_end|__bss_start' || true)
if [ -z "$unversioned" ]; then
	pass exports_versioned
else
	fail exports_versioned "exported without a CHUNKFS_ version: $(echo $unversioned | head -c 300)"
fi

# The archive too: its global symbols are the API's, nothing else (each
# program linking it statically would otherwise meet every internal name).
if [ ! -f "$ar" ]; then
	fail exports_archive_found "no $ar (make all builds it)"
else
	nm -g --defined-only "$ar" 2>/dev/null | awk 'NF == 3 { print $3 }' | sort -u >"$lib/archived"
	extra=$(comm -13 "$lib/declared" "$lib/archived")
	missing=$(comm -23 "$lib/declared" "$lib/archived")
	if [ -n "$extra" ]; then
		fail exports_archive_only_api "$ar has $(echo "$extra" | wc -l) global names chunkfs.h does not declare: $(echo $extra | head -c 400)"
	elif [ -n "$missing" ]; then
		fail exports_archive_only_api "chunkfs.h declares but $ar does not define: $(echo $missing | head -c 400)"
	else
		pass exports_archive_only_api
	fi
fi

# A program with functions named like the library's internal ones (crc32c,
# cache_get, ...; internal cfs_ names too) uses the library through the
# API.  Were they exported, the library's calls would bind to the
# program's, which abort.
cat >"$lib/names.c" <<'PROG'
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "chunkfs.h"

#define MINE(name) void name(void); void name(void) { fprintf(stderr, "library called the program's " #name "\n"); abort(); }
MINE(crc32c) MINE(cache_get) MINE(buf_put) MINE(inode_get) MINE(inode_put)
MINE(file_read) MINE(file_write) MINE(dir_lookup) MINE(dir_add) MINE(bt_insert)
MINE(chunk_alloc_blocks) MINE(chunk_to_dirty_disk) MINE(cfs_bdev_read)
MINE(cfs_bdev_write) MINE(cfs_set_error) MINE(cfs_dinode_csum_ok) MINE(is_head)
MINE(add_orphan)

int main(int argc, char **argv)
{
	struct cfs_mkfs_opts o = { .size = 32 << 20, .block_size = 4096 };
	struct cfs_fs *fs;
	cfs_ino_t d, f;
	char buf[6] = "";

	(void)argc;
	unlink(argv[1]);
	if (cfs_mkfs(argv[1], &o) < 0 || cfs_open(argv[1], 0, &fs) < 0 ||
	    cfs_mkdir(fs, CFS_ROOT_INO, "d", 0755, 0, 0, &d) < 0 ||
	    cfs_mknod(fs, d, "f", S_IFREG | 0644, 0, 0, 0, &f) < 0 ||
	    cfs_write(fs, f, "hello", 5, 0) != 5 || cfs_close(fs) < 0 ||
	    cfs_open(argv[1], 0, &fs) < 0 || cfs_path_resolve(fs, "/d/f", 1, &f) < 0 ||
	    cfs_read(fs, f, buf, 5, 0) != 5 || cfs_check(fs, NULL, NULL) != 0 ||
	    cfs_close(fs) < 0) {
		fprintf(stderr, "a library call failed: %s\n", cfs_last_error());
		return 1;
	}
	return buf[0] == 'h' && buf[4] == 'o' ? 0 : 1;
}
PROG
if ! cc -std=c11 -D_GNU_SOURCE -O1 -I"$CHUNKFS_SRC/include" -o "$lib/names" "$lib/names.c" \
	-L"$(dirname "$so")" -Wl,-rpath,"$(dirname "$so")" -lchunkfs -pthread 2>"$ERR"; then
	fail exports_no_collision "cannot build the test program: $(head -c 300 "$ERR")"
elif expect_exit 0 "$lib/names" "$TESTDIR/names.img"; then
	pass exports_no_collision
else
	fail exports_no_collision "$(head -c 300 "$ERR")"
fi
# The same program linked statically: the archive's internal names are
# local, so the program's own is_head(), crc32c() and the rest link (they
# used to clash: "multiple definition of `crc32c'").
if [ -f "$ar" ]; then
	if ! cc -std=c11 -D_GNU_SOURCE -O1 -I"$CHUNKFS_SRC/include" -o "$lib/names_static" \
		"$lib/names.c" "$ar" -pthread 2>"$ERR"; then
		fail exports_archive_no_collision "cannot link the test program with $ar: $(head -c 300 "$ERR")"
	elif expect_exit 0 "$lib/names_static" "$TESTDIR/names_static.img"; then
		pass exports_archive_no_collision
	else
		fail exports_archive_no_collision "$(head -c 300 "$ERR")"
	fi
fi
finish
