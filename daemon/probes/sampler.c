// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "daemon/base/clock.h"
#include "daemon/probes/bpf_margins.h"
#include "daemon/probes/dither.h"
#include "daemon/probes/sampler.h"
#include "daemon/probes/stop_ledger.h"
#include "daemon/unwind/unwinder.h"
#include "xsprof.skel.h"

/*
 * The ring's data pages are mapped twice into our address space and populated up front, so its
 * size shows in our RSS twice over. 128 KiB per CPU holds ~250 typical samples per CPU (a quarter
 * of a second at 999 Hz), and the reader is woken at a quarter full.
 */
/* The initial pid namespace's inode (include/linux/proc_ns.h). */
#define PROC_PID_INIT_INO 0xEFFFFFFCU
#define MIN_RING_BYTES	  (1u << 20)
#define RING_PER_CPU	  (128u << 10)
#define DEFAULT_MAX_PIDS  4096

struct sampler {
	struct xsprof_bpf *skel;
	uint32_t loaded;  /* SAMPLER_PROG_BITs of the optional programs loaded */
	uint32_t refused; /* wanted, refused by the kernel */
	struct ring_buffer *rb;
	sampler_sample_fn fn;
	void *ctx;
	int nr_cpus;
	int *pfds;
	uint64_t *restart_ns; /* when each CPU's event is restarted next (dither.h); 0: never */
	struct dither dither;
	uint64_t nominal_ns;   /* the period of freq_hz */
	unsigned int rate_div; /* --max-cpu: sampled at freq_hz / rate_div (1: as asked) */
	struct bpf_link **links;
	struct bpf_link *exec_link; /* exec_window: samples between two images of an exec */
	int nr_attached;
	uint32_t ring_bytes;
	unsigned int freq_hz;
	uint32_t unwind_mode;
	struct sampler_stats ustats;
	struct {
		sampler_record_fn fn;
		void *ctx;
	} handlers[XSPROF_REC_MAX];
	sampler_rewrite_fn rewrite;
	void *rewrite_ctx;
};

int parse_cpu_list(const char *s, bool *mask, int nbits)
{
	const char *p = s;

	memset(mask, 0, sizeof(*mask) * nbits);
	while (*p && *p != '\n') {
		char *end;
		long a, b;

		a = strtol(p, &end, 10);
		if (end == p || a < 0)
			return -EINVAL;
		b = a;
		p = end;
		if (*p == '-') {
			p++;
			b = strtol(p, &end, 10);
			if (end == p || b < a)
				return -EINVAL;
			p = end;
		}
		for (long i = a; i <= b && i < nbits; i++)
			mask[i] = true;
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			return -EINVAL;
	}
	return 0;
}

static int read_online_cpus(bool *mask, int nbits)
{
	char buf[4096];
	ssize_t n;
	int fd = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EINVAL;
	buf[n] = '\0';
	return parse_cpu_list(buf, mask, nbits);
}

/*
 * In a pid namespace other than the initial one, tell the BPF programs ours (nsfs dev and
 * inode), so they report ids as our /proc shows them (bpf/pidns.bpf.h).
 */
static int set_pid_namespace(struct sampler *s)
{
	struct {
		__u64 dev, ino;
	} ns;
	struct stat st;
	__u32 zero = 0;

	if (stat("/proc/self/ns/pid", &st))
		return 0; /* no namespaces: host ids are ours */
	if (st.st_ino == PROC_PID_INIT_INO)
		return 0;
	ns.dev = st.st_dev;
	ns.ino = st.st_ino;
	if (bpf_map__update_elem(s->skel->maps.pidns, &zero, sizeof(zero), &ns, sizeof(ns),
				 BPF_ANY))
		return -errno;
	return 0;
}

static int handle_record(void *ctx, void *data, size_t size)
{
	struct sampler *s = ctx;
	const struct xsprof_sample *rec = data;

	s->ustats.records++;
	if (s->rewrite) {
		rec = s->rewrite(s->rewrite_ctx, data, size, &size);
		data = (void *)rec;
	}
	if (size >= sizeof(__u32) && rec->type != XSPROF_REC_SAMPLE) {
		if (rec->type >= XSPROF_REC_MAX || !s->handlers[rec->type].fn ||
		    s->handlers[rec->type].fn(s->handlers[rec->type].ctx, data, size))
			s->ustats.bad_records++;
		return 0;
	}
	if (size < XSPROF_SAMPLE_HDR_SIZE || rec->nr_kernel > XSPROF_MAX_STACK_DEPTH ||
	    rec->nr_user > XSPROF_MAX_STACK_DEPTH ||
	    size < XSPROF_SAMPLE_HDR_SIZE + 8u * (rec->nr_kernel + rec->nr_user)) {
		s->ustats.bad_records++;
		return 0;
	}
	s->fn(s->ctx, rec);
	return 0;
}

