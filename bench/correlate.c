// SPDX-License-Identifier: Apache-2.0
/*
 * bench_correlate: correlation throughput (records per second on one core) and peak memory,
 * for each strategy, on a synthetic stream of GPU records that arrive the way CUPTI delivers
 * them: in batches, seconds after their launches, shuffled within a batch, with a few records
 * lost on either side. Each strategy runs in its own child process so its peak RSS is its own.
 *
 *   bench_correlate [--gpu-records N] [--lag-ms MS] [--strategy NAME] [--max-pending N]
 *                   [--mode one|batch|both]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "correlate/correlate.h"

#define BATCH	    4096
#define NPIDS	    4
#define NSTREAMS    4
#define LAUNCH_GAP  10000 /* ns between launches: 100k launches/s, a busy training job */
#define DROP_PERMIL 1	  /* records lost on each side, per thousand */

struct opts {
	uint64_t gpu_records;
	uint64_t lag_ns;
	uint32_t max_pending;
	const char *only;
	int modes; /* bit 0: one by one, bit 1: batches */
};

struct sink {
	uint64_t joins, checksum;
};

static void on_join(void *ctx, const struct corr_cpu_rec *cpu, const struct corr_gpu_rec *gpu)
{
	struct sink *s = ctx;

	s->joins++;
	s->checksum += cpu->user ^ gpu->user;
}

static uint64_t rng_state = 0x853c49e6748fea9bull;

