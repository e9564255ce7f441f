// SPDX-License-Identifier: Apache-2.0
/* A host's share of a training job, written (output/job/job_parts.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "correlate/correlate.h"
#include "daemon/base/clock.h"
#include "daemon/base/job_filter.h"
#include "daemon/base/keymap.h"
#include "daemon/base/vec.h"
#include "output/job/job_parts.h"
#include "output/model/json_string.h"
#include "output/model/profile.h"

#define NONE SIZE_MAX

struct parts {
	const struct profile_data *pd;
	FILE *f;
	int64_t shift;	       /* added to every time (clock__export_shift_ns) */
	struct keymap *ranked; /* pid -> 1 ranked, 2 not */
	uint32_t *pids;	       /* the ranked ones, in the order met */
	size_t nr_pids, cap_pids;
	struct keymap *strings; /* string -> index + 1 */
	const char **strs;
	size_t nr_strs, cap_strs;
	struct keymap *stacks; /* (pid, stack id) -> 1 */
	uint64_t *stack_keys;  /* pid << 32 | id, in the order met */
	size_t nr_stacks, cap_stacks;
	struct keymap *threads; /* (pid, tid) -> 1 */
	uint64_t *thread_keys;
	size_t nr_threads, cap_threads;
	int err;
};

static bool ranked(struct parts *p, uint32_t pid)
{
	const struct profile_data *pd = p->pd;
	void *v = keymap__get(p->ranked, &pid, sizeof(pid));
	const char *set;
	size_t len;
	bool yes;

	if (v)
		return (uintptr_t)v == 1;
	set = pd->process_labels ? pd->process_labels(pd->process_labels_ctx, pid) : NULL;
	yes = job_filter__label(set, "job.rank", &len) != NULL;
	if (keymap__put(p->ranked, &pid, sizeof(pid), (void *)(uintptr_t)(yes ? 1 : 2), NULL) ||
	    (yes &&
	     vec__reserve((void **)&p->pids, &p->cap_pids, p->nr_pids + 1, sizeof(*p->pids))))
		p->err = -ENOMEM;
	else if (yes)
		p->pids[p->nr_pids++] = pid;
	return yes;
}

/* The string's index in the table, or -1 for none. */
static long str_index(struct parts *p, const char *s)
{
	void *v;

	if (!s)
		return -1;
	v = keymap__get(p->strings, s, strlen(s));
	if (v)
		return (long)((uintptr_t)v - 1);
	if (vec__reserve((void **)&p->strs, &p->cap_strs, p->nr_strs + 1, sizeof(*p->strs)) ||
	    keymap__put(p->strings, s, strlen(s), (void *)(uintptr_t)(p->nr_strs + 1), NULL)) {
		p->err = -ENOMEM;
		return -1;
	}
	p->strs[p->nr_strs] = s;
	return (long)p->nr_strs++;
}

/* A (pid, id) pair noted once in keys (in the order met). */
static void note_pair(struct parts *p, struct keymap *m, uint64_t **keys, size_t *n, size_t *cap,
		      uint32_t pid, uint32_t id)
{
	uint64_t k = (uint64_t)pid << 32 | id;

	if (keymap__get(m, &k, sizeof(k)))
		return;
	if (vec__reserve((void **)keys, cap, *n + 1, sizeof(**keys)) ||
	    keymap__put(m, &k, sizeof(k), (void *)1, NULL)) {
		p->err = -ENOMEM;
		return;
	}
	(*keys)[(*n)++] = k;
}

static void note_stack(struct parts *p, uint32_t pid, uint32_t id)
{
	if (id != CORR_NO_STACK)
		note_pair(p, p->stacks, &p->stack_keys, &p->nr_stacks, &p->cap_stacks, pid, id);
}

static void note_thread(struct parts *p, uint32_t pid, uint32_t tid)
{
	note_pair(p, p->threads, &p->thread_keys, &p->nr_threads, &p->cap_threads, pid, tid);
}

