/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pprof: profile.proto (github.com/google/pprof/proto/profile.proto), encoded by hand and
 * gzipped, so `go tool pprof`, Pyroscope and Parca read xsprof's profiles. With pd->sites the
 * frames are locations at addresses of per-file mappings, with source lines and inlined frames
 * where they were recorded (output/pprof_locations.h); without, names only.
 */
#ifndef XSPROF_OUTPUT_PPROF_H
#define XSPROF_OUTPUT_PPROF_H

#include <stdio.h>

struct output_meta;
struct profile_data;

/*
 * Sample types, in this order: samples/count and cpu/nanoseconds (CPU samples, a sample being
 * one sampling period), gpu/nanoseconds (GPU work, under the stack that launched it with a
 * "[gpu] name" leaf; unjoined work under "[no launch stack]"). pd->mode leaves CPU or GPU out.
 * Labels: CPU samples from the timeline carry pid, tid (numbers) and thread; GPU samples pid,
 * tid, thread, device, stream (strings) and kernel (the work's name). CPU samples from
 * pd->cpu_tree alone have no labels (the tree has none). Streams the gzip to f (neither
 * flushed nor closed). 0, -EINVAL, -ENOMEM, -EIO (zlib) or the first write error.
 */
int pprof__write(const struct profile_data *pd, FILE *f, const struct output_meta *meta);

#endif
