// SPDX-License-Identifier: Apache-2.0
/* The samples the pprof and OTLP writers emit, aggregated (sample_agg.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "correlate/correlate.h"
#include "daemon/base/keymap.h"
#include "daemon/base/vec.h"
#include "output/model/profile.h"
#include "output/sample_agg.h"

int sample_agg__add(struct sample_agg *a, const uint64_t k[SAMPLE_AGG_KEY], uint64_t value,
		    const void *ref)
{
	const size_t klen = SAMPLE_AGG_KEY * sizeof(*k);
	uintptr_t at;

	if (!a->index && !(a->index = keymap__new()))
		return -ENOMEM;
	at = (uintptr_t)keymap__get(a->index, k, klen);
	if (at) {
		a->e[at - 1].value += value;
		return 0;
	}
	if (vec_reserve(&a->e, &a->cap, a->n + 1) ||
	    keymap__put(a->index, k, klen, (void *)(uintptr_t)(a->n + 1), NULL))
		return -ENOMEM;
	a->e[a->n] = (struct sample_agg_ent){.value = value, .ref = ref};
	memcpy(a->e[a->n].k, k, klen);
	a->n++;
	return 0;
}

void sample_agg__free(struct sample_agg *a)
{
	keymap__free(a->index);
	free(a->e);
	memset(a, 0, sizeof(*a));
}

/* --group-by range: the range's name (interned: its address is its key), else 0. */
static uint64_t range_key(const struct profile_data *pd, uint32_t pid, uint32_t tid, uint64_t t)
{
	return pd->root_at ? (uint64_t)(uintptr_t)pd->root_at(pd->root_at_ctx, pid, tid, t) : 0;
}

int sample_agg__samples(const struct profile_data *pd, struct sample_agg *a)
{
	int err = 0;

	for (size_t i = 0; i < pd->nr_samples && !err; i++) {
		const struct profile_sample *s = &pd->samples[i];
		uint64_t k[SAMPLE_AGG_KEY] = {s->pid, s->tid, s->stack_id,
					      range_key(pd, s->pid, s->tid, s->time_ns)};

		err = sample_agg__add(a, k, 1, s);
	}
	return err;
}

int sample_agg__gpu(const struct profile_data *pd, struct sample_agg *a, bool *joined)
{
	int err = 0;

	for (size_t i = 0; i < pd->nr_joins && !err; i++) {
		const struct profile_join *j = &pd->joins[i];
		const struct corr_cpu_rec *l;
		const struct corr_gpu_rec *g;

		if (j->launch >= pd->nr_launches || j->gpu >= pd->nr_gpu)
			return -EINVAL;
		l = &pd->launches[j->launch];
		g = &pd->gpu[j->gpu];
		if (!corr_gpu_kind__is_activity(g->kind) || joined[j->gpu])
			continue;
		joined[j->gpu] = true;
		uint64_t k[SAMPLE_AGG_KEY] = {
			(uint64_t)l->pid << 32 | l->tid, (uint64_t)l->stack_id << 32 | g->device,
			(uint64_t)g->stream_id << 16 | g->kind << 8 | g->copy_kind,
			(uint64_t)(uintptr_t)g->name, range_key(pd, l->pid, l->tid, l->time_ns)};

		err = sample_agg__add(a, k, g->end_ns - g->start_ns, j);
	}
	return err;
}
