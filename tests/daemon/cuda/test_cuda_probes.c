// SPDX-License-Identifier: Apache-2.0
/*
 * The GPU path's CPU side, for real: CUDA API uprobes on the real libcudart.so.13 and on a fake
 * driver library, the xsprof:launch USDT of a fake injection library, command mode, --pid and
 * --cuda-lib. The workload xs_cuda makes a known number of calls of every probed API from
 * known functions (tests/workloads/cuda_calls.c); the launches output must hold exactly those
 * stacks with exactly those counts. Needs root and a kernel with BTF; fails without them.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bpf/xsprof_events.h"
#include "daemon/cuda/cuda_api.h"
#include "daemon/cuda/cuda_probes.h"
#include "daemon/cuda/launch_store.h"
#include "daemon/probes/sampler.h"
#include "daemon/cuda/usdt_site.h"
#include "tests/lib/harness.h"
#include "tests/workloads/cuda_calls.h"
#include "tests/workloads/fake_cupti.h"

/* One expected launches line: comm;...;anchor;path;[cuda] api COUNT. */
struct expect {
	const char *comm;
	const char *anchor; /* frames above it (libc's start-up) are not checked */
	const char *path;   /* the frames after the anchor, ';'-separated */
	const char *api;
	uint64_t count;
};

#define MAIN(path, api, n)                                             \
	{                                                              \
		"xs_cuda", "main", "xs_cuda_main_calls;" path, #api, n \
	}
#define MISC(api)   MAIN("xs_misc", api, 1)
#define DRV(api, n) MAIN("xs_driver", api, n)

/* What xs_cuda's main thread calls in libcudart. */
static const struct expect main_runtime[] = {
	MAIN("xs_setup", cudaDeviceSynchronize, 1),
	MAIN("xs_train_step;xs_forward;xs_launch_plain", cudaLaunchKernel, 6),
	MAIN("xs_train_step;xs_forward;xs_launch_chevron", __cudaLaunchKernel, 3),
	MAIN("xs_train_step;xs_backward", cudaLaunchKernelExC, 6),
	MAIN("xs_train_step;xs_backward", cudaLaunchKernel_ptsz, 3),
	MAIN("xs_train_step;xs_backward", __cudaLaunchKernel_ptsz, 3),
	MAIN("xs_train_step;xs_backward", cudaLaunchKernelExC_ptsz, 3),
	MAIN("xs_train_step;xs_graph_step", cudaGraphLaunch, 3),
	MAIN("xs_train_step;xs_graph_step", cudaGraphLaunch_ptsz, 3),
	MAIN("xs_copies", cudaMemcpyAsync, 4),
	MAIN("xs_copies", cudaMemcpyAsync_ptsz, 1),
	MAIN("xs_copies", cudaMemsetAsync, 2),
	MAIN("xs_copies", cudaMemsetAsync_ptsz, 1),
	MISC(cudaLaunchCooperativeKernel),
	MISC(cudaLaunchCooperativeKernel_ptsz),
	MISC(cudaLaunchHostFunc),
	MISC(cudaLaunchHostFunc_ptsz),
	MISC(cudaMemcpy2DAsync),
	MISC(cudaMemcpy2DAsync_ptsz),
	MISC(cudaMemcpy3DAsync),
	MISC(cudaMemcpy3DAsync_ptsz),
	MISC(cudaMemcpyPeerAsync),
	MISC(cudaMemcpy3DPeerAsync),
	MISC(cudaMemcpy3DPeerAsync_ptsz),
	MISC(cudaMemcpyToSymbolAsync),
	MISC(cudaMemcpyToSymbolAsync_ptsz),
	MISC(cudaMemcpyFromSymbolAsync),
	MISC(cudaMemcpyFromSymbolAsync_ptsz),
	MISC(cudaMemcpyToArrayAsync),
	MISC(cudaMemcpyToArrayAsync_ptsz),
	MISC(cudaMemcpyFromArrayAsync),
	MISC(cudaMemcpyFromArrayAsync_ptsz),
	MISC(cudaMemcpy2DToArrayAsync),
	MISC(cudaMemcpy2DToArrayAsync_ptsz),
	MISC(cudaMemcpy2DFromArrayAsync),
	MISC(cudaMemcpy2DFromArrayAsync_ptsz),
	MISC(cudaMemcpyBatchAsync),
	MISC(cudaMemcpyBatchAsync_ptsz),
	MISC(cudaMemcpy3DBatchAsync),
	MISC(cudaMemcpy3DBatchAsync_ptsz),
	MISC(cudaMemset2DAsync),
	MISC(cudaMemset2DAsync_ptsz),
	MISC(cudaMemset3DAsync),
	MISC(cudaMemset3DAsync_ptsz),
	MAIN("xs_sync", cudaStreamSynchronize, 5),
	MAIN("xs_sync", cudaStreamSynchronize_ptsz, 1),
	MAIN("xs_sync", cudaEventSynchronize, 2),
	MAIN("xs_sync", cudaDeviceSynchronize, 3),
	/* Right before each cuLaunchKernel, in the same frame. */
	DRV(cudaStreamSynchronize, 3),
};

