/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The NVTX ranges of a session, by thread: which range a sample, a launch or a wait happened
 * in (--group-by range, innermost; outer-range, outermost: the first-started of those open),
 * from the NVTX records among a profile's GPU records (CORR_GPU_NVTX with start < end; marks
 * are not ranges). Push/pop ranges nest on their thread; a start/end range counts for the
 * thread that started it.
 */
#ifndef XSPROF_DAEMON_SESSION_RANGES_H
#define XSPROF_DAEMON_SESSION_RANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct corr_gpu_rec;
struct ranges;

/* The root frame of what happened in no range. */
#define RANGES_NONE "[no range]"

/* The --range-domain that keeps the ranges of NVTX's default domain (which has no name). */
#define RANGES_DEFAULT_DOMAIN "default"

/*
 * From n records (others than NVTX ranges are skipped), of one domain unless domain is NULL
 * (RANGES_DEFAULT_DOMAIN: the default one). NULL with errno set (ENOMEM).
 */
struct ranges *ranges__new(const struct corr_gpu_rec *gpu, size_t n, bool outermost,
			   const char *domain);
void ranges__free(struct ranges *r);

/* How many ranges it holds. */
size_t ranges__count(const struct ranges *r);

/*
 * The name of the range thread tid of process pid was in at t (innermost or outermost, as
 * made), or RANGES_NONE. Valid while the records' names are.
 */
const char *ranges__at(const struct ranges *r, uint32_t pid, uint32_t tid, uint64_t t);

/* The same as a profile_data.root_at / fold callback (ctx: a struct ranges). */
const char *ranges__root_at(void *ctx, uint32_t pid, uint32_t tid, uint64_t t);

#endif
