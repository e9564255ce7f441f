// SPDX-License-Identifier: Apache-2.0
/*
 * Correlation strategies on synthetic streams. Every record carries a cookie (user): launches
 * are c<N>, GPU records g<N>, and each test states exactly which pairs must be joined and which
 * records must be reported unmatched, late, or duplicate.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "correlate/correlate.h"

#define US 1000ull
#define MS (1000 * US)
#define S  (1000 * MS)

struct log {
	char joins[16384];
	char unmatched[4096]; /* uc<N>:why / ug<N>:why */
	char picks[512];      /* pid=strategy */
};

static const char *why_name(enum corr_why why)
{
	switch (why) {
	case CORR_WHY_AGED:
		return "aged";
	case CORR_WHY_LATE:
		return "late";
	case CORR_WHY_CAP:
		return "cap";
	case CORR_WHY_FLUSH:
		return "flush";
	case CORR_WHY_DUPLICATE:
		return "dup";
	case CORR_WHY_NO_PARTNER:
		return "none";
	}
	return "?";
}

static void append(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void append(char *buf, size_t size, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf + len, size - len, fmt, ap);
	va_end(ap);
}

static void on_join(void *ctx, const struct corr_cpu_rec *cpu, const struct corr_gpu_rec *gpu)
{
	struct log *l = ctx;

	append(l->joins, sizeof(l->joins), "c%llu-g%llu ", (unsigned long long)cpu->user,
	       (unsigned long long)gpu->user);
}

static void on_ucpu(void *ctx, const struct corr_cpu_rec *cpu, enum corr_why why)
{
	struct log *l = ctx;

	append(l->unmatched, sizeof(l->unmatched), "uc%llu:%s ", (unsigned long long)cpu->user,
	       why_name(why));
}

static void on_ugpu(void *ctx, const struct corr_gpu_rec *gpu, enum corr_why why)
{
	struct log *l = ctx;

	append(l->unmatched, sizeof(l->unmatched), "ug%llu:%s ", (unsigned long long)gpu->user,
	       why_name(why));
}

static void on_pick(void *ctx, uint32_t pid, const char *name)
{
	struct log *l = ctx;

	append(l->picks, sizeof(l->picks), "%u=%s ", pid, name);
}

static struct log lg;

static struct correlator *make(const char *name, const struct correlate_config *cfg)
{
	struct correlate_cb cb = {
		.on_join = on_join,
		.on_unmatched_cpu = on_ucpu,
		.on_unmatched_gpu = on_ugpu,
		.on_strategy = on_pick,
		.ctx = &lg,
	};
	struct correlator *c;

	memset(&lg, 0, sizeof(lg));
	c = correlator__new(name, cfg, &cb);
	cr_assert(c, "correlator__new(%s): %s", name, strerror(errno));
	return c;
}

static struct corr_cpu_rec usdt(uint32_t pid, uint32_t tid, uint64_t t, uint32_t corr,
				uint64_t user)
{
	return (struct corr_cpu_rec){
		.kind = CORR_CPU_USDT,
		.api_kind = CORR_API_KERNEL,
		.pid = pid,
		.tid = tid,
		.time_ns = t,
		.corr_id = corr,
		.stack_id = (uint32_t)user,
		.api_name = "cudaLaunchKernel",
		.user = user,
	};
}

static struct corr_cpu_rec uprobe(uint32_t pid, uint32_t tid, uint64_t t, uint64_t stream,
				  uint8_t api_kind, uint64_t user)
{
	return (struct corr_cpu_rec){
		.kind = CORR_CPU_UPROBE,
		.api_kind = api_kind,
		.pid = pid,
		.tid = tid,
		.time_ns = t,
		.stream = stream,
		.stack_id = (uint32_t)user,
		.api_name = "cudaLaunchKernel",
		.user = user,
	};
}

static struct corr_gpu_rec work(uint8_t kind, uint32_t pid, uint32_t dev, uint32_t stream,
				uint32_t corr, uint64_t start, uint64_t end, uint64_t user)
{
	return (struct corr_gpu_rec){
		.kind = kind,
		.pid = pid,
		.device = dev,
		.stream_id = stream,
		.corr_id = corr,
		.start_ns = start,
		.end_ns = end,
		.name = kind == CORR_GPU_KERNEL ? "k" : "w",
		.user = user,
	};
}

static struct corr_gpu_rec kernel(uint32_t pid, uint32_t stream, uint32_t corr, uint64_t start,
				  uint64_t user)
{
	return work(CORR_GPU_KERNEL, pid, 0, stream, corr, start, start + 10 * US, user);
}

static struct corr_gpu_rec api(uint8_t kind, uint32_t pid, uint32_t tid, uint32_t corr,
			       uint64_t start, uint64_t end)
{
	return (struct corr_gpu_rec){
		.kind = kind,
		.pid = pid,
		.tid = tid,
		.corr_id = corr,
		.start_ns = start,
		.end_ns = end,
		.name = "cudaLaunchKernel",
		.user = 9000 + corr,
	};
}

static void cpu(struct correlator *c, struct corr_cpu_rec r)
{
	cr_assert_eq(correlator__feed_cpu(c, &r), 0);
}

