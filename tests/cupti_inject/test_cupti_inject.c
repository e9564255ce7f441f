// SPDX-License-Identifier: Apache-2.0
/*
 * libxsprof_cupti.so as CUDA would load it: its exported surface and USDT note, InitializeInjection
 * against the real libcupti on a machine without a GPU (one clear line, the process carries on),
 * a real libcudart program with CUDA_INJECTION64_PATH set, and, through a fake libcupti, the
 * whole path from activity buffers to the daemon's socket, at run time and at exit; and the NVTX
 * injection through a stand-in of the NVTX loader's export table.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon/gpu/cupti_server.h"
#include "daemon/gpu/gpu_records.h"

static char tmpdir[64];
static char sock_path[128];

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/xsprof-inject-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	snprintf(sock_path, sizeof(sock_path), "%s/cupti.sock", tmpdir);
	setenv("XSPROF_CUPTI_SOCKET", sock_path, 1);
	setenv("XSPROF_CUPTI_RECONNECT_MS", "0", 1);
	unsetenv("XSPROF_CUPTI_LIBRARY");
	unsetenv("XSPROF_CUPTI_DISABLE");
	unsetenv("CUDA_INJECTION64_PATH");
	unsetenv("XSPROF_CUPTI_POLICY");
}

static void teardown(void)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(cupti_inject, .init = setup, .fini = teardown, .timeout = 120);

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static size_t read_all(FILE *f, char *buf, size_t cap)
{
	size_t n = fread(buf, 1, cap - 1, f);

	buf[n] = '\0';
	return n;
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

Test(cupti_inject, exports_only_the_entry_points)
{
	char out[4096];
	FILE *f = popen("nm -D --defined-only '" XSPROF_CUPTI_LIB "'", "r");

	cr_assert_not_null(f);
	read_all(f, out, sizeof(out));
	cr_assert_eq(pclose(f), 0, "nm failed (binutils installed?)");
	cr_assert_eq(count_lines(out), 2, "exported:\n%s", out);
	cr_assert(strstr(out, " T InitializeInjection\n"), "exported:\n%s", out);
	cr_assert(strstr(out, " T InitializeInjectionNvtx2\n"), "exported:\n%s", out);
}

Test(cupti_inject, usdt_note_carries_the_semaphore)
{
	char out[8192], *sem;
	FILE *f = popen("readelf -n '" XSPROF_CUPTI_LIB "'", "r");

	cr_assert_not_null(f);
	read_all(f, out, sizeof(out));
	cr_assert_eq(pclose(f), 0);
	cr_assert(strstr(out, "Provider: xsprof"), "%s", out);
	cr_assert(strstr(out, "Name: launch"), "%s", out);
	sem = strstr(out, "Semaphore: 0x");
	cr_assert_not_null(sem, "no semaphore: tracers could not skip the probe cheaply\n%s", out);
	cr_assert_neq(strtoull(sem + strlen("Semaphore: "), NULL, 16), 0, "%s", out);
	cr_assert(strstr(out, "Arguments: 4@") && strstr(out, " 4@"),
		  "two 32-bit arguments (correlation id, api):\n%s", out);
}

/* Run the host program in MODE; its stderr (the library's voice) is captured. */
struct child_run {
	int status;
	pid_t pid;
	char err[4096];
};

static void run_host(const char *mode, bool with_fake, struct child_run *ret)
{
	char path[] = "/tmp/xsprof-inject-err-XXXXXX";
	int fd = mkstemp(path);
	FILE *f;

	cr_assert_geq(fd, 0);
	if (with_fake)
		setenv("XSPROF_CUPTI_LIBRARY", FAKE_CUPTI_LIB, 1);
	fflush(NULL);
	ret->pid = fork();
	cr_assert_geq(ret->pid, 0);
	if (ret->pid == 0) {
		dup2(fd, 2);
		execl(XS_INJECT_HOST, XS_INJECT_HOST, mode, XSPROF_CUPTI_LIB,
		      with_fake ? FAKE_CUPTI_LIB : (char *)NULL, (char *)NULL);
		_exit(127);
	}
	cr_assert_eq(waitpid(ret->pid, &ret->status, 0), ret->pid);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	read_all(f, ret->err, sizeof(ret->err));
	fclose(f);
	close(fd);
	unlink(path);
}

