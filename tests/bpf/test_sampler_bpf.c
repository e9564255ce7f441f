// SPDX-License-Identifier: Apache-2.0
/*
 * Integration tests: the real xsprofd loads the real BPF programs into this kernel and profiles
 * workloads built by the tests, whose true CPU split they print. Needs root and a kernel with
 * BTF; without them these tests fail (they do not skip).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/harness.h"

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};

	while (nanosleep(&ts, &ts))
		;
}

/* Start xs_split; returns its pid; its stdout (the truth) goes to *ret_out. */
static pid_t start_split(const char *a_us, const char *b_us, const char *secs, const char *nthr,
			 const char **ret_out)
{
	char *argv[] = {XS_SPLIT_PATH, (char *)a_us, (char *)b_us,
			(char *)secs,  (char *)nthr, NULL};

	*ret_out = test_path("split", ".out");
	return spawn(argv, *ret_out, NULL);
}

static double true_alpha_share(const char *out_path)
{
	unsigned long long a = 0, b = 0;
	char *txt = read_file(out_path);

	cr_assert(txt && sscanf(txt, "alpha_ns %llu beta_ns %llu", &a, &b) == 2,
		  "workload printed no result: %s", txt ? txt : "(nothing)");
	free(txt);
	cr_assert(a + b > 0);
	return (double)a / (double)(a + b);
}

/* Profile pid for secs at hz into a folded file; asserts xsprofd succeeded. */
static const char *profile_pid(pid_t pid, const char *secs, const char *hz, const char **ret_err)
{
	const char *out = test_path("profile", ".folded");
	char pidbuf[16];
	char *argv[] = {XSPROFD_PATH, "--foreground", "--duration", (char *)secs,
			"--freq",     (char *)hz,     "--pid",	    pidbuf,
			"--output",   (char *)out,    NULL};
	const char *err = test_path("xsprofd", ".err");
	int st;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	st = run(argv, NULL, err);
	if (st) {
		char *msg = read_file(err);

		cr_assert_fail("xsprofd exited %d:\n%s", st, msg ? msg : "");
	}
	if (ret_err)
		*ret_err = err;
	return out;
}

static void check_split(const char *hz, const char *profile_secs, const char *work_secs)
{
	const char *truth_path, *prof;
	struct folded f;
	pid_t pid = start_split("1300", "3900", work_secs, "2", &truth_path);
	uint64_t a, b;
	double share, truth;

	prof = profile_pid(pid, profile_secs, hz, NULL);
	cr_assert_eq(wait_exit(pid), 0);
	truth = true_alpha_share(truth_path);
	folded_load(prof, &f);
	a = folded_count_with(&f, "xs_work_alpha");
	b = folded_count_with(&f, "xs_work_beta");
	cr_assert(a + b > 0, "no samples of the workload's functions (%llu samples in all)",
		  (unsigned long long)f.total);
	share = (double)a / (double)(a + b);
	cr_log_info("%s Hz: alpha %.2f%% profiled, %.2f%% true (%llu samples)\n", hz, share * 100,
		    truth * 100, (unsigned long long)(a + b));
	cr_expect(fabs(share - truth) < 0.03, "alpha share %.2f%% vs true %.2f%% (%llu samples)",
		  share * 100, truth * 100, (unsigned long long)(a + b));
	/* Nothing but the workload: the pid filter keeps every other process out. */
	for (size_t i = 0; i < f.n; i++)
		cr_expect_str_eq(f.lines[i].frames[0], "xs_split", "foreign sample: %s",
				 f.lines[i].frames[0]);
	/* Frame pointers: the workload's own frames are named and chained to their callers.
	 * A sample on a function's first instruction (frame not built yet) skips its caller in
	 * any frame-pointer walk, so a few may miss xs_worker: 99% must have it. */
	uint64_t chained = 0;
	for (size_t i = 0; i < f.n; i++) {
		struct folded_line *l = &f.lines[i];
		int ia = folded_find(l, "xs_work_alpha"), ib = folded_find(l, "xs_work_beta");
		int iw = folded_find(l, "xs_worker"), at = ia >= 0 ? ia : ib;

		if (at < 0)
			continue;
		if (iw >= 0 && iw == at - 1)
			chained += l->count;
		/* burn() calls clock_gettime; libc's wrapper and the vDSO keep no frame
		 * pointer, so a walk from inside them can skip burn itself. */
		if (at + 1 < l->n && strstr(l->frames[at + 1], "_[k]") == NULL)
			cr_expect(!strcmp(l->frames[at + 1], "burn") ||
					  strstr(l->frames[at + 1], "clock_gettime") ||
					  /* its PLT stub, which no symbol covers */
					  !strncmp(l->frames[at + 1], "xs_split+0x", 11) ||
					  !strncmp(l->frames[at + 1], "[vdso]", 6),
				  "unexpected callee '%s' of %s", l->frames[at + 1], l->frames[at]);
	}
	cr_expect(chained * 100 >= (a + b) * 99, "only %llu of %llu samples chain to xs_worker",
		  (unsigned long long)chained, (unsigned long long)(a + b));
	folded_free(&f);
}

