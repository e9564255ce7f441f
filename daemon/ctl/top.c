// SPDX-License-Identifier: Apache-2.0
/*
 * xsprofctl top: the hottest functions of the window (or of an attachment), refreshed on a
 * terminal with a status line (samples, loss, xsprofd's own cost, GPU busy), once otherwise.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon/ctl/client.h"
#include "daemon/ctl/commands.h"
#include "daemon/ctl/ctl.h"
#include "daemon/ctl/json_get.h"
#include "daemon/ctl/reply_buf.h"
#include "output/model/calltree.h"
#include "output/diff/diff.h"
#include "output/report.h"

/* The report of one profile request (folded) into f: the top n functions by self and total. */
static int top_report(const char *path, size_t n, FILE *f, uint64_t *ret_total, double *ret_span_s)
{
	struct calltree *t = NULL;
	struct reply_buf b = {0};
	size_t bad_line = 0;
	int st, err;
	FILE *in;

	st = ctl_request("GET", path, NULL, &b, NULL);
	if (st)
		return st;
	t = calltree__new();
	/* An empty window answers an empty body: an empty tree, nothing to read. */
	in = b.len ? fmemopen(b.data, b.len, "r") : NULL;
	err = !t || (b.len && !in) ? -ENOMEM : in ? diff__read_folded(in, t, &bad_line) : 0;
	if (in)
		fclose(in);
	if (ret_total)
		*ret_total = t ? calltree__total(t) : 0;
	if (ret_span_s)
		*ret_span_s = b.span_s;
	if (!err && f)
		err = report__write(t, n, strstr(path, "weight=us") ? "us" : "samples", f);
	if (err) {
		fprintf(stderr, "xsprofctl: top: %s%s\n", strerror(-err),
			bad_line ? " (xsprofd sent a malformed profile)" : "");
		st = EXIT_DAEMON_ERROR;
	}
	calltree__free(t);
	free(b.data);
	return st;
}

struct top_status {
	uint64_t samples, lost, kernels;
	double cpu_pct;
	int64_t rss_kib;
	bool gpu;
};

static int top_status(struct top_status *ret)
{
	struct json_object *j, *counters;
	struct reply_buf b;
	int st = ctl_request("GET", "/v1/status", NULL, &b, NULL);

	memset(ret, 0, sizeof(*ret));
	if (st)
		return st;
	j = json_tokener_parse(b.data);
	free(b.data);
	if (!j)
		return EXIT_DAEMON_ERROR;
	counters = jget(j, "counters");
	ret->samples = (uint64_t)jint(counters, "samples");
	ret->lost = (uint64_t)jint(counters, "lost_ring_buffer_full");
	ret->cpu_pct = jnum(jget(j, "cost"), "own_cpu_pct");
	ret->rss_kib = jint(jget(j, "memory"), "rss_bytes") >> 10;
	ret->kernels = (uint64_t)jint(jget(j, "gpu"), "kernels");
	ret->gpu = ret->kernels > 0;
	json_object_put(j);
	return EXIT_OK;
}

static volatile sig_atomic_t top_stop;

static void top_on_signal(int sig)
{
	(void)sig;
	top_stop = 1;
}

/* Seconds until a key; true when it was q (or the input ended). */
static bool top_wait_key(double interval_s, bool tty_in)
{
	struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
	char c;

	if (!tty_in) {
		struct timespec ts = {(time_t)interval_s,
				      (long)((interval_s - (double)(time_t)interval_s) * 1e9)};

		nanosleep(&ts, NULL);
		return false;
	}
	if (poll(&p, 1, (int)(interval_s * 1000)) <= 0)
		return false;
	if (read(STDIN_FILENO, &c, 1) != 1)
		return true;
	return c == 'q' || c == 'Q' || c == 3 /* ^C in raw mode */;
}

/* One screen: a status line, then the report; n shrinks to the terminal's height. */
static int top_screen(const char *path, const char *gpu_path, size_t n, unsigned long since,
		      const struct top_status *prev, struct top_status *cur, double dt)
{
	struct winsize ws;
	char *buf = NULL, now_s[32];
	size_t len = 0, rows_n = n;
	uint64_t gpu_us = 0;
	double gpu_span_s = 0;
	time_t now = time(NULL);
	FILE *m;
	int st;

	if (!ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_row > 12)
		rows_n = (size_t)(ws.ws_row - 10) / 2 < n ? (size_t)(ws.ws_row - 10) / 2 : n;
	st = top_status(cur);
	if (st)
		return st;
	if (cur->gpu && gpu_path && (st = top_report(gpu_path, 0, NULL, &gpu_us, &gpu_span_s)))
		return st;
	m = open_memstream(&buf, &len);
	if (!m)
		return EXIT_DAEMON_ERROR;
	st = top_report(path, rows_n, m, NULL, NULL);
	if (fclose(m) || st) {
		free(buf);
		return st ? st : EXIT_DAEMON_ERROR;
	}
	strftime(now_s, sizeof(now_s), "%H:%M:%S", localtime(&now));
	printf("\033[H\033[2Jxsprof top %s: the last %lu s; q quits\n", now_s, since);
	printf("%.0f samples/s, %llu lost; xsprofd %.2f%% of a CPU, %lld KiB",
	       dt > 0 && cur->samples >= prev->samples ? (double)(cur->samples - prev->samples) / dt
						       : 0.0,
	       (unsigned long long)cur->lost, cur->cpu_pct, (long long)cur->rss_kib);
	/* Over the seconds the window's data covers: whole slices, at times more than asked. */
	if (cur->gpu && gpu_span_s > 0)
		printf("; GPU busy %.1f%% (kernel time over %.0f s), %.0f kernels/s",
		       100.0 * (double)gpu_us / (gpu_span_s * 1e6), gpu_span_s,
		       dt > 0 && cur->kernels >= prev->kernels
			       ? (double)(cur->kernels - prev->kernels) / dt
			       : 0.0);
	printf("\n\n");
	fwrite(buf, 1, len, stdout);
	fflush(stdout);
	free(buf);
	return EXIT_OK;
}