static void expect_ok(const struct child_run *r)
{
	cr_assert(WIFEXITED(r->status), "the process died: status %#x\n%s", r->status, r->err);
	cr_assert_eq(WEXITSTATUS(r->status), 0, "exit %d\n%s", WEXITSTATUS(r->status), r->err);
}

static void expect_one_line(const struct child_run *r, const char *part)
{
	expect_ok(r);
	cr_assert_eq(count_lines(r->err), 1, "want exactly one line, got:\n%s", r->err);
	cr_assert(!strncmp(r->err, "xsprof-cupti[", 13), "%s", r->err);
	cr_assert(strstr(r->err, part), "want \"%s\" in:\n%s", part, r->err);
}

/* Whether this machine has an NVIDIA GPU with its driver loaded. */
static bool have_gpu(void)
{
	return !access("/dev/nvidiactl", F_OK) && !access("/proc/driver/nvidia/version", F_OK);
}

Test(cupti_inject, real_cupti_with_or_without_a_gpu)
{
	struct child_run r;

	run_host("init3", false, &r);
	if (!have_gpu()) {
		/* No GPU, no driver: CUPTI refuses, and the library says so once, steps aside. */
		expect_one_line(&r, "GPU activity is not recorded");
		return;
	}
	/* With one, CUPTI takes the subscription: the process runs on and nothing is refused. */
	expect_ok(&r);
	cr_expect(!strstr(r.err, "GPU activity is not recorded"), "%s", r.err);
	cr_expect(!strstr(r.err, "cannot load libcupti"), "%s", r.err);
}

Test(cupti_inject, libcupti_missing)
{
	struct child_run r;

	setenv("XSPROF_CUPTI_LIBRARY", "/nonexistent/libcupti.so.13", 1);
	run_host("init3", false, &r);
	expect_one_line(&r, "cannot load libcupti");
}

Test(cupti_inject, disabled_says_nothing)
{
	struct child_run r;

	setenv("XSPROF_CUPTI_DISABLE", "1", 1);
	run_host("init3", false, &r);
	expect_ok(&r);
	cr_assert_str_eq(r.err, "");
}

Test(cupti_inject, another_subscriber_is_left_alone)
{
	struct child_run r;

	setenv("FAKE_CUPTI_SUBSCRIBE", "multiple", 1);
	run_host("left-alone", true, &r);
	expect_one_line(&r, "another CUPTI tool (fake-nsys) already profiles this process");
}

Test(cupti_inject, kernel_tracing_refused_undoes_everything)
{
	struct child_run r;

	setenv("FAKE_CUPTI_KERNEL_FAIL", "1", 1);
	run_host("left-alone", true, &r);
	expect_one_line(&r, "cannot record kernels");
}

/* API records of the launch calls only; every call where asked, or where libcupti cannot
 * choose (then the whole-API activity kinds, as before). */
Test(cupti_inject, api_records_of_launch_calls_only)
{
	struct child_run r;

	setenv("XSPROF_CUPTI_POLICY", "full", 1);
	run_host("apis", true, &r);
	cr_assert_eq(WEXITSTATUS(r.status), 16 | 4, "per-call records only: %d (%s)", r.status,
		     r.err);
	unsetenv("XSPROF_CUPTI_POLICY");
	setenv("XSPROF_CUPTI_APIS", "all", 1);
	run_host("apis", true, &r);
	cr_assert_eq(WEXITSTATUS(r.status), 16 | 1 | 2, "every call: %d (%s)", r.status, r.err);
	unsetenv("XSPROF_CUPTI_APIS");
	setenv("XSPROF_CUPTI_POLICY", "full", 1);
	setenv("FAKE_CUPTI_NO_API_FILTER", "1", 1);
	setenv("XSPROF_CUPTI_VERBOSE", "1", 1);
	run_host("apis", true, &r);
	cr_assert_eq(WEXITSTATUS(r.status), 16 | 1 | 2, "libcupti cannot choose: %d (%s)", r.status,
		     r.err);
	cr_assert(strstr(r.err, "cannot record chosen calls"), "%s", r.err);
}

