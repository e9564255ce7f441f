/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Joining GPU work (kernels, copies, memsets, syncs, graphs) to the CPU stack that launched it.
 * Pure data in, joins out: no I/O, no clock, no threads, so every strategy can be tested on
 * synthetic streams. The records below are neutral: the daemon converts its BPF and CUPTI
 * records into them. Strategies and their rules: correlate/README.md.
 */
#ifndef XSPROF_CORRELATE_CORRELATE_H
#define XSPROF_CORRELATE_CORRELATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CORR_NO_STACK  UINT32_MAX /* stack_id of a record without a CPU stack */
#define CORR_FLUSH_ALL UINT64_MAX /* correlator__flush(): give up on everything held */

/* Where a CPU-side launch record comes from. */
enum corr_cpu_kind {
	CORR_CPU_USDT = 1, /* xsprof:launch in libxsprof_cupti.so: carries the correlation id */
	CORR_CPU_UPROBE,   /* uprobe on a CUDA API entry: time and thread, no correlation id */
};

/* What the API call asks of the GPU; says which GPU records may belong to it. */
enum corr_api_kind {
	CORR_API_OTHER = 0,
	CORR_API_KERNEL, /* cudaLaunchKernel*, cuLaunchKernel*, ... */
	CORR_API_GRAPH,	 /* cudaGraphLaunch, cuGraphLaunch: one call, many GPU records */
	CORR_API_MEMCPY,
	CORR_API_MEMSET,
	CORR_API_SYNC,
};

/* corr_cpu_rec.flags */
#define CORR_CPU_F_PTSZ 0x1 /* per-thread default stream variant (_ptsz / _ptds symbols) */

struct corr_cpu_rec {
	uint8_t kind;	  /* enum corr_cpu_kind */
	uint8_t api_kind; /* enum corr_api_kind */
	uint16_t flags;	  /* CORR_CPU_F_* */
	uint32_t api_id;  /* the producer's API number (e.g. CUPTI callback id); opaque here */
	uint32_t pid;	  /* tgid */
	uint32_t tid;
	uint64_t time_ns;     /* CLOCK_MONOTONIC at the API entry */
	uint64_t stream;      /* cudaStream_t value: 0 default, 1 cudaStreamLegacy, 2 PerThread */
	uint64_t graph_exec;  /* cudaGraphExec_t of a graph launch, else 0 */
	uint32_t corr_id;     /* CUPTI correlation id: CORR_CPU_USDT only */
	uint32_t stack_id;    /* the daemon's handle of the CPU stack, or CORR_NO_STACK */
	const char *api_name; /* "cudaLaunchKernel"; owned by the caller (interned) */
	uint64_t user;	      /* the caller's own cookie (e.g. an index), passed back untouched */
};

enum corr_gpu_kind {
	CORR_GPU_KERNEL = 1,
	CORR_GPU_MEMCPY,
	CORR_GPU_MEMSET,
	CORR_GPU_SYNC,	      /* CUPTI synchronization: the host waited over [start, end] */
	CORR_GPU_GRAPH,	      /* CUPTI graph trace: one whole graph launch */
	CORR_GPU_RUNTIME_API, /* CUPTI runtime API record: thread, [start, end], correlation id */
	CORR_GPU_DRIVER_API,
	CORR_GPU_NVTX, /* an NVTX range on a thread; never joined */
};

/* CUPTI's memcpy kinds, reduced to the ones people read. */
enum corr_copy_kind {
	CORR_COPY_UNKNOWN = 0,
	CORR_COPY_HTOD,
	CORR_COPY_DTOH,
	CORR_COPY_DTOD,
	CORR_COPY_HTOH,
	CORR_COPY_PTOP,
};

/* The host side of a copy. */
enum corr_host_mem {
	CORR_HOST_MEM_UNKNOWN = 0, /* or no host side */
	CORR_HOST_MEM_PAGEABLE,
	CORR_HOST_MEM_PINNED,
};

#define CORR_GPU_F_ASYNC 0x1 /* memcpy, memset: made by the async variant of the API */
#define CORR_GPU_F_OPEN	 0x2 /* NVTX: a range still open at the session's end, ended there */

