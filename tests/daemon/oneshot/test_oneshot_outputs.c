// SPDX-License-Identifier: Apache-2.0
/*
 * One-shot mode writes every format: the real xsprofd profiles xs_split in command mode, and
 * the Chrome trace and the pprof profile are read back by their own tools (python3's json,
 * go tool pprof). Needs root and a kernel with BTF, python3 and go: fails without them.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/harness.h"

/* Run a shell command; its stdout into a file that is returned (caller frees). */
static char *shell(const char *cmd, int *ret_status)
{
	const char *out = test_path("shell", ".out");
	char *full;
	int st;

	cr_assert(asprintf(&full, "%s > %s 2>&1", cmd, out) > 0);
	st = system(full);
	free(full);
	*ret_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
	return read_file(out);
}

/* Launch xs_split under xsprofd with the given outputs; asserts xsprofd succeeded. */
static void profile_split_with(char *const outputs[], int n, const char *flag, const char *arg)
{
	char *argv[32] = {XSPROFD_PATH, "--foreground", "--freq", "199"};
	const char *err = test_path("xsprofd", ".err");
	int argc = 4, st;

	if (flag)
		argv[argc++] = (char *)flag;
	if (flag && arg)
		argv[argc++] = (char *)arg;
	for (int i = 0; i < n; i++) {
		argv[argc++] = "--output";
		argv[argc++] = outputs[i];
	}
	argv[argc++] = "--";
	argv[argc++] = XS_SPLIT_PATH;
	argv[argc++] = "1300";
	argv[argc++] = "3900";
	argv[argc++] = "1.5";
	argv[argc++] = "2";
	argv[argc] = NULL;
	st = run(argv, NULL, err);
	if (st) {
		char *msg = read_file(err);

		cr_assert_fail("xsprofd exited %d:\n%s", st, msg ? msg : "");
	}
}

static void profile_split(char *const outputs[], int n)
{
	profile_split_with(outputs, n, NULL, NULL);
}

Test(oneshot_outputs, json_pprof_and_folded_from_one_run)
{
	char *json = (char *)test_path("split", ".json"),
	     *pb = (char *)test_path("split", ".pb.gz"),
	     *fo = (char *)test_path("split", ".folded");
	char *outs[] = {json, pb, fo}, *cmd, *txt;
	struct folded f;
	int st;

	cr_assert(XS_PYTHON3_PATH[0], "python3 was not found at configure time");
	cr_assert(XS_GO_PATH[0], "go was not found at configure time (install golang-go)");
	profile_split(outs, 3);

	/* The trace parses, and the samples of xs_split's threads name xs_work_alpha. */
	cr_assert(
		asprintf(
			&cmd,
			"%s -c 'import json,sys\n"
			"d = json.load(open(sys.argv[1]))\n"
			"ev = d[\"traceEvents\"] if isinstance(d, dict) else d\n"
			"n = sum(1 for e in ev if e.get(\"ph\") in (\"X\", \"B\", \"P\", \"i\") and "
			"\"xs_work_alpha\" in json.dumps(e))\n"
			"print(\"alpha_events\", n)' %s",
			XS_PYTHON3_PATH, json) > 0);
	txt = shell(cmd, &st);
	free(cmd);
	cr_assert(!st, "the Chrome trace does not parse:\n%s", txt ? txt : "");
	cr_assert(txt && strstr(txt, "alpha_events ") &&
			  atoi(strstr(txt, "alpha_events ") + 13) > 0,
		  "no event names xs_work_alpha:\n%s", txt ? txt : "");
	free(txt);

	/* pprof reads the profile and lists xs_work_alpha. */
	cr_assert(asprintf(&cmd, "HOME=${HOME:-/tmp} %s tool pprof -top -nodecount=1000 %s",
			   XS_GO_PATH, pb) > 0);
	txt = shell(cmd, &st);
	free(cmd);
	cr_assert(!st, "go tool pprof failed:\n%s", txt ? txt : "");
	cr_assert(txt && strstr(txt, "xs_work_alpha"), "pprof does not list xs_work_alpha:\n%s",
		  txt ? txt : "");
	free(txt);

	/* The folded output is still plain CPU samples. */
	folded_load(fo, &f);
	cr_assert(folded_count_with(&f, "xs_work_alpha") > 0);
	cr_assert(folded_count_with(&f, "xs_work_beta") > folded_count_with(&f, "xs_work_alpha"));
	folded_free(&f);
}

Test(oneshot_outputs, pprof_alone)
{
	char *pb = (char *)test_path("alone", ".pb.gz"), *outs[] = {pb}, *cmd, *txt;
	int st;

	profile_split(outs, 1);
	cr_assert(asprintf(&cmd, "HOME=${HOME:-/tmp} %s tool pprof -top -nodecount=1000 %s",
			   XS_GO_PATH, pb) > 0);
	txt = shell(cmd, &st);
	free(cmd);
	cr_assert(!st && txt && strstr(txt, "xs_work_beta"), "pprof:\n%s", txt ? txt : "");
	free(txt);
}

/*
 * With --debug-info the pprof has what stores and `go tool pprof` need to symbolize and merge:
 * the workload's file as a mapping with its build id, its functions at addresses inside it,
 * source lines (-list shows xs_work_beta's body), and the kernel as [kernel.kallsyms].
 */