static void gpu(struct correlator *c, struct corr_gpu_rec r)
{
	cr_assert_eq(correlator__feed_gpu(c, &r), 0);
}

static struct correlate_stats stats(struct correlator *c)
{
	struct correlate_stats st;

	correlator__stats(c, &st);
	return st;
}

/* ---------------------------------------------------------------- registry and API */

static void *dummy_new(const struct correlate_config *cfg, const struct correlate_cb *cb)
{
	static int x;

	return &x;
}

static int dummy_feed_cpu(void *s, const struct corr_cpu_rec *r)
{
	return 0;
}

static int dummy_feed_gpu(void *s, const struct corr_gpu_rec *r)
{
	return 0;
}

static int dummy_flush(void *s, uint64_t until)
{
	return 0;
}

static void dummy_stats(void *s, struct correlate_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
}

static void dummy_free(void *s)
{
}

Test(correlate, registry)
{
	static const struct correlate_ops dummy = {
		.name = "dummy",
		.new = dummy_new,
		.feed_cpu = dummy_feed_cpu,
		.feed_gpu = dummy_feed_gpu,
		.flush = dummy_flush,
		.stats = dummy_stats,
		.free = dummy_free,
	};
	static const struct correlate_ops incomplete = {.name = "broken"};
	const char *names[8];
	struct correlator *c;

	cr_expect_eq(correlate__names(names, 8), 4);
	cr_expect_str_eq(names[0], "id");
	cr_expect_str_eq(names[1], "timestamp");
	cr_expect_str_eq(names[2], "stream");
	cr_expect_str_eq(names[3], "auto");
	cr_expect_null(correlate__find("nope"));
	cr_expect_null(correlate__find(NULL));
	errno = 0;
	cr_expect_null(correlator__new("nope", NULL, NULL));
	cr_expect_eq(errno, ENOENT);

	cr_expect_eq(correlate__register(&incomplete), -EINVAL);
	cr_expect_eq(correlate__register(&correlate__find("id")[0]), -EEXIST);
	cr_expect_eq(correlate__register(&dummy), 0);
	cr_expect_eq(correlate__register(&dummy), -EEXIST);
	c = correlator__new("dummy", NULL, NULL);
	cr_assert(c);
	cr_expect_str_eq(correlator__name(c), "dummy");
	cr_expect_str_eq(correlator__pid_strategy(c, 1), "dummy");
	correlator__free(c);
	correlator__free(NULL);
}

Test(correlate, bad_input)
{
	struct correlate_config cfg;
	struct corr_cpu_rec r = usdt(1, 1, 1, 1, 1);
	struct corr_gpu_rec g = kernel(1, 7, 1, 10, 1);
	const char *names[] = {"id", "timestamp", "stream", "auto"};
	size_t i;

	correlate_config__default(&cfg);
	cfg.max_age_ns = 0;
	/* Refused before anything is made; what the strategy's new had made is freed. */
	for (i = 0; i < 4; i++) {
		errno = 0;
		cr_expect_null(correlator__new(names[i], &cfg, NULL), "%s", names[i]);
		cr_expect_eq(errno, EINVAL, "%s", names[i]);
	}

	for (i = 0; i < 4; i++) {
		struct correlator *c = make(names[i], NULL);

		r.kind = 9;
		cr_expect_eq(correlator__feed_cpu(c, &r), -EINVAL, "%s", names[i]);
		cr_expect_eq(correlator__feed_cpu(c, NULL), -EINVAL);
		g.end_ns = 1; /* ends before it starts */
		cr_expect_eq(correlator__feed_gpu(c, &g), -EINVAL);
		g.end_ns = 20;
		g.kind = 0;
		cr_expect_eq(correlator__feed_gpu(c, &g), -EINVAL);
		cr_expect_eq(correlator__feed_gpu(c, NULL), -EINVAL);
		cr_expect_eq(stats(c).cpu_in + stats(c).gpu_in, 0,
			     "rejected records are not counted");
		correlator__free(c);
		r.kind = CORR_CPU_USDT;
		g.kind = CORR_GPU_KERNEL;
	}
	cr_expect_eq(correlator__feed_cpu(NULL, &r), -EINVAL);
	cr_expect_eq(correlator__flush(NULL, 0), -EINVAL);
}

/* ---------------------------------------------------------------- id */

Test(correlate, id_in_order_and_reordered)
{
	struct correlator *c = make("id", NULL);
	struct correlate_stats st;

	cpu(c, usdt(10, 11, 1 * MS, 1, 1));
	cpu(c, usdt(10, 11, 2 * MS, 2, 2));
	cpu(c, usdt(10, 12, 3 * MS, 3, 3));
	/* GPU batch out of order, and one GPU record before its launch. */
	gpu(c, kernel(10, 7, 3, 5 * MS, 103));
	gpu(c, kernel(10, 7, 1, 4 * MS, 101));
	gpu(c, kernel(10, 7, 4, 6 * MS, 104));
	cpu(c, usdt(10, 12, 3500 * US, 4, 4));
	gpu(c, kernel(10, 7, 2, 7 * MS, 102));
	cr_expect_str_eq(lg.joins, "c3-g103 c1-g101 c4-g104 c2-g102 ");
	cr_expect_str_eq(lg.unmatched, "");
	st = stats(c);
	cr_expect_eq(st.matched, 4);
	cr_expect_eq(st.pending_cpu + st.pending_gpu, 0);
	cr_expect_eq(st.cpu_in, 4);
	cr_expect_eq(st.gpu_in, 4);
	correlator__free(c);
}