/* The table walk's mode and its maps: the unwinder's (daemon/unwind); in fp mode a minimal
 * placeholder each. */
static int set_unwind(struct sampler *s, const struct sampler_opts *opts)
{
	const struct unwinder_maps *m = opts->unwind_maps;
	int err;

	s->unwind_mode = opts->unwind_mode;
	s->skel->rodata->unwind_mode = opts->unwind_mode;
	if (opts->unwind_mode == XSPROF_UNWIND_FP)
		return 0;
	if (!m)
		return -EINVAL;
	err = bpf_map__reuse_fd(s->skel->maps.unwind_rows, m->rows);
	if (!err)
		err = bpf_map__reuse_fd(s->skel->maps.unwind_pages, m->pages);
	if (!err)
		err = bpf_map__reuse_fd(s->skel->maps.unwind_files, m->files);
	if (!err)
		err = bpf_map__reuse_fd(s->skel->maps.unwind_maps, m->maps);
	if (!err)
		err = bpf_map__reuse_fd(s->skel->maps.unwind_procs, m->procs);
	return err;
}

void sampler__set_rewrite(struct sampler *s, sampler_rewrite_fn fn, void *ctx)
{
	s->rewrite = fn;
	s->rewrite_ctx = ctx;
}

const void *sampler__rewrite(struct sampler *s, const void *data, size_t size, size_t *ret_size)
{
	*ret_size = size;
	return s->rewrite ? s->rewrite(s->rewrite_ctx, data, size, ret_size) : data;
}

void sampler__set_hold(struct sampler *s, bool on)
{
	s->skel->bss->hold_on = on && s->unwind_mode != XSPROF_UNWIND_FP;
}

int sampler__python_map(const struct sampler *s, int *ret_procs_fd, uint32_t *ret_max_procs)
{
	*ret_procs_fd = bpf_map__fd(s->skel->maps.py_procs);
	*ret_max_procs = bpf_map__max_entries(s->skel->maps.py_procs);
	return *ret_procs_fd < 0 ? -ENOENT : 0;
}

void sampler__set_python(struct sampler *s, bool on)
{
	s->skel->bss->python_on = on;
}

/* Per-CPU counters of a percpu array of u64s, summed into ret (size bytes). */
static int sum_percpu(const struct sampler *s, const struct bpf_map *map, void *ret, size_t size)
{
	__u64 *vals = calloc(s->nr_cpus, size), *dst = ret;
	__u32 zero = 0;
	int err = 0;

	if (!vals)
		return -ENOMEM;
	memset(ret, 0, size);
	if (bpf_map__lookup_elem(map, &zero, sizeof(zero), vals, size * s->nr_cpus, 0))
		err = -errno;
	for (int i = 0; !err && i < s->nr_cpus; i++)
		for (size_t k = 0; k < size / sizeof(__u64); k++)
			dst[k] += vals[i * (size / sizeof(__u64)) + k];
	free(vals);
	return err;
}

int sampler__python_stats(const struct sampler *s, struct xsprof_py_stats *ret)
{
	return sum_percpu(s, s->skel->maps.py_stats, ret, sizeof(*ret));
}

int sampler__autograd_stats(const struct sampler *s, struct xsprof_autograd_stats *ret)
{
	return sum_percpu(s, s->skel->maps.ag_stats, ret, sizeof(*ret));
}

int sampler__owner_stats(const struct sampler *s, struct xsprof_owner_stats *ret)
{
	return sum_percpu(s, s->skel->maps.owner_stats, ret, sizeof(*ret));
}

