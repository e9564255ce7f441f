/* SPDX-License-Identifier: Apache-2.0 */
/* What unwinder.c (files, processes, builds) and unwind_held.c (held samples) share. */
#ifndef XSPROF_DAEMON_UNWIND_UNWIND_INTERNAL_H
#define XSPROF_DAEMON_UNWIND_UNWIND_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>

#include "bpf/xsprof_events.h"
#include "daemon/unwind/unwind_pages.h"
#include "daemon/unwind/unwinder.h"

#define MAX_EXEC_SEGS 8
/* Rows are given out in blocks: a page's rows never straddle two. */
#define BLOCK_ROWS 4096u

struct held;
struct unwind_build;

/* First-fit ranges of one BPF array (pages, mappings). */
struct extent {
	uint32_t start, len;
};

struct extents {
	struct extent *v;
	size_t n, cap;
	uint64_t used;
};

struct uw_file {
	uint32_t id;
	uint64_t dev, ino, size, mtime_ns;
	uint64_t key2; /* its key in unwinder.files beside (dev, ino); 0: not in it (the vDSO) */
	struct {
		uint64_t offset, vaddr, filesz;
	} segs[MAX_EXEC_SEGS]; /* executable PT_LOADs: where mapped offsets land in vaddrs */
	int nr_segs;
	uint8_t build_id[20]; /* the GNU build id, when the file has one (build_id_len) */
	uint8_t build_id_len;
	uint32_t refs;	/* mappings of loaded processes */
	uint32_t state; /* enum xsprof_unwind_file_state: what BPF was told */
	bool queued, building, evicted_once;
	bool refused; /* its build failed: counted in refused_files */
	/* A mapping of a live process that holds it: where it is opened to be built. */
	pid_t pid;
	uint64_t start, end;
	int fd;	      /* opened when asked for (the process may be gone by its build); -1 */
	bool no_file; /* could not be opened: UNAVAILABLE until a process maps it again */
	/* The table, when READY. */
	uint64_t page0;
	uint32_t page_first, nr_pages;
	struct xsprof_unwind_page *pages;
	uint32_t *blocks;
	uint32_t nr_blocks, cap_blocks;
	uint64_t rows;
	uint64_t last_used;
	uint64_t want_ns;
	uint32_t want_uid; /* the owner of the process whose walk asked: its budget pays */
	struct uw_file *qnext;
};

struct uw_map {
	uint64_t start, end, bias;
	struct uw_file *file; /* NULL: no table possible (anonymous, no id left) */
};

struct uw_proc {
	pid_t pid;
	struct uw_map *maps;
	uint32_t nr_maps;
	uint32_t ext_first, ext_count; /* its range of unwind_maps */
	uint32_t gen;		       /* xsprof_unwind_proc.gen of that range */
	uint64_t read_ns;	       /* when its mappings were read */
	uint32_t holds; /* held samples walking it: kept after its exit until they are done */
	uint32_t held_rereads; /* mapping reads for held samples outside them (unwind_held.c) */
	bool dead;	       /* exited: out of the BPF maps and of unwinder.procs */
	uint32_t uid;	       /* its owner when loaded: whose share it counts in */
	uint32_t flags;	       /* xsprof_unwind_proc.flags: XSPROF_UNWIND_PROC_* */
	bool jvm_checked;      /* HotSpot seen and its options read (once) */
	struct uw_proc *older, *newer; /* the loaded ones, in order of load (or of a use seen) */
};

/* A user's part of the process and mapping tables (a share caps each), and of the time spent
 * building tables its processes asked for (a budget refilled over time). */
struct uw_user {
	uint32_t procs, maps;
	int64_t build_ns;     /* left to spend; builds of its files wait while it is <= 0 */
	uint64_t build_at_ns; /* refilled up to here */
};

/* The build in progress: a file's rows, paged, into blocks of the row array. */
struct uw_build {
	struct uw_file *f;
	int fd;
	struct unwind_build *b;
	uint64_t t0;
	bool sized;		       /* its FDEs were counted against the row memory */
	uint32_t block;		       /* the block being filled, or UINT32_MAX */
	uint32_t used;		       /* its rows in use (written or in chunk) */
	uint32_t chunk_first, chunk_n; /* rows of the block not written yet: chunk[0, chunk_n) */
	struct xsprof_unwind_row last; /* the last row written, and where */
	uint32_t last_at;
	bool has_last;
	struct xsprof_unwind_page *pages;
	size_t nr_pages, cap_pages;
	uint64_t page0;
	/* The large parts last: what is before chunk is zeroed when a build starts. */
	struct xsprof_unwind_row chunk[BLOCK_ROWS];
	struct unwind_pager pager;
};