static uint64_t t(const struct parts *p, uint64_t ns)
{
	return ns ? (uint64_t)((int64_t)ns + p->shift) : 0;
}

static void write_gpu(struct parts *p, size_t *gpu_to)
{
	const struct profile_data *pd = p->pd;
	size_t n = 0;

	fputs(",\"gpu\":[", p->f);
	for (size_t i = 0; i < pd->nr_gpu; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];

		gpu_to[i] = NONE;
		if (!ranked(p, g->pid))
			continue;
		gpu_to[i] = n;
		if (g->tid)
			note_thread(p, g->pid, g->tid);
		fprintf(p->f,
			"%s[%u,%u,%u,%u,%u,%u,%u,%u,%u,%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64
			",%" PRIu64 ",%ld,%ld]",
			n++ ? "," : "", g->kind, g->copy_kind, g->host_mem, g->flags, g->pid,
			g->tid, g->device, g->context, g->stream_id, g->corr_id, g->cbid,
			g->graph_id, t(p, g->start_ns), t(p, g->end_ns), g->bytes,
			str_index(p, g->name), str_index(p, g->domain));
	}
	fputc(']', p->f);
}

static void write_launches(struct parts *p, size_t *launch_to)
{
	const struct profile_data *pd = p->pd;
	size_t n = 0;

	fputs(",\"launches\":[", p->f);
	for (size_t i = 0; i < pd->nr_launches; i++) {
		const struct corr_cpu_rec *l = &pd->launches[i];

		launch_to[i] = NONE;
		if (!ranked(p, l->pid))
			continue;
		launch_to[i] = n;
		note_stack(p, l->pid, l->stack_id);
		note_thread(p, l->pid, l->tid);
		fprintf(p->f, "%s[%u,%u,%u,%u,%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%u,%u,%ld]",
			n++ ? "," : "", l->kind, l->api_kind, l->flags, l->api_id, l->pid, l->tid,
			t(p, l->time_ns), l->stream, l->graph_exec, l->corr_id, l->stack_id,
			str_index(p, l->api_name));
	}
	fputc(']', p->f);
}

static void write_joins(struct parts *p, const size_t *launch_to, const size_t *gpu_to)
{
	const struct profile_data *pd = p->pd;
	size_t n = 0;

	fputs(",\"joins\":[", p->f);
	for (size_t i = 0; i < pd->nr_joins; i++) {
		size_t l = launch_to[pd->joins[i].launch], g = gpu_to[pd->joins[i].gpu];

		if (l != NONE && g != NONE)
			fprintf(p->f, "%s[%zu,%zu]", n++ ? "," : "", l, g);
	}
	fputc(']', p->f);
}

static void write_samples(struct parts *p)
{
	const struct profile_data *pd = p->pd;
	size_t n = 0, dropped = 0;

	fputs(",\"samples\":[", p->f);
	for (size_t i = 0; i < pd->nr_samples; i++) {
		const struct profile_sample *s = &pd->samples[i];

		if (!ranked(p, s->pid))
			continue;
		if (n == JOB_PARTS_MAX_SAMPLES) {
			dropped++;
			continue;
		}
		note_stack(p, s->pid, s->stack_id);
		note_thread(p, s->pid, s->tid);
		fprintf(p->f, "%s[%" PRIu64 ",%u,%u,%u,%u]", n++ ? "," : "", t(p, s->time_ns),
			s->pid, s->tid, s->stack_id, s->cpu);
	}
	fprintf(p->f, "],\"samples_dropped\":%zu", dropped);
}