/* XSPROF_CUPTI_POLICY: what each policy has CUPTI record; kernels by default, a bad value
 * said and the default kept. */
Test(cupti_inject, each_policy_records_what_it_says)
{
	static const struct {
		const char *policy;
		int bits;
	} want[] = {
		{NULL, 1 | 2 | 16},	      /* default: kernels */
		{"launch", 16},		      /* the callbacks only */
		{"kernels", 1 | 2 | 16},      /* kernels and copies, no API records */
		{"full", 1 | 2 | 4 | 8 | 16}, /* + markers, sync, the launch calls' API records */
		{"all", 1 | 2 | 4 | 16},      /* + every call (the whole-API kinds) */
		{"bogus", 1 | 2 | 16},	      /* said, then the default */
	};
	struct child_run r;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		if (want[i].policy)
			setenv("XSPROF_CUPTI_POLICY", want[i].policy, 1);
		else
			unsetenv("XSPROF_CUPTI_POLICY");
		run_host("policy", true, &r);
		cr_assert(WIFEXITED(r.status), "%s: died %#x", want[i].policy, r.status);
		cr_assert_eq(WEXITSTATUS(r.status), 32 | want[i].bits, "%s: %d, want %d (%s)",
			     want[i].policy ? want[i].policy : "default", WEXITSTATUS(r.status),
			     32 | want[i].bits, r.err);
		if (want[i].policy && !strcmp(want[i].policy, "bogus"))
			cr_assert(strstr(r.err, "XSPROF_CUPTI_POLICY=bogus is not one of"), "%s",
				  r.err);
		else
			cr_assert_str_eq(r.err, "", "%s", r.err);
	}
	unsetenv("XSPROF_CUPTI_POLICY");
}

Test(cupti_inject, mismatched_cupti_major_is_refused)
{
	struct child_run r;

	setenv("FAKE_CUPTI_VERSION", "120090", 1);
	run_host("left-alone", true, &r);
	expect_one_line(&r, "built for");
}

typedef int (*init_fn)(void);

static int (*fake_state)(void);
static unsigned (*fake_kinds)(void);
static unsigned (*fake_callbacks)(int);
static int (*fake_api_records)(int);
static int (*fake_add_kernel)(const char *, uint32_t);
static int (*fake_add_api)(int, uint32_t, uint32_t, uint32_t);
static void (*fake_complete)(void);
static void (*fake_api_callback)(int, uint32_t, uint32_t, int);

/* The library opens the fake by the same path, so it gets this very copy. */
static init_fn load_entry(void)
{
	void *h = dlopen(XSPROF_CUPTI_LIB, RTLD_NOW | RTLD_LOCAL);

	return h ? (init_fn)dlsym(h, "InitializeInjection") : NULL;
}

static void load_fake(void)
{
	void *h = dlopen(FAKE_CUPTI_LIB, RTLD_NOW | RTLD_GLOBAL);

	cr_assert_not_null(h, "%s", dlerror());
	*(void **)&fake_state = dlsym(h, "fake_cupti_state");
	*(void **)&fake_kinds = dlsym(h, "fake_cupti_enabled_kinds");
	*(void **)&fake_callbacks = dlsym(h, "fake_cupti_enabled_callbacks");
	*(void **)&fake_api_records = dlsym(h, "fake_cupti_api_records");
	*(void **)&fake_add_kernel = dlsym(h, "fake_cupti_add_kernel");
	*(void **)&fake_add_api = dlsym(h, "fake_cupti_add_api");
	*(void **)&fake_complete = dlsym(h, "fake_cupti_complete");
	*(void **)&fake_api_callback = dlsym(h, "fake_cupti_api_callback");
	cr_assert(fake_state && fake_add_kernel && fake_complete && fake_api_callback);
	setenv("XSPROF_CUPTI_LIBRARY", FAKE_CUPTI_LIB, 1);
}

