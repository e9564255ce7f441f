// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/hashmap.h"
#include "output/chrome_trace.h"
#include "output/gpu_timeline.h"
#include "output/model/json_string.h"
#include "output/model/profile.h"

#define CPU_BIN_NS  10000000ull /* 10 ms */
#define MAX_CPU_BIN 100000	/* 1000 s of bins: a longer profile gets wider ones */
#define NONE	    SIZE_MAX

/* Strings said once, by index: interned pointers (names) or (pid, stack id) pairs (stacks). */
struct table {
	struct hashmap *idx; /* key -> index + 1 */
	size_t n;
};

/* The index of key, new ones numbered in order; *is_new says whether to emit it. */
static int index_of(struct table *t, uint64_t k1, uint64_t k2, size_t *ret, bool *is_new)
{
	void *v = hashmap__get(t->idx, k1, k2);

	*is_new = !v;
	if (v) {
		*ret = (size_t)(uintptr_t)v - 1;
		return 0;
	}
	*ret = t->n;
	if (hashmap__put(t->idx, k1, k2, (void *)(uintptr_t)(t->n + 1)))
		return -ENOMEM;
	t->n++;
	return 0;
}

/* A launch's stack: its process, its stack id and the call it made. */
static int stack_index(struct table *t, const struct corr_cpu_rec *l, size_t *ret, bool *is_new)
{
	return index_of(t, (uint64_t)l->pid << 32 | l->stack_id, (uintptr_t)l->api_name, ret,
			is_new);
}

static int cmp_work(const void *a, const void *b, void *ctx)
{
	const struct profile_data *pd = ctx;
	const struct corr_gpu_rec *x = &pd->gpu[*(const size_t *)a];
	const struct corr_gpu_rec *y = &pd->gpu[*(const size_t *)b];

	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	if (x->stream_id != y->stream_id)
		return x->stream_id < y->stream_id ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

static uint64_t rel_us(const struct profile_data *pd, uint64_t t)
{
	return t > pd->start_ns ? (t - pd->start_ns) / 1000 : 0;
}

/* "comm;outer;...;inner" of a launch, as one JSON string. */
static int put_stack(FILE *f, const struct profile_data *pd, const struct corr_cpu_rec *l)
{
	const char *const *frames = NULL;
	const char *comm = pd->name ? pd->name(pd->ctx, l->pid, 0) : NULL;
	char *buf = NULL, pidname[24];
	size_t len = 0, n = 0;
	FILE *m = open_memstream(&buf, &len);
	int err;

	if (!m)
		return -errno;
	if (!comm || !*comm) {
		snprintf(pidname, sizeof(pidname), "pid %u", l->pid);
		comm = pidname;
	}
	fputs(comm, m);
	if (pd->stack && l->stack_id != CORR_NO_STACK &&
	    !pd->stack(pd->ctx, l->pid, l->stack_id, &frames, &n))
		for (size_t i = 0; i < n; i++)
			fprintf(m, ";%s", frames[i]);
	else
		fputs(";[unknown]", m);
	/* The call that launched, unless the stack already ends in it. */
	if (l->api_name && (!n || strcmp(frames[n - 1], l->api_name)))
		fprintf(m, ";%s", l->api_name);
	err = fclose(m) ? -errno : 0;
	if (!err)
		err = json__put_string(f, buf);
	free(buf);
	return err;
}

/* The launch joined to each GPU record (the first, when several were). */
static size_t *launch_of_gpu(const struct profile_data *pd)
{
	size_t *l = malloc((pd->nr_gpu ? pd->nr_gpu : 1) * sizeof(*l));

	if (!l)
		return NULL;
	for (size_t i = 0; i < pd->nr_gpu; i++)
		l[i] = NONE;
	for (size_t j = 0; j < pd->nr_joins; j++)
		if (pd->joins[j].gpu < pd->nr_gpu && l[pd->joins[j].gpu] == NONE)
			l[pd->joins[j].gpu] = pd->joins[j].launch;
	return l;
}

/* Names first, then stacks: each list written as its entries are first met. */
static int write_tables(FILE *f, const struct profile_data *pd, const size_t *work, size_t n,
			const size_t *launch, struct table *names, struct table *stacks)
{
	char leaf[256];
	bool is_new;
	size_t k;
	int err = 0;

	fputs("\"names\":[", f);
	for (size_t i = 0; i < n && !err; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[work[i]];

		profile__gpu_leaf(g, leaf, sizeof(leaf));
		err = index_of(names, (uintptr_t)g->name, g->kind << 8 | g->copy_kind, &k, &is_new);
		if (!err && is_new) {
			fputs(names->n > 1 ? "," : "", f);
			/* "[gpu] " is the flamegraph's marker, not part of the name. */
			err = json__put_string(f, leaf + (strncmp(leaf, "[gpu] ", 6) ? 0 : 6));
		}
	}
	for (size_t i = 0; i < pd->nr_gpu && !err; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];

		if (g->kind != CORR_GPU_NVTX)
			continue;
		err = index_of(names, (uintptr_t)g->name, 0xfffe, &k, &is_new);
		if (!err && is_new) {
			fputs(names->n > 1 ? "," : "", f);
			err = json__put_string(f, g->name ? g->name : "[unnamed range]");
		}
	}
	for (size_t i = 0; i < pd->nr_waits && !err; i++) {
		err = index_of(names, (uintptr_t)pd->waits[i].api, 0xffff, &k, &is_new);
		if (!err && is_new) {
			fputs(names->n > 1 ? "," : "", f);
			err = json__put_string(f, pd->waits[i].api ? pd->waits[i].api : "wait");
		}
	}
	fputs("],\"stacks\":[", f);
	for (size_t i = 0; i < n && !err; i++) {
		const struct corr_cpu_rec *l;

		if (launch[work[i]] == NONE)
			continue;
		l = &pd->launches[launch[work[i]]];
		err = stack_index(stacks, l, &k, &is_new);
		if (!err && is_new) {
			fputs(stacks->n > 1 ? "," : "", f);
			err = put_stack(f, pd, l);
		}
	}
	fputs("]", f);
	return err;
}

