/* SPDX-License-Identifier: Apache-2.0 */
/* Choosing an output format and writing a profile to a file atomically. */
#ifndef XSPROF_OUTPUT_OUTPUT_H
#define XSPROF_OUTPUT_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct calltree;
struct profile_data;

enum output_format {
	OUTPUT_FOLDED = 1,  /* comm;outer;...;inner COUNT */
	OUTPUT_SVG,	    /* self-contained interactive flamegraph */
	OUTPUT_CHROME_JSON, /* Trace Event Format for Perfetto and chrome://tracing */
	OUTPUT_PPROF,	    /* profile.proto, gzipped */
	OUTPUT_TIMELINE,    /* the GPU timeline the web view draws (output/gpu_timeline.h) */
	OUTPUT_GPU_REPORT,  /* why the GPU waits, as JSON (output/gpu_report.h, GPU_REPORT.md) */
	OUTPUT_GPU_TEXT,    /* the same report as text for a person (80 columns) */
};

/* What the writers print besides the stacks (title, units). */
struct output_meta {
	const char *title;    /* e.g. "xsprof: 4 CPUs, 10 s at 99 Hz"; NULL for a default */
	const char *subtitle; /* e.g. host and date; may be NULL */
	const char *unit;     /* "samples" (default when NULL) */
};

/*
 * By extension: ".folded"/".txt" -> folded, ".svg" -> svg, ".timeline.json" -> timeline,
 * ".gpu.json" -> GPU report, ".gpu.txt" -> GPU report as text, ".json" -> Chrome trace,
 * ".pb.gz" -> pprof. -EINVAL when unknown.
 */
int output__format_from_path(const char *path, enum output_format *ret_fmt);
/* By name: "folded", "svg", "json" or "chrome", "pprof", "timeline", "gpu-report",
 * "gpu-text". -EINVAL when unknown. */
int output__format_from_name(const char *name, enum output_format *ret_fmt);
const char *output__format_name(enum output_format fmt);
/* True for the formats that need more than a call tree (output__write_profile()). */
bool output__format_needs_timeline(enum output_format fmt);

/*
 * Stream the tree to f in fmt (e.g. an HTTP response). f is neither flushed nor closed.
 * -ENOTSUP for the Chrome trace and pprof, which need a profile_data.
 */
int output__write(const struct calltree *t, enum output_format fmt, FILE *f,
		  const struct output_meta *meta);

/*
 * Write the tree to path atomically: a temporary file in the same directory, fsync, rename.
 * On any error (ENOSPC, EACCES, ...) the temporary file is removed, an existing file at path is
 * left as it was, and -errno is returned.
 */
int output__write_file(const struct calltree *t, enum output_format fmt, const char *path,
		       const struct output_meta *meta);

/*
 * Every format from a whole profile (output/profile.h): folded and SVG show
 * profile__build_tree() (pd->mode, pd->unit; meta->unit is set from pd->unit, and a folded
 * file other than CPU samples counted in samples starts with a "# " line that states mode and
 * unit, which flamegraph.pl, inferno and speedscope skip), the Chrome trace the timeline,
 * pprof both.
 */
int output__write_profile(const struct profile_data *pd, enum output_format fmt, FILE *f,
			  const struct output_meta *meta);
/* The same, written atomically as output__write_file() does. */
int output__write_profile_file(const struct profile_data *pd, enum output_format fmt,
			       const char *path, const struct output_meta *meta);

#endif
