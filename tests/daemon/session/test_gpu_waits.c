// SPDX-License-Identifier: Apache-2.0
/*
 * GPU waits through the real xsprofd and the real uprobes: xs_gpu_wait (workloads/gpu_wait.c)
 * waits in a fake driver's cuStreamSynchronize (30 ms), cuCtxSynchronize (20 ms) and
 * cuMemcpyDtoH_v2 (10 ms), then sends the GPU work that ran meanwhile as libxsprof_cupti.so
 * would. The wall view must show each wait as [wait gpu] under its caller and API, as long as
 * the calls took, with exactly the GPU work of the stream waited for (every stream for the
 * device) as children, and not count the same time again as off-CPU time; the merged view of
 * an on-CPU profile shows the waits too. Needs root and BTF. And the frames from hand-made
 * records: streams side by side sharing a device wait, a stream wait's stream from the join.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/xsprof_events.h"
#include "daemon/cuda/cuda_waits.h"
#include "daemon/session/gpu_waits.h"
#include "daemon/cuda/launch_store.h"
#include "output/model/calltree.h"
#include "output/folded.h"
#include "output/model/profile.h"
#include "tests/lib/harness.h"

#define COMM  "xs_gpu_wait"
#define WAIT  "[wait gpu]"
#define ITERS 8
/* Half of one-shot's default sampling period (99 Hz), in us. */
#define HALF_SAMPLE_US (1e6 / 99 / 2 + 1)

struct truth {
	double stream_us, device_us, copy_us;
};

static void read_truth(const char *path, struct truth *t)
{
	char *text = read_file(path), *line, *save = NULL;
	int got = 0;

	cr_assert(text, "no output from the workload");
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		got += sscanf(line, "xs_wait_stream %lf", &t->stream_us);
		got += sscanf(line, "xs_wait_device %lf", &t->device_us);
		got += sscanf(line, "xs_wait_copy %lf", &t->copy_us);
	}
	free(text);
	cr_assert_eq(got, 3, "workload output incomplete");
}

/* Weight of the lines through fn;api;[wait gpu] whose frames after it are exactly leaf (NULL:
 * none; "*": any). */
static uint64_t wait_weight(const struct folded *f, const char *fn, const char *api,
			    const char *leaf)
{
	uint64_t w = 0;

	for (size_t i = 0; i < f->n; i++) {
		const struct folded_line *l = &f->lines[i];
		int at = folded_find(l, fn);

		if (strcmp(l->frames[0], COMM) || at < 0 || at + 2 >= l->n ||
		    strcmp(l->frames[at + 1], api) || strcmp(l->frames[at + 2], WAIT))
			continue;
		if (leaf && !strcmp(leaf, "*"))
			w += l->count;
		else if (!leaf ? at + 3 == l->n
			       : at + 4 == l->n && !strcmp(l->frames[at + 3], leaf))
			w += l->count;
	}
	return w;
}

/* Weight under fn that is not under [wait gpu]. */
static uint64_t outside_wait(const struct folded *f, const char *fn)
{
	uint64_t w = 0;

	for (size_t i = 0; i < f->n; i++)
		if (folded_find(&f->lines[i], fn) >= 0 && folded_find(&f->lines[i], WAIT) < 0)
			w += f->lines[i].count;
	return w;
}

static void run_waits(const char *const *flags, const char *out, const char *wout, const char *err)
{
	char *argv[16] = {
		XSPROFD_PATH, "-f",	  "--cupti-socket", (char *)test_path("waits", ".sock"),
		"-o",	      (char *)out};
	char iters[16];
	int n = 6;

	snprintf(iters, sizeof(iters), "%d", ITERS);
	for (; *flags; flags++)
		argv[n++] = (char *)*flags;
	argv[n++] = "--";
	argv[n++] = XS_GPU_WAIT_PATH;
	argv[n++] = iters;
	argv[n] = NULL;
	cr_assert_eq(run(argv, wout, err), 0, "%s", read_file(err));
}

static void expect_near(double got, double want, double tol, const char *what)
{
	cr_log_info("%-28s %9.0f us, expected %9.0f\n", what, got, want);
	cr_expect(got >= want * (1 - tol) && got <= want * (1 + tol), "%s: %.0f us, expected %.0f",
		  what, got, want);
}