int sampler__unwind_stats(const struct sampler *s, struct xsprof_unwind_stats *ret)
{
	struct xsprof_unwind_stats *vals;
	__u32 zero = 0;
	int err = 0;

	vals = calloc(s->nr_cpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	memset(ret, 0, sizeof(*ret));
	if (bpf_map__lookup_elem(s->skel->maps.unwind_stats, &zero, sizeof(zero), vals,
				 sizeof(*vals) * s->nr_cpus, 0)) {
		err = -errno;
		goto out;
	}
	for (int i = 0; i < s->nr_cpus; i++) {
		const __u64 *src = (const __u64 *)&vals[i];
		__u64 *dst = (__u64 *)ret;

		for (size_t k = 0; k < sizeof(*ret) / sizeof(__u64); k++)
			dst[k] += src[k];
	}
out:
	free(vals);
	return err;
}

static uint32_t ring_size_for(int nr_cpus)
{
	uint64_t want = (uint64_t)RING_PER_CPU * nr_cpus;
	uint32_t sz = MIN_RING_BYTES;

	while (sz < want && sz < (1u << 30))
		sz <<= 1;
	return sz;
}

static struct bpf_program *optional_prog(struct xsprof_bpf *skel, enum sampler_prog p)
{
	switch (p) {
	case SAMPLER_PROG_OFFCPU:
		return skel->progs.xsprof_offcpu;
	case SAMPLER_PROG_EXEC_WINDOW:
		return skel->progs.xsprof_exec_begin;
	case SAMPLER_PROG_PROC_EXEC:
		return skel->progs.xsprof_proc_exec;
	case SAMPLER_PROG_PROC_EXIT:
		return skel->progs.xsprof_proc_exit;
	case SAMPLER_PROG_PROC_LIBS:
		return skel->progs.xsprof_proc_libs;
	case SAMPLER_PROG_CUDA_CALL:
		return skel->progs.xsprof_cuda_call;
	case SAMPLER_PROG_USDT_LAUNCH:
		return skel->progs.xsprof_usdt_launch;
	case SAMPLER_PROG_FOLLOW_FORK:
		return skel->progs.xsprof_follow_fork;
	case SAMPLER_PROG_UNFOLLOW_EXIT:
		return skel->progs.xsprof_unfollow_exit;
	case SAMPLER_PROG_WATCH_MMAP:
		return skel->progs.xsprof_watch_mmap;
	case SAMPLER_PROG_CUDA_RET:
		return skel->progs.xsprof_cuda_ret;
	case SAMPLER_PROG_USDT_SCOPE:
		return skel->progs.xsprof_usdt_scope;
	case SAMPLER_PROG_WATCH_EXEC:
		return skel->progs.xsprof_watch_exec;
	case SAMPLER_PROG_AUTOGRAD:
		return skel->progs.xsprof_ag_node;
	case SAMPLER_PROG_WAKING:
		return skel->progs.xsprof_waking;
	default:
		return NULL;
	}
}

const char *sampler__program_feature(enum sampler_prog p)
{
	static const char *const what[SAMPLER_PROG_MAX] = {
		[SAMPLER_PROG_OFFCPU] = "off-CPU time (sched_switch)",
		[SAMPLER_PROG_EXEC_WINDOW] = "telling samples inside an exec apart",
		[SAMPLER_PROG_PROC_EXEC] = "exec events (names of short-lived processes)",
		[SAMPLER_PROG_PROC_EXIT] = "exit events",
		[SAMPLER_PROG_PROC_LIBS] = "unwind tables of libraries loaded later",
		[SAMPLER_PROG_CUDA_CALL] = "CUDA API uprobes",
		[SAMPLER_PROG_USDT_LAUNCH] = "the xsprof:launch USDT",
		[SAMPLER_PROG_FOLLOW_FORK] = "following children at fork",
		[SAMPLER_PROG_UNFOLLOW_EXIT] = "letting children go at exit",
		[SAMPLER_PROG_WATCH_MMAP] = "probing CUDA libraries mapped later",
		[SAMPLER_PROG_CUDA_RET] = "timing CUDA synchronisation (GPU waits)",
		[SAMPLER_PROG_USDT_SCOPE] = "xsprof scopes (xsprof:scope_begin / scope_end)",
		[SAMPLER_PROG_WATCH_EXEC] = "probing executables exec'd later",
		[SAMPLER_PROG_AUTOGRAD] = "PyTorch backward work under its forward line",
		[SAMPLER_PROG_WAKING] = "who woke each off-CPU stretch (sched_waking)",
	};

	return p < SAMPLER_PROG_MAX ? what[p] : "?";
}

/*
 * A program the tests want refused (XSPROF_TEST_REFUSE_PROGRAM=xsprof_watch_mmap): made into a
 * tracing program of a function no kernel has, so the load fails the way a refusal does.
 */
void sampler__test_refusal(struct xsprof_bpf *skel)
{
	const char *name = getenv("XSPROF_TEST_REFUSE_PROGRAM");
	struct bpf_program *p = name ? bpf_object__find_program_by_name(skel->obj, name) : NULL;

	if (!p || !bpf_program__autoload(p))
		return;
	bpf_program__set_type(p, BPF_PROG_TYPE_TRACING);
	bpf_program__set_expected_attach_type(p, BPF_TRACE_FENTRY);
	bpf_program__set_attach_target(p, 0, "xsprof_no_such_kernel_function");
}

/* Open, configure with the programs of skip left out, load. 0, or -errno with s->skel NULL. */
static int load_skel(struct sampler *s, const struct sampler_opts *opts, uint32_t skip)
{
	int err;

	s->skel = xsprof_bpf__open();
	if (!s->skel)
		return -errno;
	s->skel->rodata->include_idle = opts->include_idle;
	/* Wake the reader at a quarter full: it has three quarters of headroom to catch up. */
	s->skel->rodata->wakeup_bytes = s->ring_bytes / 4;
	s->skel->rodata->unwind_hold_ring_limit = s->ring_bytes / 2;
	err = bpf_map__set_max_entries(s->skel->maps.samples, s->ring_bytes);
	if (!err)
		err = bpf_map__set_max_entries(s->skel->maps.pid_filter,
					       opts->max_pids ? opts->max_pids : DEFAULT_MAX_PIDS);
	if (!err)
		err = set_unwind(s, opts);
	/* The daemon's one stop ledger: a process stopped for its probes is continued by the
	 * watchdog if the daemon dies before it does. */
	if (!err) {
		int ledger = stop_ledger__fd();

		err = ledger < 0 ? ledger : bpf_map__reuse_fd(s->skel->maps.stopped, ledger);
	}
	if (!err && !(skip & SAMPLER_PROG_BIT(SAMPLER_PROG_OFFCPU))) {
		s->skel->rodata->offcpu_min_ns = opts->offcpu_min_ns;
		s->skel->bss->wakers_on = opts->wakers;
		err = bpf_map__set_max_entries(s->skel->maps.offcpu_agg,
					       opts->offcpu_max_stacks ? opts->offcpu_max_stacks
								       : 16384);
	}
	if (opts->comm && opts->comm[0]) {
		s->skel->rodata->filter_comm_on = true;
		strncpy((char *)s->skel->rodata->filter_comm, opts->comm,
			sizeof(s->skel->rodata->filter_comm) - 1);
	}
	s->skel->rodata->filter_cgroup_on = opts->cgroup_fd > 0;
	s->skel->rodata->filter_tid_on = opts->nr_tids > 0;
	s->skel->rodata->filter_uid_on = opts->only_uid;
	s->skel->rodata->filter_uid = opts->uid;
	s->skel->rodata->gpu_wait_exclusive = opts->gpu_wait_exclusive;
	for (int p = 0; p < SAMPLER_PROG_MAX; p++)
		bpf_program__set_autoload(optional_prog(s->skel, p), !(skip & SAMPLER_PROG_BIT(p)));
	/* The autograd probes load and go as one. */
	bpf_program__set_autoload(s->skel->progs.xsprof_ag_eval,
				  !(skip & SAMPLER_PROG_BIT(SAMPLER_PROG_AUTOGRAD)));
	bpf_program__set_autoload(s->skel->progs.xsprof_ag_exec,
				  !(skip & SAMPLER_PROG_BIT(SAMPLER_PROG_AUTOGRAD)));
	bpf_program__set_autoload(s->skel->progs.xsprof_ag_exec_end,
				  !(skip & SAMPLER_PROG_BIT(SAMPLER_PROG_AUTOGRAD)));
	sampler__test_refusal(s->skel);
	if (!err)
		err = bpf_margins__env_prepare(s->skel->obj);
	if (!err)
		err = xsprof_bpf__load(s->skel);
	bpf_margins__env_report(s->skel->obj);
	if (err) {
		xsprof_bpf__destroy(s->skel);
		s->skel = NULL;
		return err;
	}
	s->loaded = ~skip & (SAMPLER_PROG_BIT(SAMPLER_PROG_MAX) - 1);
	return 0;
}

/*
 * Every wanted program, or when the kernel refuses the whole: the sampler alone (a kernel that
 * refuses that cannot be helped), then each optional program added alone to what loaded, so
 * one refusal costs its own feature only. The slow path runs only on such a kernel.
 */
static int load_programs(struct sampler *s, const struct sampler_opts *opts)
{
	const uint32_t all = SAMPLER_PROG_BIT(SAMPLER_PROG_MAX) - 1;
	uint32_t skip = opts->skip_programs & all, ok = 0;
	int err;

	if (!opts->offcpu)
		skip |= SAMPLER_PROG_BIT(SAMPLER_PROG_OFFCPU);
	if (!opts->offcpu || !opts->wakers)
		skip |= SAMPLER_PROG_BIT(SAMPLER_PROG_WAKING);
	/* sched_prepare_exec is Linux 6.10: without it, exec samples keep the stale user pc. */
	if (libbpf_find_vmlinux_btf_id("sched_prepare_exec", BPF_TRACE_RAW_TP) < 0)
		skip |= SAMPLER_PROG_BIT(SAMPLER_PROG_EXEC_WINDOW);
	err = load_skel(s, opts, skip);
	if (!err || skip == all)
		return err;
	err = load_skel(s, opts, all);
	if (err)
		return err;
	xsprof_bpf__destroy(s->skel);
	s->skel = NULL;
	for (int p = 0; p < SAMPLER_PROG_MAX; p++) {
		uint32_t bit = SAMPLER_PROG_BIT(p);

		if (skip & bit)
			continue;
		if (load_skel(s, opts, all & ~(ok | bit))) {
			s->refused |= bit;
			continue;
		}
		ok |= bit;
		xsprof_bpf__destroy(s->skel);
		s->skel = NULL;
	}
	return load_skel(s, opts, all & ~ok);
}

struct sampler *sampler__new(const struct sampler_opts *opts, sampler_sample_fn fn, void *ctx)
{
	struct sampler *s;
	int err;

	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->fn = fn;
	s->ctx = ctx;
	s->freq_hz = opts->freq_hz;
	s->nr_cpus = libbpf_num_possible_cpus();
	if (s->nr_cpus <= 0) {
		err = s->nr_cpus ? s->nr_cpus : -EINVAL;
		goto fail;
	}
	s->ring_bytes = opts->ring_bytes ? opts->ring_bytes : ring_size_for(s->nr_cpus);
	if (opts->nr_tids > SAMPLER_MAX_TIDS) {
		err = -E2BIG;
		goto fail;
	}
	err = load_programs(s, opts);
	if (err)
		goto fail;
	if (sampler__has_program(s, SAMPLER_PROG_EXEC_WINDOW))
		s->exec_link = bpf_program__attach(s->skel->progs.xsprof_exec_begin);
	s->ustats.exec_window = s->exec_link != NULL;
	if (opts->cgroup_fd > 0) {
		__u32 zero = 0, cg = (__u32)opts->cgroup_fd;

		if (bpf_map__update_elem(s->skel->maps.cgroup_filter, &zero, sizeof(zero), &cg,
					 sizeof(cg), BPF_ANY)) {
			err = -errno;
			goto fail;
		}
	}
	for (int i = 0; i < opts->nr_tids; i++) {
		__u32 tid = (__u32)opts->tids[i];
		__u8 one = 1;

		if (bpf_map__update_elem(s->skel->maps.tid_filter, &tid, sizeof(tid), &one,
					 sizeof(one), BPF_ANY)) {
			err = -errno;
			goto fail;
		}
	}
	err = set_pid_namespace(s);
	if (err)
		goto fail;

	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.samples), handle_record, s, NULL);
	if (!s->rb) {
		err = -errno;
		goto fail;
	}
	s->pfds = calloc(s->nr_cpus, sizeof(*s->pfds));
	s->restart_ns = calloc(s->nr_cpus, sizeof(*s->restart_ns));
	s->links = calloc(s->nr_cpus, sizeof(*s->links));
	if (!s->pfds || !s->restart_ns || !s->links) {
		err = -ENOMEM;
		goto fail;
	}
	for (int i = 0; i < s->nr_cpus; i++)
		s->pfds[i] = -1;
	s->nominal_ns = 1000000000ull / (opts->freq_hz ? opts->freq_hz : 1);
	s->rate_div = 1;
	dither__init(&s->dither, s->nominal_ns, clock__mono_ns() ^ ((uint64_t)getpid() << 32));
	return s;
