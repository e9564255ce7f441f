/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The job report's insides, shared by its parts: the ranks and their collectives numbered and
 * met (job_ranks.c), the analysis (job_report.c) and the writers (job_report_write.c).
 */
#ifndef XSPROF_OUTPUT_JOB_REPORT_INTERNAL_H
#define XSPROF_OUTPUT_JOB_REPORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "output/job/job_report.h"
#include "output/job/nccl.h"
#include "output/model/profile.h"

#define JR_NOT_THERE	SIZE_MAX
#define JR_MAX_STREAMS	16 /* NCCL streams told apart per rank; more share the last */
#define JR_MAX_NOTES	12
#define JR_MAX_FINDINGS 16
#define JR_NOTE_LEN	240
#define JR_MAX_KERNELS	4 /* kernels a compute finding names */
#define JR_MAX_FRAMES	128
#define JR_MAX_STACKS	64 /* distinct stacks a finding's tally keeps; more are left out */
#define JR_MAX_HOPS	8  /* hops of a wait chain kept; a longer one is cut there */

/* One rank's collective: an NCCL kernel, numbered. */
struct jr_coll {
	size_t gpu; /* pd->gpu index */
	struct nccl_kernel kern;
	uint32_t stream_ord; /* the rank's NCCL streams, numbered by their first collective */
	uint32_t index;	     /* the index-th of its kind (op) on that stream, from 0 */
	size_t pos;	     /* its place in the rank's work */
	uint64_t start, end, launch; /* launch: its CUDA call's time (0: not joined) */
	uint64_t arrive;	     /* when it could have started */
	uint64_t seg_start;	     /* the end of the rank's previous collective (or first work) */
	int64_t step;		     /* -1: none */
	/* What the rank's GPU did in [seg_start, arrive]. */
	uint64_t busy, idle_by[JOB_CAUSE_NR];
};

struct jr_range {
	uint64_t s, e;
};

/* A process that said its rank. */
struct jr_rank {
	uint32_t pid;
	int64_t rank, world; /* world -1: not said */
	char job[64];	     /* "": not said */
	char host[64];	     /* its host.name label (a report across hosts); "": none */
	size_t *work;	     /* pd->gpu indexes of its GPU work, by start */
	size_t nr_work, cap_work;
	struct jr_coll *colls; /* by start */
	size_t nr_colls, cap_colls;
	uint32_t streams[JR_MAX_STREAMS];
	size_t nr_streams;
	struct jr_range *steps; /* its step ranges, by start */
	size_t nr_steps, cap_steps;
};

/* The index-th collective of a kind on a stream, met by the job's ranks. */
struct jr_meet {
	const char *op; /* the first rank's kernel's (points into it) */
	uint32_t stream_ord, index;
	size_t *at; /* per job rank: its colls index, JR_NOT_THERE */
	size_t nr_in;
	uint64_t first, median, last;  /* arrivals */
	size_t last_rank, median_rank; /* job rank indexes */
	uint64_t lateness;	       /* last - median */
	uint64_t own_ns;	       /* from the last arrival to the median end */
	bool late, link_slow;
	enum job_cause cause; /* the last rank's, when late */
	int64_t step;
};

struct jr_step {
	int64_t index;
	size_t nr_meets;
	uint64_t start, end; /* the first arrival and last end of its collectives */
	size_t straggler;    /* job rank index; JR_NOT_THERE: none late */
	uint64_t lateness;   /* the straggler's, summed over the step's collectives */
	enum job_cause cause;
};

struct jr_kernel {
	const char *name;
	int64_t delta_ns;  /* the late rank's time in it minus the median rank's */
	uint32_t stack_id; /* a launch of it on the late rank, or CORR_NO_STACK */
};

/* Samples by stack id (of one process). */
struct jr_tally {
	struct {
		uint32_t id;
		uint64_t n;
	} s[JR_MAX_STACKS];
	size_t n;
};

/*
 * A late rank's host gaps followed through wait chains (profile_data.woken: --wakers,
 * job_chains.c): the time its launching thread spent waiting in them, woken through a chain
 * of threads, and the heaviest such chain with where its last thread's time went.
 */
struct jr_chain {
	uint64_t gap_ns;     /* the launching thread's time before launching, GPU waiting */
	uint64_t chained_ns; /* ... of it spent waiting, woken through a chain */
	uint64_t ns;	     /* ... through the heaviest chain, the one below */
	uint32_t nr_hops;    /* its hops, nearest first (0: no chain) */
	uint32_t hop_pid[JR_MAX_HOPS], hop_tid[JR_MAX_HOPS];
	uint32_t wait_pid, wait_tid; /* the launching thread */
	uint32_t wait_stack;	     /* its stack in its longest wait of the chain */
	uint64_t wait_longest;	     /* that wait's time in the gaps */
	struct jr_tally work;	     /* the last hop's samples while it ran before waking */
	const char *work_frame;	     /* where they went: the deepest frame 80% of them share */
	double work_share;	     /* the share of them under it */
	char why[400];		     /* the chain in words */
};

