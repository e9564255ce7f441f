/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GPU report's insides, shared by its builder (gpu_report.c: facts from a profile,
 * findings, writers) and its keeper (gpu_report_keep.c: reports that own their strings,
 * merged one into another). Not for other files.
 */
#ifndef XSPROF_OUTPUT_GPU_REPORT_INTERNAL_H
#define XSPROF_OUTPUT_GPU_REPORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "output/gpu_report/gpu_clock.h"
#include "output/gpu_report/gpu_report.h"
#include "output/model/profile.h"

struct gpu_memory;
struct keymap;
struct strset;

#define MS	       1000000ull
#define S	       1000000000ull
#define MAX_BINS       3600 /* the utilisation series: 1 s bins, wider past an hour */
#define NR_GAP_BUCKETS 6
/* Log-linear histograms of durations: 16 exact values, then 16 buckets a power of two up to
 * 2^40 ns (about 18 minutes; longer ones count in the last): within 1/16 of the value. */
#define HIST_SUB     16
#define HIST_BUCKETS (HIST_SUB + (40 - 4) * HIST_SUB)

/* One piece of GPU work: an index into pd->gpu and its time. */
struct work {
	uint64_t s, e;
	uint32_t gpu; /* its index in pd->gpu */
	uint16_t dev; /* the GPU report: its device's index in r->dev */
	uint8_t kind; /* the GPU report: enum corr_gpu_kind */
	uint8_t comm; /* the GPU report: a communication kernel (NCCL) */
};

/* Time blamed on one stack for one cause: summed over gaps. */
struct blame {
	uint32_t cause, device, pid, stack_id; /* key: no padding (keymap compares bytes) */
	const char *api;		       /* sync: the call that waited */
	uint32_t tid;
	uint64_t ns;
	uint64_t gaps;
	const char **frames; /* outermost first; NULL: none known */
	size_t nr_frames;
};

struct stream_stat {
	uint32_t device, stream;
	uint64_t work, n;
	uint64_t *delay; /* launch -> start of each joined piece of work (while collecting) */
	size_t cap;
	uint64_t mean, p50, p99, max;
	uint64_t sum;	/* of the delays */
	uint32_t *hist; /* the delays, log-linear (kept reports; NULL otherwise) */
	bool approx;	/* merged: p50 and p99 from hist */
};

struct device {
	uint32_t device;
	uint64_t first, last, busy;
	uint64_t kernels, copies, memsets;
	uint64_t nr_gaps, idle, longest_gap;
	uint64_t hist[NR_GAP_BUCKETS];
	uint64_t idle_by[GPU_IDLE_NR];
	uint64_t comm_ns, comm_overlap_ns;
	uint64_t bin_ns;
	uint64_t *bins; /* busy ns per bin */
	size_t nr_bins;
	struct gpu_clock clock; /* how far its times may be from the CPU's */
};

struct kernel_stat {
	const char *name;
	uint64_t count, total, max;
	uint32_t pid, stack_id; /* the stack that launched most of its time */
	uint64_t stack_ns;
	const char **frames;
	size_t nr_frames;
};

struct copy_stat {
	uint8_t dir, host_mem;
	bool async;
	uint64_t count, bytes, ns;
};

struct figure {
	const char *key;
	bool is_ratio;
	uint64_t u;
	double d;
};

struct finding {
	const char *kind, *severity, *advice;
	uint32_t device;
	char summary[160];
	struct figure fig[6];
	size_t nr_fig;
	/* The stack it points at (nr_frames 0: none) and, for a call, the call. */
	uint32_t pid;
	const char *api;
	const char *const *frames;
	size_t nr_frames;
	/* Host-bound: the heaviest chain the launching thread waited through (NULL: none), the
	 * share of the host idle time chains explained, and where the last hop's time went: its
	 * frame (NULL: no samples) and that frame's share of the chain's time. */
	const struct chain_stat *chain;
	double explained;
	const char *work_frame;
	double work_share;
	char why[320];
};

struct launch_facts {
	uint64_t kernels, intervals, shorter;
	uint64_t median_kernel_ns, median_interval_ns;
	uint64_t api_ns; /* time in launch calls (API records), on the busiest thread */
	uint32_t api_tid;
	double rate_per_s;
	uint64_t first_ns, last_ns;	       /* the first and last launch joined */
	uint32_t *kernel_hist, *interval_hist; /* kept reports: the durations, log-linear */
	bool approx;			       /* merged: medians and rate from those */
};