static struct cupti_server *start_server(void)
{
	struct cupti_server *s =
		cupti_server__new(&(struct cupti_server_opts){.socket_path = sock_path});

	cr_assert_not_null(s, "%s", strerror(errno));
	return s;
}

static bool pump_until_stored(struct cupti_server *s, uint64_t n)
{
	uint64_t deadline = mono_ns() + 5000000000ull;
	struct cupti_server_stats st;

	for (;;) {
		struct pollfd p = {.fd = cupti_server__fd(s), .events = POLLIN};

		cupti_server__stats(s, &st);
		if (st.store.added >= n)
			return true;
		if (mono_ns() > deadline)
			return false;
		if (poll(&p, 1, 20) > 0)
			cr_assert_geq(cupti_server__process(s), 0);
	}
}

struct seen {
	int kernels, apis;
	uint32_t pid;
	uint64_t min_start, max_end;
	char names[256];
};

static int note(void *ctx, const struct gpu_activity *a)
{
	struct seen *s = ctx;

	s->pid = a->pid;
	if (!s->min_start || a->start_ns < s->min_start)
		s->min_start = a->start_ns;
	if (a->end_ns > s->max_end)
		s->max_end = a->end_ns;
	if (a->kind == GPU_ACT_KERNEL) {
		s->kernels++;
		strncat(s->names, a->name, sizeof(s->names) - strlen(s->names) - 2);
		strcat(s->names, ",");
	} else if (a->kind == GPU_ACT_API) {
		s->apis++;
	}
	return 0;
}

Test(cupti_inject, fake_cupti_end_to_end)
{
	struct cupti_server *s = start_server();
	struct cupti_server_stats st;
	struct seen seen = {0};
	init_fn init;
	uint64_t t0, t1;

	setenv("XSPROF_CUPTI_POLICY", "full", 1); /* the launch calls' API records too */
	load_fake();
	init = load_entry();
	cr_assert_not_null(init);
	cr_assert_eq(init(), 1);
	cr_assert_eq(fake_state(), 1 | 2 | 4, "subscribed, clock registered, kernels on");
	cr_assert_gt(fake_callbacks(2), 8, "runtime launch callbacks");
	cr_assert_gt(fake_callbacks(1), 8, "driver launch callbacks");
	/* API records of the launch calls only, not every runtime and driver call. */
	cr_assert_eq(fake_api_records(2), (int)fake_callbacks(2));
	cr_assert_eq(fake_api_records(1), (int)fake_callbacks(1));
	cr_assert_not(fake_kinds() & (1u << 5 | 1u << 4),
		      "the whole-API kinds (RUNTIME, DRIVER) stay off");

	/* A runtime launch with its driver call nested inside, as the driver reports them. */
	fake_api_callback(2, 211, 41, 0);
	fake_api_callback(1, 307, 41, 0);
	fake_api_callback(1, 307, 41, 1);
	fake_api_callback(2, 211, 41, 1);

	t0 = mono_ns();
	cr_assert_eq(fake_add_kernel("_Z1av", 41), 0);
	cr_assert_eq(fake_add_kernel("_Z1bv", 42), 0);
	cr_assert_eq(fake_add_kernel("_Z1av", 43), 0);
	cr_assert_eq(fake_add_api(1, 211, 41, 1234), 0);
	t1 = mono_ns();
	fake_complete();

	cr_assert(pump_until_stored(s, 4));
	cupti_server__stats(s, &st);
	cr_assert_eq(st.malformed, 0, "%s", st.last_malformed);
	cr_assert_eq(st.accepted, 1);
	cr_assert_eq(st.policy[XSPROF_WIRE_POLICY_FULL], 1, "the hello said the policy");
	gpu_store__for_each(cupti_server__store(s), 0, note, &seen);
	cr_assert_eq(seen.kernels, 3);
	cr_assert_eq(seen.apis, 1);
	cr_assert_str_eq(seen.names, "_Z1av,_Z1bv,_Z1av,");
	cr_assert_eq(seen.pid, (uint32_t)getpid());
	/* Timestamps came from the library's callback: CLOCK_MONOTONIC, like BPF's. */
	cr_assert(seen.min_start >= t0 && seen.min_start <= t1, "start %llu not in [%llu, %llu]",
		  (unsigned long long)seen.min_start, (unsigned long long)t0,
		  (unsigned long long)t1);
	cupti_server__free(s);
}