Test(oneshot_outputs, pprof_mappings_addresses_and_lines)
{
	char *pb = (char *)test_path("lines", ".pb.gz"), *outs[] = {pb}, *cmd, *txt, *bid;
	char want[256];
	int st;

	profile_split_with(outs, 1, "--debug-info", NULL);
	cr_assert(asprintf(&cmd, "readelf -n %s | awk '/Build ID/ {printf \"%%s\", $3}'",
			   XS_SPLIT_PATH) > 0);
	bid = shell(cmd, &st);
	free(cmd);
	cr_assert(!st && bid && strlen(bid) == 40, "no build id: %s", bid ? bid : "");
	cr_assert(asprintf(&cmd, "HOME=${HOME:-/tmp} %s tool pprof -raw %s", XS_GO_PATH, pb) > 0);
	txt = shell(cmd, &st);
	free(cmd);
	cr_assert(!st && txt, "pprof -raw:\n%s", txt ? txt : "");
	snprintf(want, sizeof(want), " %s %s [FN][FL][LN]", XS_SPLIT_PATH, bid);
	cr_expect(strstr(txt, want), "no mapping '%s' in:\n%s", want, txt);
	cr_expect(strstr(txt, " [kernel.kallsyms] "), "no kernel mapping in:\n%s", txt);
	cr_expect(strstr(txt, " xs_work_beta ") && strstr(txt, "split.c:"),
		  "xs_work_beta has no source line:\n%s", txt);
	cr_expect(!strstr(txt, "0x0 M=1 xs_work"), "the workload's frames have addresses:\n%s",
		  txt);
	free(txt);
	free(bid);

	/* From /: pprof trims a source path at the name of the directory it runs in. */
	cr_assert(asprintf(&cmd, "cd / && HOME=${HOME:-/tmp} %s tool pprof -list xs_work_beta %s",
			   XS_GO_PATH, pb) > 0);
	txt = shell(cmd, &st);
	free(cmd);
	cr_expect(!st && txt && strstr(txt, "ROUTINE") && strstr(txt, "uint64_t used = burn(ns);"),
		  "pprof -list shows no source:\n%s", txt ? txt : "");
	free(txt);
}

#ifdef XS_USDT_GPU_PATH
/* Weight of the folded lines that end in leaf, all of which must pass through frame. */
static uint64_t leaf_weight(const char *txt, const char *frame, const char *leaf)
{
	uint64_t total = 0;
	char *copy = strdup(txt), *save = NULL;

	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(l, ' '), *f;

		if (l[0] == '#' || !sp)
			continue;
		*sp = '\0';
		if (strlen(l) < strlen(leaf) || strcmp(l + strlen(l) - strlen(leaf), leaf))
			continue;
		f = strstr(l, frame);
		cr_assert(f && f[strlen(frame)] == ';', "%s not under %s: %s", leaf, frame, l);
		total += strtoull(sp + 1, NULL, 10);
	}
	free(copy);
	return total;
}

Test(oneshot_outputs, gpu_kernels_under_their_launching_frames)
{
	const char *fo = test_path("gpu", ".folded"), *err = test_path("gpu", ".err");
	const char *sock = test_path("cupti", ".sock");
	char *argv[] = {XSPROFD_PATH, "--foreground", "--weight", "us", "--cupti-socket",
			(char *)sock, "--output",     (char *)fo, "--", XS_USDT_GPU_PATH,
			NULL};
	char *txt, *log;
	int st = run(argv, NULL, err);

	log = read_file(err);
	cr_assert(!st, "xsprofd exited %d:\n%s", st, log ? log : "");
	cr_assert(log && strstr(log, "correlation (auto): 12 matched"), "xsprofd said:\n%s",
		  log ? log : "");
	txt = read_file(fo);
	cr_assert(txt && strstr(txt, "# xsprof folded stacks: mode merged, weights in us"), "%s",
		  txt ? txt : "");
	/* 7 kernels of 1 ms and 5 of 2 ms, in microseconds. */
	cr_assert_eq(leaf_weight(txt, "xs_gpu_alpha_site", ";[gpu] xs_kernel_alpha"), 7000, "%s",
		     txt);
	cr_assert_eq(leaf_weight(txt, "xs_gpu_beta_site", ";[gpu] xs_kernel_beta"), 10000, "%s",
		     txt);
	free(txt);
	free(log);
}
#else
/* Never compiled away quietly: without the CUDA toolkit at configure time the test is missing. */
Test(oneshot_outputs, gpu_join_end_to_end_was_built)
{
	cr_assert_fail("xs_usdt_gpu was not built (no CUDA toolkit at configure time; set "
		       "CUDAToolkit_ROOT): the end-to-end GPU join is not tested");
}
#endif

/* --group-by: in pprof the group and the process name are sample labels, not frames. */
Test(oneshot_outputs, pprof_group_and_process_are_labels)
{
	char *pb = (char *)test_path("grouped", ".pb.gz"), *outs[] = {pb}, *cmd, *txt;
	int st;

	profile_split_with(outs, 1, "--group-by", "comm");
	cr_assert(asprintf(&cmd, "HOME=${HOME:-/tmp} %s tool pprof -tags %s", XS_GO_PATH, pb) > 0);
	txt = shell(cmd, &st);
	free(cmd);
	cr_assert(!st && txt && strstr(txt, "comm:") && strstr(txt, "process:") &&
			  strstr(txt, "xs_split"),
		  "pprof -tags has no comm and process labels:\n%s", txt ? txt : "");
	free(txt);
	cr_assert(asprintf(&cmd, "HOME=${HOME:-/tmp} %s tool pprof -top -nodecount=1000 %s",
			   XS_GO_PATH, pb) > 0);
	txt = shell(cmd, &st);
	free(cmd);
	cr_assert(!st && txt && strstr(txt, "xs_work_beta") && !strstr(txt, " xs_split\n"),
		  "pprof -top shows the group or process as a frame:\n%s", txt ? txt : "");
	free(txt);
}
