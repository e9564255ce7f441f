// SPDX-License-Identifier: Apache-2.0
/*
 * xsprofctl's own logic, without a daemon: its argument handling and the errors it prints
 * (exit status 2 and a line that says what to do), the -o checks the format table drives, the
 * GPU report's file names, and how `status` renders a status document.
 */
#include <criterion/criterion.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon/ctl/client.h"
#include "daemon/ctl/commands.h"
#include "daemon/ctl/ctl.h"
#include "daemon/ctl/ctl_internal.h"
#include "daemon/ctl/json_get.h"
#include "daemon/ctl/reply_buf.h"

/* What fn printed on fd (1 or 2) while it ran, and its return value. */
struct out {
	int ret;
	char text[16384];
};

static struct out capture(int fd, int (*fn)(void *ctx), void *ctx)
{
	struct out o = {0};
	FILE *tmp = tmpfile();
	int saved = dup(fd);
	size_t n;

	cr_assert(tmp && saved >= 0);
	fflush(fd == 1 ? stdout : stderr);
	cr_assert_eq(dup2(fileno(tmp), fd), fd);
	o.ret = fn(ctx);
	fflush(fd == 1 ? stdout : stderr);
	dup2(saved, fd);
	close(saved);
	rewind(tmp);
	n = fread(o.text, 1, sizeof(o.text) - 1, tmp);
	o.text[n] = '\0';
	fclose(tmp);
	return o;
}

struct argv_call {
	char **argv;
};

static int run_main(void *ctx)
{
	struct argv_call *c = ctx;
	int argc = 0;

	while (c->argv[argc])
		argc++;
	/* Each call a fresh command line, as each run of the binary is (glibc: 0 resets). */
	optind = 0;
	opterr = 1;
	return ctl_main(argc, c->argv);
}

/* xsprofctl ARGS...: its exit status and what it printed on stderr. */
#define CTL_ERR(...)         \
	capture(2, run_main, \
		&(struct argv_call){.argv = (char *[]){"xsprofctl", __VA_ARGS__, NULL}})

static void expect_usage(struct out o, const char *says)
{
	cr_expect_eq(o.ret, EXIT_USAGE, "exit %d, not 2: %s", o.ret, o.text);
	cr_expect(strstr(o.text, says), "stderr lacks '%s':\n%s", says, o.text);
	cr_expect(strstr(o.text, "Try 'xsprofctl"), "no pointer to --help:\n%s", o.text);
}

Test(ctl_args, commands_and_global_options)
{
	expect_usage(CTL_ERR("--frobnicate"), "unknown option '--frobnicate'");
	expect_usage(CTL_ERR("--timeout", "0", "status"), "--timeout '0': expected seconds");
	expect_usage(CTL_ERR("-s"), "option '-s' needs a value");
	expect_usage(CTL_ERR("explode"), "unknown command 'explode'");
	expect_usage(CTL_ERR("status", "extra"), "status takes no arguments");
	/* Nothing at all: the commands are named. */
	expect_usage(
		capture(2, run_main, &(struct argv_call){.argv = (char *[]){"xsprofctl", NULL}}),
		"a command is needed: status, attach");
}