struct unwinder {
	struct unwinder_opts o;
	uint32_t table_mb;
	int rows_fd, pages_fd, files_fd, maps_fd, procs_fd;
	uint32_t next_gen;  /* the next xsprof_unwind_proc.gen given out */
	bool rows_mmapable; /* rows written through a mapping of their block (rows_write) */
	uint32_t max_rows, max_pages, max_files, max_maps, max_procs;
	uint32_t *free_blocks, nr_free_blocks, nr_blocks;
	struct extents page_space, map_space;
	uint32_t *free_ids, nr_free_ids;
	struct uw_file **by_id;		  /* [max_files] */
	struct hashmap *files;		  /* (dev, ino, mtime) -> struct uw_file */
	struct hashmap *procs;		  /* pid -> struct uw_proc */
	struct uw_proc *oldest, *newest;  /* eviction order (see evict_candidate) */
	struct hashmap *users;		  /* uid -> struct uw_user */
	uint32_t share_procs, share_maps; /* at most this much per user */
	struct uw_file *vdso;
	struct uw_file *queue, *queue_tail;
	struct uw_build *build; /* non-NULL while one runs */
	struct held *waiting;	/* held samples waiting for a table */
	struct held *ready;	/* ... whose table came: finished by the next work */
	uint64_t tick;
	struct unwinder_stats st;
	struct xsprof_sample out; /* a finished held sample */
};

struct uw_proc *uw_proc(struct unwinder *u, pid_t pid);
const struct uw_map *uw_proc_find(const struct uw_proc *p, uint64_t pc);
/* A held sample is done with p (p->holds was taken): an exited p goes now. */
void uw_proc_put(struct unwinder *u, struct uw_proc *p);
/* The row of a READY file at vaddr (INVALID outside its pages); false when unreadable. */
bool uw_table_row(struct unwinder *u, const struct uw_file *f, uint64_t vaddr,
		  struct xsprof_unwind_row *ret);
/* A walk needs f, which has no table and was not asked for: ask (as BPF would). */
void uw_want_file(struct unwinder *u, struct uw_file *f, pid_t pid, uint64_t start);

/* unwind_held.c */
/* f's table came in or will not: its waiting samples go on. */
void uw_held_wake(struct unwinder *u, const struct uw_file *f);
/* Finish the woken ones, and give up on those past their deadline (or all of done context
 * ctx, NULL: every one: force). */
void uw_held_run(struct unwinder *u, bool force, const void *ctx);
/* Whether a held sample of done context ctx (NULL: any) waits for a table. */
bool uw_held_waiting(const struct unwinder *u, const void *ctx);
void uw_held_free_all(struct unwinder *u);

/* ---- shared by unwinder.c and unwind_queue.c ---- */

/* FDEs run per step of a build: about 1-2 ms of work here. */
#define SLICE_FDES 2048
/* Rows per FDE, at the least, in the files measured (libtorch 6.4, libc 7.6, libblas 14). */
#define ROWS_PER_FDE_MIN 3
/* A process whose walks run outside its known mappings (JIT code) is read again at most this
 * often. */
#define STALE_REREAD_NS (1000000000ull)

int uw_extents__alloc(struct extents *x, uint32_t n, uint32_t *ret_first);
int uw_array_write(int fd, uint32_t first, const void *values, size_t n, size_t value_size);
void uw_file_write(struct unwinder *u, const struct uw_file *f, uint32_t nr_pages);
void uw_table_drop(struct unwinder *u, struct uw_file *f, uint32_t state);
bool uw_evict_one(struct unwinder *u, const struct uw_file *keep);
bool uw_build_allowed(struct unwinder *u, uint32_t uid);
void uw_build_charge(struct unwinder *u, uint32_t uid, uint64_t ns);
uint32_t uw_proc_uid(const struct unwinder *u, pid_t pid);
int uw_on_page(void *ctx, uint64_t page, const struct xsprof_unwind_row *rows, uint32_t n);
void uw_build_end(struct unwinder *u, uint32_t state);
int uw_build_publish(struct unwinder *u);

#endif