/* ... and in the (fake) driver. cuGraphLaunch calls cuStreamSynchronize inside: one call. */
static const struct expect main_driver[] = {
	DRV(cuLaunchKernel, 3),
	DRV(cuLaunchKernel_ptsz, 1),
	DRV(cuLaunchKernelEx, 2),
	DRV(cuLaunchKernelEx_ptsz, 1),
	DRV(cuLaunchCooperativeKernel, 1),
	DRV(cuLaunchCooperativeKernel_ptsz, 1),
	DRV(cuLaunchHostFunc, 1),
	DRV(cuLaunchHostFunc_ptsz, 1),
	DRV(cuGraphLaunch, 1),
	DRV(cuGraphLaunch_ptsz, 1),
	DRV(cuMemcpyAsync, 1),
	DRV(cuMemcpyAsync_ptsz, 1),
	DRV(cuMemcpyHtoDAsync_v2, 1),
	DRV(cuMemcpyHtoDAsync_v2_ptsz, 1),
	DRV(cuMemcpyDtoHAsync_v2, 1),
	DRV(cuMemcpyDtoHAsync_v2_ptsz, 1),
	DRV(cuMemcpyDtoDAsync_v2, 1),
	DRV(cuMemcpyDtoDAsync_v2_ptsz, 1),
	DRV(cuMemsetD8Async, 1),
	DRV(cuMemsetD8Async_ptsz, 1),
	DRV(cuMemsetD32Async, 1),
	DRV(cuMemsetD32Async_ptsz, 1),
	DRV(cuStreamSynchronize, 2),
	DRV(cuStreamSynchronize_ptsz, 1),
	DRV(cuEventSynchronize, 1),
	DRV(cuCtxSynchronize, 1),
};

/* The worker thread, named xs_cuda_worker. */
static const struct expect worker[] = {
	{"xs_cuda_worker", "worker", "xs_cuda_worker_calls;xs_worker_launch", "cudaLaunchKernel",
	 10},
};

/* The child forked without exec, and the child that execs xs_cuda again. */
static const struct expect children[] = {
	{"xs_cuda", "main", "xs_cuda_forked_calls;xs_forked_launch", "cudaLaunchKernel", 4},
	{"xs_cuda", "main", "xs_cuda_exec_calls;xs_exec_copy", "cudaMemcpyAsync", 2},
};

/*
 * The same, frames unchecked: system-wide (--cuda-lib), nothing holds a process that makes a
 * few calls and exits until its mappings are read, so its frames may stay unnamed.
 */
static const struct expect children_any[] = {
	{"xs_cuda", NULL, NULL, "cudaLaunchKernel", 4},
	{"xs_cuda", NULL, NULL, "cudaMemcpyAsync", 2},
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

struct expect_set {
	const struct expect *e;
	size_t n;
};

static char *line_str(const struct folded_line *l)
{
	static char buf[4096];
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < l->n && len < sizeof(buf) - 1; i++)
		len += snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? ";" : "", l->frames[i]);
	return buf;
}

