// SPDX-License-Identifier: Apache-2.0
/*
 * xs_scale_window: the service's rolling window over a day, in simulated time. Feeds the window
 * store (daemon/session/window.c) SLICES synthetic 10-s slices, each a call tree of STACKS
 * stacks ("uid:N;comm;f1;...;f12") drawn from a pool that turns over CHURN of its stacks each
 * slice, as the service's window takes one a slice; at each checkpoint it prints the store's
 * memory, this process's RSS, the time to add a slice and the time of the queries a client
 * makes (the last 5 minutes, the last hour, the whole window, the timeline of all slices).
 *
 * Usage: xs_scale_window [--slices N] [--stacks S] [--churn PCT] [--store-mb M]
 *                        [--window-s W] [--every K]
 *   defaults: 8,640 slices (24 h), 2,000 stacks a slice, 5% churn, --store-mb 64 (xsprofd's
 *   default), a window of 86,400 s, a checkpoint every 1,080 slices (3 h)
 * Prints per checkpoint: "slices N hours H held K store_mib B rss_mib R add_us A
 * q5m_ms Q q1h_ms Q qall_ms Q timeline_ms T dropped D" (add_us: the median of the slices
 * added since the last checkpoint, the tree's building not counted).
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/clock.h"
#include "daemon/session/window.h"
#include "output/model/calltree.h"

#define DEPTH	   12
#define SLICE_NS   (10ull * 1000000000ull)
#define POOL_NAMES 4096

struct stack {
	uint32_t frame[DEPTH];
};

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A stack that shares its outer frames with others, as real ones do. */
static void new_stack(struct stack *s)
{
	uint32_t base = (uint32_t)(next_rand() % 64);

	for (int d = 0; d < DEPTH; d++)
		s->frame[d] = d < 3 ? base * 7 + (uint32_t)d : (uint32_t)(next_rand() % POOL_NAMES);
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	long kib = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			kib = atol(line + 6);
	fclose(f);
	return kib;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int count_slice(void *ctx, uint64_t start_ns, uint64_t end_ns, uint64_t weight)
{
	(void)start_ns;
	(void)end_ns;
	*(uint64_t *)ctx += weight;
	return 0;
}

/* ms of one query of the slices since since_ns, the whole window's users (root's view). */
static double query_ms(const struct window *w, uint64_t since_ns)
{
	struct calltree *out = calltree__new();
	double t0 = clock__mono_s(), dt;

	if (!out || window__query(w, since_ns, UINT64_MAX, true, 0, out, NULL))
		fprintf(stderr, "xs_scale_window: a query failed\n");
	dt = (clock__mono_s() - t0) * 1e3;
	calltree__free(out);
	return dt;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {{"slices", required_argument, NULL, 'n'},
						 {"stacks", required_argument, NULL, 's'},
						 {"churn", required_argument, NULL, 'c'},
						 {"store-mb", required_argument, NULL, 'm'},
						 {"window-s", required_argument, NULL, 'w'},
						 {"every", required_argument, NULL, 'e'},
						 {NULL, 0, NULL, 0}};
	long slices = 8640, nstacks = 2000, churn = 5, store_mb = 64, window_s = 86400,
	     every = 1080;
	char names[POOL_NAMES][24], uids[4][16], comms[64][24];
	struct stack *pool;
	double *adds;
	struct window *w;
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		long *v = c == 'n'   ? &slices
			  : c == 's' ? &nstacks
			  : c == 'c' ? &churn
			  : c == 'm' ? &store_mb
			  : c == 'w' ? &window_s
			  : c == 'e' ? &every
				     : NULL;

		if (!v) {
			fprintf(stderr,
				"usage: xs_scale_window [--slices N] [--stacks S] [--churn PCT] "
				"[--store-mb M] [--window-s W] [--every K]\n");
			return 2;
		}
		*v = atol(optarg);
	}
	if (slices < 1 || nstacks < 1 || churn < 0 || churn > 100 || store_mb < 1 || every < 1) {
		fprintf(stderr, "xs_scale_window: bad arguments\n");
		return 2;
	}
	for (int i = 0; i < POOL_NAMES; i++)
		snprintf(names[i], sizeof(names[i]), "fn_%d", i);
	for (int i = 0; i < 4; i++)
		snprintf(uids[i], sizeof(uids[i]), "uid:%d", i ? 1000 + i : 0);
	for (int i = 0; i < 64; i++)
		snprintf(comms[i], sizeof(comms[i]), "proc_%d", i);
	pool = calloc((size_t)nstacks, sizeof(*pool));
	adds = calloc((size_t)every, sizeof(*adds));
	w = window__new(&(struct window_opts){(unsigned int)window_s, (size_t)store_mb << 20});
	if (!pool || !adds || !w)
		return 1;
	for (long i = 0; i < nstacks; i++)
		new_stack(&pool[i]);
	printf("window: %ld slices of 10 s, %ld stacks each (%ld%% new a slice), --store-mb %ld, "
	       "window %ld s; RSS at start %.1f MiB\n",
	       slices, nstacks, churn, store_mb, window_s, (double)rss_kib() / 1024);
	for (long i = 0, k = 0; i < slices; i++) {
		struct calltree *t = calltree__new();
		uint64_t start = (uint64_t)(i + 1) * SLICE_NS;
		double t0;

		for (long j = 0; j < nstacks * churn / 100; j++)
			new_stack(&pool[next_rand() % (uint64_t)nstacks]);
		for (long j = 0; t && j < nstacks; j++) {
			const char *fr[DEPTH + 2];

			fr[0] = uids[pool[j].frame[0] % 4];
			fr[1] = comms[pool[j].frame[0] % 64];
			for (int d = 0; d < DEPTH; d++)
				fr[d + 2] = names[pool[j].frame[d]];
			if (calltree__add(t, fr, DEPTH + 2, 1 + next_rand() % 20))
				break;
		}
		if (!t)
			return 1;
		t0 = clock__mono_s();
		window__add(w, start, start + SLICE_NS, t);
		window__expire(w, start + SLICE_NS);
		adds[k++] = (clock__mono_s() - t0) * 1e6;
		if (k == every || i == slices - 1) {
			uint64_t end = start + SLICE_NS, weight = 0;
			struct window_stats st;
			double tl0, tl;

			qsort(adds, (size_t)k, sizeof(*adds), cmp_double);
			window__stats(w, &st);
			tl0 = clock__mono_s();
			window__for_each_slice(w, 0, true, 0, count_slice, &weight);
			tl = (clock__mono_s() - tl0) * 1e3;
			printf("slices %ld hours %.1f held %zu store_mib %.1f rss_mib %.1f add_us %.1f "
			       "q5m_ms %.2f q1h_ms %.2f qall_ms %.1f timeline_ms %.2f dropped %llu\n",
			       i + 1, (double)(i + 1) / 360, st.slices, (double)st.bytes / 1048576,
			       (double)rss_kib() / 1024, adds[k / 2],
			       query_ms(w,
					end > 300 * 1000000000ull ? end - 300 * 1000000000ull : 0),
			       query_ms(w, end > 3600 * 1000000000ull ? end - 3600 * 1000000000ull
								      : 0),
			       query_ms(w, 0), tl,
			       (unsigned long long)(st.dropped_slices + st.expired_slices));
			fflush(stdout);
			k = 0;
		}
	}
	window__free(w);
	free(pool);
	free(adds);
	return 0;
}