/* Refresh every interval until q, a signal or an error; the terminal is given back as found. */
static int top_live(const char *path, const char *gpu_path, size_t n, unsigned long since,
		    double interval_s)
{
	struct sigaction sa = {.sa_handler = top_on_signal}, old_int, old_term, old_hup;
	struct top_status prev, cur;
	struct termios old_tio, raw;
	bool tty_in = isatty(STDIN_FILENO) && !tcgetattr(STDIN_FILENO, &old_tio);
	struct timespec t0, t1;
	int st = EXIT_OK;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);
	if (tty_in) {
		raw = old_tio;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		tcsetattr(STDIN_FILENO, TCSANOW, &raw);
	}
	fputs("\033[?1049h\033[?25l", stdout); /* the alternate screen, no cursor */
	top_status(&prev);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!top_stop && !st) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		st = top_screen(path, gpu_path, n, since, &prev, &cur,
				(double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
		prev = cur;
		t0 = t1;
		if (!st && top_wait_key(interval_s, tty_in))
			break;
	}
	fputs("\033[?25h\033[?1049l", stdout);
	fflush(stdout);
	if (tty_in)
		tcsetattr(STDIN_FILENO, TCSANOW, &old_tio);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	return st;
}

/*
 * top: the hottest functions of the window (or of an attachment), as xsprofd --report prints
 * them; live on a terminal, refreshing every second until q; once when stdout is not one.
 */
int ctl_top(int argc, char **argv)
{
	static const struct option lo[] = {{"since", required_argument, NULL, 'S'},
					   {"number", required_argument, NULL, 'n'},
					   {"gpu-mode", required_argument, NULL, 'M'},
					   {"pid", required_argument, NULL, 'p'},
					   {"interval", required_argument, NULL, 'i'},
					   {"once", no_argument, NULL, '1'},
					   {}};
	bool live = isatty(STDOUT_FILENO), since_set = false;
	unsigned long since = 300, n = 20;
	struct json_object *opts = json_object_new_object();
	char path[200], gpu_path[256], *end;
	double interval_s = 1.0;
	long pid = 0;
	int c, st = 0;

	optind = 1;
	while (!st && (c = getopt_long(argc, argv, "+S:n:p:", lo, NULL)) != -1) {
		if (c == 'S') {
			since = ctl_parse_duration(optarg);
			since_set = true;
			if (!since)
				st = ctl_usage_error("--since '%s': expected e.g. 90s, 5m or 1h",
						     optarg);
		} else if (c == 'n') {
			n = strtoul(optarg, &end, 10);
			if (!*optarg || *end || !n || n > 1000)
				st = ctl_usage_error("--number '%s': expected 1..1000", optarg);
		} else if (c == 'p') {
			if (!ctl_parse_pid(optarg, &pid))
				st = ctl_usage_error(
					"--pid '%s': expected one process id (an attached "
					"one)",
					optarg);
		} else if (c == 'i') {
			interval_s = strtod(optarg, &end);
			if (!*optarg || *end || !(interval_s >= 0.2 && interval_s <= 3600))
				st = ctl_usage_error("--interval '%s': expected 0.2..3600 seconds",
						     optarg);
		} else if (c == '1') {
			live = false;
		} else if (c != 'M' || !ctl_profile_opt(c, optarg, opts, &st)) {
			st = ctl_usage_error("%s",
					     "top takes --since DURATION, --number N, --pid PID, "
					     "--gpu-mode cpu|gpu|merged, --interval S and --once");
		}
	}
	if (!st && optind < argc)
		st = ctl_usage_error("unexpected argument '%s'", argv[optind]);
	if (st) {
		json_object_put(opts);
		return st;
	}
	/* Live, the last 10 s by default: what is hot now. */
	if (live && !since_set)
		since = 10;
	snprintf(path, sizeof(path), "/v1/profile?since_s=%lu&format=folded", since);
	if (pid)
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "&pid=%ld", pid);
	snprintf(gpu_path, sizeof(gpu_path), "%s&gpu_mode=gpu&weight=us", path);
	if (jget(opts, "gpu_mode"))
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "&gpu_mode=%s",
			 jstr(opts, "gpu_mode", ""));
	json_object_put(opts);
	if (live)
		return top_live(path, gpu_path, n, since, interval_s);
	return top_report(path, n, stdout, NULL, NULL);
}