Test(cupti_inject, exit_flushes_what_is_pending)
{
	struct cupti_server *s = start_server();
	struct seen seen = {0};
	struct child_run r;

	run_host("queue-exit", true, &r);
	expect_ok(&r);
	cr_assert_str_eq(r.err, "", "a healthy run prints nothing");
	cr_assert(pump_until_stored(s, 2));
	gpu_store__for_each(cupti_server__store(s), 0, note, &seen);
	cr_assert_eq(seen.kernels, 2);
	cr_assert_eq(seen.pid, (uint32_t)r.pid, "the host's pid, from SO_PEERCRED");
	cupti_server__free(s);
}

/* The library sent what a buffer left queued only when the next buffer came: at 100,000
 * records a second its queue outgrew 4 MiB and a third were dropped. Now it waits (on
 * CUPTI's thread) for the daemon to read them: a burst of 60,000 (14 MB) arrives whole. */
Test(cupti_inject, a_burst_larger_than_the_queue_arrives_whole)
{
	struct cupti_server *s = start_server();
	struct cupti_server_stats st;
	char path[] = "/tmp/xsprof-inject-err-XXXXXX";
	int fd = mkstemp(path), status;
	char err[4096];
	FILE *f;
	pid_t pid;

	cr_assert_geq(fd, 0);
	setenv("XSPROF_CUPTI_LIBRARY", FAKE_CUPTI_LIB, 1);
	setenv("XSPROF_CUPTI_DRAIN_MS", "5000", 1); /* a loaded CI machine reads late */
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(fd, 2);
		execl(XS_INJECT_HOST, XS_INJECT_HOST, "burst", XSPROF_CUPTI_LIB, FAKE_CUPTI_LIB,
		      (char *)NULL);
		_exit(127);
	}
	cr_assert(pump_until_stored(s, 60000), "the daemon got all 60,000");
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	read_all(f, err, sizeof(err));
	fclose(f);
	close(fd);
	unlink(path);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "host: %#x %s", status, err);
	cr_assert_str_eq(err, "", "a healthy run says nothing: %s", err);
	cupti_server__stats(s, &st);
	cr_assert_eq(st.records[XSPROF_WIRE_KERNEL], 60000);
	cupti_server__free(s);
}

Test(cupti_inject, no_daemon_costs_nothing_and_says_nothing)
{
	struct child_run r;

	setenv("XSPROF_CUPTI_EXIT_LINGER_MS", "0", 1);
	run_host("queue-nodaemon", true, &r);
	expect_ok(&r);
	cr_assert_eq(count_lines(r.err), 0, "no daemon is not an error:\n%s", r.err);
}

static void run_smoke(const char *nvtx, struct child_run *ret)
{
	char path[] = "/tmp/xsprof-smoke-XXXXXX";
	int fd = mkstemp(path);
	FILE *f;
	pid_t pid;

	cr_assert_geq(fd, 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		setenv("CUDA_INJECTION64_PATH", XSPROF_CUPTI_LIB, 1);
		if (nvtx)
			setenv("NVTX_INJECTION64_PATH", nvtx, 1);
		execl(XS_CUDART_SMOKE, XS_CUDART_SMOKE, "10", (char *)NULL);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &ret->status, 0), pid);
	f = fopen(path, "r");
	read_all(f, ret->err, sizeof(ret->err));
	fclose(f);
	close(fd);
	unlink(path);
}