/* Whether l is e's stack: comm, then anything, the anchor, exactly e's path, e's leaf. */
static bool line_is(const struct folded_line *l, const struct expect *e)
{
	char leaf[128], path[1024], *tok, *save = NULL;
	int at;

	snprintf(leaf, sizeof(leaf), "[cuda] %s", e->api);
	if (strcmp(l->frames[0], e->comm) || strcmp(l->frames[l->n - 1], leaf))
		return false;
	if (!e->anchor)
		return true;
	at = folded_find(l, e->anchor);
	if (at < 1)
		return false;
	snprintf(path, sizeof(path), "%s", e->path);
	for (tok = strtok_r(path, ";", &save); tok; tok = strtok_r(NULL, ";", &save))
		if (++at >= l->n - 1 || strcmp(l->frames[at], tok))
			return false;
	return at == l->n - 2;
}

/*
 * The launches file holds exactly the expected stacks with exactly their counts. Lines of
 * other commands are left out when only_prefix is set (system-wide runs see the machine).
 */
static void check_launches(const char *path, const struct expect_set *sets, size_t nsets,
			   const char *only_prefix)
{
	uint64_t seen[256] = {0}, want_total = 0, got_total = 0;
	struct folded f;
	size_t k;

	folded_load(path, &f);
	for (size_t i = 0; i < f.n; i++) {
		const struct folded_line *l = &f.lines[i];
		bool matched = false;

		if (only_prefix && strncmp(l->frames[0], only_prefix, strlen(only_prefix)))
			continue;
		got_total += l->count;
		k = 0;
		for (size_t s = 0; s < nsets && !matched; s++) {
			for (size_t j = 0; j < sets[s].n; j++, k++) {
				if (line_is(l, &sets[s].e[j])) {
					seen[k] += l->count;
					matched = true;
					break;
				}
			}
		}
		cr_expect(matched, "unexpected launch stack: %s %llu", line_str(l),
			  (unsigned long long)l->count);
	}
	k = 0;
	for (size_t s = 0; s < nsets; s++) {
		for (size_t j = 0; j < sets[s].n; j++, k++) {
			const struct expect *e = &sets[s].e[j];

			cr_assert(k < N(seen));
			want_total += e->count;
			cr_expect_eq(seen[k], e->count,
				     "%s;...;%s;%s;[cuda] %s: %llu calls, want %llu", e->comm,
				     e->anchor ? e->anchor : "", e->path ? e->path : "", e->api,
				     (unsigned long long)seen[k], (unsigned long long)e->count);
		}
	}
	cr_expect_eq(got_total, want_total, "%llu calls in all, want %llu",
		     (unsigned long long)got_total, (unsigned long long)want_total);
	folded_free(&f);
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts))
		;
}

/* Wait until the file holds text (a process said it is ready); fails after timeout_s. */
static void expect_text(const char *path, const char *text, double timeout_s)
{
	cr_assert(wait_for_text(path, text, timeout_s), "%s never said '%s': %s", path, text,
		  read_file(path));
}

static void run_xsprofd(char *const argv[], int want_status, const char *err)
{
	int st = run(argv, NULL, err);

	cr_assert_eq(st, want_status, "xsprofd exited %d, want %d:\n%s", st, want_status,
		     read_file(err));
}

Test(cuda_probes, launch_mode_counts_every_call_and_stack_exactly, .timeout = 120)
{
	const char *l = test_path("launch", ".folded"), *err = test_path("launch", ".err");
	char *argv[] = {XSPROFD_PATH,
			"--foreground",
			"--launches-output",
			(char *)l,
			"--",
			XS_CUDA_PATH,
			"--exit",
			"3",
			NULL};
	struct expect_set sets[] = {{main_runtime, N(main_runtime)},
				    {main_driver, N(main_driver)},
				    {worker, N(worker)},
				    {children, N(children)}};
	char *log;

	/* xsprofd exits with the command's status. */
	run_xsprofd(argv, 3, err);
	check_launches(l, sets, N(sets), NULL);
	log = read_file(err);
	cr_expect(strstr(log, "0 xsprof:launch firings"), "%s", log);
	free(log);
}

