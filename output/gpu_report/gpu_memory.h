/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPU memory by the CPU stack that allocated it, per process and device, from a profile's memory
 * calls
 * (profile_data.mem: cudaMalloc/cudaFree, the async and managed forms, cuMemAlloc/cuMemFree,
 * cuMemCreate/cuMemRelease): bytes live at the process's peak by allocating stack, bytes still
 * allocated when the profile ended, failed allocations. Part of the GPU report
 * (output/gpu_report/gpu_report.h), which writes it.
 */
#ifndef XSPROF_OUTPUT_GPU_MEMORY_H
#define XSPROF_OUTPUT_GPU_MEMORY_H

#include <stddef.h>
#include <stdint.h>

struct profile_data;

/* At most this many allocations tracked live at once (all processes); past it, counted. */
#define GPU_MEMORY_MAX_LIVE 1000000

/* The allocations of one process on one device from one place (stacks that read the same are
 * one). */
struct gpu_mem_stack {
	uint32_t pid;
	int32_t device;
	const char *api; /* the allocating call */
	const char **frames;
	size_t nr_frames;
	uint64_t allocs, bytes; /* allocations made here, and their bytes */
	uint64_t live;		/* bytes allocated here and not freed (at the end, after a walk) */
	uint64_t at_peak;	/* ... at the moment the process's live bytes peaked */
};

/*
 * The memory of one process on one device (profile_mem.device). A free counts on its
 * allocation's device; a free of memory allocated before the profile, whose device is not
 * known, on the process's first device (device -1 when the process allocated nothing).
 */
struct gpu_mem_proc {
	uint32_t pid;
	int32_t device;
	uint64_t allocs, frees, failed;
	uint64_t unknown_frees; /* frees of addresses allocated before the profile */
	uint64_t allocated;	/* bytes allocated in all */
	uint64_t peak, peak_ns; /* the most bytes live at once (of those seen allocated), when */
	uint64_t end;		/* bytes still live when the profile ended */
	uint64_t end_allocs;	/* allocations still live then */
	const struct gpu_mem_stack *failed_at; /* the first failed allocation's place, or NULL */
	/* Places, most bytes first: live at the peak, and still live at the end (none: 0). */
	const struct gpu_mem_stack **at_peak, **at_end;
	size_t nr_at_peak, nr_at_end;
	/* private, while building: failed_at's place index + 1; the call at the peak, index + 1
	 * (0: nothing was ever live) */
	size_t failed_ix, peak_ix;
};

struct gpu_memory {
	struct gpu_mem_proc *procs; /* by pid (in the order they came), then device */
	size_t nr_procs;
	uint64_t untracked; /* allocations not tracked: GPU_MEMORY_MAX_LIVE live already */
	/* private */
	struct gpu_mem_stack *stacks;
	size_t nr_stacks, cap_stacks;
	size_t cap_procs;
};

/* 0, or -ENOMEM. *ret is NULL when pd has no memory calls. */
int gpu_memory__build(const struct profile_data *pd, struct gpu_memory **ret);
void gpu_memory__free(struct gpu_memory *m);

/* A process's GPU memory in use after one of its allocations or frees. */
struct gpu_mem_change {
	uint32_t pid;
	uint64_t time_ns;
	uint64_t live; /* bytes */
};

/*
 * Every change of a process's live bytes, in the order of the calls (at most 200000; none
 * without memory calls: *ret NULL). For a writer to draw. 0 or -ENOMEM; free *ret.
 */
int gpu_memory__changes(const struct profile_data *pd, struct gpu_mem_change **ret, size_t *ret_n);

#endif