Test(correlate, id_two_processes_reuse_ids)
{
	struct correlator *c = make("id", NULL);

	cpu(c, usdt(100, 100, 1 * MS, 1, 1));
	cpu(c, usdt(200, 200, 2 * MS, 1, 2));
	cpu(c, usdt(200, 201, 3 * MS, 2, 3));
	cpu(c, usdt(100, 100, 4 * MS, 2, 4));
	gpu(c, kernel(200, 7, 2, 5 * MS, 23));
	gpu(c, kernel(100, 7, 1, 5 * MS, 11));
	gpu(c, kernel(100, 7, 2, 6 * MS, 12));
	gpu(c, kernel(200, 7, 1, 6 * MS, 21));
	cr_expect_str_eq(lg.joins, "c3-g23 c1-g11 c4-g12 c2-g21 ");
	correlator__free(c);
}

Test(correlate, id_several_gpus_and_streams_and_kinds)
{
	struct correlator *c = make("id", NULL);
	struct corr_cpu_rec m = usdt(5, 5, 3 * MS, 3, 3);
	struct corr_cpu_rec s = usdt(5, 5, 4 * MS, 4, 4);

	m.api_kind = CORR_API_MEMCPY;
	s.api_kind = CORR_API_SYNC;
	cpu(c, usdt(5, 5, 1 * MS, 1, 1));
	cpu(c, usdt(5, 6, 2 * MS, 2, 2));
	cpu(c, m);
	cpu(c, s);
	gpu(c, work(CORR_GPU_KERNEL, 5, 1, 21, 2, 5 * MS, 6 * MS, 102));
	gpu(c, work(CORR_GPU_SYNC, 5, 0, 13, 4, 5 * MS, 9 * MS, 104));
	gpu(c, work(CORR_GPU_MEMCPY, 5, 0, 13, 3, 5 * MS, 8 * MS, 103));
	gpu(c, work(CORR_GPU_KERNEL, 5, 0, 13, 1, 5 * MS, 7 * MS, 101));
	/* API and NVTX records are not GPU work: id has no use for them. */
	gpu(c, api(CORR_GPU_RUNTIME_API, 5, 5, 1, 1 * MS, 1 * MS + 5 * US));
	cr_expect_str_eq(lg.joins, "c2-g102 c4-g104 c3-g103 c1-g101 ");
	cr_expect_eq(stats(c).ignored, 1);
	correlator__free(c);
}

Test(correlate, id_graph_launch_joins_every_kernel)
{
	struct correlator *c = make("id", NULL);
	struct corr_cpu_rec g = usdt(7, 7, 1 * MS, 50, 1);
	char want[8192] = "";
	int i;

	g.api_kind = CORR_API_GRAPH;
	g.graph_exec = 0xabc000;
	/* Some of the graph's kernels arrive before the launch record. */
	for (i = 0; i < 3; i++) {
		struct corr_gpu_rec k = kernel(7, 7, 50, 2 * MS + i * US, 100 + i);

		k.graph_id = 9;
		gpu(c, k);
	}
	cpu(c, g);
	cpu(c, usdt(7, 7, 1500 * US, 51, 2));
	for (i = 3; i < 200; i++) {
		struct corr_gpu_rec k = kernel(7, 7, 50, 2 * MS + i * US, 100 + i);

		k.graph_id = 9;
		gpu(c, k);
	}
	gpu(c, kernel(7, 7, 51, 3 * MS, 999));
	for (i = 0; i < 200; i++)
		append(want, sizeof(want), "c1-g%d ", 100 + i);
	append(want, sizeof(want), "c2-g999 ");
	cr_expect_str_eq(lg.joins, want);
	cr_expect_eq(stats(c).matched, 201);
	/* The graph launch stays for more kernels, and leaves quietly: it was joined. */
	cr_expect_eq(stats(c).pending_cpu, 1);
	cr_expect_eq(correlator__flush(c, CORR_FLUSH_ALL), 0);
	cr_expect_str_eq(lg.unmatched, "");
	cr_expect_eq(stats(c).pending_cpu, 0);
	correlator__free(c);
}

Test(correlate, id_runtime_nesting_driver_same_id)
{
	struct correlator *c = make("id", NULL);
	struct corr_cpu_rec rt = usdt(3, 3, 100 * US, 7, 1);
	struct corr_cpu_rec drv = usdt(3, 3, 103 * US, 7, 2);

	drv.api_name = "cuLaunchKernel";
	cpu(c, rt);
	cpu(c, drv);
	gpu(c, kernel(3, 7, 7, 1 * MS, 70));
	cr_expect_str_eq(lg.joins, "c1-g70 ");
	cr_expect_str_eq(lg.unmatched, "uc2:dup ");

	/* Reversed arrival: the outer (earlier) call still stands for the launch. */
	memset(&lg, 0, sizeof(lg));
	rt.corr_id = drv.corr_id = 8;
	cpu(c, drv);
	cpu(c, rt);
	gpu(c, kernel(3, 7, 8, 2 * MS, 80));
	cr_expect_str_eq(lg.joins, "c1-g80 ");
	cr_expect_str_eq(lg.unmatched, "uc2:dup ");
	cr_expect_eq(stats(c).duplicates, 2);
	cr_expect_eq(stats(c).unmatched_cpu, 0);
	correlator__free(c);
}

