// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "daemon/base/hashmap.h"
#include "daemon/base/job_filter.h"
#include "daemon/session/host_labels.h"
#include "daemon/session/job_keep.h"

#define KEPT	 ((void *)1)
#define LEFT_OUT ((void *)2)

struct job_keep {
	struct job_filter f;
	struct host_labels *labels;
	struct hashmap *seen; /* pid -> KEPT or LEFT_OUT */
	struct job_keep_stats st;
};

struct job_keep *job_keep__new(const struct job_filter *f, struct host_labels *labels)
{
	struct job_keep *k = calloc(1, sizeof(*k));

	if (!k || !(k->seen = hashmap__new())) {
		free(k);
		errno = ENOMEM;
		return NULL;
	}
	k->f = *f;
	k->labels = labels;
	return k;
}

void job_keep__free(struct job_keep *k)
{
	if (k)
		hashmap__free(k->seen);
	free(k);
}

bool job_keep__accepts(void *ctx, uint32_t pid)
{
	struct job_keep *k = ctx;
	void *seen = hashmap__get(k->seen, pid, 0);
	bool ok;

	if (seen)
		return seen == KEPT;
	ok = job_filter__matches(&k->f, host_labels__of(k->labels, pid));
	if (hashmap__count(k->seen) >= JOB_KEEP_MAX_PROCS ||
	    hashmap__put(k->seen, pid, 0, ok ? KEPT : LEFT_OUT)) {
		k->st.uncounted++;
		return ok;
	}
	if (ok)
		k->st.kept++;
	else
		k->st.left_out++;
	return ok;
}

void job_keep__stats(const struct job_keep *k, struct job_keep_stats *ret)
{
	*ret = k->st;
}
