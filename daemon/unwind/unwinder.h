/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Keeps the sampler's unwind maps (bpf/unwind.bpf.h) filled: for each process it is told about,
 * the unwind table of every executable file it maps (compiled once per file, keyed by device,
 * inode, size and mtime, and shared by every process mapping it) and the process's mapping
 * list. Tables live in the BPF row array (mmapped here: no syscall per row); the array's size is
 * the cap on table memory. A table no process maps any more stays cached for the next process
 * that does (short-lived children of one program) until its rows are needed or the unreferenced
 * ones pass a quarter of the array; then the least recently used go first (counted).
 */
#ifndef XSPROF_UNWINDER_H
#define XSPROF_UNWINDER_H

#include <stdint.h>
#include <sys/types.h>

struct unwinder;

struct unwinder_opts {
	int rows_fd;	       /* the unwind_rows array map */
	uint32_t max_rows;     /* its max_entries */
	int procs_fd;	       /* the unwind_procs hash map */
	uint32_t max_procs;    /* its max_entries */
	const char *proc_root; /* "/proc" when NULL */
};

struct unwinder_stats {
	uint64_t tables;	 /* tables held now */
	uint64_t tables_built;	 /* files compiled */
	uint64_t tables_failed;	 /* files without a usable .eh_frame (frame pointers there) */
	uint64_t tables_evicted; /* tables dropped to make room or past the unreferenced quota */
	uint64_t tables_no_room; /* tables that did not fit even after evicting: fp there */
	uint64_t rows;		 /* rows in the array now */
	uint64_t max_rows;
	uint64_t eh_frame_bytes; /* .eh_frame bytes compiled */
	uint64_t build_ns;	 /* time spent compiling them */
	uint64_t processes;	 /* processes with mappings loaded now */
	uint64_t loads;		 /* process mapping lists written */
	uint64_t gone;		 /* processes gone before they could be read */
	uint64_t maps_capped;	 /* mappings past XSPROF_UNWIND_MAX_MAPS left to fp */
	uint64_t procs_full;	 /* processes not loaded: the BPF map was full */
	uint64_t map_bytes;	 /* BPF memory: row array + process entries in use */
};

/* NULL with errno set. */
struct unwinder *unwinder__new(const struct unwinder_opts *opts);
void unwinder__free(struct unwinder *u);

/* (Re)read pid's mappings and load tables for them. -ESRCH when it is gone. */
int unwinder__add_process(struct unwinder *u, pid_t pid);
/* pid exited: its mappings leave the BPF map, its tables lose a reference. */
void unwinder__remove_process(struct unwinder *u, pid_t pid);
void unwinder__stats(const struct unwinder *u, struct unwinder_stats *ret_stats);

#endif
