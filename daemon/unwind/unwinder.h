/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The unwind tables of every process a sampler walks (layout in bpf/xsprof_events.h): owns the
 * BPF maps that hold them (the sampler reuses them), each process's executable mappings, and a
 * file's table, compiled from its .eh_frame when a walk first lands in it (the BPF walk asks
 * with XSPROF_REC_UNWIND_WANT), not when a process maps it. A table is built a step at a time
 * (unwinder__work), so the owner's event loop keeps reading its ring buffer meanwhile; it is
 * shared by every process that maps the file (keyed by device, inode, size and mtime) and kept
 * after they exit, until its memory is needed: then the tables used least recently go first
 * (BPF marks each table it uses; the marks are read and cleared when room is made).
 * The time spent building is charged to the user whose process asked: past UW_BUILD_BURST_S
 * of it, that user's builds wait for the budget to refill (UW_BUILD_SHARE of one CPU), so one
 * user churning large files cannot keep the daemon building.
 *
 * Samples the BPF sampler held (XSPROF_REC_SAMPLE_HELD: a process not loaded yet, or a file
 * whose table is being built) are finished here with the same tables over the stack copy they
 * carry, once the tables they need are in, and handed back through the done callback.
 */
#ifndef XSPROF_DAEMON_UNWIND_UNWINDER_H
#define XSPROF_DAEMON_UNWIND_UNWINDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct unwinder;
struct xsprof_sample;

/* Per user: build time that may be spent at once, and the share of a CPU it refills at. */
#define UW_BUILD_BURST_S 5
#define UW_BUILD_SHARE	 0.2

/* The table memory when none is asked for: enough for a GPU training process's libraries. */
#define UNWINDER_DEFAULT_MB 64
#define UNWINDER_MIN_MB	    4
#define UNWINDER_MAX_MB	    4096

/* A held sample, finished: its full native stack (and its interpreter frames after it). */
typedef void (*unwinder_done_fn)(void *ctx, const struct xsprof_sample *s, size_t size,
				 uint64_t cookie);

struct unwinder_opts {
	uint32_t table_mb;     /* kernel memory for tables, mappings and files; 0: the default */
	const char *proc_root; /* "/proc" when NULL */
	uint32_t max_procs;    /* processes loaded at once; 0: as many as the files table_mb has */
	uint32_t build_burst_ms; /* per user, build time spent at once; 0: UW_BUILD_BURST_S */
};

/* Files refused a table (tables_failed) named in the stats, the first ones met. */
#define UW_REFUSED_NAMED 10

/* A file left to frame pointers for want of a table. */
struct unwinder_refused {
	const char *path; /* as the daemon opened it; NULL when that could not be read */
	const char *why;  /* "no .eh_frame section", "not an x86-64 ELF file", ... */
};

/* The BPF maps, for the sampler to reuse (bpf_map__reuse_fd) before it loads. */
struct unwinder_maps {
	int rows, pages, files, maps, procs;
};

