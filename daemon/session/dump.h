/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A flight recorder's dump: frozen slices (frozen.h) joined over a span and written as one
 * bundle, a directory made whole or not at all: it is written under a temporary name beside
 * its final one, each file synced, then renamed. Its files:
 *   manifest.json    what tripped it and why, the span, host, processes (job and rank), counts
 *   trace.json       Chrome trace (Perfetto): threads' samples and CUDA calls, GPU streams
 *   timeline.json    the GPU timeline the web view draws
 *   gpu-report.json  why the GPU waited (output/gpu_report/GPU_REPORT.md); gpu-report.txt for a person
 *   profile.pb.gz    pprof: CPU samples and GPU work under their launching stacks
 *   stacks.folded    the same as folded stacks, in microseconds
 *   job.json         the job report (output/job/JOB_REPORT.md), when its processes are ranks
 * Made on any thread: nothing it reads changes.
 */
#ifndef XSPROF_DAEMON_SESSION_DUMP_H
#define XSPROF_DAEMON_SESSION_DUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct frozen;

struct dump_request {
	const char *dir;	      /* the dump directory (exists) */
	const char *name;	      /* the bundle's directory name in it */
	struct frozen *const *slices; /* oldest first */
	size_t nr_slices;
	uint64_t from_ns, to_ns; /* the span, CLOCK_MONOTONIC */
	/* The manifest's "trigger" object, JSON text (what tripped it, thresholds, figures). */
	const char *trigger_json;
	const char *host;
	/* The bundle's files together at most this (0: no limit), checked while each is
	 * written: past it the file being written and those after it are left out, and the
	 * manifest says so (a partial dump). */
	uint64_t max_bytes;
};

/* What a dump came to. */
struct dump_result {
	uint64_t bytes; /* every file together */
	size_t samples, launches, kernels, ranges, processes;
	uint64_t from_ns, to_ns; /* the span its data covers */
	bool partial;		 /* max_bytes was reached: files left out */
	char partial_why[160];	 /* which, and the budget */
};

/*
 * Write r's bundle. 0, or -errno with why in err (a disk full, a directory that cannot be
 * written): nothing of it is left then, and nothing else in the directory is touched.
 */
int dump__write(const struct dump_request *r, struct dump_result *ret, char *err, size_t size);

/* Bundle name in dir removed, its files and itself (one level: a bundle has no
 * subdirectories); what is not there is no error. */
void dump__remove(const char *dir, const char *name);
/* The bytes of the regular files in directory path (its hidden ones aside). */
uint64_t dump__bytes(const char *path);

/* The files a bundle may hold, in the order written (the smallest first, manifest.json
 * last), NULL-ended. */
extern const char *const dump__files[];
/* A bundle's file's HTTP content type (its format's); NULL for a name it never holds. */
const char *dump__content_type(const char *file);

#endif