struct corr_gpu_rec {
	uint8_t kind;	   /* enum corr_gpu_kind */
	uint8_t copy_kind; /* enum corr_copy_kind, memcpy only */
	uint8_t host_mem;  /* enum corr_host_mem, memcpy only */
	uint8_t flags;	   /* CORR_GPU_F_* */
	uint32_t pid;
	uint32_t tid; /* API, sync and NVTX records: the host thread; else 0 */
	uint32_t device;
	uint32_t context;
	uint32_t stream_id; /* CUPTI stream id (not the cudaStream_t handle) */
	uint32_t corr_id;
	uint32_t cbid;	   /* API records: CUPTI callback id */
	uint64_t graph_id; /* non-zero for graph records and the kernels a graph ran */
	uint64_t start_ns, end_ns;
	uint64_t bytes;	    /* memcpy, memset */
	const char *name;   /* kernel, API or NVTX name; owned by the caller (interned) */
	const char *domain; /* NVTX: its domain's name, NULL for the default domain */
	uint64_t user;	    /* the caller's own cookie, passed back untouched */
};

/* Why a record is given up on (on_unmatched_*). */
enum corr_why {
	CORR_WHY_AGED = 1,   /* waited max_age_ns for a partner */
	CORR_WHY_LATE,	     /* arrived after anything it could join had aged out */
	CORR_WHY_CAP,	     /* a full table pushed it out (raise max_pending_*) */
	CORR_WHY_FLUSH,	     /* correlator__flush(CORR_FLUSH_ALL) */
	CORR_WHY_DUPLICATE,  /* another CPU record already stands for this launch */
	CORR_WHY_NO_PARTNER, /* shown impossible (e.g. ran before any launch on its stream) */
};

/*
 * What a strategy reports. Record pointers are valid during the call only (copy what you keep).
 * Calls happen inside correlator__feed_*() and correlator__flush(); they must not call back into
 * the same correlator.
 */
struct correlate_cb {
	void (*on_join)(void *ctx, const struct corr_cpu_rec *cpu, const struct corr_gpu_rec *gpu);
	void (*on_unmatched_cpu)(void *ctx, const struct corr_cpu_rec *cpu, enum corr_why why);
	void (*on_unmatched_gpu)(void *ctx, const struct corr_gpu_rec *gpu, enum corr_why why);
	/* auto only: pid is now joined by the named strategy. */
	void (*on_strategy)(void *ctx, uint32_t pid, const char *name);
	void *ctx;
};

struct correlate_config {
	uint64_t max_age_ns;	  /* unmatched state ages out after this (record clock) */
	uint32_t max_pending_cpu; /* CPU records held, per table */
	uint32_t max_pending_gpu; /* GPU records held, per table */
	uint32_t max_streams;	  /* stream: (pid, stream) pairs tracked */
	uint32_t max_pids;	  /* auto, timestamp: processes tracked */
	uint64_t api_slack_ns;	  /* timestamp: an uprobe up to this long before an API record's
				     start still belongs to it (uprobes fire before CUPTI's clock) */
	uint64_t tolerance_ns;	  /* timestamp: without API records, join a launch to GPU work
				     starting within this long after it; 0 disables */
	uint64_t settle_ns;	  /* stream: GPU records wait this long for earlier ones on their
				     stream before being matched in order */
};

/* Counts; monotonic except pending_* and mem_bytes, which are current values. */
struct correlate_stats {
	uint64_t cpu_in, gpu_in;	       /* records fed */
	uint64_t matched;		       /* joins delivered (one per GPU record joined) */
	uint64_t unmatched_cpu, unmatched_gpu; /* given up on (aged, flushed, cap, impossible) */
	uint64_t late_cpu, late_gpu;	   /* dropped as too late on arrival (not in unmatched) */
	uint64_t cap_cpu, cap_gpu;	   /* of the unmatched, how many a full table pushed out */
	uint64_t duplicates;		   /* CPU records for a launch already held */
	uint64_t ignored;		   /* records this strategy has no use for */
	uint64_t pending_cpu, pending_gpu; /* held now */
	uint64_t mem_bytes;		   /* held now, in the strategy's tables */
	uint64_t mem_limit;		   /* what the configuration allows those tables */
};

/*
 * A strategy. State is opaque; new() returns NULL with errno set. feed_*() and flush() return 0
 * or a negative errno (-EINVAL for a malformed record, which is then not counted).
 */