fail:
	sampler__free(s);
	errno = -err;
	return NULL;
}

void sampler__set_sample_fn(struct sampler *s, sampler_sample_fn fn, void *ctx)
{
	s->fn = fn;
	s->ctx = ctx;
}

uint32_t sampler__refused(const struct sampler *s)
{
	return s->refused;
}

bool sampler__has_program(const struct sampler *s, enum sampler_prog p)
{
	return p < SAMPLER_PROG_MAX && (s->loaded & SAMPLER_PROG_BIT(p));
}

int sampler__set_handler(struct sampler *s, unsigned int type, sampler_record_fn fn, void *ctx)
{
	if (type == XSPROF_REC_SAMPLE || type >= XSPROF_REC_MAX)
		return -EINVAL;
	s->handlers[type].fn = fn;
	s->handlers[type].ctx = ctx;
	return 0;
}

struct xsprof_bpf *sampler__skel(struct sampler *s)
{
	return s->skel;
}

int sampler__add_pid(struct sampler *s, pid_t tgid)
{
	__u32 key = tgid;
	__u8 one = 1;

	if (bpf_map__update_elem(s->skel->maps.pid_filter, &key, sizeof(key), &one, sizeof(one),
				 BPF_ANY))
		return errno == E2BIG ? -ENOSPC : -errno;
	s->skel->bss->pid_filter_on = true;
	return 0;
}

