/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The samples the pprof and OTLP writers emit, aggregated: one entry per distinct key, in the
 * order first met (so samples are written in the order of their records), with the summed
 * value and a record that has the key, for its labels.
 */
#ifndef XSPROF_OUTPUT_SAMPLE_AGG_H
#define XSPROF_OUTPUT_SAMPLE_AGG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct keymap;
struct profile_data;

#define SAMPLE_AGG_KEY 5

struct sample_agg_ent {
	uint64_t k[SAMPLE_AGG_KEY];
	uint64_t value;
	const void *ref; /* a record that has the key */
};

struct sample_agg {
	struct keymap *index; /* key -> entry + 1 */
	struct sample_agg_ent *e;
	size_t n, cap;
};

/* value added to k's entry (a new one with ref when k is new). 0 or -ENOMEM. */
int sample_agg__add(struct sample_agg *a, const uint64_t k[SAMPLE_AGG_KEY], uint64_t value,
		    const void *ref);
void sample_agg__free(struct sample_agg *a);

/*
 * pd's sample timeline by {pid, tid, stack id, range} (k[3]: the range's interned name, as
 * pd->root_at gives it, or 0), one each; ref: a profile_sample. 0 or -ENOMEM.
 */
int sample_agg__samples(const struct profile_data *pd, struct sample_agg *a);
/*
 * pd's GPU work joined to launches (each piece once), its time summed by launching thread
 * (k[0]: pid << 32 | tid), launch stack and device (k[1]: stack id << 32 | device), stream, kind
 * and copy kind (k[2]), name (k[3]: its address) and the launch's range (k[4]); ref: a
 * profile_join. joined[i] says whether pd->gpu[i] was (pd->nr_gpu of them, zeroed by the
 * caller). 0, -EINVAL (a join out of range) or -ENOMEM.
 */
int sample_agg__gpu(const struct profile_data *pd, struct sample_agg *a, bool *joined);

#endif