struct correlate_ops {
	const char *name;
	void *(*new)(const struct correlate_config *cfg, const struct correlate_cb *cb);
	int (*feed_cpu)(void *state, const struct corr_cpu_rec *rec);
	int (*feed_gpu)(void *state, const struct corr_gpu_rec *rec);
	/* Ages out what is older than until_ns - max_age_ns; CORR_FLUSH_ALL gives up on all. */
	int (*flush)(void *state, uint64_t until_ns);
	void (*stats)(void *state, struct correlate_stats *ret);
	void (*free)(void *state);
	/* Optional: which strategy joins pid (auto); NULL op means always this one. */
	const char *(*pid_strategy)(void *state, uint32_t pid);
	/* Optional: n records at once (lets a strategy prefetch); NULL ops loop over feed_*(). */
	int (*feed_cpu_batch)(void *state, const struct corr_cpu_rec *recs, size_t n);
	int (*feed_gpu_batch)(void *state, const struct corr_gpu_rec *recs, size_t n);
};

/* Defaults: 10 s max age, 262144 records per table, 4096 streams and pids, 5 us slack. */
void correlate_config__default(struct correlate_config *cfg);

/* The strategy named name ("id", "timestamp", "stream", "auto", or registered), or NULL. */
const struct correlate_ops *correlate__find(const char *name);
/* Adds a strategy: -EINVAL (incomplete ops), -EEXIST (name taken), -ENOSPC (registry full). */
int correlate__register(const struct correlate_ops *ops);
/* Registered names in order, up to max; returns how many there are. */
size_t correlate__names(const char **ret_names, size_t max);

struct correlator;

/* cfg NULL: defaults. NULL with errno ENOENT (unknown name), EINVAL or ENOMEM. */
struct correlator *correlator__new(const char *name, const struct correlate_config *cfg,
				   const struct correlate_cb *cb);
void correlator__free(struct correlator *c);
const char *correlator__name(const struct correlator *c);
int correlator__feed_cpu(struct correlator *c, const struct corr_cpu_rec *rec);
int correlator__feed_gpu(struct correlator *c, const struct corr_gpu_rec *rec);
/*
 * The same for n records in order, e.g. one CUPTI buffer or one ring-buffer drain: faster,
 * since the join is bound by cache misses that a batch can overlap. Malformed records are
 * skipped (not counted) and make it return -EINVAL after feeding the others.
 */
int correlator__feed_cpu_batch(struct correlator *c, const struct corr_cpu_rec *recs, size_t n);
int correlator__feed_gpu_batch(struct correlator *c, const struct corr_gpu_rec *recs, size_t n);
int correlator__flush(struct correlator *c, uint64_t until_ns);
void correlator__stats(struct correlator *c, struct correlate_stats *ret_stats);
/* The strategy that joins pid's records ("auto" says which it picked; others say their name). */
const char *correlator__pid_strategy(struct correlator *c, uint32_t pid);

/*
 * Small helpers, inline so the writers need only this header: "kernel", "memcpy", ...;
 * "HtoD", ...; and whether a record stands for GPU work (kernel, memcpy, memset, sync, graph).
 */
static inline const char *corr_gpu_kind__name(enum corr_gpu_kind kind)
{
	switch (kind) {
	case CORR_GPU_KERNEL:
		return "kernel";
	case CORR_GPU_MEMCPY:
		return "memcpy";
	case CORR_GPU_MEMSET:
		return "memset";
	case CORR_GPU_SYNC:
		return "sync";
	case CORR_GPU_GRAPH:
		return "graph";
	case CORR_GPU_RUNTIME_API:
		return "runtime";
	case CORR_GPU_DRIVER_API:
		return "driver";
	case CORR_GPU_NVTX:
		return "nvtx";
	}
	return "unknown";
}

static inline const char *corr_copy_kind__name(enum corr_copy_kind kind)
{
	switch (kind) {
	case CORR_COPY_HTOD:
		return "HtoD";
	case CORR_COPY_DTOH:
		return "DtoH";
	case CORR_COPY_DTOD:
		return "DtoD";
	case CORR_COPY_HTOH:
		return "HtoH";
	case CORR_COPY_PTOP:
		return "PtoP";
	case CORR_COPY_UNKNOWN:
		break;
	}
	return "unknown";
}

static inline bool corr_gpu_kind__is_activity(enum corr_gpu_kind kind)
{
	return kind == CORR_GPU_KERNEL || kind == CORR_GPU_MEMCPY || kind == CORR_GPU_MEMSET ||
	       kind == CORR_GPU_SYNC || kind == CORR_GPU_GRAPH;
}

#endif