Test(correlate, id_drops_late_batches_and_aging)
{
	struct correlate_config cfg;
	struct correlator *c;
	struct correlate_stats st;

	correlate_config__default(&cfg);
	cfg.max_age_ns = 1 * S;
	c = make("id", &cfg);
	cpu(c, usdt(1, 1, 1 * MS, 1, 1));
	cpu(c, usdt(1, 1, 2 * MS, 2, 2)); /* its kernel record is lost */
	cpu(c, usdt(1, 1, 3 * MS, 3, 3));
	/* Kernel 4's launch record is lost. */
	gpu(c, kernel(1, 7, 4, 4 * MS, 104));
	gpu(c, kernel(1, 7, 1, 5 * MS, 101));
	/* 0.5 s later a batch arrives: still in time. */
	cpu(c, usdt(1, 1, 500 * MS, 5, 5));
	gpu(c, kernel(1, 7, 3, 6 * MS, 103));
	cr_expect_str_eq(lg.joins, "c1-g101 c3-g103 ");
	cr_expect_str_eq(lg.unmatched, "");

	/* 1.2 s: launch 2 and kernel 4 have waited more than max age. */
	cpu(c, usdt(1, 1, 1200 * MS, 6, 6));
	cr_expect_str_eq(lg.unmatched, "uc2:aged ug104:aged ");
	/* A batch from 10 ms: anything it could join has aged out; launch 5 is still held. */
	gpu(c, kernel(1, 7, 9, 10 * MS, 109));
	gpu(c, kernel(1, 7, 5, 501 * MS, 105));
	cr_expect_str_eq(lg.unmatched, "uc2:aged ug104:aged ug109:late ");
	cr_expect_str_eq(lg.joins, "c1-g101 c3-g103 c5-g105 ");
	st = stats(c);
	cr_expect_eq(st.matched, 3);
	cr_expect_eq(st.unmatched_cpu, 1);
	cr_expect_eq(st.unmatched_gpu, 1);
	cr_expect_eq(st.late_gpu, 1);
	cr_expect_eq(st.late_cpu, 0);
	/* flush(until) ages by the caller's clock when no records come. */
	cr_expect_eq(correlator__flush(c, 2300 * MS), 0);
	cr_expect_str_eq(lg.unmatched, "uc2:aged ug104:aged ug109:late uc6:aged ");
	cr_expect_eq(stats(c).pending_cpu, 0);
	correlator__free(c);
}

Test(correlate, id_memory_bounded_by_caps)
{
	struct correlate_config cfg;
	struct correlator *c;
	struct correlate_stats st;
	uint32_t i;

	correlate_config__default(&cfg);
	cfg.max_pending_cpu = 1000;
	cfg.max_pending_gpu = 500;
	c = make("id", &cfg);
	for (i = 0; i < 5000; i++) {
		cpu(c, usdt(1, 1, 1 * MS + i, i, i));
		gpu(c, kernel(1, 7, 100000 + i, 2 * MS + i, i));
	}
	st = stats(c);
	cr_expect_eq(st.pending_cpu, 1000);
	cr_expect_eq(st.pending_gpu, 500);
	cr_expect_eq(st.cap_cpu, 4000);
	cr_expect_eq(st.cap_gpu, 4500);
	cr_expect_eq(st.unmatched_cpu, 4000);
	cr_expect_leq(st.mem_bytes, st.mem_limit);
	cr_expect_lt(st.mem_limit, 1000 * 1024, "%llu", (unsigned long long)st.mem_limit);
	/* The oldest went first: launch 4000 is still held and joins. */
	gpu(c, kernel(1, 7, 4000, 3 * MS, 77777));
	cr_expect(strstr(lg.joins, "c4000-g77777 "));
	correlator__free(c);
}

/* ---------------------------------------------------------------- timestamp */

Test(correlate, timestamp_through_api_records)
{
	struct correlator *c = make("timestamp", NULL);

	/* Uprobes fire 2 us before CUPTI starts the API record (slack is 5 us). */
	cpu(c, uprobe(20, 21, 100 * US, 0, CORR_API_KERNEL, 1));
	cpu(c, uprobe(20, 21, 110 * US, 0, CORR_API_KERNEL, 2));
	cpu(c, uprobe(20, 22, 105 * US, 0, CORR_API_KERNEL, 3)); /* another thread */
	/* The batch: API records, kernels, some kernels ahead of their API records. */
	gpu(c, api(CORR_GPU_RUNTIME_API, 20, 21, 500, 102 * US, 108 * US));
	gpu(c, kernel(20, 7, 502, 130 * US, 102));
	gpu(c, kernel(20, 7, 500, 120 * US, 101));
	gpu(c, api(CORR_GPU_RUNTIME_API, 20, 21, 502, 112 * US, 118 * US));
	gpu(c, api(CORR_GPU_RUNTIME_API, 20, 22, 501, 105 * US, 109 * US));
	gpu(c, kernel(20, 8, 501, 140 * US, 103));
	/* An API call nobody probed (cudaGetDevice): no effect, no report. */
	gpu(c, api(CORR_GPU_RUNTIME_API, 20, 21, 503, 130 * US, 131 * US));
	cr_expect_str_eq(lg.joins, "c1-g101 c2-g102 c3-g103 ");
	cr_expect_eq(correlator__flush(c, CORR_FLUSH_ALL), 0);
	cr_expect_str_eq(lg.unmatched, "");
	correlator__free(c);
}