Test(cupti_inject, cudart_program_with_injection_runs_normally)
{
	struct child_run r;

	run_smoke(NULL, &r);
	cr_assert(WIFEXITED(r.status), "killed by signal %d\n%s", WTERMSIG(r.status), r.err);
	cr_assert_eq(WEXITSTATUS(r.status), 0, "%s", r.err);
	run_smoke(REAL_CUPTI_LIB, &r);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s", r.err);
}

/* ---- the NVTX injection, as the NVTX loader calls it (its ABI, from nvtx3's headers) ---- */

typedef void (*nvtx_fn)(void);
enum { NVTX_CORE = 1, NVTX_CORE2 = 5, NVTX_SLOTS = 16 };
static nvtx_fn core_slot[NVTX_SLOTS], core2_slot[NVTX_SLOTS];
static nvtx_fn *core_table[NVTX_SLOTS], *core2_table[NVTX_SLOTS];

static int get_module(int module, nvtx_fn ***ret_table, unsigned int *ret_size)
{
	if (module != NVTX_CORE && module != NVTX_CORE2)
		return 0;
	*ret_table = module == NVTX_CORE ? core_table : core2_table;
	*ret_size = NVTX_SLOTS;
	return 1;
}

static const struct {
	size_t struct_size;
	int (*get)(int, nvtx_fn ***, unsigned int *);
} nvtx_callbacks = {sizeof(nvtx_callbacks), get_module};

static const void *get_export_table(uint32_t id)
{
	return id == 1 ? &nvtx_callbacks : NULL; /* NVTX_ETID_CALLBACKS */
}

/* nvtxEventAttributes_v2 with an ASCII message: 48 bytes, the message last. */
struct nvtx_attr {
	uint16_t version, size;
	uint32_t category;
	int32_t color_type;
	uint32_t color;
	int32_t payload_type, reserved0;
	uint64_t payload;
	int32_t message_type;
	const char *message;
};
_Static_assert(sizeof(struct nvtx_attr) == 48, "nvtxEventAttributes_t");

struct nvtx_seen {
	int n;
	struct gpu_activity a[16];
	char names[16][64], domains[16][64];
};

static int note_nvtx(void *ctx, const struct gpu_activity *a)
{
	struct nvtx_seen *s = ctx;

	if (a->kind != GPU_ACT_NVTX || s->n >= 16)
		return 0;
	s->a[s->n] = *a;
	snprintf(s->names[s->n], 64, "%s", a->name ? a->name : "");
	snprintf(s->domains[s->n], 64, "%s", a->domain ? a->domain : "");
	s->n++;
	return 0;
}

static const struct gpu_activity *nvtx_named(const struct nvtx_seen *s, const char *name,
					     const char **ret_domain)
{
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->names[i], name)) {
			if (ret_domain)
				*ret_domain = s->domains[i];
			return &s->a[i];
		}
	cr_assert_fail("no NVTX record named %s (%d records)", name, s->n);
	return NULL;
}