Test(sampler_bpf, split_share_999hz, .timeout = 120)
{
	check_split("999", "4", "5");
}

Test(sampler_bpf, split_share_99hz, .timeout = 120)
{
	/* Fewer samples at 99 Hz: a longer run keeps the statistical error well under 3 points. */
	check_split("99", "10", "11");
}

Test(sampler_bpf, syscall_kernel_frames_under_user_frames, .timeout = 120)
{
	char *argv[] = {XS_SYSCALLS_PATH, "4", NULL};
	pid_t pid = spawn(argv, "/dev/null", NULL);
	const char *prof = profile_pid(pid, "3", "999", NULL);
	struct folded f;
	uint64_t reader = 0, with_kernel = 0, with_read = 0, with_caller = 0;

	cr_assert_eq(wait_exit(pid), 0);
	folded_load(prof, &f);
	for (size_t i = 0; i < f.n; i++) {
		struct folded_line *l = &f.lines[i];
		int ir = folded_find(l, "xs_sys_read_block");
		bool k = false, rd = false;

		if (ir < 0)
			continue;
		/* A sample on the leaf's first or last instruction (frame not yet made, or
		 * already popped) skips its caller in any frame-pointer walk: rare, not never. */
		if (!strcmp(l->frames[ir - 1], "xs_sys_reader"))
			with_caller += l->count;
		reader += l->count;
		for (int j = ir + 1; j < l->n; j++) {
			size_t len = strlen(l->frames[j]);

			if (len > 4 && !strcmp(l->frames[j] + len - 4, "_[k]")) {
				k = true;
				if (strstr(l->frames[j], "read"))
					rd = true;
			} else {
				/* User frames must all come before the kernel ones. */
				cr_expect(!k, "user frame '%s' under a kernel frame", l->frames[j]);
			}
		}
		with_kernel += k ? l->count : 0;
		with_read += rd ? l->count : 0;
	}
	cr_log_info("xs_sys_read_block: %llu samples, %llu in the kernel, %llu in a *read* kernel "
		    "function\n",
		    (unsigned long long)reader, (unsigned long long)with_kernel,
		    (unsigned long long)with_read);
	cr_assert(reader > 500, "too few samples of xs_sys_read_block: %llu",
		  (unsigned long long)reader);
	/* Reading 64 KiB of /dev/zero is almost all kernel time. */
	cr_expect(with_kernel * 2 > reader, "only %llu of %llu samples show kernel frames",
		  (unsigned long long)with_kernel, (unsigned long long)reader);
	cr_expect(with_read * 4 > reader, "only %llu of %llu samples in a read function",
		  (unsigned long long)with_read, (unsigned long long)reader);
	cr_expect(with_caller * 100 >= reader * 95, "only %llu of %llu samples show the caller",
		  (unsigned long long)with_caller, (unsigned long long)reader);
	folded_free(&f);
}