Test(gpu_waits, wall_view_times_each_wait_with_the_gpu_work_it_waited_for, .timeout = 120)
{
	static const char *const flags[] = {"--mode", "wall", NULL};
	const char *out = test_path("waits_wall", ".folded"),
		   *err = test_path("waits_wall", ".err");
	const char *wout = test_path("waits_wall", ".out");
	struct truth t = {0};
	struct folded f;
	char *log;

	run_waits(flags, out, wout, err);
	read_truth(wout, &t);
	folded_load(out, &f);
	/* The whole wait, from entry to return: what the workload measured around the calls. */
	expect_near((double)wait_weight(&f, "xs_wait_stream", "cuStreamSynchronize", "*"),
		    t.stream_us, 0.05, "stream waits");
	expect_near((double)wait_weight(&f, "xs_wait_device", "cuCtxSynchronize", "*"), t.device_us,
		    0.05, "device waits");
	expect_near((double)wait_weight(&f, "xs_wait_copy", "cuMemcpyDtoH_v2", "*"), t.copy_us,
		    0.05, "copy waits");
	/* The GPU work during each: exact (the records are), and only the stream waited for. */
	cr_expect_eq(wait_weight(&f, "xs_wait_stream", "cuStreamSynchronize", "[gpu] xs_k_stream"),
		     ITERS * 10000);
	cr_expect_eq(wait_weight(&f, "xs_wait_stream", "cuStreamSynchronize", "[gpu] xs_k_other"),
		     0, "a kernel of another stream under a stream wait");
	cr_expect_eq(wait_weight(&f, "xs_wait_device", "cuCtxSynchronize", "[gpu] xs_k_dev_a"),
		     ITERS * 8000);
	cr_expect_eq(wait_weight(&f, "xs_wait_device", "cuCtxSynchronize", "[gpu] xs_k_dev_b"),
		     ITERS * 8000);
	cr_expect_eq(wait_weight(&f, "xs_wait_copy", "cuMemcpyDtoH_v2", "[gpu] memcpy DtoH"),
		     ITERS * 8000);
	/* The rest of each wait is the wait's own. */
	expect_near((double)wait_weight(&f, "xs_wait_stream", "cuStreamSynchronize", NULL),
		    t.stream_us - ITERS * 10000, 0.1, "stream waits, no GPU work");
	/* Not counted twice: the sleeping inside the calls is not off-CPU time as well. */
	cr_expect(outside_wait(&f, "xs_wait_stream") < 0.05 * t.stream_us,
		  "%llu us under xs_wait_stream outside the wait",
		  (unsigned long long)outside_wait(&f, "xs_wait_stream"));
	cr_expect(outside_wait(&f, "xs_wait_device") < 0.05 * t.device_us,
		  "%llu us under xs_wait_device outside the wait",
		  (unsigned long long)outside_wait(&f, "xs_wait_device"));
	folded_free(&f);
	log = read_file(err);
	cr_expect(strstr(log, "GPU waits: 24 calls waited"), "%s", log);
	free(log);
}

Test(gpu_waits, merged_view_of_an_on_cpu_profile_shows_the_waits, .timeout = 120)
{
	static const char *const flags[] = {"--gpu-mode", "merged", "--weight", "us", NULL};
	const char *out = test_path("waits_merged", ".folded");
	const char *err = test_path("waits_merged", ".err");
	const char *wout = test_path("waits_merged", ".out");
	struct truth t = {0};
	struct folded f;

	run_waits(flags, out, wout, err);
	read_truth(wout, &t);
	folded_load(out, &f);
	/* In samples (99 Hz) shown in us: each stack within half a sample of its time. */
	expect_near((double)wait_weight(&f, "xs_wait_stream", "cuStreamSynchronize", "*"),
		    t.stream_us, 2 * HALF_SAMPLE_US / t.stream_us, "stream waits");
	expect_near((double)wait_weight(&f, "xs_wait_device", "cuCtxSynchronize", "*"), t.device_us,
		    3 * HALF_SAMPLE_US / t.device_us, "device waits");
	expect_near(
		(double)wait_weight(&f, "xs_wait_device", "cuCtxSynchronize", "[gpu] xs_k_dev_b"),
		ITERS * 8000, HALF_SAMPLE_US / (ITERS * 8000), "device wait, xs_k_dev_b");
	folded_free(&f);
}