Test(cupti_inject, nvtx_ranges_reach_the_daemon_without_cuda)
{
	struct cupti_server *s = start_server();
	void *h = dlopen(XSPROF_CUPTI_LIB, RTLD_NOW | RTLD_LOCAL);
	int (*init)(const void *(*)(uint32_t));
	int (*push)(const char *), (*pop)(void), (*dom_push)(void *, const struct nvtx_attr *);
	int (*dom_pop)(void *);
	void *(*dom_create)(const char *);
	void (*mark)(const char *), (*end)(uint64_t);
	uint64_t (*start)(const char *), id;
	struct nvtx_attr attr = {
		.version = 3, .size = 48, .message_type = 1, .message = "in the domain"};
	const struct gpu_activity *outer, *inner, *m;
	const char *domain = NULL;
	struct nvtx_seen seen = {0};
	struct cupti_server_stats st;
	uint64_t open_start;
	void *d;

	for (int i = 0; i < NVTX_SLOTS; i++) {
		core_table[i] = &core_slot[i];
		core2_table[i] = &core2_slot[i];
	}
	cr_assert_not_null(h, "%s", dlerror());
	*(void **)&init = dlsym(h, "InitializeInjectionNvtx2");
	cr_assert_not_null(init);
	cr_assert_eq(init(get_export_table), 1);
	*(void **)&push = (void *)core_slot[9]; /* NVTX_CBID_CORE_RangePushA */
	*(void **)&pop = (void *)core_slot[11];
	*(void **)&mark = (void *)core_slot[2];
	*(void **)&start = (void *)core_slot[5];
	*(void **)&end = (void *)core_slot[7];
	*(void **)&dom_create = (void *)core2_slot[12];
	*(void **)&dom_push = (void *)core2_slot[4];
	*(void **)&dom_pop = (void *)core2_slot[5];
	cr_assert(push && pop && mark && start && end && dom_create && dom_push && dom_pop);

	/* NVTX's return values: the level pushed, the level popped, -1 for a pop too many. */
	cr_expect_eq(push("outer"), 0);
	cr_expect_eq(push("inner"), 1);
	cr_expect_eq(pop(), 1);
	cr_expect_eq(pop(), 0);
	cr_expect_eq(pop(), -1);
	/* A domain keeps its own stack: its pop takes its range, under another one. */
	d = dom_create("xs_domain");
	cr_assert_eq(dom_create("xs_domain"), d, "one handle per domain name");
	cr_expect_eq(dom_push(d, &attr), 0);
	cr_expect_eq(push("plain"), 1);
	cr_expect_eq(dom_pop(d), 1);
	cr_expect_eq(pop(), 0);
	id = start("across");
	end(id);
	mark("a mark");
	/* Past the 50 ms flush period, the next call hands what is queued to the socket (the
	 * mark it sends itself waits for the next flush, or the exit). */
	usleep(120 * 1000);
	mark("flush");
	cr_assert(pump_until_stored(s, 6));
	gpu_store__for_each(cupti_server__store(s), 0, note_nvtx, &seen);
	cr_assert_eq(seen.n, 6);
	outer = nvtx_named(&seen, "outer", NULL);
	inner = nvtx_named(&seen, "inner", NULL);
	cr_expect(outer->start_ns <= inner->start_ns && inner->end_ns <= outer->end_ns &&
		  inner->start_ns < inner->end_ns);
	cr_expect_eq(outer->tid, (uint32_t)syscall(SYS_gettid));
	cr_expect_eq(outer->pid, (uint32_t)getpid());
	nvtx_named(&seen, "in the domain", &domain);
	cr_expect_str_eq(domain, "xs_domain");
	nvtx_named(&seen, "plain", &domain);
	cr_expect_str_eq(domain, "");
	nvtx_named(&seen, "across", NULL);
	m = nvtx_named(&seen, "a mark", NULL);
	cr_expect_eq(m->start_ns, m->end_ns, "a mark has no length");
	/* Each push and start sent its opening too, and each range's end took it away. */
	cupti_server__stats(s, &st);
	cr_expect_eq(st.store.open, 0);
	cr_expect_eq(st.store.open_ended, 5);

	/* A range that has not ended is known by its opening, the ranges inside it by their end. */
	cr_expect_eq(push("still open"), 0);
	cr_expect_eq(push("inside"), 1);
	cr_expect_eq(pop(), 1);
	usleep(120 * 1000);
	mark("flush again");
	cr_assert(pump_until_stored(s, 8), "the first flush mark and inside");
	memset(&seen, 0, sizeof(seen));
	gpu_store__for_each_open(cupti_server__store(s), 0, note_nvtx, &seen);
	cr_assert_eq(seen.n, 1);
	cr_expect_str_eq(seen.names[0], "still open");
	cr_expect(seen.a[0].flags & XSPROF_WIRE_F_OPEN);
	cr_expect_eq(seen.a[0].tid, (uint32_t)syscall(SYS_gettid));
	open_start = seen.a[0].start_ns;
	memset(&seen, 0, sizeof(seen));
	gpu_store__for_each(cupti_server__store(s), 0, note_nvtx, &seen);
	inner = nvtx_named(&seen, "inside", NULL);
	cr_expect(inner->start_ns > open_start);
	cupti_server__stats(s, &st);
	cr_expect_eq(st.store.open_ended, 6);
	cupti_server__free(s);
}

