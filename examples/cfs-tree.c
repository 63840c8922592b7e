/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cfs-tree: a small program on libchunkfs, as another project would write
 * one.  It makes an image when asked, writes a file into it, lists a
 * directory with each entry's chunk (the top 8 bits of its inode number)
 * and size, and checks the image, all without mounting.
 *
 *   cfs-tree IMAGE [PATH]        list PATH (default /)
 *   cfs-tree --mkfs IMAGE        make a 64 MiB image with /hello.txt
 *
 * Build it against the installed library:
 *   cc -o cfs-tree cfs-tree.c $(pkg-config --cflags --libs chunkfs)
 */
#define _DEFAULT_SOURCE         /* S_IFREG under -std=c11 */
#include <chunkfs.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int print_entry(void *ctx, const char *name, size_t namelen, cfs_ino_t ino,
		       uint32_t dtype, uint64_t next)
{
	struct cfs_fs *fs = ctx;
	struct cfs_stat st;
	int ret;

	(void)dtype;
	(void)next;
	if ((namelen == 1 && name[0] == '.') || (namelen == 2 && !memcmp(name, "..", 2)))
		return 0;
	ret = cfs_getattr(fs, ino, &st);
	if (ret < 0) {
		fprintf(stderr, "cfs-tree: %.*s: %s\n", (int)namelen, name, strerror(-ret));
		return ret;
	}
	printf("%-24.*s chunk %3u  %10llu bytes%s\n", (int)namelen, name,
	       (unsigned)CFS_INO_CHUNK(ino), (unsigned long long)st.size,
	       S_ISDIR(st.mode) ? "  (directory)" : "");
	return 0;
}

static int make_image(const char *image)
{
	struct cfs_mkfs_opts o = { .struct_size = sizeof(o), .size = 64 << 20,
				   .label = "example" };
	static const char text[] = "hello from libchunkfs\n";
	struct cfs_fs *fs;
	cfs_ino_t f;
	int ret;

	ret = cfs_mkfs(image, &o);
	if (ret < 0)
		return ret;
	ret = cfs_open(image, 0, &fs);
	if (ret < 0)
		return ret;
	ret = cfs_mknod(fs, CFS_ROOT_INO, "hello.txt", S_IFREG | 0644, 0, 0, 0, &f);
	if (ret == 0 && cfs_write(fs, f, text, sizeof(text) - 1, 0) != sizeof(text) - 1)
		ret = -1;
	return cfs_close(fs) < 0 ? -1 : ret;
}

int main(int argc, char **argv)
{
	struct cfs_fsck_opts fo = { .struct_size = sizeof(fo), .mode = CFS_FSCK_NO,
				    .force = 1 };
	struct cfs_fsck_result fr = { .struct_size = sizeof(fr) };
	const char *path = argc > 2 ? argv[2] : "/";
	struct cfs_fs *fs;
	cfs_ino_t dir;
	int ret;

	if (argc == 3 && strcmp(argv[1], "--mkfs") == 0) {
		ret = make_image(argv[2]);
		if (ret < 0)
			fprintf(stderr, "cfs-tree: %s: %s\n", argv[2], cfs_last_error());
		return ret < 0;
	}
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: cfs-tree IMAGE [PATH] | cfs-tree --mkfs IMAGE\n");
		return 2;
	}
	ret = cfs_open(argv[1], CFS_OPEN_RDONLY, &fs);
	if (ret < 0) {
		fprintf(stderr, "cfs-tree: %s: %s\n", argv[1], cfs_last_error());
		return 1;
	}
	ret = cfs_path_resolve(fs, path, 1, &dir);
	if (ret == 0)
		ret = cfs_readdir(fs, dir, 0, print_entry, fs);
	if (ret == 0)
		ret = cfs_fsck(fs, &fo, &fr);
	if (ret == 0)
		printf("%u chunks checked, %llu problems\n", fr.checked,
		       (unsigned long long)fr.problems);
	else
		fprintf(stderr, "cfs-tree: %s: %s\n", path, strerror(ret < 0 ? -ret : 5));
	cfs_close(fs);
	return ret != 0 || fr.problems != 0;
}