Test(correlate, timestamp_uprobe_after_api_record)
{
	struct correlator *c = make("timestamp", NULL);

	/* Reordered the other way: the API record and kernel first, the uprobe late. */
	gpu(c, api(CORR_GPU_RUNTIME_API, 20, 21, 500, 102 * US, 108 * US));
	gpu(c, api(CORR_GPU_RUNTIME_API, 20, 21, 501, 109 * US, 115 * US));
	gpu(c, kernel(20, 7, 500, 120 * US, 101));
	gpu(c, kernel(20, 7, 501, 130 * US, 102));
	cpu(c, uprobe(20, 21, 108500, 0, CORR_API_KERNEL, 2)); /* in the slack of 501 only */
	cpu(c, uprobe(20, 21, 100 * US, 0, CORR_API_KERNEL, 1));
	cr_expect_str_eq(lg.joins, "c2-g102 c1-g101 ");
	correlator__free(c);
}

Test(correlate, timestamp_runtime_nesting_driver_same_id)
{
	struct correlator *c = make("timestamp", NULL);
	struct corr_cpu_rec drv = uprobe(30, 31, 121 * US, 0, CORR_API_KERNEL, 2);
	struct corr_gpu_rec inner;

	/* cudaLaunchKernel probed at 99 us, the cuLaunchKernel it calls at 121 us. */
	cpu(c, uprobe(30, 31, 99 * US, 0, CORR_API_KERNEL, 1));
	drv.api_name = "cuLaunchKernel";
	cpu(c, drv);
	/* CUPTI completes the inner call first; both records carry correlation id 7. */
	inner = api(CORR_GPU_DRIVER_API, 30, 31, 7, 120 * US, 140 * US);
	inner.name = "cuLaunchKernel";
	gpu(c, inner);
	gpu(c, api(CORR_GPU_RUNTIME_API, 30, 31, 7, 100 * US, 150 * US));
	gpu(c, kernel(30, 7, 7, 200 * US, 70));
	/* One join, to the outer (runtime) call's stack; the driver probe is a duplicate. */
	cr_expect_str_eq(lg.joins, "c1-g70 ");
	cr_expect_str_eq(lg.unmatched, "uc2:dup ");
	cr_expect_eq(stats(c).duplicates, 1);
	cr_expect_eq(correlator__flush(c, CORR_FLUSH_ALL), 0);
	cr_expect_str_eq(lg.unmatched, "uc2:dup ");
	correlator__free(c);
}

/*
 * A probe that walks a deep stack (PyTorch's, on a real GPU) takes longer than the slack
 * between its clock read and CUPTI's: the API record of the same function, the thread's next,
 * is still its call's. A call of another function in between (cudaGetDevice, recorded with
 * XSPROF_CUPTI_APIS=all) binds nothing, and a second launch binds its own uprobe.
 */
Test(correlate, timestamp_binds_its_call_after_a_slow_probe)
{
	struct correlator *c = make("timestamp", NULL);
	struct corr_gpu_rec other = api(CORR_GPU_RUNTIME_API, 60, 61, 50, 102 * US, 103 * US);
	struct corr_gpu_rec ptsz = api(CORR_GPU_RUNTIME_API, 60, 61, 52, 160 * US, 170 * US);
	struct corr_cpu_rec second = uprobe(60, 61, 150 * US, 0, CORR_API_KERNEL, 2);

	other.name = "cudaGetDevice";
	cpu(c, uprobe(60, 61, 100 * US, 0, CORR_API_KERNEL, 1));
	gpu(c, other);
	gpu(c, api(CORR_GPU_RUNTIME_API, 60, 61, 51, 112 * US, 120 * US)); /* 12 us after */
	/* nvcc's wrapper probed, the per-thread-stream call recorded: one function. */
	second.api_name = "__cudaLaunchKernel";
	ptsz.name = "cudaLaunchKernel_ptsz";
	cpu(c, second);
	gpu(c, ptsz);
	gpu(c, kernel(60, 7, 51, 200 * US, 1));
	gpu(c, kernel(60, 7, 52, 210 * US, 2));
	cr_expect_str_eq(lg.joins, "c1-g1 c2-g2 ");
	cr_expect_eq(correlator__flush(c, CORR_FLUSH_ALL), 0);
	cr_expect_str_eq(lg.unmatched, "");
	correlator__free(c);
}

