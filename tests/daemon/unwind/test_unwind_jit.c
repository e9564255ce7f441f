// SPDX-License-Identifier: Apache-2.0
/*
 * JIT code for real: Node.js (V8) runs a hot JavaScript function under JIT-compiled callers
 * (tests/workloads/jit_hot.js) with --perf-basic-prof, once under xsprofd (command mode) and
 * once under `perf record -g`. V8's code has no unwind tables but keeps frame pointers: the
 * walk must take them there and go on with the tables in node's own code, so that xsprofd's
 * stacks name the hot function (from the perf map) and reach the root as often as perf's, with
 * the JavaScript callers in order. Needs root, BTF, perf and node: fails without them.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/harness.h"

#define PERF_PATH "/usr/bin/perf"
#define NODE_PATH "/usr/bin/node"
/* Seconds of hot work per run: node's start-up (~0.3 s of CPU) stays under 5% of the samples. */
#define SECS "8"

struct shape {
	bool fp;	 /* in: perf's frame-pointer walk (see is_root) */
	uint64_t total;	 /* samples of node (its threads share the comm) */
	uint64_t hot;	 /* ... with hotFib */
	uint64_t rooted; /* ... starting at the root: _start, or clone3 for other threads */
	uint64_t chain;	 /* hotFib's under Stage.run under descend under main */
	int pid;	 /* perf's: node's */
};

/* Frame pointers end the main thread at __libc_start_call_main (glibc's entry code keeps
 * none): perf's root. The tables go on to _start. */
static bool is_root(const char *f, bool fp)
{
	size_t n = strlen(f);

	return !strcmp(f, "_start") || (fp && !strcmp(f, "__libc_start_call_main")) ||
	       (n >= 6 && !strcmp(f + n - 6, "clone3"));
}

/* A JavaScript frame of the perf map: "JS:*name file:line:col" ('*' optimized code, '^'
 * baseline, '~' interpreted); perf script's field stops at the space. */
static bool is_js(const char *f, const char *name)
{
	size_t n = strlen(name);

	return !strncmp(f, "JS:", 3) && f[3] && !strncmp(f + 4, name, n) &&
	       (f[4 + n] == ' ' || !f[4 + n]);
}

/* frames[0..n) root first, without the comm. */
static void shape_add(struct shape *sh, char **frames, int n, uint64_t count)
{
	static const char *const callers[] = {"main", "descend", "run", "hotFib"};
	size_t k = 0;
	int i;

	sh->total += count;
	if (n > 0 && is_root(frames[0], sh->fp))
		sh->rooted += count;
	for (i = 0; i < n && !is_js(frames[i], "hotFib"); i++)
		;
	if (i == n)
		return;
	sh->hot += count;
	for (i = 0; i < n && k < 4; i++)
		if (is_js(frames[i], callers[k]))
			k++;
	if (k == 4)
		sh->chain += count;
}

static void shape_of_folded(const char *path, struct shape *sh)
{
	struct folded f;

	memset(sh, 0, sizeof(*sh));
	folded_load(path, &f);
	for (size_t i = 0; i < f.n; i++) {
		struct folded_line *l = &f.lines[i];

		if (!strcmp(l->frames[0], "node"))
			shape_add(sh, l->frames + 1, l->n - 1, l->count);
	}
	folded_free(&f);
}

