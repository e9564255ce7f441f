/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A host's share of a training job, for a job report across hosts (xsprofctl fleet --report
 * straggler, output/job/job_merge.h): the ranked processes of a profile (those whose environment
 * says their rank) with their GPU work, launches, joins, samples and the stacks these name,
 * in the host's own CLOCK_MONOTONIC; the reader aligns hosts' clocks afterwards. JSON, schema
 * JOB_PARTS_SCHEMA (output/job/JOB_REPORT.md says its fields).
 */
#ifndef XSPROF_OUTPUT_JOB_PARTS_H
#define XSPROF_OUTPUT_JOB_PARTS_H

#include <stdio.h>

struct output_meta;
struct profile_data;

#define JOB_PARTS_SCHEMA  "xsprof.job_parts"
#define JOB_PARTS_VERSION 1
/* Samples written at most; the rest are counted ("samples_dropped"). */
#define JOB_PARTS_MAX_SAMPLES 2000000u

/* The parts of pd's ranked processes (pd->process_labels' job.rank). 0 or -errno. */
int job_parts__write(const struct profile_data *pd, FILE *f, const struct output_meta *meta);

#endif
