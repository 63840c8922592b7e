/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's side of online check and repair (daemon/scrub_ioctl.h),
 * cases of the mount's ioctl dispatch (daemon/ioctl.c).  One scrub
 * runs at a time; the report of the last chunk scrubbed is kept until the
 * next, for CHUNKFS_IOC_SCRUB_READ.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "scrub_ioctl.h"

static pthread_mutex_t scrub_lock = PTHREAD_MUTEX_INITIALIZER;
static char *report;            /* the last scrub's records */
static size_t report_len;
static uint64_t report_token;

static void field(FILE *f, const char *s, char end)
{
	/* the separators cannot occur in the checker's text; drop any */
	for (; s && *s; s++)
		if (*s != SCRUB_FS && *s != SCRUB_RS)
			putc(*s, f);
	putc(end, f);
}

struct collect {
	struct mnt *m;
	FILE *f;
};

static void collect_problem(void *ctx, const struct cfs_fsck_problem *p)
{
	struct collect *cl = ctx;
	FILE *f = cl->f;

	scrubber_problem(cl->m, p);
	field(f, p->code, SCRUB_FS);
	fprintf(f, "%lld%c%u%c", (long long)p->chunk, SCRUB_FS, p->ino, SCRUB_FS);
	field(f, p->finding, SCRUB_FS);
	field(f, p->action, SCRUB_FS);
	field(f, p->outcome, SCRUB_FS);
	field(f, p->invariant, SCRUB_FS);
	field(f, p->text, SCRUB_RS);
}

/* Only root, or the user who mounted (whom the daemon runs as), as
 * e2scrub needs root and xfs_scrub CAP_SYS_ADMIN. */
static int may_scrub(fuse_req_t req)
{
	uid_t uid = fuse_req_ctx(req)->uid;

	return uid == 0 || uid == getuid();
}

/* Every check of the mounted image goes through here: while one runs, a
 * request over io_uring may wait at its fence, so every one passes to the
 * pool of workers (daemon/uring.c). */
int mount_cfs_scrub(struct mnt *m, uint32_t chunk, const struct cfs_fsck_opts *o,
		    struct cfs_fsck_result *res)
{
	int ret;

	mount_uring_repair(1);
	ret = cfs_scrub(m->fs, chunk, o, res);
	mount_uring_repair(0);
	return ret;
}

int mount_scrub_chunk(struct mnt *m, uint32_t chunk, int mode, struct cfs_fsck_result *res,
		      FILE *records)
{
	struct cfs_fsck_opts o = { .mode = mode };
	struct collect cl = { m, records };

	if (records) {
		o.problem = collect_problem;
		o.ctx = &cl;
	}
	if (mode != CFS_FSCK_NO && m->rdonly)
		return -EROFS;
	return mount_cfs_scrub(m, chunk, &o, res);
}

int mount_scrub_ioctl(fuse_req_t req, fuse_ino_t ino, const void *in, size_t in_size,
		      struct chunkfs_scrub_arg *out)
{
	struct mnt *m = fuse_req_userdata(req);
	struct cfs_info info;
	FILE *records;
	char *buf = NULL;
	size_t len = 0;
	int ret;

	if (ino != FUSE_ROOT_ID)
		return -ENOTTY;
	if (in_size < sizeof(*out))
		return -EINVAL;
	if (!may_scrub(req))
		return -EPERM;
	memcpy(out, in, sizeof(*out));
	memset(&out->res, 0, sizeof(out->res));
	out->report_bytes = 0;
	ret = cfs_get_info(m->fs, &info);
	out->nchunks = ret < 0 ? 0 : info.chunks;
	if (ret < 0 || out->chunk == SCRUB_QUERY) {
		out->error = ret;
		return 0;
	}
	if (out->mode < CFS_FSCK_NO || out->mode > CFS_FSCK_YES)
		return -EINVAL;
	records = open_memstream(&buf, &len);
	if (!records)
		return -ENOMEM;
	pthread_mutex_lock(&scrub_lock);
	ret = mount_scrub_chunk(m, out->chunk, out->mode, &out->res, records);
	if (ret == 0 && out->mode != CFS_FSCK_NO && !out->res.unfixed)
		scrubber_chunk_back(m, out->chunk);
	if (fclose(records) != 0 && ret == 0)
		ret = -ENOMEM;
	free(report);
	report = buf;
	report_len = buf ? len : 0;
	out->token = ++report_token;
	out->report_bytes = report_len;
	pthread_mutex_unlock(&scrub_lock);
	out->error = ret;
	return 0;
}

int mount_scrub_read_ioctl(fuse_req_t req, fuse_ino_t ino, const void *in, size_t in_size,
			   struct chunkfs_scrub_page *out)
{
	size_t n;
	int ret = 0;

	if (ino != FUSE_ROOT_ID)
		return -ENOTTY;
	if (in_size < offsetof(struct chunkfs_scrub_page, data))
		return -EINVAL;
	if (!may_scrub(req))
		return -EPERM;
	memcpy(out, in, offsetof(struct chunkfs_scrub_page, data));
	pthread_mutex_lock(&scrub_lock);
	if (out->token != report_token) {
		ret = -ESTALE;      /* another scrub came in between */
	} else {
		n = out->off < report_len ? report_len - out->off : 0;
		if (n > sizeof(out->data))
			n = sizeof(out->data);
		if (n)
			memcpy(out->data, report + out->off, n);
		out->len = (uint32_t)n;
	}
	pthread_mutex_unlock(&scrub_lock);
	return ret;
}