Test(gpu_waits, cpu_view_has_no_wait_frames, .timeout = 120)
{
	static const char *const flags[] = {"--gpu-mode", "cpu", NULL};
	const char *out = test_path("waits_cpu", ".folded"), *err = test_path("waits_cpu", ".err");
	const char *wout = test_path("waits_cpu", ".out");
	struct folded f;

	run_waits(flags, out, wout, err);
	folded_load(out, &f);
	cr_expect_eq(folded_count_with(&f, WAIT), 0);
	folded_free(&f);
}

/*
 * The real libcudart.so.13 (no GPU: its calls fail fast, the probes fire) and the fake driver of
 * test_cuda_probes: xs_cuda makes 15 runtime and 5 driver calls that wait (cuda_calls.c; the
 * cuStreamSynchronize inside cuGraphLaunch is not a wait of its own), each a [wait gpu] frame
 * under its caller and API.
 */
Test(gpu_waits, real_libcudart_waits_each_under_its_caller, .timeout = 120)
{
	const char *out = test_path("waits_rt", ".folded"), *err = test_path("waits_rt", ".err");
	char *argv[] = {XSPROFD_PATH,
			"-f",
			"--mode",
			"wall",
			"--cupti-socket",
			(char *)test_path("waits_rt", ".sock"),
			"-o",
			(char *)out,
			"--",
			XS_CUDA_PATH,
			NULL};
	static const char *const expect[][2] = {
		{"xs_sync", "cudaStreamSynchronize"},  {"xs_sync", "cudaStreamSynchronize_ptsz"},
		{"xs_sync", "cudaEventSynchronize"},   {"xs_sync", "cudaDeviceSynchronize"},
		{"xs_setup", "cudaDeviceSynchronize"}, {"xs_driver", "cudaStreamSynchronize"},
		{"xs_driver", "cuStreamSynchronize"},  {"xs_driver", "cuStreamSynchronize_ptsz"},
		{"xs_driver", "cuEventSynchronize"},   {"xs_driver", "cuCtxSynchronize"},
	};
	struct folded f;
	char *log;

	cr_assert_eq(run(argv, NULL, err), 0, "%s", read_file(err));
	log = read_file(err);
	cr_expect(strstr(log, "GPU waits: 20 calls waited"), "%s", log);
	free(log);
	folded_load(out, &f);
	for (size_t k = 0; k < sizeof(expect) / sizeof(expect[0]); k++) {
		uint64_t w = 0;

		for (size_t i = 0; i < f.n; i++) {
			const struct folded_line *l = &f.lines[i];
			int at = folded_find(l, expect[k][0]);

			if (at >= 0 && at + 3 == l->n && !strcmp(l->frames[at + 1], expect[k][1]) &&
			    !strcmp(l->frames[at + 2], WAIT))
				w += l->count;
		}
		cr_expect_gt(w, 0, "no %s;%s;" WAIT, expect[k][0], expect[k][1]);
	}
	folded_free(&f);
}

/* ---- The wait frames from records, without BPF ---- */

#define PID 4242
#define TID 4243
#define T0  1000000000ull
#define MS  1000000ull

static void add_call(struct launch_store *ls, unsigned int api, uint64_t t, uint64_t stream)
{
	struct xsprof_cuda_call c = {.type = XSPROF_REC_CUDA_CALL,
				     .tgid = PID,
				     .tid = TID,
				     .api = api,
				     .time_ns = t,
				     .stream = stream,
				     .comm = "xs_unit"};
	struct xsprof_cuda_wait w = {.type = XSPROF_REC_CUDA_WAIT,
				     .tgid = PID,
				     .tid = TID,
				     .api = api,
				     .entry_ns = t,
				     .return_ns = t + 10 * MS,
				     .stream = stream};

	cr_assert_eq(launch_store__add_call(ls, &c), 0);
	cr_assert_eq(cuda_waits__add_record(ls, &w, sizeof(w)), 0);
}