struct jr_finding {
	const char *kind, *severity, *advice;
	int64_t rank; /* -1: the job's */
	uint32_t pid;
	enum job_cause cause;
	char summary[200];
	uint64_t late, meets;
	uint64_t lateness_median, lateness_max, lateness_total, segment_median;
	int64_t delta[JOB_CAUSE_NR]; /* busy (compute) and idle by cause, minus the median rank's */
	struct jr_kernel kernels[JR_MAX_KERNELS];
	size_t nr_kernels;
	const char **frames; /* outermost first; owned array, pd's strings */
	size_t nr_frames;
	struct jr_chain *chain; /* host and blocked causes with --wakers; owned (NULL: none) */
};

struct jr_job {
	char id[64];
	int64_t world;
	struct jr_rank **ranks; /* by rank */
	size_t nr_ranks;
	struct jr_meet *meets; /* by median arrival */
	size_t nr_meets, cap_meets;
	struct jr_step *steps;
	size_t nr_steps, cap_steps;
	bool steps_from_ranges;
	size_t period; /* steps from the pattern: collectives a step */
	struct jr_finding findings[JR_MAX_FINDINGS];
	size_t nr_findings;
	char notes[JR_MAX_NOTES][JR_NOTE_LEN];
	size_t nr_notes;
};

struct job_report {
	const struct profile_data *pd;
	const char *step_name;
	struct jr_rank *ranks;
	size_t nr_ranks, cap_ranks;
	size_t unranked; /* processes with GPU work that said no rank */
	struct jr_job *jobs;
	size_t nr_jobs;
	size_t *launch_of; /* pd->gpu index -> pd->launches index + 1 (0: none) */
	size_t *samples;   /* pd->samples indexes by (tid, time) */
	size_t *woken;	   /* pd->woken indexes by (tid, start); NULL: no chains */
	const struct job_report_clock *clocks; /* job_report__set_clocks */
	size_t nr_clocks;
	int64_t epoch; /* the wall time of time 0 (clocks given) */
	char notes[JR_MAX_NOTES][JR_NOTE_LEN];
	size_t nr_notes;
};

/* The ranks, their collectives numbered, the jobs and their meets (job_ranks.c). 0 or
 * -ENOMEM. */
int jr_collect(struct job_report *r);
/* A plain answer about the report (job NULL) or a job; dropped past JR_MAX_NOTES. */
void jr_note(struct job_report *r, struct jr_job *job, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The analysis's helpers (job_report.c) for the findings (job_report_findings.c). */
/*
 * The stages, bottom up: job_walk.c (below), job_ranks.c and job_report_findings.c on it, and
 * job_report.c, which drives them; no stage calls one above it.
 */

/* r->samples: pd->samples' indexes sorted by tid, time (job_walk.c). 0 or -ENOMEM. */
int jr_index_samples(struct job_report *r);
/* The samples of tid in [a, b]. */
size_t jr_samples_in(const struct job_report *r, uint32_t tid, uint64_t a, uint64_t b);
/* Walks the rank's work from from_pos (after its previous collective) to c: fn for each piece
 * of work (c last, is_coll) with the gap before it [gap_s, gap_e) and its time [s, e), all
 * clipped to [c->seg_start, c->arrive]. */
typedef void (*jr_seg_fn)(void *ctx, size_t gpu, bool is_coll, uint64_t gap_s, uint64_t gap_e,
			  uint64_t s, uint64_t e);
void jr_walk_segment(const struct job_report *r, const struct jr_rank *rk, const struct jr_coll *c,
		     size_t from_pos, jr_seg_fn fn, void *ctx);
/* The launch joined to pd->gpu[gpu]; NULL when none. */
const struct corr_cpu_rec *jr_launch_of(const struct job_report *r, size_t gpu);
/* The launch of pd->gpu[gpu] when it was made inside the gap [gap_s, gap_e) before that work
 * (the GPU waited for the host), its time (clipped to gap_e) into *ret_end; else NULL. */
const struct corr_cpu_rec *jr_host_part(const struct job_report *r, size_t gpu, uint64_t gap_s,
					uint64_t gap_e, uint64_t *ret_end);
/* The first index of r->samples of tid at or after t (r->samples sorted by tid, time). */
size_t jr_first_sample(const struct job_report *r, uint32_t tid, uint64_t t);
/* Count a sample of stack id (a full tally leaves a new id out). */
void jr_tally_add(struct jr_tally *t, uint32_t id);
/* The job rank k's collective in m; NULL when k did not run it. */
const struct jr_coll *jr_coll_at(const struct jr_job *job, const struct jr_meet *m, size_t k);
int jr_cmp_u64(const void *a, const void *b);
/* Wait chains (job_chains.c): r->woken built (nothing without pd->woken). 0 or -ENOMEM. */
int jr_index_woken(struct job_report *r);
/* Rank k's host gaps before the collectives it was late at, followed through the chains:
 * *ret the heaviest chain's (NULL: no gap was spent waiting on one). 0 or -ENOMEM. */
int jr_chains(const struct job_report *r, const struct jr_job *job, size_t k,
	      struct jr_chain **ret);
/* c->why from its hops, wait and work. */
void jr_chain_why(const struct job_report *r, struct jr_chain *c);
/* The job's findings (job_report_findings.c). 0 or -ENOMEM. */
int jr_findings(struct job_report *r, struct jr_job *job);

#endif