/* perf script's blocks: "comm pid/tid" then one "addr sym" line per frame, innermost first. */
static void shape_of_perf(const char *script, struct shape *sh)
{
	char *txt = read_file(script), *save = NULL, *frames[512], comm[64] = "";
	int n = 0, pid, tid;

	cr_assert(txt, "no perf script output");
	memset(sh, 0, sizeof(*sh));
	sh->fp = true;
	for (char *line = strtok_r(txt, "\n", &save);; line = strtok_r(NULL, "\n", &save)) {
		char addr[32], sym[256];

		if (!line || (line[0] != '\t' && line[0] != ' ')) {
			/* A new sample starts: count the last one, root first. */
			if (n && !strcmp(comm, "node")) {
				for (int i = 0; i < n / 2; i++) {
					char *t = frames[i];

					frames[i] = frames[n - 1 - i];
					frames[n - 1 - i] = t;
				}
				shape_add(sh, frames, n, 1);
			}
			for (int i = 0; i < n; i++)
				free(frames[i]);
			n = 0;
			if (!line)
				break;
			if (sscanf(line, "%63s %d/%d", comm, &pid, &tid) != 3)
				comm[0] = '\0';
			else if (!strcmp(comm, "node"))
				sh->pid = pid;
			continue;
		}
		if (sscanf(line, " %31s %255s", addr, sym) == 2 && n < 512 &&
		    strcmp(sym, "[unknown]"))
			frames[n++] = strdup(sym);
	}
	free(txt);
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

static void log_shape(const char *who, const struct shape *sh)
{
	cr_log_info("%s: %llu samples of node, %.1f%% with hotFib, %.1f%% rooted, %.1f%% of "
		    "hotFib's under its callers (main, descend, Stage.run)\n",
		    who, (unsigned long long)sh->total, pct(sh->hot, sh->total),
		    pct(sh->rooted, sh->total), pct(sh->chain, sh->hot));
}

/* perf's frame-pointer stacks: rec_argv records into data (perf record -g). */
static void perf_shape(char **rec_argv, const char *data, struct shape *ret)
{
	const char *script = test_path("jit_perf", ".script"),
		   *perr = test_path("jit_perf", ".err");
	char *script_argv[] = {PERF_PATH, "script", "-i", (char *)data, "-F", "comm,pid,tid,ip,sym",
			       NULL};
	int st;

	st = run(rec_argv, "/dev/null", perr);
	cr_assert_eq(st, 0, "perf record failed (%d): %s", st, read_file(perr));
	st = run(script_argv, script, perr);
	cr_assert_eq(st, 0, "perf script failed (%d): %s", st, read_file(perr));
	shape_of_perf(script, ret);
}

/* The /tmp/perf-PID.map node wrote (--perf-basic-prof). */
static void remove_perf_map(int pid)
{
	char path[64];

	if (pid > 0) {
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", pid);
		unlink(path);
	}
}

/* The number after label in text, or 0. */
static int pid_in(const char *text, const char *label)
{
	const char *at = text ? strstr(text, label) : NULL;
	int pid;

	return at && sscanf(at + strlen(label), "%d", &pid) == 1 ? pid : 0;
}

/* Node and perf there, the environment made plain: extra CA certificates make node's
 * start-up several times longer, options could change how V8 compiles. In the build's test
 * directory: --perf-basic-prof also writes a V8 log (isolate-*-v8.log) where node runs. */
static void need_node_and_perf(void)
{
	cr_assert(!access(NODE_PATH, X_OK), "%s missing: apt-get install nodejs", NODE_PATH);
	cr_assert(!access(PERF_PATH, X_OK), "%s missing: apt-get install linux-perf", PERF_PATH);
	unsetenv("NODE_EXTRA_CA_CERTS");
	unsetenv("NODE_OPTIONS");
	cr_assert(!chdir(XSPROF_TEST_BINARY_DIR), "cannot enter %s", XSPROF_TEST_BINARY_DIR);
}

/* xsprofd's report of a run with argv, which must have walked JIT code by frame pointers. */
/* argv has -v: the walk-end line with the JIT callers is in the full report only. */
static char *xsprofd_run(char **argv)
{
	const char *err = test_path("jit", ".err");
	char *report;
	int st;

	st = run(argv, "/dev/null", err);
	report = read_file(err);
	cr_assert_eq(st, 0, "xsprofd exited %d:\n%s", st, report ? report : "");
	cr_expect(strstr(report, "callers of JIT code: ") &&
			  !strstr(report, "callers of JIT code: 0 by their frame pointer"),
		  "no JIT caller found by its frame pointer:\n%s", report);
	return report;
}

/*
 * The run: `node --perf-basic-prof` started by xsprofd, start-up and warm-up included
 * (each tier of V8's code, code mapped as it runs), and started by perf record -g. The stack
 * scan alone reached the root in ~11% of samples here.
 */
Test(unwind_jit, node_command_as_whole_as_perf, .timeout = 240)
{
	const char *prof = test_path("jit", ".folded"), *data = test_path("jit_perf", ".data");
	char *xs_argv[] = {XSPROFD_PATH,  "-f",		"-v", "-F",	 "499",
			   "-o",	  (char *)prof, "--", NODE_PATH, "--perf-basic-prof",
			   XS_JIT_HOT_JS, SECS,		NULL};
	char *perf_argv[] = {PERF_PATH,
			     "record",
			     "-q",
			     "-g",
			     "-F",
			     "499",
			     "-o",
			     (char *)data,
			     "--",
			     NODE_PATH,
			     "--perf-basic-prof",
			     XS_JIT_HOT_JS,
			     SECS,
			     NULL};
	struct shape ours, theirs;
	char *report;

	need_node_and_perf();
	report = xsprofd_run(xs_argv);
	remove_perf_map(pid_in(report, "(pid "));
	perf_shape(perf_argv, data, &theirs);
	remove_perf_map(theirs.pid);
	shape_of_folded(prof, &ours);
	log_shape("perf record -g", &theirs);
	log_shape("xsprofd", &ours);
	cr_assert(ours.total > 300 && theirs.total > 300, "too few samples: ours %llu, perf %llu",
		  (unsigned long long)ours.total, (unsigned long long)theirs.total);
	cr_expect(ours.hot * 100 >= ours.total * 95, "only %.1f%% of samples hold hotFib",
		  pct(ours.hot, ours.total));
	cr_expect(pct(ours.rooted, ours.total) >= pct(theirs.rooted, theirs.total) - 2,
		  "rooted: ours %.1f%%, perf %.1f%%", pct(ours.rooted, ours.total),
		  pct(theirs.rooted, theirs.total));
	free(report);
}

/*
 * One node process once V8 has compiled its code (the same code for both: tiers and inlining
 * vary from run to run during the warm-up), profiled by perf record -g, then by xsprofd: the
 * hot function under its JavaScript callers in order, main > descend > Stage.run > hotFib.
 */
Test(unwind_jit, node_callers_in_order, .timeout = 240)
{
	const char *prof = test_path("jit", ".folded"), *data = test_path("jit_perf", ".data");
	char pidbuf[16];
	char *node_argv[] = {NODE_PATH, "--perf-basic-prof", XS_JIT_HOT_JS, "30", NULL};
	char *xs_argv[] = {XSPROFD_PATH, "-f", "-v",   "-F", "499",	   "-d",
			   "4",		 "-p", pidbuf, "-o", (char *)prof, NULL};
	char *perf_argv[] = {PERF_PATH,	   "record", "-q",   "-g", "-F",    "499", "-o",
			     (char *)data, "-p",     pidbuf, "--", "sleep", "4",   NULL};
	struct shape ours, theirs;
	char *report;
	pid_t node;

	need_node_and_perf();
	node = spawn(node_argv, "/dev/null", NULL);
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)node);
	sleep(3); /* the hot code compiled (TurboFan) */
	perf_shape(perf_argv, data, &theirs);
	report = xsprofd_run(xs_argv);
	kill(node, SIGTERM);
	wait_exit(node);
	remove_perf_map(node);
	shape_of_folded(prof, &ours);
	log_shape("perf record -g", &theirs);
	log_shape("xsprofd", &ours);
	cr_assert(ours.hot > 200 && theirs.hot > 200, "too few samples: ours %llu, perf %llu",
		  (unsigned long long)ours.hot, (unsigned long long)theirs.hot);
	cr_expect(ours.hot * 100 >= ours.total * 95, "only %.1f%% of samples hold hotFib",
		  pct(ours.hot, ours.total));
	cr_expect(pct(ours.rooted, ours.total) >= pct(theirs.rooted, theirs.total) - 2,
		  "rooted: ours %.1f%%, perf %.1f%%", pct(ours.rooted, ours.total),
		  pct(theirs.rooted, theirs.total));
	cr_expect(pct(ours.chain, ours.hot) >= pct(theirs.chain, theirs.hot) - 2,
		  "hotFib under its JavaScript callers: ours %.1f%%, perf %.1f%%",
		  pct(ours.chain, ours.hot), pct(theirs.chain, theirs.hot));
	free(report);
}