Test(sampler_bpf, whole_system_sees_every_process_and_filter_keeps_others_out, .timeout = 120)
{
	/* Long enough to outlive both runs, each with its start-up, on a busy machine. */
	char *sys_argv[] = {XS_SYSCALLS_PATH, "8", NULL};
	const char *truth, *all = test_path("all", ".folded"), *err = test_path("all", ".err");
	pid_t split = start_split("1000", "1000", "4", "1", &truth);
	pid_t sys = spawn(sys_argv, "/dev/null", NULL);
	char *argv[] = {XSPROFD_PATH, "-f", "-d", "2", "-F", "499", "-o", (char *)all, NULL};
	const char *filtered;
	struct folded f;

	cr_assert_eq(run(argv, NULL, err), 0, "%s", read_file(err));
	filtered = profile_pid(sys, "1.5", "499", NULL);
	cr_assert_eq(wait_exit(split), 0);
	kill(sys, SIGTERM); /* done with it */
	wait_exit(sys);

	folded_load(all, &f);
	cr_expect(folded_count_with(&f, "xs_work_alpha") > 0, "system-wide missed xs_split");
	cr_expect(folded_count_with(&f, "xs_sys_reader") > 0, "system-wide missed xs_syscalls");
	folded_free(&f);

	folded_load(filtered, &f);
	cr_expect(folded_count_with(&f, "xs_sys_reader") > 0);
	cr_expect_eq(folded_count_with(&f, "xs_work_alpha"), 0, "filtered profile has xs_split");
	for (size_t i = 0; i < f.n; i++)
		cr_expect_str_eq(f.lines[i].frames[0], "xs_syscalls");
	folded_free(&f);
}

/* Pull "N" out of "...<key> N..." in xsprofd's report. */
static unsigned long long report_value(const char *text, const char *key)
{
	const char *p = strstr(text, key);

	cr_assert(p, "report lacks '%s':\n%s", key, text);
	return strtoull(p + strlen(key), NULL, 10);
}

Test(sampler_bpf, full_ring_buffer_is_counted_not_silent, .timeout = 120)
{
	const char *truth, *out = test_path("stall", ".folded"), *err = test_path("stall", ".err");
	pid_t split = start_split("500", "500", "5", "2", &truth);
	char *argv[] = {XSPROFD_PATH,	      "-f", "-d", "3",	       "-F", "10000",
			"--ring-buffer-size", "1",  "-o", (char *)out, NULL};
	pid_t prof = spawn(argv, NULL, err);
	unsigned long long samples, idle, other, kept, lost;
	char *text;
	struct folded f;

	/* Stop the reader once it samples: at 10 kHz on every CPU the 1 MiB ring fills within
	 * the second. Loading can take seconds on a busy machine; the 3 s count from sampling. */
	cr_assert(wait_for_text(err, "sampling all CPUs", 60), "xsprofd never started sampling: %s",
		  read_file(err));
	sleep_s(0.3);
	kill(prof, SIGSTOP);
	sleep_s(1.2);
	kill(prof, SIGCONT);
	cr_assert_eq(wait_exit(prof), 0, "%s", read_file(err));
	wait_exit(split);

	text = read_file(err);
	samples = report_value(text, "at 10000 Hz: ");
	idle = report_value(text, "samples, ");
	other = report_value(text, " idle (left out; --include-idle keeps them), ");
	kept = report_value(text, "of other processes, ");
	lost = report_value(text, "lost: ");
	cr_log_info("samples %llu idle %llu kept %llu lost %llu\n", samples, idle, kept, lost);
	cr_expect(lost > 0, "stalled reader lost nothing? %s", text);
	cr_expect(strstr(text, "raise --ring-buffer-size") != NULL, "no advice given:\n%s", text);
	/* Every sample is accounted for: kept, idle, other processes or lost. */
	cr_expect_eq(samples, idle + other + kept + lost, "%s", text);
	folded_load(out, &f);
	cr_expect_eq(f.total, kept, "profile holds %llu, report says %llu kept",
		     (unsigned long long)f.total, kept);
	folded_free(&f);
	free(text);
}

