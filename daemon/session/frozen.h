/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A session's profile made to last: the timeline of a window slice (samples in time, CUDA
 * launches, GPU records, the joins made, GPU waits and memory calls, NVTX ranges) with every
 * stack and name it points at copied in, so that it outlives the symbolizer's processes and
 * the stores' records. The flight recorder keeps the recent past as these, a slice at a time;
 * a dump joins several into one profile_data for the writers (output.h), on a thread of its
 * own: a frozen profile never changes once made, and is counted by references.
 */
#ifndef XSPROF_DAEMON_SESSION_FROZEN_H
#define XSPROF_DAEMON_SESSION_FROZEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "output/model/profile.h"

struct frozen;

/* What a profile is frozen with besides its data. */
struct frozen_opts {
	/* Only these processes' parts (NULL: every process). */
	bool (*accept_pid)(void *ctx, uint32_t pid);
	void *ctx;
	/* Each process's label set ("k=v\x1fk=v": job, rank; NULL: none), kept with it. */
	const char *(*labels)(void *ctx, uint32_t pid);
	void *labels_ctx;
	uint32_t uid;		   /* whose processes these are (kept, not checked) */
	uint64_t start_ns, end_ns; /* the slice */
};

/*
 * pd's samples whose stacks it can name (the others are left out, counted), launches, GPU
 * records, joins, waits and memory calls of the processes accepted, frozen: *ret holds one
 * reference (0), or nothing is made (-ENOMEM). A frozen profile with nothing in it is still
 * made (frozen__empty).
 */
int frozen__make(const struct profile_data *pd, const struct frozen_opts *o, struct frozen **ret);
struct frozen *frozen__get(struct frozen *f);
/* Drops a reference (any thread); the last frees. Accepts NULL. */
void frozen__put(struct frozen *f);

/* The memory it holds, every array, stack and name included. */
size_t frozen__bytes(const struct frozen *f);
bool frozen__empty(const struct frozen *f);
uint32_t frozen__uid(const struct frozen *f);
uint64_t frozen__start_ns(const struct frozen *f);
uint64_t frozen__end_ns(const struct frozen *f);

struct frozen_counts {
	size_t samples, launches, gpu, kernels, joins, waits, mem, ranges, stacks, pids;
	size_t samples_unnamed; /* left out: their stacks were not named */
};
void frozen__counts(const struct frozen *f, struct frozen_counts *ret);

/* The processes in it, in order, once each (*ret_n of them; the array is f's). */
const uint32_t *frozen__pids(const struct frozen *f, size_t *ret_n);
/* A process's name ("" when unknown) and label set (NULL: none) as frozen. */
const char *frozen__comm(const struct frozen *f, uint32_t pid);
const char *frozen__labels(const struct frozen *f, uint32_t pid);

/*
 * Several frozen profiles (of consecutive slices, oldest first) as one profile_data: *ret
 * takes a reference on each, so the caller may put its own. Only what falls in [from_ns,
 * to_ns) is in it (samples and launches by their time, GPU records, waits and memory calls
 * by their start; a join when both its ends are); pd's span is [from_ns, to_ns). pd->mode is
 * merged, in microseconds.
 * 0 or -ENOMEM.
 */
struct frozen_join;
int frozen_join__new(struct frozen *const *v, size_t n, uint64_t from_ns, uint64_t to_ns,
		     struct frozen_join **ret);
const struct profile_data *frozen_join__profile(const struct frozen_join *j);
void frozen_join__free(struct frozen_join *j);

#endif
