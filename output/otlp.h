/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OTLP profiles (the v1development signal of opentelemetry-proto v1.11.0, vendored under
 * output/proto/): an ExportProfilesServiceRequest, the body an OTLP/HTTP exporter posts to
 * /v1development/profiles and the one-shot's .otlp.pb file. One resource (host.name, or
 * pd->resource_labels), one scope ("xsprof"), one profile per sample type:
 * - the CPU tree or timeline: "cpu" (on-CPU), "off_cpu" or "wall" (pd->cpu_type), nanoseconds,
 *   period type cpu/nanoseconds;
 * - GPU work: "gpu" nanoseconds, each kernel, copy or memset under the stack that launched it
 *   with a "[gpu] name" leaf (unjoined work under "[no launch stack]").
 * Every profile shares the one dictionary; each table's entry 0 is its zero value, strings and
 * functions, locations (one per function: frames are names), stacks (leaf first) and attributes
 * are interned once. Sample attributes: process.executable.name (comm) and the root labels
 * (pd->root_labels, label sets split), process.pid, thread.id and thread.name where known, and
 * for GPU work gpu.device, gpu.stream and gpu.kernel.
 */
#ifndef XSPROF_OUTPUT_OTLP_H
#define XSPROF_OUTPUT_OTLP_H

#include <stdio.h>

struct buf;
struct gpu_report;
struct output_meta;
struct profile_data;

/* The request into out (appended; out->err set on failure); gr: pd's GPU report, whose idle
 * time under the stacks blamed is the gpu_idle profile (NULL: no such profile). 0 or -errno. */
int otlp__encode(const struct profile_data *pd, const struct gpu_report *gr, struct buf *out);
/* The same to f (neither flushed nor closed), with meta->an's GPU report. 0 or -errno. */
int otlp__write(const struct profile_data *pd, FILE *f, const struct output_meta *meta);

#endif