static struct corr_gpu_rec kern(const char *name, uint32_t stream, uint64_t start, uint64_t end)
{
	return (struct corr_gpu_rec){.kind = CORR_GPU_KERNEL,
				     .pid = PID,
				     .stream_id = stream,
				     .start_ns = start,
				     .end_ns = end,
				     .name = name};
}

/* The tree as folded text (caller frees). */
static char *folded_text(const struct calltree *t)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert(f && !folded__write(t, f) && !fclose(f));
	return buf;
}

Test(gpu_waits_records, streams_side_by_side_share_a_device_wait)
{
	struct launch_store *ls = launch_store__new(0, 0);
	struct corr_gpu_rec g[2] = {kern("ka", 7, T0, T0 + 10 * MS),
				    kern("kb", 9, T0 + 5 * MS, T0 + 20 * MS)};
	struct profile_data pd = {.gpu = g, .nr_gpu = 2};
	struct calltree *t = calltree__new();
	struct gpu_waits_stats st = {};
	char *txt;

	add_call(ls, XSPROF_CUDA_cuCtxSynchronize, T0, 0);
	cr_assert_eq(gpu_waits__add(ls, &pd, t, 1000, NULL, &st), 0);
	txt = folded_text(t);
	/* 10 ms of ka and 5 of kb overlap the 10 ms wait: 15 ms of work shares 10 ms. */
	cr_expect(strstr(txt, "xs_unit;[unknown];cuCtxSynchronize;[wait gpu];[gpu] ka 6667\n"),
		  "%s", txt);
	cr_expect(strstr(txt, "xs_unit;[unknown];cuCtxSynchronize;[wait gpu];[gpu] kb 3333\n"),
		  "%s", txt);
	cr_expect_eq(calltree__total(t), 10000);
	cr_expect_eq(st.waits, 1);
	cr_expect_eq(st.no_stack, 1);
	free(txt);
	calltree__free(t);
	launch_store__free(ls);
}

Test(gpu_waits_records, a_stream_wait_takes_its_stream_from_the_join)
{
	struct launch_store *ls = launch_store__new(0, 0);
	struct corr_gpu_rec g[3] = {kern("mine", 9, T0 - 2 * MS, T0 + 4 * MS),
				    kern("other", 7, T0 + 1 * MS, T0 + 9 * MS),
				    kern("after", 9, T0 + 20 * MS, T0 + 30 * MS)};
	struct corr_cpu_rec launch = {.kind = CORR_CPU_UPROBE, .pid = PID, .stream = 0x5000};
	struct profile_join j = {.launch = 0, .gpu = 0};
	struct profile_data pd = {.gpu = g,
				  .nr_gpu = 3,
				  .launches = &launch,
				  .nr_launches = 1,
				  .joins = &j,
				  .nr_joins = 1};
	struct calltree *t = calltree__new();
	struct gpu_waits_stats st = {};
	char *txt;

	add_call(ls, XSPROF_CUDA_cuStreamSynchronize, T0, 0x5000);
	cr_assert_eq(gpu_waits__add(ls, &pd, t, 1000, NULL, &st), 0);
	txt = folded_text(t);
	/* The launch on handle 0x5000 ran on stream 9: its 4 ms inside the wait, not stream 7's. */
	cr_expect(strstr(txt, ";cuStreamSynchronize;[wait gpu];[gpu] mine 4000\n"), "%s", txt);
	cr_expect(strstr(txt, ";cuStreamSynchronize;[wait gpu] 6000\n"), "%s", txt);
	cr_expect_not(strstr(txt, "other"), "%s", txt);
	cr_expect_not(strstr(txt, "after"), "%s", txt);
	cr_expect_eq(st.stream_guess, 0);
	free(txt);
	calltree__free(t);
	launch_store__free(ls);
}