int sampler__start(struct sampler *s)
{
	bool *online;
	int err;

	online = calloc(s->nr_cpus, sizeof(*online));
	if (!online)
		return -ENOMEM;
	err = read_online_cpus(online, s->nr_cpus);
	if (err)
		goto out;

	for (int cpu = 0; cpu < s->nr_cpus; cpu++) {
		/* A period, as the kernel makes of a cpu-clock frequency: PERF_EVENT_IOC_PERIOD
		 * (sampler__dither) then takes periods too. */
		struct perf_event_attr attr = {
			.type = PERF_TYPE_SOFTWARE,
			.config = PERF_COUNT_SW_CPU_CLOCK,
			.size = sizeof(attr),
			.sample_period = s->dither.period_ns,
		};
		uint64_t interval, period;
		int fd;

		if (!online[cpu])
			continue;
		fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			/* A CPU that went offline since we read the list is not an error. */
			if (errno == ENODEV)
				continue;
			err = -errno;
			goto out;
		}
		s->pfds[cpu] = fd;
		s->links[cpu] =
			bpf_program__attach_perf_event(s->skel->progs.xsprof_sample_cpu, fd);
		if (!s->links[cpu]) {
			err = -errno;
			goto out;
		}
		s->nr_attached++;
		/* Each CPU's first restart at a moment of its own (dither.h). */
		dither__next(&s->dither, &interval, &period);
		s->restart_ns[cpu] = clock__mono_ns() + interval / 2;
	}
	err = s->nr_attached ? 0 : -ENODEV;
