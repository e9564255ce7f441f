/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The analyses a session's outputs share: the GPU report and the job report, each built once
 * from the profile by the mode layer (one-shot, a recording, a dump, the window's answers) for
 * the union of what the formats it writes need, and handed to every writer through
 * output_meta.an. Writers render what they are handed; none builds an analysis.
 */
#ifndef XSPROF_OUTPUT_ANALYSES_H
#define XSPROF_OUTPUT_ANALYSES_H

#include <stdbool.h>
#include <stddef.h>

#include "output/output.h"

struct gpu_report;
struct job_report;
struct profile_data;

/* What fmt needs built beside the profile (OUTPUT_NEEDS_GPU_REPORT, OUTPUT_NEEDS_JOB_REPORT). */
unsigned int output_analyses__needs(enum output_format fmt);

/* The analyses that needs (an OR of output_analyses__needs()) asks for, built from pd into
 * *ret (zeroed first). On failure nothing is kept and -errno is returned. */
int output_analyses__build(const struct profile_data *pd, unsigned int needs,
			   struct output_analyses *ret);

/* Frees what output_analyses__build() made; a zeroed one is fine. */
void output_analyses__release(struct output_analyses *an);

#endif