Test(gpu_waits_records, malformed_wait_records_are_refused)
{
	struct launch_store *ls = launch_store__new(0, 0);
	struct xsprof_cuda_wait w = {.type = XSPROF_REC_CUDA_WAIT,
				     .api = XSPROF_CUDA_cuLaunchKernel,
				     .entry_ns = 2,
				     .return_ns = 3};

	cr_expect_eq(cuda_waits__add_record(ls, &w, sizeof(w) - 1), -EBADMSG);
	cr_expect_eq(cuda_waits__add_record(ls, &w, sizeof(w)), -EBADMSG, "not a waiting API");
	w.api = XSPROF_CUDA_cudaDeviceSynchronize;
	w.return_ns = 1;
	cr_expect_eq(cuda_waits__add_record(ls, &w, sizeof(w)), -EBADMSG, "returned before entry");
	cr_expect_eq(launch_store__nr_waits(ls), 0);
	launch_store__free(ls);
}

/* --group-by comm: the process name above every stack, CPU, wait and GPU alike. */
Test(gpu_waits, group_by_roots_every_kind_of_stack, .timeout = 120)
{
	static const char *const flags[] = {"--mode", "wall", "--group-by", "comm", NULL};
	const char *out = test_path("waits_group", ".folded");
	const char *err = test_path("waits_group", ".err");
	const char *wout = test_path("waits_group", ".out");
	size_t waits = 0, unlaunched = 0;
	struct folded f;

	run_waits(flags, out, wout, err);
	folded_load(out, &f);
	for (size_t i = 0; i < f.n; i++) {
		const struct folded_line *l = &f.lines[i];

		cr_expect_str_eq(l->frames[0], COMM);
		cr_assert_gt(l->n, 2);
		waits += folded_find(l, WAIT) > 1 && !strcmp(l->frames[1], COMM);
		unlaunched +=
			!strcmp(l->frames[2], "[no launch stack]") && !strcmp(l->frames[1], COMM);
	}
	folded_free(&f);
	cr_expect_gt(waits, 0, "no [wait gpu] under the group and the thread");
	cr_expect_gt(unlaunched, 0, "no GPU work under the group and the process");
}

/* The Chrome trace: each wait a slice on its thread, as long as the call. */
Test(gpu_waits, chrome_trace_has_a_slice_per_wait, .timeout = 120)
{
	static const char *const flags[] = {"--mode", "wall", NULL};
	const char *out = test_path("waits_trace", ".json");
	const char *err = test_path("waits_trace", ".err");
	const char *wout = test_path("waits_trace", ".out");
	static const char *const names[] = {"[wait gpu] cuStreamSynchronize",
					    "[wait gpu] cuCtxSynchronize",
					    "[wait gpu] cuMemcpyDtoH_v2"};
	static const double min_us[] = {30000, 20000, 10000};
	char *txt, *p;

	run_waits(flags, out, wout, err);
	txt = read_file(out);
	cr_assert(txt, "no trace");
	for (size_t k = 0; k < 3; k++) {
		char key[96];
		int n = 0;

		snprintf(key, sizeof(key), "\"name\":\"%s\",\"cat\":\"gpu_wait\"", names[k]);
		for (p = strstr(txt, key); p; p = strstr(p + 1, key)) {
			char *dur = strstr(p, "\"dur\":");

			cr_assert(dur, "a slice without a duration");
			cr_expect_geq(strtod(dur + 6, NULL), min_us[k], "%s shorter than its wait",
				      names[k]);
			n++;
		}
		cr_expect_eq(n, ITERS, "%d slices of %s", n, names[k]);
	}
	free(txt);
}

/* The failed allocations the text report counts on device dev ("GPU memory of process P on
 * device D:", then "  A allocations (M MiB), F frees, N failed"); -1 when it has no such part. */
static long failed_on(const char *text, int dev)
{
	char head[64];
	const char *p = text, *nl;
	long n;

	snprintf(head, sizeof(head), " on device %d:\n", dev);
	while ((p = strstr(p, "GPU memory of process "))) {
		nl = strchr(p, '\n');
		if (nl && !strncmp(nl - strlen(head) + 1, head, strlen(head)) &&
		    sscanf(nl + 1, "%*s allocations (%*s MiB), %*s frees, %ld failed", &n) == 1)
			return n;
		p++;
	}
	return -1;
}

/*
 * The device each thread set with cudaSetDevice, through the real probes on the real
 * libcudart.so.13 (no GPU: the calls fail, the uprobes fire): xs_cuda_devices allocates once on
 * device 0 (before any cudaSetDevice), twice after cudaSetDevice(1), three times in a thread
 * on device 2, once in a thread that set none (device 0 again: the device is per thread).
 */