/*
 * A library with the CUDA runtime linked in (cuBLASLt, cuDNN): CUPTI records the runtime call
 * (cudaLaunchKernelExC, correlation id 70) that the kernel carries, and the only uprobe is on
 * the public driver call it makes inside (cuLaunchKernelEx), whose own driver record has
 * another id. The uprobe joins the kernel through the runtime record around it.
 */
Test(correlate, timestamp_driver_uprobe_inside_a_static_runtime_call)
{
	struct correlator *c = make("timestamp", NULL);
	struct corr_gpu_rec rt = api(CORR_GPU_RUNTIME_API, 80, 81, 70, 100 * US, 130 * US);
	struct corr_gpu_rec drv = api(CORR_GPU_DRIVER_API, 80, 81, 71, 112 * US, 120 * US);
	struct corr_cpu_rec up = uprobe(80, 81, 110 * US, 0, CORR_API_KERNEL, 1);

	rt.name = "cudaLaunchKernelExC";
	drv.name = "cuLaunchKernelEx";
	up.api_name = "cuLaunchKernelEx";
	gpu(c, rt);
	cpu(c, up);
	gpu(c, drv);
	gpu(c, kernel(80, 7, 70, 200 * US, 1));
	cr_expect_str_eq(lg.joins, "c1-g1 ");
	correlator__free(c);
}

Test(correlate, timestamp_processes_graphs_and_drops)
{
	struct correlate_config cfg;
	struct correlator *c;
	struct corr_cpu_rec g = uprobe(40, 41, 300 * US, 0, CORR_API_GRAPH, 3);
	int i;

	correlate_config__default(&cfg);
	cfg.max_age_ns = 1 * S;
	c = make("timestamp", &cfg);
	/* Two processes, same thread ids and correlation ids. */
	cpu(c, uprobe(40, 41, 100 * US, 0, CORR_API_KERNEL, 1));
	cpu(c, uprobe(50, 41, 100 * US, 0, CORR_API_KERNEL, 2));
	cpu(c, g);
	cpu(c, uprobe(40, 41, 400 * US, 0, CORR_API_KERNEL, 4)); /* its API record is lost */
	gpu(c, api(CORR_GPU_RUNTIME_API, 50, 41, 1, 101 * US, 105 * US));
	gpu(c, api(CORR_GPU_RUNTIME_API, 40, 41, 1, 101 * US, 106 * US));
	gpu(c, api(CORR_GPU_RUNTIME_API, 40, 41, 2, 301 * US, 306 * US));
	gpu(c, kernel(50, 7, 1, 500 * US, 21));
	gpu(c, kernel(40, 7, 1, 500 * US, 11));
	for (i = 0; i < 5; i++) {
		struct corr_gpu_rec k = kernel(40, 7, 2, 600 * US + i * US, 30 + i);

		k.graph_id = 77;
		gpu(c, k);
	}
	gpu(c, kernel(40, 7, 3, 700 * US, 13)); /* launch 4's kernel: no API record */
	cr_expect_str_eq(lg.joins, "c2-g21 c1-g11 c3-g30 c3-g31 c3-g32 c3-g33 c3-g34 ");
	cpu(c, uprobe(40, 41, 2 * S, 0, CORR_API_KERNEL, 5));
	cr_expect_str_eq(lg.unmatched, "uc4:aged ug13:aged ");
	correlator__free(c);
}

Test(correlate, timestamp_pure_proximity_without_api_records)
{
	struct correlate_config cfg;
	struct correlator *c;
	struct corr_cpu_rec m = uprobe(60, 61, 3 * MS, 0, CORR_API_MEMCPY, 3);

	correlate_config__default(&cfg);
	cfg.tolerance_ns = 50 * US;
	c = make("timestamp", &cfg);
	cpu(c, uprobe(60, 61, 1 * MS, 0, CORR_API_KERNEL, 1));
	cpu(c, uprobe(60, 62, 2 * MS, 0, CORR_API_KERNEL, 2));
	cpu(c, m);
	cpu(c, uprobe(60, 61, 4 * MS, 0, CORR_API_KERNEL, 4));
	gpu(c, kernel(60, 7, 900, 1 * MS + 10 * US, 101));
	/* The memcpy starts within tolerance of kernel launch 2 but is not a kernel. */
	gpu(c, work(CORR_GPU_MEMCPY, 60, 0, 7, 902, 3 * MS + 20 * US, 3 * MS + 30 * US, 103));
	gpu(c, kernel(60, 7, 901, 2 * MS + 49 * US, 102));
	/* 4 ms launch's kernel started too late for tolerance: not guessed. */
	gpu(c, kernel(60, 7, 903, 4 * MS + 60 * US, 104));
	cr_expect_str_eq(lg.joins, "c1-g101 c3-g103 c2-g102 ");
	cr_expect_eq(correlator__flush(c, CORR_FLUSH_ALL), 0);
	cr_expect_str_eq(lg.unmatched, "uc4:flush ug104:flush ");

	/* Once a process shows API records, proximity is off for it. */
	memset(&lg, 0, sizeof(lg));
	cpu(c, uprobe(60, 61, 5 * MS, 0, CORR_API_KERNEL, 5));
	gpu(c, api(CORR_GPU_RUNTIME_API, 60, 99, 990, 1 * US, 2 * US));
	gpu(c, kernel(60, 7, 904, 5 * MS + 10 * US, 105));
	cr_expect_str_eq(lg.joins, "");
	correlator__free(c);
}