/* path (under the source tree) read whole into buf. */
static void read_source(const char *path, char *buf, size_t size)
{
	char full[512];
	FILE *f;
	size_t n;

	snprintf(full, sizeof(full), "%s/../%s", XSPROF_TEST_SOURCE_DIR, path);
	f = fopen(full, "re");
	cr_assert(f, "%s not found", full);
	n = fread(buf, 1, size - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/* Every command of the one table is in --help, the man page and the bash completion (its list
 * of commands and its case for the command's own words). */
Test(ctl_args, every_command_is_documented)
{
	static char man[1 << 17], comp[1 << 15], words[512];
	struct out help = capture(
		1, run_main, &(struct argv_call){.argv = (char *[]){"xsprofctl", "--help", NULL}});
	const char *list, *name;
	size_t i;

	read_source("packaging/man/xsprofctl.1", man, sizeof(man));
	read_source("packaging/completion/xsprofctl", comp, sizeof(comp));
	list = strstr(comp, "compgen -W \"status ");
	cr_assert(list, "the completion's list of commands is not found");
	/* " status attach ... ui ": the words between its quotes. */
	snprintf(words, sizeof(words), " %.*s", (int)strcspn(list + 12, "\""), list + 12);
	strcat(words, " ");
	for (i = 0; (name = ctl_command_name(i)); i++) {
		char want[64];

		snprintf(want, sizeof(want), "\n  %s", name);
		cr_expect(strstr(help.text, want), "--help lacks command %s", name);
		snprintf(want, sizeof(want), ".B %s", name);
		cr_expect(strstr(man, want), "xsprofctl.1 lacks command %s", name);
		snprintf(want, sizeof(want), " %s ", name);
		cr_expect(strstr(words, want), "the completion does not offer %s", name);
	}
	cr_expect_geq(i, 12);
}

Test(ctl_args, output_files_follow_the_format_table)
{
	/* The window keeps trees and GPU reports: no Chrome trace, no GPU timeline. */
	expect_usage(CTL_ERR("flamegraph", "-o", "x.json"),
		     "'x.json': json is not answered here; name it .folded, .txt, .svg, "
		     ".callgrind, .pb.gz, .gpu.json or .gpu.txt");
	expect_usage(CTL_ERR("flamegraph", "-o", "x.timeline.json"), "timeline is not answered");
	expect_usage(CTL_ERR("flamegraph"), "an output file is needed: -o FILE (.folded");
	/* A recording has every format. */
	expect_usage(
		CTL_ERR("record", "-d", "1", "-o", "x.dat"),
		"cannot tell the format of 'x.dat' from its extension; name it .folded, .txt, "
		".svg, .callgrind, .json, .pb.gz, .otlp.pb, .xplane.pb, .timeline.json, .gpu.json, "
		".gpu.txt, .job.json, .job.txt or .parts.json");
	expect_usage(CTL_ERR("record", "-d", "1", "--range-domain", "d", "-o", "x.folded"),
		     "--range-domain goes with --group-by range or outer-range");
	expect_usage(CTL_ERR("record", "-p", "1", "-o", "x.folded", "--", "true"),
		     "--pid and -- CMD do not mix");
}

/* record --job and --rank: checked as xsprofd checks them, before anything is asked. */
Test(ctl_args, record_job_and_rank)
{
	expect_usage(CTL_ERR("record", "--rank", "0-64", "-o", "x.folded"),
		     "--rank '0-64': expected ranks and ranges by commas, like 0,2-3 (at most 64 "
		     "ranks)");
	expect_usage(CTL_ERR("record", "--rank", "1,", "-o", "x.folded"), "--rank '1,': expected");
	expect_usage(CTL_ERR("record", "--rank", "", "-o", "x.folded"), "--rank '': expected");
	expect_usage(CTL_ERR("record", "--job", "", "-o", "x.folded"),
		     "--job '': expected a job id as its launcher set it");
}

/* ... and sent as the request's "job" and "rank". */
Test(ctl_args, record_job_and_rank_go_in_the_request)
{
	struct record_args a = {
		.req = json_object_new_object(), .pids = json_object_new_array(), .duration = 10};
	char *argv[] = {"record", "--job", "xsjob-compute", "--rank",
			"0,2-3",  "-o",	   "x.folded",	    NULL};
	struct json_object *v;

	cr_assert_eq(ctl_record_parse(7, argv, &a), 0);
	cr_assert(json_object_object_get_ex(a.req, "job", &v));
	cr_expect_str_eq(json_object_get_string(v), "xsjob-compute");
	cr_assert(json_object_object_get_ex(a.req, "rank", &v));
	cr_expect_str_eq(json_object_get_string(v), "0,2-3");
	json_object_put(a.req);
	json_object_put(a.pids);
}

Test(ctl_args, output_directory_must_exist)
{
	struct out o = CTL_ERR("flamegraph", "-o", "/nonexistent-dir/x.svg");

	cr_expect_neq(o.ret, EXIT_OK);
	cr_expect(strstr(o.text, "/nonexistent-dir"), "the path is not named:\n%s", o.text);
}

/* top (daemon/ctl/top.c): its options, checked before it asks the daemon anything. */
Test(ctl_args, top_options)
{
	expect_usage(CTL_ERR("top", "--number", "0"), "--number '0': expected 1..1000");
	expect_usage(CTL_ERR("top", "-n", "1001"), "--number '1001': expected 1..1000");
	expect_usage(CTL_ERR("top", "--interval", "0.1"),
		     "--interval '0.1': expected 0.2..3600 seconds");
	expect_usage(CTL_ERR("top", "--since", "soon"), "--since 'soon': expected e.g. 90s");
	expect_usage(CTL_ERR("top", "--pid", "-3"), "--pid '-3': expected one process id");
	expect_usage(CTL_ERR("top", "--gpu-mode", "both"),
		     "--gpu-mode 'both': expected cpu, gpu or merged");
	expect_usage(CTL_ERR("top", "--weight", "us"), "top takes --since DURATION");
	expect_usage(CTL_ERR("top", "--once", "extra"), "unexpected argument 'extra'");
}

Test(ctl_args, report_file_names)
{
	cr_expect_str_eq(ctl_report_format("a.gpu.json"), "gpu-report");
	cr_expect_str_eq(ctl_report_format("A.GPU.JSON"), "gpu-report");
	cr_expect_str_eq(ctl_report_format("a.gpu.txt"), "gpu-text");
	cr_expect_str_eq(ctl_report_format("a.txt"), "gpu-text");
	cr_expect_null(ctl_report_format("a.svg"));
	cr_expect_null(ctl_report_format("a.json"));
}

Test(ctl_daemon, unreachable_daemon_is_said_plainly)
{
	struct out o = CTL_ERR("-s", "/nonexistent-dir/xsprofd.sock", "-t", "1", "status");

	cr_expect_eq(o.ret, EXIT_UNREACHABLE, "exit %d: %s", o.ret, o.text);
	cr_expect(strstr(o.text, "/nonexistent-dir/xsprofd.sock"), "socket not named:\n%s", o.text);
}

static int render_status(void *ctx)
{
	struct json_object *j = json_tokener_parse(ctx);

	cr_assert_not_null(j);
	ctl_status_print(j);
	json_object_put(j);
	return 0;
}

Test(ctl_render, status_lines_say_the_figures)
{
	const char *doc =
		"{\"version\":\"9.9\",\"pid\":42,\"uptime_s\":7,\"freq_hz\":19,\"cpus\":2,"
		"\"window_s\":300,\"counters\":{\"samples\":1000,\"kept\":990,"
		"\"lost_ring_buffer_full\":3,\"malformed_records\":0},"
		"\"store\":{\"samples\":990,\"slices\":3,\"bytes\":4096,\"cap_bytes\":65536,"
		"\"dropped_slices\":0},\"memory\":{\"rss_bytes\":33554432},"
		"\"unwind\":{\"walks_with_tables\":10,\"walks_frame_pointers_only\":5,"
		"\"files_without_table\":12,\"files_without_table_named\":["
		"{\"path\":\"/opt/a.so\",\"why\":\"no .eh_frame section\"}]},"
		"\"gpu\":{\"connections\":2,\"records_held\":77,\"records_evicted\":1},"
		"\"attached\":[1234],"
		"\"recordings\":[{\"id\":5,\"state\":\"done\",\"left_out_other_users\":"
		"{\"samples\":4,\"offcpu\":0,\"cuda_calls\":0,\"launches\":0},\"note\":\"ok\"}]}";
	static const char *const says[] = {
		"xsprofd 9.9, pid 42, up 7 s\n",
		"sampling: 19 Hz on 2 CPUs; 1000 samples, 990 kept, 3 lost",
		"window: 300 s kept; 990 samples in 3 slices, 4 of 64 KiB",
		"memory: 32768 KiB resident",
		"unwind: no table for /opt/a.so (no .eh_frame section): frame pointers there\n"
		"unwind: and 11 more files without a table\n",
		"gpu socket: 2 connections",
		"77 records held, 1 evicted",
		"attached: 1234\n",
		"recording 5: done; left out as another user's: 4 samples, 0 off-CPU, 0 CUDA calls, "
		"0 launches; ok\n",
	};
	struct out o = capture(1, render_status, (void *)doc);

	for (size_t i = 0; i < sizeof(says) / sizeof(says[0]); i++)
		cr_expect(strstr(o.text, says[i]), "no '%s' in:\n%s", says[i], o.text);
	/* Parts the daemon did not send print nothing, not zeros. */
	cr_expect_null(strstr(o.text, "python:"), "%s", o.text);
	cr_expect_null(strstr(o.text, "cuda:"), "%s", o.text);
}

Test(ctl_render, a_status_missing_everything_still_prints)
{
	struct out o = capture(1, render_status, "{}");

	cr_expect(strstr(o.text, "xsprofd ?, pid 0, up 0 s\n"), "%s", o.text);
}

static int save_as_json(void *ctx)
{
	char data[] = "a;b 3\n";
	struct reply_buf b = {.data = data, .len = strlen(data)};
	int st;

	ctl_opts()->json_out = true;
	st = ctl_save(ctx, &b, "folded");
	ctl_opts()->json_out = false;
	return st;
}

/* --json: what was written, as a JSON object whatever the file's name holds. */
Test(ctl_render, json_save_line_is_json)
{
	char dir[] = "/tmp/xsprof-ctl-XXXXXX", path[128];
	struct json_object *j;
	struct out o;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a \"quoted\" \\name.folded", dir);
	o = capture(1, save_as_json, path);
	cr_expect_eq(o.ret, EXIT_OK, "%s", o.text);
	j = json_tokener_parse(o.text);
	cr_assert_not_null(j, "not JSON: %s", o.text);
	cr_expect_str_eq(jstr(j, "output", ""), path);
	cr_expect_eq(jint(j, "bytes"), 6);
	cr_expect_eq(access(path, R_OK), 0, "%s not written", path);
	json_object_put(j);
	unlink(path);
	rmdir(dir);
}