static void write_stacks(struct parts *p)
{
	const struct profile_data *pd = p->pd;

	fputs(",\"stacks\":[", p->f);
	for (size_t i = 0; i < p->nr_stacks; i++) {
		uint32_t pid = (uint32_t)(p->stack_keys[i] >> 32), id = (uint32_t)p->stack_keys[i];
		const char *const *fr = NULL;
		size_t n = 0;

		if (!pd->stack || pd->stack(pd->ctx, pid, id, &fr, &n))
			n = 0;
		fprintf(p->f, "%s[%u,%u,[", i ? "," : "", pid, id);
		for (size_t k = 0; k < n; k++)
			fprintf(p->f, "%s%ld", k ? "," : "", str_index(p, fr[k]));
		fputs("]]", p->f);
	}
	fputc(']', p->f);
}

/* Each ranked process with its name and labels; each thread met with its name. */
static void write_names(struct parts *p)
{
	const struct profile_data *pd = p->pd;
	char buf[64];

	fputs(",\"threads\":[", p->f);
	for (size_t i = 0; i < p->nr_threads; i++) {
		uint32_t pid = (uint32_t)(p->thread_keys[i] >> 32),
			 tid = (uint32_t)p->thread_keys[i];

		fprintf(p->f, "%s[%u,%u,", i ? "," : "", pid, tid);
		json__put_string(p->f, profile__name_or(pd, pid, tid, buf, sizeof(buf)));
		fputc(']', p->f);
	}
	fputs("],\"processes\":[", p->f);
	for (size_t i = 0; i < p->nr_pids; i++) {
		uint32_t pid = p->pids[i];

		fprintf(p->f, "%s{\"pid\":%u,\"name\":", i ? "," : "", pid);
		json__put_string(p->f, profile__name_or(pd, pid, 0, buf, sizeof(buf)));
		fputs(",\"labels\":", p->f);
		json__put_string(p->f, pd->process_labels(pd->process_labels_ctx, pid));
		fputc('}', p->f);
	}
	fputc(']', p->f);
}

static void parts_free(struct parts *p)
{
	keymap__free(p->ranked);
	keymap__free(p->strings);
	keymap__free(p->stacks);
	keymap__free(p->threads);
	free(p->strs);
	free(p->pids);
	free(p->stack_keys);
	free(p->thread_keys);
}

int job_parts__write(const struct profile_data *pd, FILE *f, const struct output_meta *meta)
{
	struct parts p = {.pd = pd, .f = f, .shift = clock__export_shift_ns()};
	size_t *launch_to = calloc(pd->nr_launches + 1, sizeof(*launch_to));
	size_t *gpu_to = calloc(pd->nr_gpu + 1, sizeof(*gpu_to));
	char host[256] = "";
	int err;

	(void)meta;
	p.ranked = keymap__new();
	p.strings = keymap__new();
	p.stacks = keymap__new();
	p.threads = keymap__new();
	if (!launch_to || !gpu_to || !p.ranked || !p.strings || !p.stacks || !p.threads) {
		err = -ENOMEM;
		goto out;
	}
	gethostname(host, sizeof(host) - 1);
	fprintf(f, "{\"schema\":\"%s\",\"version\":%d,\"host\":", JOB_PARTS_SCHEMA,
		JOB_PARTS_VERSION);
	json__put_string(f, host);
	fprintf(f,
		",\"start_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64 ",\"realtime_offset_ns\":%" PRId64
		",\"sample_period_ns\":%" PRIu64,
		t(&p, pd->start_ns), t(&p, pd->end_ns), pd->realtime_offset_ns - p.shift,
		pd->sample_period_ns);
	write_gpu(&p, gpu_to);
	write_launches(&p, launch_to);
	write_joins(&p, launch_to, gpu_to);
	write_samples(&p);
	write_stacks(&p);
	write_names(&p);
	fputs(",\"strings\":[", f);
	for (size_t i = 0; i < p.nr_strs; i++) {
		if (i)
			fputc(',', f);
		json__put_string(f, p.strs[i]);
	}
	fputs("]}\n", f);
	err = p.err ? p.err : ferror(f) ? -EIO : 0;
out:
	parts_free(&p);
	free(launch_to);
	free(gpu_to);
	return err;
}
