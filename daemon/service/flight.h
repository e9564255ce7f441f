/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The flight recorder: the service's recent past at full fidelity, and dumps of it when
 * something goes wrong.
 *
 * The ring holds each window slice's timeline, frozen (session/frozen.h), one part per user:
 * samples in time, CUDA launches with their stacks, GPU records, waits, memory calls, NVTX
 * ranges and xsprof scopes of the processes with GPU work. It is bounded by bytes and by age;
 * at the byte cap the user who holds the most loses their oldest part, counted.
 *
 * Triggers (base/flight_rule.h) watch what arrives: NVTX ranges (slow-step, hang on a
 * range), the CUDA calls that wait for the GPU (hang), each slice's GPU figures (gpu-idle),
 * process exits (death); a manual dump is asked for through the API. A trigger that trips
 * makes a pending dump of [moment - before, moment + after], due at moment + after, held
 * back by its cooldown and per-hour limit (counted). When one is due the service closes the
 * slice (so the ring reaches now) and the dump is cut: the parts of its user (every user's
 * for root's manual dumps and machine-wide triggers of root's processes) in its span, their
 * references taken, handed to a writer thread (session/dump.h). The event loop never waits
 * on a dump; the thread says it is done through flight__fd. Dumps are kept by count and
 * bytes under the dump directory, newest kept; the ones there at start are listed again.
 */
#ifndef XSPROF_DAEMON_SERVICE_FLIGHT_H
#define XSPROF_DAEMON_SERVICE_FLIGHT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/base/flight_rule.h"

struct flight;
struct frozen;
struct json_object;

#define FLIGHT_MAX_RULES   8
#define FLIGHT_MAX_PENDING 16
#define FLIGHT_NAME_LEN	   64

struct flight_opts {
	size_t max_bytes;    /* the ring's cap */
	uint64_t max_age_ns; /* and how far back it reaches */
	const char *dir;     /* the dump directory: made (0750) when missing */
	unsigned int keep;   /* dumps kept */
	uint64_t keep_bytes; /* and their bytes */
	const char *host;
};

struct flight_stats {
	size_t parts, bytes, users;
	uint64_t oldest_ns; /* the oldest moment the ring holds (0: empty) */
	uint64_t kept, evicted_cap, evicted_age, freeze_failed;
	uint64_t dumps_written[FLIGHT_NR_KINDS], dumps_failed, dumps_removed;
	uint64_t dumps_partial; /* written whole up to the per-user budget, files left out */
	uint64_t
		suppressed[FLIGHT_NR_KINDS]; /* trips held back: cooldown, per-hour, pending full */
	uint64_t tables_full; /* steps, waits or GPU figures not watched: their table was full */
	uint64_t log_lines_held_back; /* a trigger kind's lines past 5 a minute (a flood) */
	size_t dumps, dump_bytes, pending, writing;
};

/* NULL with why in msg (the dump directory cannot be made or written, no memory). */
struct flight *flight__new(const struct flight_opts *o, char *msg, size_t size);
/* Waits for a dump being written; accepts NULL. */
void flight__free(struct flight *f);

/* A rule (its id, from 1, in *ret_id); -ENOSPC past FLIGHT_MAX_RULES. */
int flight__add_rule(struct flight *f, const struct flight_rule *r, unsigned int *ret_id);
/* -ENOENT when there is none of that id. */
int flight__remove_rule(struct flight *f, unsigned int id);

/* A slice's part of one user: the ring takes the reference. */
void flight__keep(struct flight *f, struct frozen *part);
/* Parts older than the ring's age, as of now_ns, go. */
void flight__expire(struct flight *f, uint64_t now_ns);

/* Whether a trigger of kind is set (range NULL: any; "": one without a range; else that
 * range's): what a caller need not look up otherwise. */
bool flight__watches(const struct flight *f, enum flight_kind kind, const char *range);
/* Whether a hang trigger watches a range left open (flight__on_open_range wants them). */
bool flight__watches_open_ranges(const struct flight *f);

/* What the triggers watch (on the event loop). */
void flight__on_range(struct flight *f, uint32_t pid, uint32_t uid, const char *name,
		      uint64_t start_ns, uint64_t end_ns);
/* A waiting CUDA call's entry (return_ns 0) or its return. */
void flight__on_wait(struct flight *f, uint32_t pid, uint32_t tid, uint32_t uid, const char *api,
		     uint64_t entry_ns, uint64_t return_ns);
/* A process's GPU figures on a device over one slice. */
void flight__on_gpu_figures(struct flight *f, uint32_t pid, uint32_t uid, const char *comm,
			    uint32_t device, uint64_t start_ns, uint64_t end_ns, uint64_t busy_ns,
			    uint64_t idle_ns);
/* A process exited (signal: what killed it, 0 for none); gpu: it had GPU work. */
void flight__on_exit(struct flight *f, uint32_t pid, uint32_t uid, const char *comm, int signal,
		     uint64_t time_ns, bool gpu);
/* The process the ring or the triggers know (its uid in *ret_uid). */
bool flight__knows(const struct flight *f, uint32_t pid, uint32_t *ret_uid);
/* An NVTX range still open (hang,range=): its start. */
void flight__on_open_range(struct flight *f, uint32_t pid, uint32_t uid, uint32_t tid,
			   const char *name, uint64_t start_ns, uint64_t now_ns);
/* The deadlines (hang) as of now_ns. */
void flight__tick(struct flight *f, uint64_t now_ns);

/*
 * A manual dump of uid's processes (all: every user's) around at_ns: *ret_name its name.
 * -EAGAIN: the user's limit (6 an hour, 2 pending, for a member; 60 and 4 for root);
 * -ENOSPC: FLIGHT_MAX_PENDING dumps pending.
 */
int flight__request(struct flight *f, uint32_t uid, bool all, double before_s, double after_s,
		    const char *note, uint64_t at_ns, char *ret_name, size_t size);

/* The moment the next pending dump is due (UINT64_MAX: none). */
uint64_t flight__next_due(const struct flight *f);
/* The dumps due by now_ns cut from the ring (the slice just closed) and queued to be written. */
void flight__start_due(struct flight *f, uint64_t now_ns);
/* Readable when a dump has been written; flight__reap then settles it. */
int flight__fd(const struct flight *f);
void flight__reap(struct flight *f);

void flight__stats(const struct flight *f, struct flight_stats *ret);
/* The dumps uid may see (all: every one), newest first, as a JSON array. */
struct json_object *flight__list_json(struct flight *f, uint32_t uid, bool all);
/* The rules with their counts, as a JSON array. */
struct json_object *flight__rules_json(struct flight *f);
/*
 * The state of dump name for uid ("pending", "writing", "done", "failed"; NULL: none uid may
 * see), and, done, its directory into path.
 */
const char *flight__find(struct flight *f, const char *name, uint32_t uid, bool all, char *path,
			 size_t size, char *error, size_t esize);

#endif
