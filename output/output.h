/* SPDX-License-Identifier: Apache-2.0 */
/* Choosing an output format and writing a profile to a file atomically. */
#ifndef XSPROF_OUTPUT_OUTPUT_H
#define XSPROF_OUTPUT_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "output/output_meta.h"

struct calltree;
struct profile_data;

enum output_format {
	OUTPUT_FOLDED = 1,  /* comm;outer;...;inner COUNT */
	OUTPUT_SVG,	    /* self-contained interactive flamegraph */
	OUTPUT_CHROME_JSON, /* Trace Event Format for Perfetto and chrome://tracing */
	OUTPUT_PPROF,	    /* profile.proto, gzipped */
	OUTPUT_TIMELINE,    /* the GPU timeline the web view draws (output/gpu_timeline.h) */
	OUTPUT_GPU_REPORT, /* why the GPU waits, as JSON (output/gpu_report/gpu_report.h, GPU_REPORT.md) */
	OUTPUT_GPU_TEXT, /* the same report as text for a person (80 columns) */
	OUTPUT_OTLP,	 /* OTLP profiles (output/otlp.h), protobuf */
	OUTPUT_JOB_REPORT, /* a job's ranks: who holds each collective back (output/job/job_report.h) */
	OUTPUT_JOB_TEXT,  /* the same as text for a person (80 columns) */
	OUTPUT_JOB_PARTS, /* a host's share of a job, for a report across hosts (job_parts.h) */
	OUTPUT_CALLGRIND, /* callgrind: functions, lines and calls (output/callgrind.h) */
	OUTPUT_XPLANE,	  /* XPlane for TensorBoard and XProf (output/xplane.h) */
};

/* Where a format may be asked for. */
enum output_where {
	OUTPUT_IN_ONESHOT = 1u << 0,   /* xsprofd -f -o FILE / --format */
	OUTPUT_IN_RECORDING = 1u << 1, /* POST /v1/recordings, xsprofctl record */
	OUTPUT_IN_WINDOW = 1u << 2,    /* GET /v1/profile: the windows' trees and GPU reports */
	OUTPUT_IN_SCRAPE = 1u << 3,    /* GET /debug/pprof/profile?format= */
	OUTPUT_IN_FLEET = 1u << 4,     /* xsprofctl fleet -o FILE */
};

/* What a format needs besides a call tree. */
enum output_needs {
	OUTPUT_NEEDS_PROFILE = 1u << 0, /* a profile_data: launches, GPU records, names */
	OUTPUT_NEEDS_SAMPLES = 1u << 1, /* the samples one by one (a timeline) */
	/* A GPU report, built once for every format that reads it (output/analyses.h; a
	 * window keeps one per slice). */
	OUTPUT_NEEDS_GPU_REPORT = 1u << 2,
	/* Each process's host-side labels (unit, container, pod, job and rank), read from its
	   environment and cgroup while it runs (profile_data.process_labels). */
	OUTPUT_NEEDS_LABELS = 1u << 3,
	OUTPUT_NEEDS_JOB_REPORT = 1u << 4, /* a job report (output/analyses.h) */
};

struct calltree;
struct gpu_report;

/* One output format: a row of output.c's table, which options, refusals, help and the
 * service's answers read. */
struct output_format_info {
	enum output_format fmt;
	const char *name;	  /* --format, the API's format= */
	const char *alias;	  /* another name for it (NULL) */
	const char *ext[2];	  /* file name suffixes, the first the usual one */
	const char *content_type; /* an HTTP answer's */
	unsigned int needs;	  /* enum output_needs; 0: a call tree is enough */
	unsigned int where;	  /* enum output_where */
	const char *summary;	  /* what it is, for --help and --list-formats */
	/* Writers: of a call tree (NULL when the format needs more), of a whole profile, of a
	 * GPU report already made (a window's; NULL unless OUTPUT_NEEDS_GPU_REPORT). */
	int (*write_tree)(const struct calltree *t, FILE *f, const struct output_meta *meta);
	int (*write_profile)(const struct profile_data *pd, FILE *f,
			     const struct output_meta *meta);
	int (*write_report)(const struct gpu_report *r, FILE *f);
};

/* Every format, in the order --help lists them. */
const struct output_format_info *output__formats(size_t *ret_n);
/* fmt's row; NULL for a value that is not a format. */
const struct output_format_info *output__format_info(enum output_format fmt);
/* By the longest suffix of the file name that a format has (".gpu.json" before ".json",
 * ".pb.gz"). -EINVAL when none. */
int output__format_from_path(const char *path, enum output_format *ret_fmt);
/* By name or alias. -EINVAL when unknown. */
int output__format_from_name(const char *name, enum output_format *ret_fmt);
const char *output__format_name(enum output_format fmt);
/* True for the formats that need more than a call tree (output__write_profile()). */
bool output__format_needs_timeline(enum output_format fmt);
/* Whether fmt may be asked for where (one enum output_where). */
bool output__format_allowed(enum output_format fmt, unsigned int where);
/* "folded, svg, pprof or gpu-report": the names (or usual file suffixes) of the formats
 * allowed where, into buf; returns buf. */
const char *output__format_list(unsigned int where, bool extensions, char *buf, size_t size);

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
 * Every format from a whole profile (output/model/profile.h): folded and SVG show
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
/* The same, the file at most max_bytes (0: no limit); past it -EFBIG and no file. */
int output__write_profile_file_capped(const struct profile_data *pd, enum output_format fmt,
				      const char *path, const struct output_meta *meta,
				      uint64_t max_bytes);

#endif
