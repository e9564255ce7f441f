/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The GPU timeline as the web view draws it (format "timeline"): compact JSON with each GPU
 * activity on its device and stream, the CPU stack that launched it, the calls that waited for
 * the GPU, the NVTX ranges and xsprof scopes of its threads (a mark: dur 0), and CPU samples
 * per 10 ms. Times are microseconds from the profile's start; names
 * and stacks are given once and referred to by index. Schema (version 1):
 *   {"xsprof_timeline": 1, "span_us": N, "unit": "us",
 *    "names": [STR...], "stacks": ["comm;outer;...;inner"...],
 *    "work": [[device, stream, pid, kind, start_us, dur_us, name, stack]...],
 *    "ranges": [[pid, tid, start_us, dur_us, name]...],
 *    "waits": [[pid, tid, start_us, dur_us, name]...],
 *    "cpu": {"bin_us": 10000, "samples": [N...]}}
 * kind: 1 kernel, 2 copy, 3 memset, 4 sync (the host waited on the stream: not GPU work), 5
 * graph (enum corr_gpu_kind); name indexes names, stack
 * indexes stacks (-1: no launch was joined to it). Work is sorted by device, stream, start.
 */
#ifndef XSPROF_OUTPUT_GPU_TIMELINE_H
#define XSPROF_OUTPUT_GPU_TIMELINE_H

#include <stdio.h>

struct profile_data;

/* 0 or -errno (ENOMEM, or the write's). f is neither flushed nor closed. */
int gpu_timeline__write(const struct profile_data *pd, FILE *f);

#endif
