/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a writer reads besides the profile: titles and units, and the analyses a session built
 * once for all its formats. The writers include this, not output.h (the format table above them).
 */
#ifndef XSPROF_OUTPUT_OUTPUT_META_H
#define XSPROF_OUTPUT_OUTPUT_META_H

struct gpu_report;
struct job_report;

/* The analyses the writers read, built by output/analyses.h. */
struct output_analyses {
	struct gpu_report *gpu; /* NULL: no format asked for it */
	struct job_report *job;
};

/* What the writers print besides the stacks (title, units). */
struct output_meta {
	const char *title;    /* e.g. "xsprof: 4 CPUs, 10 s at 99 Hz"; NULL for a default */
	const char *subtitle; /* e.g. host and date; may be NULL */
	const char *unit;     /* "samples" (default when NULL) */
	/* The CPU side's mode when it is not on-CPU samples ("offcpu", "wall"): the folded
	 * header names it, not only the GPU mode; NULL: on-CPU. */
	const char *cpu_mode;
	/* The analyses the writers read (the GPU and job reports), built once for all of a
	 * session's outputs (output/analyses.h). A format that needs one it lacks: -EINVAL. */
	const struct output_analyses *an;
};

#endif