/* An NVTX range (or xsprof scope) on a thread, and what the GPU did inside the ranges. */
struct nvtx_range {
	uint32_t pid, tid;
	uint64_t s, e;
	size_t stat; /* its range_stat */
};

struct range_stat {
	const char *domain, *name;
	uint64_t gpu_ns;	    /* GPU work launched inside it */
	uint64_t idle[GPU_IDLE_NR]; /* idle gaps that began while the launching thread was in it */
	uint64_t allocated;	    /* GPU memory allocated inside it */
};

/* A GPU memory call kept past its profile: its stack as the report's strings. */
struct mem_call {
	struct profile_mem m; /* m.stack_id: this call's index (or CORR_NO_STACK) */
	const char **frames;
	size_t nr_frames;
};

/* A host gap no sample of its thread fell in (while collecting). */
struct unsampled {
	uint32_t device, pid, tid, stack_id; /* the launch that ended it */
	uint64_t ns;
};

/* Chains of a host gap followed at most, and the chains told apart (the rest are counted in
 * the device's chained time, not listed). */
#define GR_CHAIN_HOPS 8
#define GR_MAX_CHAINS 4096

/*
 * Host idle time while the launching thread waited, through the chain of threads that woke it
 * (profile_data.woken: --wakers), summed over gaps: key (device, waiting thread, hops' threads)
 * first, unused hops zero (keymap compares bytes).
 */
struct chain_stat {
	uint32_t device, pid, tid, nr_hops;
	uint32_t hop_pid[GR_CHAIN_HOPS], hop_tid[GR_CHAIN_HOPS];
	uint32_t wait_stack, hop_stack[GR_CHAIN_HOPS]; /* the first wait's: not of the key */
	uint64_t ns;				       /* host idle time in its waits */
	uint64_t work_ns; /* of it, put on the last hop's samples over the wait */
	const char **wait_frames, **hop_frames[GR_CHAIN_HOPS]; /* outermost first */
	size_t nr_wait_frames, nr_hop_frames[GR_CHAIN_HOPS];
	const char *hop_names[GR_CHAIN_HOPS]; /* the hops' processes' names (NULL: unknown) */
};

struct gpu_report {
	const struct profile_data *pd; /* while collecting (build: until freed) */
	uint64_t start_ns, end_ns;     /* the span profiled (merged: from the first to the last) */
	struct strset *strs;	       /* kept reports: every string they name */
	struct mem_call *calls;	       /* kept reports: the memory calls, in time order */
	size_t nr_calls, cap_calls;
	bool finished;			      /* findings made: merged into no more */
	size_t nr_of_kind[CORR_GPU_NVTX + 1]; /* while collecting: pd's GPU records by kind (a
						 pass over them for a kind it holds none of is
						 skipped) */
	struct nvtx_range *nvtx;	      /* by (pid, tid, start) */
	size_t nr_nvtx;
	const struct profile_pass **passes; /* pd's backward passes by (pid, start), while
					       collecting with ranges */
	size_t nr_passes;
	struct range_stat *ranges;
	size_t nr_ranges, cap_ranges;
	struct device *dev;
	size_t nr_dev, cap_dev;
	struct stream_stat *streams;
	size_t nr_streams, cap_streams;
	struct blame *blames;
	size_t nr_blames, cap_blames;
	struct keymap *blame_ix;
	/* The last blame looked up (gaps come in runs of one cause and stack): its key, and its
	 * index in blames + 1 (0: none yet). */
	struct blame_key {
		uint32_t cause, device, pid, stack_id;
		const char *api;
	} last_blame_key;
	size_t last_blame;
	struct kernel_stat *kernels;
	size_t nr_kernels, cap_kernels;
	struct copy_stat copies[8 * 3 * 2];
	struct blame copy_blame[2]; /* the stack of most pageable async / blocking copy time */
	struct launch_facts launch;
	struct gpu_memory *mem; /* NULL: no memory calls */
	struct finding findings[16];
	const char **paths[16]; /* the findings' dominant paths (dominant_path), freed with it */
	size_t nr_paths;
	size_t nr_findings;
	size_t *launch_of;	/* pd->gpu index -> pd->launches index + 1 (0: none) */
	size_t launch_of_bytes; /* its size (output/model/shelf.h) */
	size_t *samples;	/* pd->samples indexes by (tid, time) */
	size_t *waits;		/* pd->waits indexes by (pid, end) */
	struct unsampled *unsampled;
	size_t nr_unsampled, cap_unsampled;
	/* Wait chains (profile_data.woken), built reports only (kept ones do not follow them). */
	size_t *woken; /* pd->woken indexes by (tid, end) (while collecting) */
	struct chain_stat *chains;
	size_t nr_chains, cap_chains;
	struct keymap *chain_ix; /* key -> index + 1 (while collecting) */
	uint64_t *chained_ns;	 /* by r->dev index: host idle in waits with a chain */
	uint64_t *worked_ns;	 /* ... of it on the last hops' samples */
};

