// SPDX-License-Identifier: Apache-2.0
/*
 * bench_gpu_report_keep: what the service's GPU reports cost at each slice's close and at a
 * query. A synthetic slice of a busy training job (N kernels launched from a few stacks, 50
 * kernel names, one sample per 100 kernels in the host's gaps) is made into a report three
 * ways, interleaved and repeated: built at once (what `xsprofd -f --report gpu` does: the
 * baseline), collected to keep (what a slice's close does), and a query's merge of S kept
 * slices and its findings. Prints the median of each, collect / build, and the bytes a kept
 * report holds.
 *
 *   bench_gpu_report_keep [--kernels N] [--slices S] [--reps R]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "output/gpu_report/gpu_report.h"
#include "output/model/profile.h"

#define NAMES 50

static const char *const frames[7][3] = {
	{"main", "train", "forward"},	{"main", "train", "backward"}, {"main", "train", "step"},
	{"main", "data", "make_batch"}, {"main", "data", "collate"},   {"main", "train", "loss"},
	{"main", "train", "optimizer"},
};

static int stack_of(void *ctx, uint32_t pid, uint32_t id, const char *const **ret, size_t *ret_n)
{
	(void)ctx;
	(void)pid;
	*ret = frames[id % 7];
	*ret_n = 3;
	return 0;
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {{"kernels", required_argument, NULL, 'k'},
					   {"slices", required_argument, NULL, 's'},
					   {"reps", required_argument, NULL, 'r'},
					   {NULL, 0, NULL, 0}};
	size_t n = 200000, slices = 30, reps = 5;
	char names[NAMES][32];
	const char *name_of[NAMES];
	struct corr_cpu_rec *l;
	struct corr_gpu_rec *g;
	struct profile_join *j;
	struct profile_sample *sm;
	struct profile_data pd = {.stack = stack_of};
	double *t_build, *t_collect, *t_query;
	size_t kept = 0;
	int c;

	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (c == 'k')
			n = strtoul(optarg, NULL, 10);
		else if (c == 's')
			slices = strtoul(optarg, NULL, 10);
		else if (c == 'r')
			reps = strtoul(optarg, NULL, 10);
		else {
			fprintf(stderr, "usage: %s [--kernels N] [--slices S] [--reps R]\n",
				argv[0]);
			return 2;
		}
	}
	if (!n || !slices || !reps) {
		fprintf(stderr, "--kernels, --slices and --reps must be at least 1\n");
		return 2;
	}
	l = calloc(n, sizeof(*l));
	g = calloc(n, sizeof(*g));
	j = calloc(n, sizeof(*j));
	sm = calloc(n / 100 + 1, sizeof(*sm));
	t_build = calloc(reps, sizeof(double));
	t_collect = calloc(reps, sizeof(double));
	t_query = calloc(reps, sizeof(double));
	if (!l || !g || !j || !sm || !t_build || !t_collect || !t_query) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	for (int i = 0; i < NAMES; i++) {
		snprintf(names[i], sizeof(names[i]), "void kernel_%d<float>(float*)", i);
		name_of[i] = names[i];
	}
	/* 20 k kernels a second over 10 s (50 us apart, 35 us each), two streams. */
	for (size_t i = 0; i < n; i++) {
		l[i] = (struct corr_cpu_rec){
			.pid = 1, .tid = 1, .time_ns = i * 50000, .stack_id = (uint32_t)(i % 3)};
		g[i] = (struct corr_gpu_rec){.kind = CORR_GPU_KERNEL,
					     .pid = 1,
					     .stream_id = (uint32_t)(i % 2),
					     .start_ns = i * 50000 + 5000,
					     .end_ns = i * 50000 + 40000,
					     .name = name_of[i % NAMES]};
		j[i] = (struct profile_join){i, i};
	}
	for (size_t i = 0; i < n / 100; i++)
		sm[i] = (struct profile_sample){.time_ns = i * 5000000 + 45000,
						.pid = 1,
						.tid = 1,
						.stack_id = (uint32_t)(3 + i % 2)};
	pd.launches = l;
	pd.gpu = g;
	pd.joins = j;
	pd.samples = sm;
	pd.nr_launches = pd.nr_gpu = pd.nr_joins = n;
	pd.nr_samples = n / 100;
	pd.end_ns = n * 50000;
	for (size_t r = 0; r < reps; r++) {
		struct gpu_report *b = NULL, *k = NULL, *q = gpu_report__new();
		double t0 = now_ms(), t1, t2, t3;

		if (gpu_report__build(&pd, &b))
			return 1;
		t1 = now_ms();
		if (gpu_report__collect(&pd, NULL, NULL, &k))
			return 1;
		t2 = now_ms();
		for (size_t s = 0; q && s < slices; s++)
			if (gpu_report__merge(q, k))
				return 1;
		if (!q || gpu_report__finish(q))
			return 1;
		t3 = now_ms();
		t_build[r] = t1 - t0;
		t_collect[r] = t2 - t1;
		t_query[r] = t3 - t2;
		kept = gpu_report__bytes(k);
		gpu_report__free(b);
		gpu_report__free(k);
		gpu_report__free(q);
	}
	printf("kernels_per_slice %zu\n", n);
	printf("build_ms %.1f\n", median(t_build, reps));
	printf("collect_ms %.1f\n", median(t_collect, reps));
	printf("collect_vs_build %.2f\n", median(t_collect, reps) / median(t_build, reps));
	printf("collect_ns_per_kernel %.0f\n", median(t_collect, reps) * 1e6 / (double)n);
	printf("kept_bytes %zu\n", kept);
	printf("query_%zu_slices_ms %.2f\n", slices, median(t_query, reps));
	return 0;
}
