/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a session's profile is made from: the stacks its samples counted, the samples one by one,
 * its CUDA launches (with their waits, memory calls and xsprof scopes) and the GPU records. A
 * finished recording fills it once (session_source__of_recording); a lasting profile fills it
 * from each slice its recording rotates out. Either way session_profile__build makes the profile.
 */
#ifndef XSPROF_DAEMON_SESSION_SOURCE_H
#define XSPROF_DAEMON_SESSION_SOURCE_H

#include <stddef.h>
#include <stdint.h>

struct gpu_store;
struct launch_store;
struct profile_hop;
struct profile_fwd;
struct profile_pass;
struct profile_sample;
struct profile_woken;
struct recording;
struct stack_table;

struct session_source {
	const struct stack_table *stacks;     /* the samples' stacks, counted (may be NULL) */
	const struct stack_table *offcpu;     /* off-CPU time's (NULL: none recorded) */
	const struct profile_sample *samples; /* one by one, stack ids of stacks (may be none) */
	size_t nr_samples;
	uint64_t timeline_dropped;	   /* samples left off samples (its cap) */
	const struct profile_woken *woken; /* --wakers: chained stretches (may be none) */
	size_t nr_woken;
	const struct profile_hop *hops; /* their hops */
	size_t nr_hops;
	const struct profile_pass *passes; /* PyTorch's backward passes (may be none) */
	size_t nr_passes;
	const struct profile_fwd *fwds; /* ... its backward launches' forward ops */
	size_t nr_fwds;
	const struct launch_store *ls; /* CUDA launches, waits, memory calls, scopes */
	const struct gpu_store *gs;    /* GPU records (a scope picks this session's) */
	uint64_t start_ns, end_ns;     /* the span, CLOCK_MONOTONIC (0: unknown) */
};

/* A stopped recording's, with the GPU records of gs (may be NULL). */
void session_source__of_recording(struct session_source *src, struct recording *r,
				  const struct gpu_store *gs);

#endif