/* ---------------------------------------------------------------- stream */

Test(correlate, stream_in_order_with_handle_pairing)
{
	struct correlator *c = make("stream", NULL);
	const uint64_t A = 0x7f0000001000, B = 0x7f0000002000;

	/* Handle A first used at 10 us, B at 20 us; stream 13 starts first, so it is A's. */
	cpu(c, uprobe(1, 1, 10 * US, A, CORR_API_KERNEL, 1));
	cpu(c, uprobe(1, 2, 20 * US, B, CORR_API_KERNEL, 2));
	cpu(c, uprobe(1, 1, 30 * US, A, CORR_API_KERNEL, 3));
	cpu(c, uprobe(1, 2, 40 * US, B, CORR_API_KERNEL, 4));
	cpu(c, uprobe(1, 1, 900 * US, 0, CORR_API_KERNEL, 5)); /* moves the clock */
	gpu(c, kernel(1, 13, 0, 15 * US, 101));
	gpu(c, kernel(1, 14, 0, 25 * US, 102));
	gpu(c, kernel(1, 13, 0, 35 * US, 103));
	gpu(c, kernel(1, 14, 0, 45 * US, 104));
	cr_expect_str_eq(lg.joins, "c1-g101 c2-g102 c3-g103 c4-g104 ");
	correlator__free(c);
}

Test(correlate, stream_reordered_batches_settle)
{
	struct correlate_config cfg;
	struct correlator *c;
	int i;

	correlate_config__default(&cfg);
	cfg.settle_ns = 100 * MS;
	c = make("stream", &cfg);
	for (i = 0; i < 6; i++)
		cpu(c, uprobe(1, 1, (10 + 10 * i) * US, 0, CORR_API_KERNEL, i + 1));
	/* Stream 7's records in two batches, the later batch first, each out of order. */
	gpu(c, kernel(1, 7, 0, 65 * US, 106));
	gpu(c, kernel(1, 7, 0, 45 * US, 104));
	gpu(c, kernel(1, 7, 0, 55 * US, 105));
	cr_expect_str_eq(lg.joins, "", "nothing settled yet");
	gpu(c, kernel(1, 7, 0, 25 * US, 102));
	gpu(c, kernel(1, 7, 0, 15 * US, 101));
	gpu(c, kernel(1, 7, 0, 35 * US, 103));
	cpu(c, uprobe(1, 1, 200 * MS, 0, CORR_API_OTHER, 99)); /* clock: 200 ms */
	cr_expect_eq(correlator__flush(c, 200 * MS), 0);
	cr_expect_str_eq(lg.joins, "c1-g101 c2-g102 c3-g103 c4-g104 c5-g105 c6-g106 ");
	cr_expect_str_eq(lg.unmatched, "");
	correlator__free(c);
}

Test(correlate, stream_drops_on_either_side)
{
	struct correlator *c = make("stream", NULL);
	struct corr_cpu_rec m = uprobe(1, 1, 30 * US, 0, CORR_API_MEMCPY, 3);

	cpu(c, uprobe(1, 1, 10 * US, 0, CORR_API_KERNEL, 1));
	/* Launch 2 (at 20 us) is lost by the uprobe ring buffer. */
	cpu(c, m); /* its copy record is lost by CUPTI */
	cpu(c, uprobe(1, 1, 40 * US, 0, CORR_API_KERNEL, 4));
	cpu(c, uprobe(1, 1, 50 * US, 0, CORR_API_KERNEL, 5));
	cpu(c, uprobe(1, 1, 1 * MS, 0, CORR_API_OTHER, 99));
	gpu(c, kernel(1, 7, 0, 15 * US, 101));
	gpu(c, kernel(1, 7, 0, 25 * US, 102)); /* ran before launch 3 (30 us): not launch 3's */
	gpu(c, kernel(1, 7, 0, 45 * US, 104)); /* a kernel for a memcpy launch: resync */
	gpu(c, kernel(1, 7, 0, 55 * US, 105));
	cr_expect_str_eq(lg.joins, "c1-g101 c4-g104 c5-g105 ");
	cr_expect_str_eq(lg.unmatched, "ug102:none uc3:none ");
	correlator__free(c);
}