static int write_rows(FILE *f, const struct profile_data *pd, const size_t *work, size_t n,
		      const size_t *launch, struct table *names, struct table *stacks)
{
	bool is_new;
	size_t k, st;
	int err = 0;

	fputs(",\"work\":[", f);
	for (size_t i = 0; i < n && !err; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[work[i]];
		long long stack = -1;

		err = index_of(names, (uintptr_t)g->name, g->kind << 8 | g->copy_kind, &k, &is_new);
		if (!err && launch[work[i]] != NONE) {
			const struct corr_cpu_rec *l = &pd->launches[launch[work[i]]];

			err = stack_index(stacks, l, &st, &is_new);
			stack = (long long)st;
		}
		fprintf(f, "%s[%u,%u,%u,%u,%" PRIu64 ",%" PRIu64 ",%zu,%lld]", i ? "," : "",
			g->device, g->stream_id, g->pid, g->kind, rel_us(pd, g->start_ns),
			g->end_ns > g->start_ns ? (g->end_ns - g->start_ns) / 1000 : 0, k, stack);
	}
	fputs("],\"ranges\":[", f);
	for (size_t i = 0, out = 0; i < pd->nr_gpu && !err; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];

		if (g->kind != CORR_GPU_NVTX)
			continue;
		err = index_of(names, (uintptr_t)g->name, 0xfffe, &k, &is_new);
		fprintf(f, "%s[%u,%u,%" PRIu64 ",%" PRIu64 ",%zu]", out++ ? "," : "", g->pid,
			g->tid, rel_us(pd, g->start_ns),
			g->end_ns > g->start_ns ? (g->end_ns - g->start_ns) / 1000 : 0, k);
	}
	fputs("],\"waits\":[", f);
	for (size_t i = 0; i < pd->nr_waits && !err; i++) {
		const struct profile_wait *w = &pd->waits[i];

		err = index_of(names, (uintptr_t)w->api, 0xffff, &k, &is_new);
		fprintf(f, "%s[%u,%u,%" PRIu64 ",%" PRIu64 ",%zu]", i ? "," : "", w->pid, w->tid,
			rel_us(pd, w->start_ns),
			w->end_ns > w->start_ns ? (w->end_ns - w->start_ns) / 1000 : 0, k);
	}
	fputs("]", f);
	return err;
}

/* CPU samples per bin over the profile (none without a sample timeline). */
static int write_cpu(FILE *f, const struct profile_data *pd)
{
	uint64_t span = pd->end_ns > pd->start_ns ? pd->end_ns - pd->start_ns : 0;
	uint64_t bin = CPU_BIN_NS;
	size_t nb;
	uint32_t *counts;

	while (span / bin >= MAX_CPU_BIN)
		bin *= 2;
	nb = pd->nr_samples ? (size_t)(span / bin) + 1 : 0;
	counts = calloc(nb ? nb : 1, sizeof(*counts));
	if (!counts)
		return -ENOMEM;
	for (size_t i = 0; i < pd->nr_samples; i++) {
		uint64_t t = pd->samples[i].time_ns;

		if (t >= pd->start_ns && (t - pd->start_ns) / bin < nb)
			counts[(t - pd->start_ns) / bin]++;
	}
	fprintf(f, ",\"cpu\":{\"bin_us\":%" PRIu64 ",\"samples\":[", bin / 1000);
	for (size_t i = 0; i < nb; i++)
		fprintf(f, "%s%u", i ? "," : "", counts[i]);
	fputs("]}", f);
	free(counts);
	return 0;
}

int gpu_timeline__write(const struct profile_data *pd, FILE *f)
{
	struct table names = {.idx = hashmap__new()}, stacks = {.idx = hashmap__new()};
	size_t *work = malloc((pd->nr_gpu ? pd->nr_gpu : 1) * sizeof(*work));
	size_t *launch = launch_of_gpu(pd);
	size_t n = 0;
	int err = names.idx && stacks.idx && work && launch ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < pd->nr_gpu; i++)
		if (corr_gpu_kind__is_activity(pd->gpu[i].kind))
			work[n++] = i;
	if (!err) {
		qsort_r(work, n, sizeof(*work), cmp_work, (void *)pd);
		fprintf(f, "{\"xsprof_timeline\":1,\"unit\":\"us\",\"span_us\":%" PRIu64 ",",
			rel_us(pd, pd->end_ns));
		err = write_tables(f, pd, work, n, launch, &names, &stacks);
	}
	if (!err)
		err = write_rows(f, pd, work, n, launch, &names, &stacks);
	if (!err)
		err = write_cpu(f, pd);
	if (!err) {
		fputs("}\n", f);
		err = ferror(f) ? -EIO : 0;
	}
	hashmap__free(names.idx);
	hashmap__free(stacks.idx);
	free(work);
	free(launch);
	return err;
}