/* --pid's process, and its children (forked, exec'd) unless alone (--no-children). */
static void pid_mode(bool alone)
{
	const char *out = test_path("pid_work", ".out"), *l = test_path("pid", ".folded");
	const char *err = test_path("pid", ".err");
	char *wargv[] = {XS_CUDA_PATH, "--wait", NULL};
	pid_t work = spawn(wargv, out, NULL), prof;
	char pidbuf[16];
	char *argv[] = {
		XSPROFD_PATH,	 "-f", "-d", "3", "--pid", pidbuf, "--launches-output", (char *)l,
		"--no-children", NULL};
	struct expect_set sets[] = {{main_runtime, N(main_runtime)},
				    {main_driver, N(main_driver)},
				    {worker, N(worker)},
				    {children_any, N(children_any)}};

	if (!alone)
		argv[8] = NULL;
	expect_text(out, "ready", 10);
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)work);
	prof = spawn(argv, NULL, err);
	expect_text(err, "sampling the given processes", 20);
	kill(work, SIGUSR1);
	cr_assert_eq(wait_exit(work), 0);
	cr_assert_eq(wait_exit(prof), 0, "%s", read_file(err));
	check_launches(l, sets, N(sets) - alone, NULL);
}

Test(cuda_probes, pid_mode_probes_that_process_and_its_children, .timeout = 120)
{
	pid_mode(false);
}

Test(cuda_probes, pid_mode_no_children_probes_only_that_process, .timeout = 120)
{
	pid_mode(true);
}

Test(cuda_probes, cuda_lib_probes_every_process_using_that_file, .timeout = 120)
{
	const char *out = test_path("sys_work", ".out"), *l = test_path("sys", ".folded");
	const char *err = test_path("sys", ".err");
	char *wargv[] = {XS_CUDA_PATH, "--wait", NULL};
	pid_t work = spawn(wargv, out, NULL), prof;
	char *argv[] = {XSPROFD_PATH,
			"-f",
			"-d",
			"3",
			"--cuda-lib",
			XS_CUDART_DIR "/libcudart.so.13",
			"--launches-output",
			(char *)l,
			NULL};
	struct expect_set sets[] = {{main_runtime, N(main_runtime)},
				    {worker, N(worker)},
				    {children_any, N(children_any)}};

	expect_text(out, "ready", 10);
	prof = spawn(argv, NULL, err);
	expect_text(err, "sampling all CPUs", 20);
	kill(work, SIGUSR1);
	cr_assert_eq(wait_exit(work), 0);
	cr_assert_eq(wait_exit(prof), 0, "%s", read_file(err));
	/* Only libcudart was named: the fake driver's calls are not probed. */
	check_launches(l, sets, N(sets), "xs_cuda");
}

Test(cuda_probes, usdt_stacks_and_semaphore, .timeout = 120)
{
	const char *l = test_path("usdt", ".folded"), *err = test_path("usdt", ".err");
	const char *out = test_path("usdt", ".out"), *plain = test_path("usdt_plain", ".out");
	char *argv[] = {XSPROFD_PATH, "-f", "--launches-output", (char *)l, "--",
			XS_USDT_PATH, NULL};
	char *uargv[] = {XS_USDT_PATH, NULL};
	static const struct expect usdt[] = {
		{"xs_usdt", "main", "xs_usdt_outer;xs_usdt_runtime_site", "cudaLaunchKernel", 7},
		{"xs_usdt", "main", "xs_usdt_outer;xs_usdt_driver_site", "cuLaunchKernel", 5},
	};
	struct expect_set sets[] = {{usdt, N(usdt)}};
	char *s;

	/* Nobody attached: the semaphore keeps the probe from firing. */
	cr_assert_eq(run(uargv, plain, NULL), 0);
	s = read_file(plain);
	cr_expect(s && strstr(s, "fired 0 of 12"), "%s", s);
	free(s);

	cr_assert_eq(run(argv, out, err), 0, "%s", read_file(err));
	s = read_file(out);
	cr_expect(s && strstr(s, "fired 12 of 12"), "the semaphore was not set: %s", s);
	free(s);
	check_launches(l, sets, N(sets), NULL);
}

