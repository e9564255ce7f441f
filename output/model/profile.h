/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the GPU-aware writers read (Chrome trace, pprof, merged folded/SVG): the CPU profile,
 * and, when the daemon kept them, the raw sample timeline, the CUDA launches, the GPU records
 * and the joins the correlator made. The daemon fills it from its store; nothing is copied.
 */
#ifndef XSPROF_OUTPUT_PROFILE_H
#define XSPROF_OUTPUT_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "correlate/correlate.h"

struct calltree;
struct frame_sites;

/* Which work a flamegraph shows. */
enum gpu_mode {
	GPU_MODE_CPU = 0, /* CPU samples only (the foundation's profile) */
	GPU_MODE_GPU,	  /* GPU work only, each under the CPU stack that launched it */
	GPU_MODE_MERGED,  /* both */
};

/* The unit of weights: one per output, always stated in it (SVG title, pprof types, JSON). */
enum weight_unit {
	WEIGHT_SAMPLES = 0, /* CPU samples; GPU time as the samples it would have been worth */
	WEIGHT_US,	    /* microseconds; CPU samples count one sampling period each */
};

/* One CPU sample of the timeline. */
struct profile_sample {
	uint64_t time_ns; /* CLOCK_MONOTONIC */
	uint32_t pid, tid;
	uint32_t stack_id; /* resolved through profile_data.stack */
	uint32_t cpu;
};

/* One join the correlator made: indexes into profile_data.launches and .gpu. */
struct profile_join {
	size_t launch;
	size_t gpu;
};

/* A CUDA call that waited for the GPU (synchronize, blocking copy), for timelines. */
struct profile_wait {
	uint64_t start_ns, end_ns; /* entry and return, CLOCK_MONOTONIC */
	uint32_t pid, tid;
	uint32_t stack_id; /* the call's stack (profile_data.stack), or CORR_NO_STACK */
	const char *api;   /* "cudaStreamSynchronize" */
};

/*
 * A GPU memory allocation (at its return) or free (at its entry), for the GPU report. device:
 * an allocation's (the device its thread's last cudaSetDevice named, 0 when it made none);
 * -1 for a free (it frees on its allocation's device).
 */
struct profile_mem {
	uint64_t time_ns; /* CLOCK_MONOTONIC */
	uint64_t addr;	  /* the address (a VMM handle for cuMemCreate/Release); 0: not known */
	uint64_t bytes;	  /* an allocation's size; 0 for a free */
	uint32_t pid, tid;
	uint32_t stack_id; /* the call's stack (profile_data.stack), or CORR_NO_STACK */
	uint8_t is_free;
	uint8_t failed; /* an allocation that returned an error: nothing was allocated */
	int16_t device;
	const char *api; /* "cudaMalloc" */
};

/*
 * A stretch a watched thread spent off the CPU, and the chain of threads that woke it
 * (--wakers): hops [first_hop, first_hop + nr_hops) of profile_data.hops, nearest first. Each
 * hop woke the one before it (the first woke this thread) at wake_ns, from its stack stack_id;
 * it had begun running at run_ns (its own last wakeup; 0: not seen). The last hop did the work:
 * its samples from run_ns to wake_ns are where the wait's time went.
 */
struct profile_hop {
	uint64_t wake_ns, run_ns;
	uint32_t pid, tid;
	uint32_t stack_id; /* profile_data.stack, or CORR_NO_STACK */
};
struct profile_woken {
	uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC */
	uint32_t pid, tid;
	uint32_t stack_id; /* where it waited (profile_data.stack), or CORR_NO_STACK */
	uint32_t first_hop, nr_hops;
};

/*
 * A backward pass (PyTorch): thread tid of pid in its outermost backward() call over
 * [start_ns, end_ns]. The autograd engine's own threads of pid work for it meanwhile: their
 * launches count in the NVTX range tid was in (the GPU report's ranges).
 */
struct profile_pass {
	uint64_t start_ns, end_ns;
	uint32_t pid, tid;
};

/*
 * A launch of PyTorch backward work and the forward op that made its autograd node: thread
 * tid of pid launched at launch_ns (profile_data.launches' time_ns) for the node thread
 * fwd_tid made at fwd_ns. The Chrome trace draws a flow from the one to the launch's GPU work.
 */
struct profile_fwd {
	uint64_t launch_ns, fwd_ns;
	uint32_t pid, tid, fwd_tid;
};

/*
 * Frames of stack_id of pid, outermost first, without the process name. The array may be
 * reused by the next call; the strings must stay valid until the writer returns (the daemon
 * interns them). 0, or -ENOENT for a stack it does not know (the writer uses "[unknown]").
 */