/* While the injection library works through a buffer of CUPTI's, another thread's NVTX range. */
struct nvtx_during {
	int (*push)(const char *), (*pop)(void);
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool done, in_time;
};

static void *nvtx_thread(void *arg)
{
	struct nvtx_during *d = arg;

	d->push("during a buffer");
	d->pop();
	pthread_mutex_lock(&d->lock);
	d->done = true;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

/* In the middle of the buffer: the range must get through before the buffer is done. */
static void nvtx_while_encoding(void *arg)
{
	struct nvtx_during *d = arg;
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	cr_assert_eq(pthread_create(&d->thread, NULL, nvtx_thread, d), 0);
	pthread_mutex_lock(&d->lock);
	while (!d->done && pthread_cond_timedwait(&d->cond, &d->lock, &until) == 0)
		;
	d->in_time = d->done;
	pthread_mutex_unlock(&d->lock);
	/* Joined once the buffer is done: a range held behind it finishes only then. */
}

/*
 * The application's threads send NVTX ranges through the lock that guards the connection; a
 * CUPTI buffer (thousands of records on a real GPU) is encoded without holding it, so a range
 * sent meanwhile is not held up behind the whole buffer (on an H100 that stall is the likely
 * part of a PyTorch step's cost with the library loaded: tests/gpu/RESULTS.md).
 */
Test(cupti_inject, nvtx_ranges_are_not_held_behind_a_cupti_buffer)
{
	struct cupti_server *s = start_server();
	struct nvtx_during d = {.lock = PTHREAD_MUTEX_INITIALIZER,
				.cond = PTHREAD_COND_INITIALIZER};
	void (*set_hook)(int, void (*)(void *), void *);
	int (*init_nvtx)(const void *(*)(uint32_t));
	void (*mark)(const char *);
	init_fn init;
	void *h;

	load_fake();
	init = load_entry();
	cr_assert_not_null(init);
	cr_assert_eq(init(), 1);
	for (int i = 0; i < NVTX_SLOTS; i++) {
		core_table[i] = &core_slot[i];
		core2_table[i] = &core2_slot[i];
	}
	h = dlopen(XSPROF_CUPTI_LIB, RTLD_NOW | RTLD_LOCAL);
	*(void **)&init_nvtx = dlsym(h, "InitializeInjectionNvtx2");
	cr_assert(init_nvtx && init_nvtx(get_export_table) == 1);
	*(void **)&d.push = (void *)core_slot[9]; /* NVTX_CBID_CORE_RangePushA */
	*(void **)&d.pop = (void *)core_slot[11];
	*(void **)&mark = (void *)core_slot[2];
	/* Connected first: the ranges then go out through the lock. */
	d.push("first");
	d.pop();
	usleep(120 * 1000);
	mark("flush");
	cr_assert(pump_until_stored(s, 1));
	set_hook = dlsym(RTLD_DEFAULT, "fake_cupti_set_record_hook");
	cr_assert_not_null(set_hook);
	for (int i = 0; i < 600; i++)
		cr_assert_eq(fake_add_kernel("_Z4busyv", (uint32_t)i), 0);
	set_hook(300, nvtx_while_encoding, &d);
	fake_complete();
	pthread_join(d.thread, NULL);
	cr_expect(d.in_time, "an NVTX range waited for the CUPTI buffer being encoded");
	cr_assert(pump_until_stored(s, 1 + 600));
}