/*
 * Libraries loaded with dlopen after the start, right before their first call: the process is
 * held while the probes are attached, so the very first call counts.
 */
Test(cuda_probes, dlopened_library_counts_from_its_first_call, .timeout = 120)
{
	const char *l = test_path("dlopen", ".folded"), *err = test_path("dlopen", ".err");
	char *argv[] = {XSPROFD_PATH, "-f",  "--launches-output",
			(char *)l,    "--",  XS_CUDA_BENCH_PATH,
			"both",	      "100", NULL};
	/* 1000 warm-up calls and 100 measured ones, each fired through both paths. */
	static const struct expect calls[] = {
		{"xs_cuda_bench", NULL, NULL, "cudaLaunchKernel", 1100},
	};
	struct expect_set sets[] = {{calls, N(calls)}};
	struct folded f;
	char *log;

	run_xsprofd(argv, 0, err);
	check_launches(l, sets, N(sets), NULL);
	folded_load(l, &f);
	for (size_t i = 0; i < f.n; i++)
		cr_expect(folded_find(&f.lines[i], "main") > 0, "%s", line_str(&f.lines[i]));
	folded_free(&f);
	/* The USDT firings are the same launches, not counted twice, but they were all seen. */
	log = read_file(err);
	cr_expect(strstr(log, "1100 xsprof:launch firings"), "%s", log);
	free(log);
}

Test(cuda_probes, launch_mode_exit_status_and_no_cuda, .timeout = 60)
{
	const char *l = test_path("true", ".folded"), *err = test_path("true", ".err");
	char *argv[] = {XSPROFD_PATH, "-f", "--launches-output", (char *)l, "--", "true", NULL};
	char *missing[] = {XSPROFD_PATH,       "-f", "--launches-output", (char *)l, "--",
			   "/nonexistent/cmd", NULL};
	char *nofg[] = {XSPROFD_PATH, "--launches-output", (char *)l, "--", "true", NULL};
	struct folded f;
	char *log;

	/* A command that never loads CUDA: no probe anywhere, nothing in the output. */
	run_xsprofd(argv, 0, err);
	log = read_file(err);
	cr_expect(strstr(log, "probes on 0 files (0 uprobes)"), "%s", log);
	free(log);
	folded_load(l, &f);
	cr_expect_eq(f.n, 0);
	folded_free(&f);

	run_xsprofd(missing, 127, err);
	log = read_file(err);
	cr_expect(strstr(log, "command not found"), "%s", log);
	free(log);
	run_xsprofd(nofg, 2, err);
}

/* ---- In this process: the records themselves ---- */

static void no_samples(void *ctx, const struct xsprof_sample *s)
{
}

static uint64_t expected_calls(const struct expect *e, size_t n, const char *api)
{
	uint64_t c = 0;

	for (size_t i = 0; i < n; i++)
		c += !strcmp(e[i].api, api) ? e[i].count : 0;
	return c;
}