static uint32_t rnd(void)
{
	/* xorshift64*: cheap, so the generator costs little next to what is measured. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long hwm_kib(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	long kib = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "VmHWM:", 6))
			kib = strtol(line + 6, NULL, 10);
	}
	fclose(f);
	return kib;
}

/* Which records a process of this strategy's world produces. */
enum style { STYLE_ID, STYLE_TS, STYLE_STREAM };

static enum style style_of(const char *strategy, uint32_t pid)
{
	if (!strcmp(strategy, "id"))
		return STYLE_ID;
	if (!strcmp(strategy, "timestamp"))
		return STYLE_TS;
	if (!strcmp(strategy, "stream"))
		return STYLE_STREAM;
	/* auto: two processes with USDT, one with API records, one with neither. */
	return pid < 2 ? STYLE_ID : pid == 2 ? STYLE_TS : STYLE_STREAM;
}

struct fifo {
	struct corr_gpu_rec *r;
	size_t cap, head, len;
};

static void fifo_push(struct fifo *q, const struct corr_gpu_rec *r)
{
	q->r[(q->head + q->len++) % q->cap] = *r;
}

/*
 * Feeds the oldest n GPU records, shuffled, except that one stream's records keep their order
 * (CUPTI completes a stream's work in order; the stream strategy relies on it).
 */
static int cmp_start(const void *a, const void *b)
{
	const struct corr_gpu_rec *x = a, *y = b;

	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

static uint64_t deliver(struct correlator *c, struct fifo *q, size_t n, int shuffle_all,
			int batched)
{
	static struct corr_gpu_rec batch[BATCH], ordered[BATCH];
	size_t i, m = 0;

	for (i = 0; i < n; i++)
		batch[i] = q->r[(q->head + i) % q->cap];
	q->head = (q->head + n) % q->cap;
	q->len -= n;
	if (shuffle_all) {
		size_t k = 0;

		for (i = n - 1; i > 0; i--) {
			size_t j = rnd() % (i + 1);
			struct corr_gpu_rec t = batch[i];

			batch[i] = batch[j];
			batch[j] = t;
		}
		/*
		 * CUPTI writes a thread's API records as its calls complete, so they keep their
		 * order: put them back in order in the places they were shuffled to.
		 */
		for (i = 0; i < n; i++) {
			if (batch[i].kind == CORR_GPU_RUNTIME_API)
				ordered[k++] = batch[i];
		}
		qsort(ordered, k, sizeof(*ordered), cmp_start);
		for (i = 0, k = 0; i < n; i++) {
			if (batch[i].kind == CORR_GPU_RUNTIME_API)
				batch[i] = ordered[k++];
		}
	} else {
		/* Rotate by stream: all of stream k, then k+1, ...: order kept within each. */
		uint32_t first = rnd() % NSTREAMS, k;

		for (k = 0; k < NSTREAMS; k++) {
			for (i = 0; i < n; i++) {
				if (batch[i].stream_id % NSTREAMS == (first + k) % NSTREAMS)
					ordered[m++] = batch[i];
			}
		}
		memcpy(batch, ordered, n * sizeof(*batch));
	}
	if (batched) {
		correlator__feed_gpu_batch(c, batch, n);
		return n;
	}
	for (i = 0; i < n; i++)
		correlator__feed_gpu(c, &batch[i]);
	return n;
}

/* CPU records come from a ring buffer, drained a few hundred at a time. */
#define CPU_BATCH 256

static void cpu_feed(struct correlator *c, const struct corr_cpu_rec *r, int batched, int flush)
{
	static struct corr_cpu_rec buf[CPU_BATCH];
	static size_t n;

	if (!batched) {
		if (r)
			correlator__feed_cpu(c, r);
		return;
	}
	if (r)
		buf[n++] = *r;
	if (n == CPU_BATCH || (flush && n)) {
		correlator__feed_cpu_batch(c, buf, n);
		n = 0;
	}
}

/* "none": a strategy that does nothing, to measure what the generator itself costs. */
static int null_state;

static void *null_new(const struct correlate_config *cfg, const struct correlate_cb *cb)
{
	return &null_state;
}

static int null_feed_cpu(void *s, const struct corr_cpu_rec *r)
{
	return 0;
}

static int null_feed_gpu(void *s, const struct corr_gpu_rec *r)
{
	return 0;
}

static int null_flush(void *s, uint64_t until)
{
	return 0;
}

static void null_stats(void *s, struct correlate_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
}

static void null_free(void *s)
{
}

static const struct correlate_ops null_ops = {
	.name = "none",
	.new = null_new,
	.feed_cpu = null_feed_cpu,
	.feed_gpu = null_feed_gpu,
	.flush = null_flush,
	.stats = null_stats,
	.free = null_free,
};

static int run_one(const char *name, const struct opts *o, int batched)
{
	struct correlate_config cfg;
	struct sink sink = {0};
	struct correlate_cb cb = {.on_join = on_join, .ctx = &sink};
	struct correlate_stats st;
	struct correlator *c;
	struct fifo q = {0};
	uint64_t gpu_fed = 0, cpu_fed = 0, i, t, launches, lag_launches;
	long base_kib, peak_kib;
	double t0, t1;
	int shuffle_all = strcmp(name, "stream") && strcmp(name, "auto");

	correlate_config__default(&cfg);
	if (o->max_pending)
		cfg.max_pending_cpu = cfg.max_pending_gpu = o->max_pending;
	lag_launches = o->lag_ns / LAUNCH_GAP;
	q.cap = lag_launches * 2 + 2 * BATCH + 16;
	q.r = calloc(q.cap, sizeof(*q.r));
	if (!q.r)
		return 1;
	memset(q.r, 0xff, q.cap * sizeof(*q.r)); /* touch it: the baseline includes it */
	base_kib = hwm_kib();
	c = correlator__new(name, &cfg, &cb);
	if (!c) {
		fprintf(stderr, "bench_correlate: %s: %s\n", name, strerror(errno));
		return 1;
	}

	t0 = cpu_seconds();
	/* Timestamp-style processes produce two GPU records per launch (API + kernel). */
	launches = 0;
	for (i = 0; gpu_fed + q.len < o->gpu_records; i++) {
		uint32_t pid = 1000 + (uint32_t)(i % NPIDS), s = (uint32_t)(i / NPIDS % NSTREAMS);
		enum style sty = style_of(name, pid - 1000);
		struct corr_cpu_rec cr = {
			.kind = sty == STYLE_ID ? CORR_CPU_USDT : CORR_CPU_UPROBE,
			.api_kind = CORR_API_KERNEL,
			.pid = pid,
			.tid = pid + 1 + s,
			.time_ns = 1000000000ull + i * LAUNCH_GAP,
			.stream = 0x7f0000000000ull + 0x1000 * s,
			.corr_id = (uint32_t)(i / NPIDS) + 1,
			.stack_id = (uint32_t)i,
			.api_name = "cudaLaunchKernel",
			.user = i,
		};
		struct corr_gpu_rec k = {
			.kind = CORR_GPU_KERNEL,
			.pid = pid,
			.device = s & 1,
			.stream_id = 13 + s,
			.corr_id = cr.corr_id,
			.start_ns = cr.time_ns + 8000,
			.end_ns = cr.time_ns + 9000,
			.name = "kernel",
			.user = i,
		};

		t = cr.time_ns;
		if (rnd() % 1000 >= DROP_PERMIL) {
			cpu_feed(c, &cr, batched, 0);
			cpu_fed++;
		}
		if (sty == STYLE_TS) {
			struct corr_gpu_rec a = {
				.kind = CORR_GPU_RUNTIME_API,
				.pid = pid,
				.tid = cr.tid,
				.corr_id = cr.corr_id,
				.start_ns = t + 2000,
				.end_ns = t + 6000,
				.name = "cudaLaunchKernel",
			};

			fifo_push(&q, &a);
		}
		if (rnd() % 1000 >= DROP_PERMIL)
			fifo_push(&q, &k);
		launches++;
		/* A batch is delivered once it is lag old: the CPU side is that far ahead. */
		while (q.len >= BATCH && q.r[q.head].start_ns + o->lag_ns <= t) {
			cpu_feed(c, NULL, batched, 1); /* the CPU side is drained first */
			gpu_fed += deliver(c, &q, BATCH, shuffle_all, batched);
		}
		if (launches % 65536 == 0)
			correlator__flush(c, t); /* the daemon's timer */
	}
	cpu_feed(c, NULL, batched, 1);
	while (q.len)
		gpu_fed += deliver(c, &q, q.len < BATCH ? q.len : BATCH, shuffle_all, batched);
	correlator__flush(c, CORR_FLUSH_ALL);
	t1 = cpu_seconds();
	correlator__stats(c, &st);
	peak_kib = hwm_kib();

	printf("%-9s %-10s %6.2f M rec/s (%5.2f M GPU rec/s)  %" PRIu64 " GPU + %" PRIu64
	       " CPU records in %.2f s  matched %" PRIu64 " unmatched %" PRIu64 "/%" PRIu64
	       " late %" PRIu64 "/%" PRIu64 "  peak RSS %ld MiB (+%ld MiB over the input "
	       "buffer; tables at most %.0f MiB by config)\n",
	       name, batched ? "batches" : "one by one", (gpu_fed + cpu_fed) / (t1 - t0) / 1e6,
	       gpu_fed / (t1 - t0) / 1e6, gpu_fed, cpu_fed, t1 - t0, st.matched, st.unmatched_cpu,
	       st.unmatched_gpu, st.late_cpu, st.late_gpu, peak_kib / 1024,
	       (peak_kib - base_kib) / 1024, st.mem_limit / 1048576.0);
	fflush(stdout);
	correlator__free(c);
	free(q.r);
	return sink.joins == st.matched ? 0 : 1;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"gpu-records", required_argument, NULL, 'n'},
		{"lag-ms", required_argument, NULL, 'l'},
		{"strategy", required_argument, NULL, 's'},
		{"max-pending", required_argument, NULL, 'p'},
		{"mode", required_argument, NULL, 'm'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	static const char *const all[] = {"none", "id", "timestamp", "stream", "auto"};
	struct opts o = {.gpu_records = 10000000, .lag_ns = 2000000000ull, .modes = 3};
	int opt, failed = 0;
	size_t i;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			o.gpu_records = strtoull(optarg, NULL, 10);
			break;
		case 'l':
			o.lag_ns = strtoull(optarg, NULL, 10) * 1000000ull;
			break;
		case 's':
			o.only = optarg;
			break;
		case 'p':
			o.max_pending = strtoul(optarg, NULL, 10);
			break;
		case 'm':
			o.modes = !strcmp(optarg, "one") ? 1 : !strcmp(optarg, "batch") ? 2 : 3;
			break;
		case 'h':
			printf("usage: bench_correlate [--gpu-records N] [--lag-ms MS] "
			       "[--strategy id|timestamp|stream|auto] [--max-pending N] [--mode one|batch|both]\n"
			       "  e.g. bench_correlate --gpu-records 10000000 --lag-ms 2000\n");
			return 0;
		default:
			return 2;
		}
	}
	printf("bench_correlate: %" PRIu64 " GPU records per strategy, %d launches/s, GPU records "
	       "%.1f s late in shuffled batches of %d, %d/1000 lost on each side; one core each\n",
	       o.gpu_records, 1000000000 / LAUNCH_GAP, o.lag_ns / 1e9, BATCH, DROP_PERMIL);
	fflush(stdout);
	correlate__register(&null_ops);
	for (i = 0; i < 2 * sizeof(all) / sizeof(all[0]); i++) {
		const char *name = all[i / 2];
		pid_t pid;
		int status;

		if ((o.only && strcmp(o.only, name) && strcmp(name, "none")) ||
		    !(o.modes & (1 << (i % 2))))
			continue;
		pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0)
			_exit(run_one(name, &o, (int)(i % 2)));
		if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			failed = 1;
	}
	return failed;
}