Test(correlate, stream_processes_devices_threads_graphs)
{
	struct correlator *c = make("stream", NULL);
	struct corr_cpu_rec g = uprobe(2, 2, 30 * US, 0x5000, CORR_API_GRAPH, 3);
	struct corr_cpu_rec pt1 = uprobe(2, 5, 12 * US, 0, CORR_API_KERNEL, 6);
	struct corr_cpu_rec pt2 = uprobe(2, 6, 14 * US, 2, CORR_API_KERNEL, 7);
	int i;

	pt1.flags = CORR_CPU_F_PTSZ; /* handle 0 from a _ptsz API: thread 5's own stream */
	/* Two processes with the same stream ids; process 2 uses two GPUs. */
	cpu(c, uprobe(1, 1, 10 * US, 0x1000, CORR_API_KERNEL, 1));
	cpu(c, uprobe(2, 2, 11 * US, 0x5000, CORR_API_KERNEL, 2));
	cpu(c, pt1);
	cpu(c, pt2);
	cpu(c, uprobe(2, 2, 20 * US, 0x6000, CORR_API_KERNEL, 4));
	cpu(c, g);
	cpu(c, uprobe(2, 2, 40 * US, 0x5000, CORR_API_KERNEL, 5));
	cpu(c, uprobe(1, 1, 5 * MS, 0, CORR_API_OTHER, 99));
	gpu(c, work(CORR_GPU_KERNEL, 2, 0, 7, 1, 15 * US, 16 * US, 102));
	gpu(c, work(CORR_GPU_KERNEL, 1, 0, 7, 1, 15 * US, 16 * US, 101));
	gpu(c, work(CORR_GPU_KERNEL, 2, 1, 30, 5, 16 * US, 17 * US, 106)); /* thread 5's */
	gpu(c, work(CORR_GPU_KERNEL, 2, 1, 31, 6, 18 * US, 19 * US, 107)); /* thread 6's */
	gpu(c, work(CORR_GPU_KERNEL, 2, 1, 21, 2, 25 * US, 26 * US, 104));
	for (i = 0; i < 4; i++) {
		struct corr_gpu_rec k = work(CORR_GPU_KERNEL, 2, 0, 7, 44, (31 + i) * US,
					     (31 + i) * US + 500, 130 + i);

		k.graph_id = 3;
		gpu(c, k);
	}
	gpu(c, work(CORR_GPU_KERNEL, 2, 0, 7, 45, 41 * US, 42 * US, 105));
	cr_expect_str_eq(lg.joins,
			 "c2-g102 c1-g101 c6-g106 c7-g107 c4-g104 c3-g130 c3-g131 c3-g132 c3-g133 "
			 "c5-g105 ");
	cr_expect_str_eq(lg.unmatched, "");
	correlator__free(c);
}

/* ---------------------------------------------------------------- auto */

Test(correlate, auto_picks_per_process)
{
	struct correlator *c = make("auto", NULL);
	struct correlate_stats st;

	/* pid 1: USDT (and the daemon's uprobes too) -> id. */
	cpu(c, uprobe(1, 1, 10 * US, 0, CORR_API_KERNEL, 91));
	cpu(c, usdt(1, 1, 11 * US, 500, 1));
	cpu(c, uprobe(1, 1, 20 * US, 0, CORR_API_KERNEL, 92));
	cpu(c, usdt(1, 1, 21 * US, 501, 2));
	/* pid 2: uprobes and API records -> timestamp. */
	cpu(c, uprobe(2, 2, 10 * US, 0, CORR_API_KERNEL, 3));
	cpu(c, uprobe(2, 2, 20 * US, 0, CORR_API_KERNEL, 4));
	/* pid 3: uprobes and kernels only -> stream. */
	cpu(c, uprobe(3, 3, 10 * US, 0, CORR_API_KERNEL, 5));
	cpu(c, uprobe(3, 3, 20 * US, 0, CORR_API_KERNEL, 6));
	cpu(c, uprobe(9, 9, 1 * MS, 0, CORR_API_OTHER, 99));
	cr_expect_str_eq(correlator__pid_strategy(c, 1), "id");
	cr_expect_str_eq(correlator__pid_strategy(c, 2), "stream", "no evidence yet");
	cr_expect_null(correlator__pid_strategy(c, 12345));

	gpu(c, kernel(1, 7, 500, 50 * US, 101));
	gpu(c, api(CORR_GPU_RUNTIME_API, 2, 2, 700, 11 * US, 15 * US));
	gpu(c, api(CORR_GPU_RUNTIME_API, 2, 2, 701, 21 * US, 25 * US));
	gpu(c, kernel(2, 7, 701, 60 * US, 104));
	gpu(c, kernel(2, 7, 700, 50 * US, 103));
	gpu(c, kernel(3, 7, 900, 50 * US, 105));
	gpu(c, kernel(3, 7, 901, 60 * US, 106));
	gpu(c, kernel(1, 7, 501, 60 * US, 102));
	cr_expect_str_eq(lg.joins, "c1-g101 c4-g104 c3-g103 c5-g105 c6-g106 c2-g102 ");
	cr_expect_str_eq(lg.picks, "1=id 2=timestamp 3=stream ");
	cr_expect_str_eq(correlator__pid_strategy(c, 2), "timestamp");
	cr_expect_str_eq(correlator__pid_strategy(c, 3), "stream");

	/* The uprobes of pid 1 and the unused copies are no news; pid 9's uprobe is ignored. */
	cr_expect_eq(correlator__flush(c, CORR_FLUSH_ALL), 0);
	cr_expect_str_eq(lg.unmatched, "");
	st = stats(c);
	cr_expect_eq(st.matched, 6);
	cr_expect_eq(st.unmatched_cpu + st.unmatched_gpu, 0);
	cr_expect_eq(st.pending_cpu + st.pending_gpu, 0);
	correlator__free(c);
}
