/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Chrome trace (Trace Event Format, JSON) for Perfetto and chrome://tracing, written as a stream:
 * each event goes to the FILE as it is made, so a large trace is never held in memory. The
 * low-level writer below emits single events; chrome_trace__write_profile() lays a whole
 * profile out on it (see the comment there for the tracks).
 */
#ifndef XSPROF_OUTPUT_CHROME_TRACE_H
#define XSPROF_OUTPUT_CHROME_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct chrome_trace;
struct output_meta;
struct profile_data;

/*
 * Tracks that are not a real process or thread. Linux pids and tids are below 2^22
 * (PID_MAX_LIMIT), so these ranges cannot collide with real ones:
 *  - a GPU is the process 0x7F000000 + device index;
 *  - a thread's sampled stacks go on the track tid + 0x40000000 of its own process, next to
 *    the thread's CUDA API track (their slices do not nest with the API calls).
 */
#define CHROME_TRACE_GPU_PID_BASE    0x7F000000
#define CHROME_TRACE_SAMPLES_TID_BIT 0x40000000

static inline int64_t chrome_trace__gpu_pid(uint32_t device)
{
	return CHROME_TRACE_GPU_PID_BASE + (int64_t)(device & 0xFFFFFF);
}

static inline int64_t chrome_trace__samples_tid(uint32_t tid)
{
	return CHROME_TRACE_SAMPLES_TID_BIT + (int64_t)tid;
}

enum chrome_arg_type {
	CHROME_ARG_STR = 1,
	CHROME_ARG_INT,
	CHROME_ARG_UINT,
	CHROME_ARG_DOUBLE,
};

/* One entry of an event's "args". */
struct chrome_arg {
	const char *key;
	enum chrome_arg_type type;
	union {
		const char *s;
		int64_t i;
		uint64_t u;
		double d;
	};
};

/* Starts the document. NULL with errno set (EINVAL, ENOMEM, or the write's). */
struct chrome_trace *chrome_trace__begin(FILE *f);
/*
 * Ends the document (metadata: "otherData" keys and values, n pairs; may be NULL) and frees
 * the writer. Returns the first error of any call, 0 when all went to f. f is neither flushed
 * nor closed.
 */
int chrome_trace__end(struct chrome_trace *t, const char *const *other_kv, size_t n);
/* Frees without ending the document (after an error). Accepts NULL. */
void chrome_trace__free(struct chrome_trace *t);
/* The first error so far (0, or -errno). Calls after an error do nothing and return it. */
int chrome_trace__error(const struct chrome_trace *t);

/* Metadata ("M"): names and ordering of processes and threads. */
int chrome_trace__process_name(struct chrome_trace *t, int64_t pid, const char *name);
int chrome_trace__thread_name(struct chrome_trace *t, int64_t pid, int64_t tid, const char *name);
int chrome_trace__process_sort_index(struct chrome_trace *t, int64_t pid, int64_t index);
int chrome_trace__thread_sort_index(struct chrome_trace *t, int64_t pid, int64_t tid,
				    int64_t index);

/* Times are CLOCK_MONOTONIC nanoseconds, written as microseconds with three decimals. */

/* A complete slice ("X"). cat may be NULL. */
int chrome_trace__complete(struct chrome_trace *t, int64_t pid, int64_t tid, const char *name,
			   const char *cat, uint64_t ts_ns, uint64_t dur_ns,
			   const struct chrome_arg *args, size_t nargs);
/*
 * A slice as begin ("B") and end ("E"); they must nest per (pid, tid). Give the end the name
 * of the slice it closes: the format does not need it, but speedscope matches ends by name.
 */
int chrome_trace__slice_begin(struct chrome_trace *t, int64_t pid, int64_t tid, const char *name,
			      const char *cat, uint64_t ts_ns, const struct chrome_arg *args,
			      size_t nargs);
int chrome_trace__slice_end(struct chrome_trace *t, int64_t pid, int64_t tid, const char *name,
			    uint64_t ts_ns);
/* An instant ("i") on the thread. */
int chrome_trace__instant(struct chrome_trace *t, int64_t pid, int64_t tid, const char *name,
			  const char *cat, uint64_t ts_ns, const struct chrome_arg *args,
			  size_t nargs);
/* A counter ("C") of the process: each arg is one series (numbers only). */
int chrome_trace__counter(struct chrome_trace *t, int64_t pid, const char *name, uint64_t ts_ns,
			  const struct chrome_arg *series, size_t n);

/* A fresh id for flows and async slices, unique in this trace (never a correlation id). */
uint64_t chrome_trace__new_id(struct chrome_trace *t);

enum chrome_flow_phase {
	CHROME_FLOW_START = 's', /* binds to the slice open at ts on (pid, tid) */
	CHROME_FLOW_STEP = 't',
	CHROME_FLOW_END = 'f', /* binds to the slice enclosing ts ("bp":"e") */
};

int chrome_trace__flow(struct chrome_trace *t, enum chrome_flow_phase phase, uint64_t id,
		       int64_t pid, int64_t tid, const char *name, const char *cat, uint64_t ts_ns);
/* An async slice ("b"/"e" with id): its own track, so ranges may overlap freely. */
int chrome_trace__async_begin(struct chrome_trace *t, uint64_t id, int64_t pid, int64_t tid,
			      const char *name, const char *cat, uint64_t ts_ns,
			      const struct chrome_arg *args, size_t nargs);
int chrome_trace__async_end(struct chrome_trace *t, uint64_t id, int64_t pid, int64_t tid,
			    const char *name, const char *cat, uint64_t ts_ns);

/*
 * A whole profile:
 *  - each thread: a track with its CUDA API calls (CUPTI API records, entry to return) and,
 *    for launches no API record covers, the launch itself as a short slice; next to it a
 *    track (tid + 0x40000000) with its sampled stacks as nested slices (consecutive samples
 *    that share frames make one longer slice);
 *  - each GPU (a process 0x7F000000 + device): a track per (process, stream) with kernels,
 *    copies and memsets, and separate ones for its syncs and whole-graph records;
 *  - NVTX ranges as async slices of their thread;
 *  - a flow arrow from each launch to each piece of GPU work joined to it;
 *  - process and thread names as metadata.
 * Memory: a few index arrays (4 to 16 bytes per record) to sort by track; events are streamed.
 * Returns 0, -EINVAL, -ENOMEM, or the first write error.
 */
int chrome_trace__write_profile(const struct profile_data *pd, FILE *f,
				const struct output_meta *meta);

#endif
