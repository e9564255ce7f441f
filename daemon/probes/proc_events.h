/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Process lifetime events (bpf/task_events.bpf.c) fed to the symbolizer: an exec starts a new
 * generation snapshotted at once, the dynamic loader's library events re-read the snapshot
 * (libraries are mapped after exec, by the loader), an exit ends the generation. Records arrive on the sampler's
 * ring buffer; exec and library events wake the reader immediately, so a process that lives 20 ms is read
 * while it runs.
 */
#ifndef XSPROF_DAEMON_PROBES_PROC_EVENTS_H
#define XSPROF_DAEMON_PROBES_PROC_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

struct sampler;
struct symbolizer;
struct proc_events;
struct unwinder;
struct pyprof;

struct proc_events_stats {
	uint64_t execs;		   /* exec records handled */
	uint64_t libs;		   /* loader library records handled */
	uint64_t exits;		   /* exit records handled */
	uint64_t gone;		   /* records of a process already gone when read */
	uint64_t over_budget;	   /* exec and library records the BPF side did not send: their user
			       * had sent XSPROF_PROC_RECORDS_PER_USER_S this second (read at
			       * the process's first sample instead) */
	uint64_t bpf_drop_ringbuf; /* records the BPF side could not send (ring buffer full) */
	bool libs_attached; /* false: no uprobe on the loader; libraries are read at first sample */
};

/*
 * Attaches the process-lifetime programs of the sampler's skeleton and routes their records to
 * sym. The sampler must outlive the result. NULL with errno set.
 */
struct proc_events *proc_events__attach(struct sampler *s, struct symbolizer *sym);
/* Also load unwind tables at exec and library events, and drop them at exit (NULL: none). */
void proc_events__set_unwinder(struct proc_events *pe, struct unwinder *uw);
/* Also detect CPython at exec and library events, and forget it at exit (NULL: none). */
void proc_events__set_python(struct proc_events *pe, struct pyprof *py);
/* Also give the libtorch of each process that loads one the autograd probes; NULL: none. */
struct autograd;
void proc_events__set_autograd(struct proc_events *pe, struct autograd *ag);
/* Also tell fn of each process's exit (tgid, CLOCK_MONOTONIC ns, the signal that killed it or
 * 0); NULL: none. */
typedef void (*proc_exit_fn)(void *ctx, uint32_t tgid, uint64_t time_ns, int signal);
void proc_events__set_on_exit(struct proc_events *pe, proc_exit_fn fn, void *ctx);
/* Also tell fn of each exec (tgid), after the new image is read; NULL: none. */
typedef void (*proc_exec_fn)(void *ctx, uint32_t tgid);
void proc_events__set_on_exec(struct proc_events *pe, proc_exec_fn fn, void *ctx);
/* Detaches; accepts NULL. Call before sampler__free. */
void proc_events__free(struct proc_events *pe);

/* 0 or -errno (reading the BPF counters). */
int proc_events__stats(const struct proc_events *pe, struct proc_events_stats *ret);

#endif