struct unwinder_stats {
	uint64_t tables;	 /* tables loaded now */
	uint64_t tables_built;	 /* files compiled */
	uint64_t tables_failed;	 /* files without a usable .eh_frame (frame pointers there) */
	uint64_t tables_evicted; /* tables taken away to make room */
	uint64_t tables_no_room; /* tables that did not fit even after evicting: fp there */
	uint64_t tables_rebuilt; /* tables built again after being evicted */
	uint64_t wants;		 /* tables asked for by walks */
	uint64_t want_lost;	 /* ... of a file no process held any more (not built) */
	uint64_t files;		 /* files known now (mapped, or with a table kept) */
	uint64_t files_full;	 /* mappings left to frame pointers: no file id left */
	uint64_t rows;		 /* rows in the row array now */
	uint64_t max_rows;
	uint64_t pages, max_pages;
	uint64_t eh_frame_bytes;       /* .eh_frame bytes compiled */
	uint64_t build_ns;	       /* time spent compiling them */
	uint64_t want_to_ready_max_ns; /* longest from a walk's request to the table in place */
	uint64_t table_waits_late; /* processes that waited for tables, let go before all were in */
	uint64_t processes;	   /* processes with mappings loaded now */
	uint64_t loads;		   /* process mapping lists written */
	uint64_t rereads;	   /* ... read again because a walk ran outside them (JIT code) */
	uint64_t gone;		   /* processes gone before they could be read */
	uint64_t jvm_nofp; /* JVMs without -XX:+PreserveFramePointer: walks end at their JIT code */
	uint64_t maps_capped;	      /* mappings past XSPROF_UNWIND_MAX_MAPS left to fp */
	uint64_t maps_full;	      /* processes not loaded: the mapping array was full */
	uint64_t procs_full;	      /* processes not loaded: the process map was full */
	uint64_t procs_evicted;	      /* loaded processes taken out to make room (not walked lately,
				  * of the user over its share, or of any when a table was full) */
	uint64_t procs_over_share;    /* processes not loaded: their user's share was full of
				    * processes walked lately */
	uint64_t builds_deferred;     /* times a build waited: its user's build budget was spent */
	uint64_t tables_kept_touched; /* files whose mtime changed with the same build id: their
				       * table kept, not built again */
	uint64_t max_procs;	      /* the process table's size */
	uint64_t share_procs;	      /* at most this many of one user's processes loaded */
	uint64_t map_bytes;	      /* BPF memory of all the maps */
	/* Held samples (the first samples of a process, or in a file being built). */
	uint64_t held;	       /* received */
	uint64_t held_whole;   /* finished with tables to their end */
	uint64_t held_fp;      /* finished, some frames by frame pointers (no table to wait for) */
	uint64_t held_cut;     /* the walk needed stack past the copy */
	uint64_t held_rereads; /* mappings read again for one that ran in a file mapped since
				* they were read (also in rereads) */
	uint64_t held_late;    /* finished before their tables: waited past the deadline, or
				  * past the memory for waiting ones, or at the end */
	uint64_t held_waiting; /* waiting for a table now */
	uint64_t held_bytes;   /* memory of those */
	/* Files refused a table, each counted once while known (tables_failed counts tries);
	 * the first UW_REFUSED_NAMED named, strings owned by the unwinder (valid until freed). */
	uint64_t refused_files;
	uint32_t nr_refused;
	struct unwinder_refused refused[UW_REFUSED_NAMED];
};

/* NULL with errno set. Creates the BPF maps (sized from opts->table_mb). */
struct unwinder *unwinder__new(const struct unwinder_opts *opts);
void unwinder__free(struct unwinder *u);
void unwinder__maps(const struct unwinder *u, struct unwinder_maps *ret_maps);
/* The table memory in MiB the maps were sized for. */
uint32_t unwinder__table_mb(const struct unwinder *u);

/* (Re)read pid's mappings into the BPF maps; no table is built. -ESRCH when it is gone. */
int unwinder__add_process(struct unwinder *u, pid_t pid);
/* pid exited: its mappings leave the BPF maps (tables stay, for the next process). */
void unwinder__remove_process(struct unwinder *u, pid_t pid);

/* A record of type XSPROF_REC_UNWIND_WANT: queue the file's build; or read the process's
 * mappings again (then 1: the caller's own view of them is stale too). 0, 1 or -EBADMSG. */
int unwinder__want(struct unwinder *u, const void *rec, size_t size);
/* A record of type XSPROF_REC_SAMPLE_HELD: finished now or once its tables are in, and handed
 * to done (with ctx and cookie). 0, -EBADMSG or -ENOMEM. */
int unwinder__hold(struct unwinder *u, const void *rec, size_t size, unwinder_done_fn done,
		   void *ctx, uint64_t cookie);

/* Whether build work or finished held samples are waiting for unwinder__work. */
int unwinder__busy(const struct unwinder *u);
/* Build for about budget_ns (at least one step), finish the held samples that can be; gives
 * up on held samples past their deadline. Returns unwinder__busy(). */
int unwinder__work(struct unwinder *u, uint64_t budget_ns);
/* The end of a recording: finish the builds its held samples (those of done context ctx;
 * NULL: all) wait for, until deadline_ns (CLOCK_MONOTONIC), then those samples with what is
 * there. Several recordings may share one unwinder. */
void unwinder__flush(struct unwinder *u, const void *ctx, uint64_t deadline_ns);
/* A process waits for the tables its walks asked for: build every one queued now, until
 * deadline_ns (CLOCK_MONOTONIC); what is left goes on in unwinder__work. Whether all are in. */
bool unwinder__build_queued(struct unwinder *u, uint64_t deadline_ns);

void unwinder__stats(const struct unwinder *u, struct unwinder_stats *ret_stats);

#endif