/* Lines of a report that are not warnings. */
static unsigned int plain_lines(const char *text)
{
	unsigned int n = 0;

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		n += !!strncmp(l, "xsprofd: warning:", 17) && *l != '\n';
	return n;
}

/* The end-of-run report is for a person: what was captured, what was lost and the files, in a
 * few lines; -v adds the internals (walks, tables, own costs). */
Test(sampler_bpf, end_report_is_short_and_v_gives_the_rest, .timeout = 120)
{
	const char *truth, *out = test_path("short", ".folded"), *err = test_path("short", ".err");
	pid_t split = start_split("500", "500", "6", "1", &truth);
	char pidbuf[16];
	char *argv[] = {XSPROFD_PATH, "-f", "-d", "1", "-p", pidbuf, "-o", (char *)out, NULL, NULL};
	char *text, *full;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)split);
	cr_assert_eq(run(argv, NULL, err), 0, "%s", read_file(err));
	text = read_file(err);
	cr_assert(text);
	cr_log_info("default report:\n%s", text);
	cr_expect(strstr(text, " kept\n"), "no samples line:\n%s", text);
	cr_expect(strstr(text, "distinct stacks from 1 processes"), "no stacks line:\n%s", text);
	cr_expect(strstr(text, "wrote ") && strstr(text, out), "no file named:\n%s", text);
	cr_expect(!strstr(text, "user stack walks") && !strstr(text, "own CPU") &&
			  !strstr(text, "BPF cost") && !strstr(text, "first samples"),
		  "internals in the default report:\n%s", text);
	/* The start line, samples, stacks, perhaps truncated stacks and perhaps a loss, the file. */
	cr_expect_leq(plain_lines(text), 6, "%u lines:\n%s", plain_lines(text), text);

	argv[8] = argv[7];
	argv[7] = argv[6];
	argv[6] = argv[5];
	argv[5] = argv[4];
	argv[4] = argv[3];
	argv[3] = argv[2];
	argv[2] = "-v";
	cr_assert_eq(run(argv, NULL, err), 0, "%s", read_file(err));
	full = read_file(err);
	cr_assert(full);
	cr_expect(strstr(full, "user stack walks") && strstr(full, "own CPU") &&
			  strstr(full, "BPF cost") && strstr(full, "first samples"),
		  "-v lacks the internals:\n%s", full);
	cr_expect(strstr(full, "distinct stacks from 1 processes"), "%s", full);
	cr_expect_gt(plain_lines(full), plain_lines(text) + 4);
	kill(split, SIGTERM);
	wait_exit(split);
	free(text);
	free(full);
}

Test(sampler_bpf, ctrl_c_still_writes_the_profile, .timeout = 60)
{
	const char *truth, *out = test_path("sigint", ".svg"), *err = test_path("sigint", ".err");
	pid_t split = start_split("1000", "1000", "3", "1", &truth);
	char *argv[] = {XSPROFD_PATH, "-f", "-F", "999", "-o", (char *)out, NULL};
	pid_t prof = spawn(argv, NULL, err);
	char *svg;

	sleep_s(1.5);
	kill(prof, SIGINT);
	cr_assert_eq(wait_exit(prof), 0, "%s", read_file(err));
	wait_exit(split);
	svg = read_file(out);
	cr_assert(svg, "no SVG written");
	cr_expect(strstr(svg, "<svg") && strstr(svg, "xs_work_alpha"), "SVG lacks the workload");
	free(svg);
}

static void expect_cli_error(char *argv[], int status, const char *message)
{
	const char *err = test_path("cli", ".err");
	int st = run(argv, NULL, err);
	char *text = read_file(err);

	cr_expect_eq(st, status, "exit %d, wanted %d: %s", st, status, text);
	cr_expect(text && strstr(text, message), "wanted '%s' in:\n%s", message, text);
	free(text);
}

