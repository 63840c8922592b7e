/* SPDX-License-Identifier: GPL-2.0-or-later */
/* timeit: run a command and report its wall time and peak memory.
 *
 *   timeit OUTFILE TIMEOUT_SECONDS CMD [ARG...]
 *
 * Writes "WALL_SECONDS MAXRSS_KIB EXIT_STATUS" to OUTFILE.  The wall time
 * is CLOCK_MONOTONIC from just before fork() to wait4()'s return, so the
 * figure has microsecond resolution and carries no shell or /usr/bin/time
 * start-up cost; MAXRSS is ru_maxrss from wait4() (the number /usr/bin/time
 * prints as "Maximum resident set size").  The command's stdout and stderr
 * are passed through.  After TIMEOUT_SECONDS the command gets SIGTERM,
 * then SIGKILL 5 s later, and the exit status is 124 like timeout(1).
 * SIGTERM, SIGINT and SIGHUP are passed on to the command.
 * Exit status: the command's (128+signal if it was killed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pid_t child;
static int timed_out;

static void forward(int sig)
{
	kill(child, sig);
}

static void on_alarm(int sig)
{
	(void)sig;
	if (!timed_out) {
		timed_out = 1;
		kill(child, SIGTERM);
		alarm(5);
	} else {
		kill(child, SIGKILL);
	}
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: timeit OUTFILE TIMEOUT CMD [ARG...]\n");
		return 125;
	}
	struct timespec a, b;
	struct rusage ru;
	int st;
	clock_gettime(CLOCK_MONOTONIC, &a);
	child = fork();
	if (child < 0) {
		perror("timeit: fork");
		return 125;
	}
	if (child == 0) {
		execvp(argv[3], argv + 3);
		fprintf(stderr, "timeit: %s: %s\n", argv[3], strerror(errno));
		_exit(127);
	}
	signal(SIGALRM, on_alarm);
	signal(SIGTERM, forward);
	signal(SIGINT, forward);
	signal(SIGHUP, forward);
	alarm((unsigned)atoi(argv[2]));
	while (wait4(child, &st, 0, &ru) < 0) {
		if (errno != EINTR) {
			perror("timeit: wait4");
			return 125;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	if (timed_out)
		rc = 124;
	FILE *f = fopen(argv[1], "w");
	if (!f) {
		perror(argv[1]);
		return 125;
	}
	fprintf(f, "%.6f %ld %d\n", (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9,
		ru.ru_maxrss, rc);
	fclose(f);
	return rc;
}