out:
	free(online);
	if (err)
		sampler__stop(s);
	return err;
}

void sampler__stop(struct sampler *s)
{
	if (!s || !s->links)
		return;
	for (int cpu = 0; cpu < s->nr_cpus; cpu++) {
		bpf_link__destroy(s->links[cpu]);
		s->links[cpu] = NULL;
		if (s->pfds[cpu] >= 0)
			close(s->pfds[cpu]);
		s->pfds[cpu] = -1;
	}
	s->nr_attached = 0;
}

uint64_t sampler__dither(struct sampler *s, uint64_t now_ns)
{
	uint64_t next = UINT64_MAX;

	for (int cpu = 0; cpu < s->nr_cpus; cpu++) {
		uint64_t interval, period;

		if (s->pfds[cpu] < 0 || !s->restart_ns[cpu])
			continue;
		if (s->restart_ns[cpu] <= now_ns) {
			dither__next(&s->dither, &interval, &period);
			/* The event starts afresh from here, with this period. */
			if (ioctl(s->pfds[cpu], PERF_EVENT_IOC_PERIOD, &period)) {
				s->ustats.restart_failures++;
				s->restart_ns[cpu] = 0; /* refused once, refused always */
				continue;
			}
			s->ustats.restarts++;
			s->restart_ns[cpu] = now_ns + interval;
		}
		if (s->restart_ns[cpu] < next)
			next = s->restart_ns[cpu];
	}
	return next;
}