static bool takes_no_stream(unsigned int api)
{
	return api == XSPROF_CUDA_cudaEventSynchronize ||
	       api == XSPROF_CUDA_cudaDeviceSynchronize || api == XSPROF_CUDA_cuEventSynchronize ||
	       api == XSPROF_CUDA_cuCtxSynchronize;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * Whether this kernel turns uprobes on a 5-byte nop into calls: it has the uprobe system call
 * (x86-64: 336) the trampoline makes, which kills anyone else who calls it with SIGILL. Asked
 * in a child.
 */
static bool kernel_optimises_uprobes(void)
{
	pid_t pid = fork();
	int st;

	cr_assert_geq(pid, 0);
	if (!pid) {
		syscall(336);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGILL;
}

Test(usdt_site, decode)
{
	static const uint8_t nop5[] = {0x0f, 0x1f, 0x44, 0x00, 0x00}, nop1[] = {0x90, 0x48},
			     trap[] = {0xcc, 0x1f, 0x44, 0x00, 0x00},
			     call[] = {0xe8, 0x10, 0x20, 0x30, 0x40}, junk[] = {0x48, 0x89};

	cr_expect_eq(usdt_site__decode(nop5, 5), USDT_SITE_NOP);
	cr_expect_eq(usdt_site__decode(nop1, 2), USDT_SITE_NOP);
	cr_expect_eq(usdt_site__decode(trap, 5), USDT_SITE_TRAP);
	cr_expect_eq(usdt_site__decode(call, 5), USDT_SITE_CALL);
	cr_expect_eq(usdt_site__decode(call, 3), USDT_SITE_UNKNOWN);
	cr_expect_eq(usdt_site__decode(junk, 2), USDT_SITE_UNKNOWN);
	cr_expect_eq(usdt_site__decode(junk, 0), USDT_SITE_UNKNOWN);
	cr_expect_str_eq(usdt_site_mode__name(USDT_SITE_CALL), "call");
}

Test(cuda_probes, records_carry_api_stream_thread_time_and_correlation_id, .timeout = 120)
{
	struct sampler_opts so = {.freq_hz = 1};
	struct cuda_probes_opts co = {0};
	struct sampler *s = sampler__new(&so, no_samples, NULL);
	const struct launch_event *ev;
	struct cuda_probes_stats st;
	uint64_t counts[XSPROF_CUDA_API_MAX] = {0}, t0, t1, last = 0;
	uint32_t usdt = 0;
	uint64_t links_before;
	struct cuda_probes *cp;
	pid_t me = getpid(), tid = syscall(SYS_gettid);
	size_t n;

	cr_assert(s, "loading the BPF programs: %s (root and BTF needed)", strerror(errno));
	cp = cuda_probes__new(s, &co);
	cr_assert(cp);
	cr_assert_eq(sampler__add_pid(s, me), 0);
	/* libcudart, the fake driver and the fake injection library; not the test itself. */
	cr_assert_eq(cuda_probes__attach_pid(cp, me), 3, "%s", cuda_probes__last_error(cp));
	cr_assert_eq(cuda_probes__stats(cp, &st), 0);
	links_before = st.links;

	t0 = now_ns();
	xs_cuda_main_calls();
	for (uint32_t i = 0; i < 20; i++)
		xs_fake_cuda_launch(100 + i, XS_CUPTI_RUNTIME(XS_CBID_cudaLaunchKernel + i % 2));
	t1 = now_ns();
	cr_assert_eq(xs_fake_cupti_fired(), 20, "the USDT semaphore was not set");
	cr_assert(sampler__drain(s) >= 0);

	ev = launch_store__events(cuda_probes__store(cp));
	n = launch_store__nr_events(cuda_probes__store(cp));
	for (size_t i = 0; i < n; i++) {
		const struct launch_event *e = &ev[i];

		cr_assert_eq(e->tgid, (uint32_t)me);
		cr_assert_eq(e->tid, (uint32_t)tid);
		cr_assert(e->time_ns >= t0 && e->time_ns <= t1 && e->time_ns >= last,
			  "time %llu outside [%llu, %llu] or before %llu",
			  (unsigned long long)e->time_ns, (unsigned long long)t0,
			  (unsigned long long)t1, (unsigned long long)last);
		last = e->time_ns;
		if (e->kind == LAUNCH_USDT) {
			cr_expect_eq(e->arg, 100 + usdt, "correlation id %llu, want %u",
				     (unsigned long long)e->arg, 100 + usdt);
			cr_expect_eq(e->api, XS_CUPTI_RUNTIME(XS_CBID_cudaLaunchKernel + usdt % 2));
			usdt++;
			continue;
		}
		cr_assert(e->api < XSPROF_CUDA_API_MAX);
		counts[e->api]++;
		if (takes_no_stream(e->api))
			cr_expect(e->arg == 0 && (e->flags & XSPROF_CUDA_F_NO_STREAM),
				  "%s: stream %#llx flags %#x", cuda_api__name(e->api),
				  (unsigned long long)e->arg, e->flags);
		else
			cr_expect_eq(e->arg, (uint64_t)(uintptr_t)XS_STREAM(e->api),
				     "%s: stream %#llx, want %p (flags %#x)",
				     cuda_api__name(e->api), (unsigned long long)e->arg,
				     XS_STREAM(e->api), e->flags);
	}
	cr_expect_eq(usdt, 20);
	for (unsigned int api = 0; api < XSPROF_CUDA_API_MAX; api++) {
		const char *name = cuda_api__name(api);
		uint64_t want;

		if (!name)
			continue;
		want = expected_calls(main_runtime, N(main_runtime), name) +
		       expected_calls(main_driver, N(main_driver), name);
		cr_expect_eq(counts[api], want, "%s: %llu calls, want %llu", name,
			     (unsigned long long)counts[api], (unsigned long long)want);
	}
	cr_assert_eq(cuda_probes__stats(cp, &st), 0);
	/* The wrappers' tail calls (3 + 3) and cuGraphLaunch's cuStreamSynchronize. */
	cr_expect_eq(st.bpf.nested, 7);
	cr_expect_eq(st.bpf.drop_ringbuf + st.bpf.usdt_drop + st.bpf.ustack_err, 0);
	/* The USDT fired here: its site is a call where the kernel optimises uprobes on a 5-byte
	 * nop, a trap elsewhere; and the launch uprobes it makes redundant are gone. */
	cr_expect_eq(st.usdt_site_call + st.usdt_site_trap, 1, "call %llu trap %llu nop %llu",
		     (unsigned long long)st.usdt_site_call, (unsigned long long)st.usdt_site_trap,
		     (unsigned long long)st.usdt_site_nop);
	if (kernel_optimises_uprobes())
		cr_expect_eq(st.usdt_site_call, 1,
			     "the kernel has the uprobe syscall, site trapped");
	cr_expect_gt(st.uprobes_trimmed, 0);
	cr_expect_lt(st.links, links_before);
	cuda_probes__free(cp);
	sampler__free(s);
}

Test(cuda_probes, other_processes_pay_nothing, .timeout = 120)
{
	struct sampler_opts so = {.freq_hz = 1};
	struct cuda_probes_opts co = {0};
	struct sampler *s = sampler__new(&so, no_samples, NULL);
	char *wargv[] = {XS_CUDA_PATH, NULL}, *sleep_argv[] = {"/bin/sleep", "30", NULL};
	struct cuda_probes_stats st;
	struct cuda_probes *cp;
	pid_t other;

	cr_assert(s, "loading the BPF programs: %s (root and BTF needed)", strerror(errno));
	cp = cuda_probes__new(s, &co);
	cr_assert(cp);
	cr_assert_eq(sampler__add_pid(s, getpid()), 0);
	cr_assert_eq(cuda_probes__attach_pid(cp, getpid()), 3, "%s", cuda_probes__last_error(cp));

	/* The same libraries in another process: its calls never reach the BPF program. */
	cr_assert_eq(run(wargv, "/dev/null", NULL), 0);
	cr_assert(sampler__drain(s) >= 0);
	cr_assert_eq(cuda_probes__stats(cp, &st), 0);
	cr_expect_eq(st.bpf.calls, 0, "%llu uprobe hits from another process",
		     (unsigned long long)st.bpf.calls);
	cr_expect_eq(launch_store__nr_events(cuda_probes__store(cp)), 0);

	/* A process without CUDA gets no probe. */
	other = spawn(sleep_argv, NULL, NULL);
	sleep_ms(100);
	cr_expect_eq(cuda_probes__attach_pid(cp, other), 0);
	kill(other, SIGKILL);
	wait_exit(other);
	cr_expect_eq(cuda_probes__attach_pid(cp, 999999999), -ESRCH);
	cuda_probes__free(cp);
	sampler__free(s);
}
