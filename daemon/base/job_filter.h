/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --job and --rank (and a recording's "job" and "rank"): which processes of a training job a
 * profile keeps, by the job id and rank their launcher put in their environment (proc_env.h),
 * as a process's label set carries them ("job.id=ID\x1fjob.rank=N", host_labels.h). A process
 * that says no job or no rank is left out when the filter asks for one. One parser and one
 * predicate for xsprofd's flags, the recording API, the scrape endpoint and xsprofctl.
 */
#ifndef XSPROF_DAEMON_BASE_JOB_FILTER_H
#define XSPROF_DAEMON_BASE_JOB_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JOB_FILTER_MAX_RANKS 64
#define JOB_FILTER_ID_MAX    64 /* with its NUL: proc_job's job_id */
#define JOB_FILTER_RANK_MAX  999999999

/* What a bad value is told, wherever it came from. */
#define JOB_FILTER_JOB_HELP                                                                       \
	"a job id as its launcher set it (TORCHELASTIC_RUN_ID, SLURM_JOB_ID), 1 to 63 bytes, no " \
	"control characters"
#define JOB_FILTER_RANK_HELP "ranks and ranges by commas, like 0,2-3 (at most 64 ranks)"

struct job_filter {
	char job[JOB_FILTER_ID_MAX];	      /* "": any job */
	uint32_t ranks[JOB_FILTER_MAX_RANKS]; /* sorted, each once */
	size_t nr_ranks;		      /* 0: any rank */
};

/* f's job. 0, or -EINVAL (empty, a control character), -ENAMETOOLONG; f untouched then. */
int job_filter__set_job(struct job_filter *f, const char *id);
/*
 * f's ranks from "0,2-3": ranks and ranges (LO-HI, LO <= HI) of whole numbers up to
 * JOB_FILTER_RANK_MAX, by commas, nothing else. 0, or -EINVAL (syntax), -E2BIG (more than
 * JOB_FILTER_MAX_RANKS ranks); f untouched then.
 */
int job_filter__set_ranks(struct job_filter *f, const char *list);
/* Whether f asks for anything (a job or ranks). */
bool job_filter__on(const struct job_filter *f);
/* Whether a process with this label set ("key=value\x1fkey=value"; NULL: none) is kept. */
bool job_filter__matches(const struct job_filter *f, const char *labels);
/* The value of key in a label set ("k=v" pairs joined by '\x1f'), ret_len bytes long (not
 * NUL-terminated); NULL when the set has no such key. */
const char *job_filter__label(const char *set, const char *key, size_t *ret_len);
/* "job ID, ranks 0,2-3" (what it asks, for logs); "" when off. */
void job_filter__describe(const struct job_filter *f, char *buf, size_t size);

#endif