Test(gpu_waits, allocations_on_the_device_each_thread_set, .timeout = 120)
{
	const char *out = test_path("devices", ".gpu.json"), *err = test_path("devices", ".err");
	const char *txt = test_path("devices", ".out");
	char *argv[] = {XSPROFD_PATH,
			"-f",
			"--report",
			"gpu",
			"--cupti-socket",
			(char *)test_path("devices", ".sock"),
			"-o",
			(char *)out,
			"--",
			XS_CUDA_DEVICES_PATH,
			NULL};
	char *text;

	cr_assert_eq(run(argv, txt, err), 0, "%s", read_file(err));
	text = read_file(txt);
	cr_assert(text);
	cr_expect_eq(failed_on(text, 0), 2, "%s", text);
	cr_expect_eq(failed_on(text, 1), 2, "%s", text);
	cr_expect_eq(failed_on(text, 2), 3, "%s", text);
	cr_expect_eq(failed_on(text, 3), -1, "%s", text);
	free(text);
}

/*
 * A probed call inside a probed call that has a return probe (the runtime's
 * cudaStreamSynchronize calling the driver's cuStreamSynchronize, as libcudart does): while the
 * outer call runs, the kernel keeps its return address swapped for the uretprobe trampoline.
 * The inner call must still count as inside the outer one (one wait, the runtime's, as on a real
 * GPU every .item() and cudaMalloc is), and every stack taken inside it must walk past the
 * swapped slot to the caller (bpf/uret.bpf.h).
 */
Test(gpu_waits, a_call_inside_a_return_probed_call_is_one_wait_under_its_caller, .timeout = 120)
{
	const char *out = test_path("nested", ".folded"), *err = test_path("nested", ".err");
	const char *wout = test_path("nested", ".out"), *lout = test_path("nested_l", ".folded");
	char iters[16];
	char *argv[] = {XSPROFD_PATH,
			"-f",
			"--mode",
			"wall",
			"--cupti-socket",
			(char *)test_path("nested", ".sock"),
			"-o",
			(char *)out,
			"--launches-output",
			(char *)lout,
			"--",
			XS_GPU_WAIT_PATH,
			iters,
			"nested",
			NULL};
	double nested_us = 0;
	struct folded f, l;
	uint64_t calls = 0, inner = 0, lost = 0;
	char *text;

	snprintf(iters, sizeof(iters), "%d", ITERS);
	cr_assert_eq(run(argv, wout, err), 0, "%s", read_file(err));
	text = read_file(wout);
	cr_assert(text && sscanf(text, "xs_wait_nested %lf", &nested_us) == 1, "%s", text);
	free(text);
	folded_load(out, &f);
	expect_near((double)wait_weight(&f, "xs_wait_nested", "cudaStreamSynchronize", "*"),
		    nested_us, 0.05, "the runtime's waits, whole");
	cr_expect_eq(wait_weight(&f, "xs_wait_nested", "cuStreamSynchronize", "*"), 0,
		     "the driver call inside counted as a wait of its own");
	folded_load(lout, &l);
	for (size_t i = 0; i < l.n; i++) {
		const struct folded_line *x = &l.lines[i];

		if (!strcmp(x->frames[x->n - 1], "[cuda] cudaStreamSynchronize") &&
		    folded_find(x, "xs_wait_nested") >= 0 && folded_find(x, "main") >= 0)
			calls += x->count;
		else if (!strcmp(x->frames[x->n - 1], "[cuda] cuStreamSynchronize"))
			inner += x->count;
		else if (strstr(x->frames[x->n - 1], "StreamSynchronize"))
			lost += x->count;
	}
	cr_expect_eq(calls, ITERS, "%llu calls under main;xs_wait_nested",
		     (unsigned long long)calls);
	cr_expect_eq(inner, 0, "%llu inner calls recorded as calls", (unsigned long long)inner);
	cr_expect_eq(lost, 0, "%llu calls under another stack", (unsigned long long)lost);
	folded_free(&f);
	folded_free(&l);
}
