/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one table of a recording's counters: each row says where its value comes from (a field
 * of struct counters_snapshot, or a getter), its path in the status document, its Prometheus
 * metric, and the one-shot line it is printed on with -v. Every rendering reads the rows: the
 * status JSON and the one-shot's --stats file (counters__json), /metrics
 * (counters__write_metrics), the -v lines and `xsprofctl status` (counters__print_lines); the
 * last two read the values back from the JSON, so xsprofctl links the rows and nothing else.
 */
#ifndef XSPROF_DAEMON_SESSION_COUNTERS_H
#define XSPROF_DAEMON_SESSION_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bpf/xsprof_events.h"
#include "daemon/cuda/cuda_probes.h"
#include "daemon/probes/offcpu.h"
#include "daemon/python/autograd.h"
#include "daemon/python/pyprof.h"
#include "daemon/session/recording.h"
#include "daemon/stacks/stack_table.h"
#include "daemon/symbolize/symbolizer.h"
#include "daemon/unwind/unwinder.h"

struct json_object;

/* The parts of the table: each a top-level object of the status document, present or not. */
enum counters_part {
	COUNTERS_SAMPLER,    /* "counters" */
	COUNTERS_STACKS,     /* "stacks" */
	COUNTERS_PROCESSES,  /* "processes" */
	COUNTERS_SYMBOLIZER, /* "symbolizer" */
	COUNTERS_UNWIND,     /* "unwind" (--unwind auto, cfi) */
	COUNTERS_PYTHON,     /* "python" */
	COUNTERS_CUDA,	     /* "cuda_probes" */
	COUNTERS_OFFCPU,     /* "offcpu" (--mode offcpu, wall) */
	COUNTERS_PARTS,
};

/* What one recording counted, gathered from its stats structs; has[] says which parts. */
struct counters_snapshot {
	bool has[COUNTERS_PARTS];
	struct xsprof_cpu_stats cpu; /* summed over CPUs (the service: since it started) */
	uint64_t bad_records;	     /* ring-buffer records malformed */
	struct recording_stats rec;
	struct stack_table_stats stacks;
	struct symbolizer_stats sym;
	uint64_t sym_cache_bytes;
	struct xsprof_unwind_stats unwind_bpf;
	struct unwinder_stats unwind;
	uint64_t unwind_mb;
	struct xsprof_py_stats py_bpf;
	struct pyprof_stats py;
	struct xsprof_autograd_stats ag_bpf; /* zero without the autograd probes */
	struct autograd_stats ag;
	struct cuda_probes_stats cuda;
	uint64_t launches_in_slice;
	struct offcpu_stats offcpu;
};

enum counters_type { COUNTERS_GAUGE, COUNTERS_COUNTER };

struct counters_row {
	const char *path; /* in the status document: "part.key" */
	/* The value: the uint64_t at off in the snapshot, or get() where it is a sum. */
	size_t off;
	uint64_t (*get)(const struct counters_snapshot *s);
	const char *metric; /* xsprof_...; NULL only with no_metric saying why */
	const char *labels; /* a family member's: "cause=\"x\"", or NULL */
	enum counters_type type;
	double scale;	  /* metric = value * scale (0: 1): ns to seconds, MiB to bytes */
	const char *help; /* the metric's, on a family's first row */
	const char *no_metric;
	const char *line;  /* the -v line it is on: "user stack walks:" */
	const char *words; /* its words there, "%llu" where the value goes */
};

extern const struct counters_row counters_rows[];
extern const size_t counters_nr_rows;
/* The top-level key of each part. */
extern const char *const counters_part_keys[COUNTERS_PARTS];

enum counters_part counters__part(const struct counters_row *r);
uint64_t counters__value(const struct counters_row *r, const struct counters_snapshot *s);
/* The JSON number at r->path in doc, or NULL. */
struct json_object *counters__find(struct json_object *doc, const struct counters_row *r);

/* Add each present part's object, with its rows, to doc (objects already there are added to). */
void counters__json(const struct counters_snapshot *s, struct json_object *doc);
/* The rows' metrics, their values read from doc (a status document); absent ones left out. */
void counters__write_metrics(FILE *f, struct json_object *doc);
/* The table's lines ("user stack walks: 5 with unwind tables, ..."), values read from doc;
 * prefix before each line. A line none of whose rows is in doc is not printed. */
void counters__print_lines(FILE *f, struct json_object *doc, const char *prefix);

#endif