int sampler__set_rate_divisor(struct sampler *s, unsigned int div)
{
	uint64_t now = clock__mono_ns();
	int err = 0;

	if (!div)
		return -EINVAL;
	if (div == s->rate_div)
		return 0;
	s->rate_div = div;
	dither__init(&s->dither, s->nominal_ns * div, s->dither.rng);
	/* Every event restarts with the new period now; dithering goes on from there. */
	for (int cpu = 0; cpu < s->nr_cpus; cpu++) {
		uint64_t interval, period;

		if (s->pfds[cpu] < 0)
			continue;
		dither__next(&s->dither, &interval, &period);
		if (ioctl(s->pfds[cpu], PERF_EVENT_IOC_PERIOD, &period)) {
			err = -errno;
			continue;
		}
		if (s->restart_ns[cpu])
			s->restart_ns[cpu] = now + interval;
	}
	return err;
}

unsigned int sampler__rate_divisor(const struct sampler *s)
{
	return s->rate_div;
}

void sampler__set_shed(struct sampler *s, uint32_t launch_stack_every, bool cuda_calls, bool offcpu,
		       bool exec)
{
	/* every is a power of two (the BPF side draws a mask's bits). */
	s->skel->bss->launch_stack_mask = launch_stack_every > 1 ? launch_stack_every - 1 : 0;
	s->skel->bss->cuda_calls_shed = cuda_calls;
	s->skel->bss->offcpu_shed = offcpu;
	s->skel->bss->exec_shed = exec;
}

int sampler__fd(const struct sampler *s)
{
	return ring_buffer__epoll_fd(s->rb);
}

int sampler__drain(struct sampler *s)
{
	return ring_buffer__consume(s->rb);
}

int sampler__nr_cpus(const struct sampler *s)
{
	return s->nr_cpus;
}

int sampler__nr_attached(const struct sampler *s)
{
	return s->nr_attached;
}

uint32_t sampler__ring_bytes(const struct sampler *s)
{
	return s->ring_bytes;
}

void xsprof_cpu_stats__add(struct xsprof_cpu_stats *dst, const struct xsprof_cpu_stats *src)
{
	dst->samples += src->samples;
	dst->emitted += src->emitted;
	dst->filtered += src->filtered;
	dst->idle += src->idle;
	dst->drop_ringbuf += src->drop_ringbuf;
	dst->kstack_err += src->kstack_err;
	dst->ustack_err += src->ustack_err;
	dst->in_exec += src->in_exec;
	dst->timed += src->timed;
	dst->timed_ns += src->timed_ns;
}

int sampler__read_stats(const struct sampler *s, struct xsprof_cpu_stats *per_cpu,
			struct xsprof_cpu_stats *total)
{
	struct xsprof_cpu_stats *vals;
	__u32 zero = 0;
	int err = 0;

	vals = calloc(s->nr_cpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	if (bpf_map__lookup_elem(s->skel->maps.cpu_stats, &zero, sizeof(zero), vals,
				 sizeof(*vals) * s->nr_cpus, 0)) {
		err = -errno;
		goto out;
	}
	memset(total, 0, sizeof(*total));
	for (int i = 0; i < s->nr_cpus; i++)
		xsprof_cpu_stats__add(total, &vals[i]);
	if (per_cpu)
		memcpy(per_cpu, vals, sizeof(*vals) * s->nr_cpus);
out:
	free(vals);
	return err;
}

void sampler__user_stats(const struct sampler *s, struct sampler_stats *ret)
{
	*ret = s->ustats;
}

void sampler__free(struct sampler *s)
{
	if (!s)
		return;
	sampler__stop(s);
	bpf_link__destroy(s->exec_link);
	ring_buffer__free(s->rb);
	xsprof_bpf__destroy(s->skel);
	free(s->pfds);
	free(s->restart_ns);
	free(s->links);
	free(s);
}
