/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Minimal test harness shared by every unit test binary.
 *
 * A test file defines functions `static void test_xxx(void)` and lists them
 * in main() with TEST_RUN(test_xxx); main returns TEST_DONE().  Each binary
 * prints one line per test ("PASS name" / "FAIL name: file:line: msg" /
 * "SKIP name: reason") and a closing "N passed, N failed, N skipped" line;
 * tests/run.sh sums these over all binaries.
 */
#ifndef CHUNKFS_TEST_H
#define CHUNKFS_TEST_H

#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_passed, t_failed, t_skipped;
static jmp_buf t_jmp;
static const char *t_skip_reason;

#define TEST_FAIL(...)                                                        \
	do {                                                                  \
		fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__);             \
		fprintf(stderr, __VA_ARGS__);                                 \
		fputc('\n', stderr);                                          \
		longjmp(t_jmp, 1);                                            \
	} while (0)

#define CHECK(cond)                                                           \
	do {                                                                  \
		if (!(cond))                                                  \
			TEST_FAIL("check failed: %s", #cond);                 \
	} while (0)

/* Compare two integers, printing both on failure. */
#define CHECK_EQ(a, b)                                                        \
	do {                                                                  \
		long long _a = (long long)(a), _b = (long long)(b);           \
		if (_a != _b)                                                 \
			TEST_FAIL("%s == %lld, expected %s == %lld", #a, _a,  \
				  #b, _b);                                    \
	} while (0)

/* A call returning 0 / negative errno must succeed. */
#define CHECK_OK(expr)                                                        \
	do {                                                                  \
		long long _r = (long long)(expr);                             \
		if (_r < 0)                                                   \
			TEST_FAIL("%s failed: %s (%lld)", #expr,              \
				  strerror((int)-_r), _r);                    \
	} while (0)

/* A call must fail with exactly -err. */
#define CHECK_ERR(expr, err)                                                  \
	do {                                                                  \
		long long _r = (long long)(expr);                             \
		if (_r != -(long long)(err))                                  \
			TEST_FAIL("%s returned %lld, expected -%s (%d)",      \
				  #expr, _r, #err, -(int)(err));              \
	} while (0)

#define TEST_SKIP(reason)                                                     \
	do {                                                                  \
		t_skip_reason = (reason);                                     \
		longjmp(t_jmp, 2);                                            \
	} while (0)

#define TEST_RUN(fn)                                                          \
	do {                                                                  \
		int _j = setjmp(t_jmp);                                       \
		if (_j == 0) {                                                \
			fn();                                                 \
			t_passed++;                                           \
			printf("PASS %s\n", #fn);                             \
		} else if (_j == 2) {                                         \
			t_skipped++;                                          \
			printf("SKIP %s: %s\n", #fn,                          \
			       t_skip_reason ? t_skip_reason : "?");          \
		} else {                                                      \
			t_failed++;                                           \
			printf("FAIL %s\n", #fn);                             \
		}                                                             \
		fflush(stdout);                                               \
	} while (0)

#define TEST_DONE()                                                           \
	(printf("%d passed, %d failed, %d skipped\n", t_passed, t_failed,     \
		t_skipped),                                                   \
	 t_failed ? 1 : 0)

#endif