typedef int (*profile_stack_fn)(void *ctx, uint32_t pid, uint32_t stack_id,
				const char *const **ret_frames, size_t *ret_n);
/* Name of a process (tid 0) or thread; NULL when unknown ("pid N" / "tid N" is used). */
typedef const char *(*profile_name_fn)(void *ctx, uint32_t pid, uint32_t tid);

/* GPU work of several processes linked in the Chrome trace (a collective across ranks). */
struct profile_flow {
	const size_t *gpu; /* profile_data.gpu indexes, in the order the arrow goes */
	size_t n;
	const char *name;
};

struct profile_data {
	/* CPU samples aggregated (comm;outer;...;leaf), for folded, SVG and pprof; may be NULL
	   when samples are given. */
	const struct calltree *cpu_tree;
	uint64_t sample_period_ns; /* 1e9 / sampling frequency: samples <-> time */

	/* The timeline, each optional (NULL, 0). GPU records include API and NVTX records. */
	const struct profile_sample *samples;
	size_t nr_samples;
	const struct corr_cpu_rec *launches;
	size_t nr_launches;
	const struct corr_gpu_rec *gpu;
	size_t nr_gpu;
	const struct profile_join *joins;
	size_t nr_joins;
	const struct profile_wait *waits; /* Chrome trace: "[wait gpu] API" slices */
	size_t nr_waits;
	const struct profile_mem *mem; /* GPU memory calls, in time order (the GPU report) */
	size_t nr_mem;
	const struct profile_woken *woken; /* the GPU report: waits and their chains (--wakers) */
	size_t nr_woken;
	const struct profile_hop *hops; /* their hops */
	size_t nr_hops;
	const struct profile_pass *passes; /* backward passes, by end (the GPU report's ranges) */
	size_t nr_passes;
	const struct profile_fwd *fwds; /* backward launches' forward ops (the Chrome trace) */
	size_t nr_fwds;

	profile_stack_fn stack; /* required when samples or launches are given */
	profile_name_fn name;	/* optional */
	void *ctx;
	/* A frame above the process name of the stacks made here (--group-by); NULL: none. */
	const char *(*root)(void *root_ctx, uint32_t pid);
	void *root_ctx;
	/*
	 * Instead of root, a frame chosen by thread and time (--group-by range: the NVTX range a
	 * sample or a launch was made in): used for the samples of the timeline (cpu_tree must
	 * then be NULL), the launches GPU work is joined to, and in pprof as the label "range".
	 */
	const char *(*root_at)(void *ctx, uint32_t pid, uint32_t tid, uint64_t time_ns);
	void *root_at_ctx;

	/*
	 * pprof only: the outermost frames of every stack that are sample labels with these keys
	 * rather than frames (NULL: the process name is the label "process"). A fleet profile
	 * has {"host", "process"}. Stacks no deeper than this keep their last frame as a frame.
	 */
	const char *const *root_labels;
	size_t nr_root_labels;
	/*
	 * pprof and OTLP: a root label whose key is PROFILE_LABEL_SET ("") holds a set of labels,
	 * "key=value" pairs separated by '\x1f' (a process's host-side labels: unit, container,
	 * pod, job, rank), each written as a label of its own.
	 */
	/*
	 * A label set (as a PROFILE_LABEL_SET root's) of process pid (the one-shot run's host-side
	 * labels: unit, container, pod, job, rank); NULL: none. OTLP writes each as an attribute
	 * of the process's samples, pprof as a label of its timeline's and GPU work's samples,
	 * the Chrome trace its rank and job in the process's name; the job report takes each
	 * process's place in its job from job.id, job.rank and job.world_size.
	 */
	const char *(*process_labels)(void *ctx, uint32_t pid);
	void *process_labels_ctx;
	/* OTLP only: the CPU tree's sample type ("cpu", "off_cpu", "wall"; NULL: "cpu"). */
	const char *cpu_type;
	/* OTLP only: the resource's attributes, key and value pairs (2 * n strings); NULL: the
	 * host name alone. */
	const char *const *resource_labels;
	size_t nr_resource_labels;
	/* The Chrome trace only: a device's name (NULL: "GPU N"), with ctx; links of GPU work. */
	const char *(*device_name)(void *ctx, uint32_t device, char *buf, size_t size);
	const struct profile_flow *flows;
	size_t nr_flows;
	/* pprof only: where frame names came from (addresses, files, lines); NULL: names only. */
	const struct frame_sites *sites;

	enum gpu_mode mode;
	enum weight_unit unit;
	uint64_t start_ns, end_ns;  /* the profiled window, CLOCK_MONOTONIC */
	int64_t realtime_offset_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC, for wall times */
};