/* pd's facts into r (all but the findings and the GPU memory), for a kept report (keep: the
 * histograms a merge needs) or not. 0 or -ENOMEM. */
int gpu_report__facts(struct gpu_report *r, const struct profile_data *pd, bool keep);
/* A kept report's GPU memory (r->mem) from its memory calls. 0 or -ENOMEM. */
int gpu_report__calls_memory(struct gpu_report *r);
/* Which gap-histogram bucket a gap of ns falls in. */
size_t gpu_report__gap_bucket(uint64_t ns);
/* Blames whose stacks read the same made one, heaviest first. 0 or -ENOMEM. */
int gpu_report__merge_blames(struct gpu_report *r);

/* ns counted into a histogram (HIST_BUCKETS counters). */
void gpu_hist__add(uint32_t *h, uint64_t ns);
/* The value of rank (0-based) of n counted, about (its bucket's middle). */
uint64_t gpu_hist__at(const uint32_t *h, uint64_t n, uint64_t rank);

/* ---- shared by the report's parts (gpu_report*.c) and the trace's counters ---- */

/* Upper bounds of the gap histogram's buckets (the last is open), the buckets' labels, and
 * the idle causes' names. */
extern const uint64_t gr_gap_le_ns[NR_GAP_BUCKETS - 1];
extern const char *const gr_gap_label[NR_GAP_BUCKETS];
extern const char *const gr_cause_names[GPU_IDLE_NR];

bool gr_is_work(const struct corr_gpu_rec *g);
void gr_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
int gr_cmp_work(const void *a, const void *b);
size_t gr_merge(struct work *w, size_t n);
int gr_blame(struct gpu_report *r, enum gpu_idle_cause cause, uint32_t device, uint32_t pid,
	     uint32_t tid, uint32_t stack_id, const char *api, uint64_t ns, bool new_gap);
int gr_unsampled(struct gpu_report *r);
/* The frames of stack_id of pid, copied into *ret (NULL, 0: none known). 0 or -ENOMEM. */
int gr_frames_of(const struct profile_data *pd, uint32_t pid, uint32_t stack_id, const char ***ret,
		 size_t *ret_n);
/* The first of tid's samples at or after from, through r->samples (pd->nr_samples: none). */
size_t gr_first_sample(const struct gpu_report *r, uint32_t tid, uint64_t from);
/* Wait chains (gpu_report_chains.c): index pd->woken; blame the part of a host gap on device
 * (next launch l, from from) the launching thread spent woken through a chain on the chain's
 * last hop's samples, its ns into *ret_chained; name the chains' stacks; the heaviest chain of
 * a device; a host-bound finding's chain, figures and why. 0 or -ENOMEM. */
int gr_index_woken(struct gpu_report *r);
int gr_blame_chains(struct gpu_report *r, size_t dev, const struct corr_cpu_rec *l, uint64_t from,
		    uint64_t ns, uint64_t *ret_chained);
int gr_resolve_chains(struct gpu_report *r);
void gr_chain_finding(struct gpu_report *r, struct finding *f, const struct device *d);
void gr_free_chains(struct gpu_report *r);
int gr_index_ranges(struct gpu_report *r);
void gr_work_in_ranges(struct gpu_report *r);
uint64_t gr_range_idle(const struct range_stat *x);
int gr_cmp_range(const void *a, const void *b);
int gr_explain_gap(struct gpu_report *r, struct device *d, uint64_t s, uint64_t e, size_t next);
int gr_cmp_kernel(const void *a, const void *b);
struct finding *gr_finding(struct gpu_report *r, const char *kind, double share, uint32_t device,
			   const char *advice);
double gr_share_of(uint64_t part, uint64_t whole);
void gr_device_findings(struct gpu_report *r, const struct device *d);
void gr_copy_findings(struct gpu_report *r, uint64_t active);
void gr_memory_findings(struct gpu_report *r);
/* The i-th kind of finding's name (gpu_report_findings.c's table); NULL past the last. */
const char *gr_finding_kind(size_t i);
const char *gr_dir_name(uint8_t dir);
const char *gr_host_mem_name(uint8_t m);
uint64_t gr_profile_span(const struct gpu_report *r);

#endif