Test(cli, errors_say_what_to_do, .timeout = 60)
{
	char *nopid[] = {XSPROFD_PATH, "-f", "-d", "1", "-p", "12ab", "-o", "x.folded", NULL};
	char *gone[] = {XSPROFD_PATH, "-f", "-d", "1", "-p", "4194000", "-o", "x.folded", NULL};
	char *badflag[] = {XSPROFD_PATH, "--frobnicate", NULL};
	char *badfreq[] = {XSPROFD_PATH, "-f", "-F", "0", "-o", "x.folded", NULL};
	char *badext[] = {XSPROFD_PATH, "-f", "-o", "x.dat", NULL};
	char *noout[] = {XSPROFD_PATH, "-f", "-d", "1", NULL};
	char *nodir[] = {XSPROFD_PATH, "-f", "-d", "1", "-o", "/nonexistent/dir/x.svg", NULL};

	expect_cli_error(nopid, 2, "--pid '12ab': not a process id");
	expect_cli_error(gone, 1, "--pid 4194000: no such process");
	expect_cli_error(badflag, 2, "unknown option '--frobnicate'");
	expect_cli_error(badfreq, 2, "--freq '0'");
	expect_cli_error(
		badext, 2,
		"name it .folded, .txt, .svg, .callgrind, .json, .pb.gz, .otlp.pb, .xplane.pb, "
		".timeline.json, .gpu.json, .gpu.txt, .job.json, .job.txt or .parts.json, or pass "
		"--format");
	expect_cli_error(noout, 2, "needs --output");
	expect_cli_error(nodir, 1, "create the directory");
}

Test(cli, not_root_is_told_to_use_sudo, .timeout = 60)
{
	const char *err = test_path("noroot", ".err");
	char *argv[] = {"/usr/bin/setpriv",
			"--reuid=65534",
			"--regid=65534",
			"--clear-groups",
			"--inh-caps=-all",
			XSPROFD_PATH,
			"-f",
			"-d",
			"1",
			"-o",
			"/tmp/x.folded",
			NULL};
	char *text;

	cr_assert_eq(run(argv, NULL, err), 1);
	text = read_file(err);
	cr_expect(text && strstr(text, "needs root"), "%s", text);
	free(text);
}

Test(sampler_bpf, debug_info_adds_source_lines_and_inlined_frames, .timeout = 120)
{
	const char *truth, *out = test_path("dbg", ".folded"), *err = test_path("dbg", ".err");
	pid_t pid = start_split("1000", "1000", "3", "1", &truth);
	char pidbuf[16];
	char *argv[] = {XSPROFD_PATH,	"-f", "-d",   "2",  "-F",	 "999",
			"--debug-info", "-p", pidbuf, "-o", (char *)out, NULL};
	struct folded f;
	uint64_t with_line = 0, inlined = 0, burn = 0;

	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
	cr_assert_eq(run(argv, NULL, err), 0, "%s", read_file(err));
	cr_assert_eq(wait_exit(pid), 0);
	folded_load(out, &f);
	for (size_t i = 0; i < f.n; i++) {
		struct folded_line *l = &f.lines[i];

		for (int j = 1; j < l->n; j++) {
			/* The workload is built with -g: its frames carry split.c:LINE. */
			if (!strncmp(l->frames[j], "xs_work_alpha (split.c:", 23))
				with_line += l->count;
			if (!strncmp(l->frames[j], "burn (split.c:", 14)) {
				burn += l->count;
				/* xs_spin() is always inlined into burn: its own frame. */
				if (j + 1 < l->n &&
				    !strncmp(l->frames[j + 1], "xs_spin (split.c:", 17))
					inlined += l->count;
			}
		}
	}
	cr_log_info("debug-info: %llu samples in xs_work_alpha with lines, %llu in burn, %llu in "
		    "inlined xs_spin\n",
		    (unsigned long long)with_line, (unsigned long long)burn,
		    (unsigned long long)inlined);
	cr_expect(with_line > 100, "xs_work_alpha has no source line");
	cr_expect(burn > 100, "burn has no source line");
	/* Nearly all of burn's time is in its inlined loop. */
	cr_expect(inlined * 2 > burn, "only %llu of %llu burn samples show the inlined xs_spin",
		  (unsigned long long)inlined, (unsigned long long)burn);
	folded_free(&f);
}