/* The root label key of a set of labels (profile_data.root_labels). */
#define PROFILE_LABEL_SET ""
/* Calls fn for each "key=value" of a label set ("k=v\x1fk=v"); pairs without '=' are skipped. */
void profile__label_set_each(const char *set,
			     void (*fn)(void *ctx, const char *key, size_t klen, const char *val,
					size_t vlen),
			     void *ctx);

/* The name of process pid with its place in a job when pd->process_labels says it:
 * "train.py (rank 3, job 1234)"; else profile__name_or's. */
const char *profile__process_title(const struct profile_data *pd, uint32_t pid, char *buf,
				   size_t size);
/* pd->name's name of the thread tid of pid (tid 0: the process), else "tid N" / "pid N" in buf. */
const char *profile__name_or(const struct profile_data *pd, uint32_t pid, uint32_t tid, char *buf,
			     size_t size);

/* "samples" or "us". */
const char *profile__unit_name(enum weight_unit unit);
/* "cpu", "gpu", "merged"; and back: 0 or -EINVAL. */
const char *profile__mode_name(enum gpu_mode mode);
int profile__mode_from_name(const char *name, enum gpu_mode *ret_mode);
int profile__unit_from_name(const char *name, enum weight_unit *ret_unit);

/* A GPU record's lane on its (process, stream) track in the timelines (Chrome trace, XPlane):
 * work (kernels, copies, memsets), syncs and graphs are drawn apart. */
enum profile_lane { PROFILE_LANE_WORK, PROFILE_LANE_SYNC, PROFILE_LANE_GRAPH };
enum profile_lane profile__gpu_lane(const struct corr_gpu_rec *g);
/* What a track's name says of its lane: "", " syncs" or " graphs". */
const char *profile__lane_name(enum profile_lane lane);
/* qsort_r order of uint32_t indexes into the GPU records ctx: by device, process, stream,
 * lane, start and end (each track's records together, in time order). */
int profile__cmp_gpu_track(const void *a, const void *b, void *ctx);

/* The end of a chain of profile__join_chains. */
#define PROFILE_NO_JOIN UINT32_MAX
/*
 * pd's joins by GPU record: (*ret_first)[gpu] is the first join of that record, (*ret_next)[join]
 * the next one of the same record, PROFILE_NO_JOIN ending each chain (joins in pd's order). Both
 * the caller's to free, whatever the result. 0, -ENOMEM, or -EINVAL for a join past the
 * records.
 */
int profile__join_chains(const struct profile_data *pd, uint32_t **ret_first, uint32_t **ret_next);

/*
 * The leaf that stands for a GPU record in a stack: "[gpu] kernel_name", "[gpu] memcpy HtoD",
 * "[gpu] memset", "[gpu] sync", "[gpu] graph". Written to buf (truncated to size); returns buf.
 */
const char *profile__gpu_leaf(const struct corr_gpu_rec *g, char *buf, size_t size);

/*
 * The call tree a flamegraph of pd shows, by pd->mode in pd->unit: CPU samples as in
 * cpu_tree (or folded from the samples), and each joined GPU activity as a leaf under its
 * launching stack, weighted by its duration; GPU work without a join goes under
 * "comm;[no launch stack]". Weights are summed per stack in nanoseconds before converting, so
 * short kernels add up; a stack worth less than half a unit is left out. 0 or -errno.
 */
int profile__build_tree(const struct profile_data *pd, struct calltree **ret_tree);

/*
 * pd's records (samples, launches, GPU records, joins, waits, memory calls) of the processes
 * accept takes (NULL: all) as t->pd, the joins' indexes made t's; everything else as pd's.
 * Records of a kind that are all taken are shared with pd, not copied (a slice's million GPU
 * records of one user would be copied for nothing). 0 or -ENOMEM; release t in any case.
 */
struct profile_taken {
	struct profile_data pd;
	/* What it owns (NULL: shared with pd, or none). */
	struct profile_sample *samples;
	struct corr_cpu_rec *launches;
	struct corr_gpu_rec *gpu;
	struct profile_join *joins;
	struct profile_wait *waits;
	struct profile_mem *mem;
	size_t *launch_ix, *gpu_ix; /* pd index -> taken index + 1 (0: left out); NULL when
				       accept is NULL (all of pd shared, no pass made) */
};
int profile__take(const struct profile_data *pd, bool (*accept)(void *ctx, uint32_t pid), void *ctx,
		  struct profile_taken *t);
void profile_taken__release(struct profile_taken *t);
#endif
