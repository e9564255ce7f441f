/* SPDX-License-Identifier: Apache-2.0 */
/* The symbolizer's inside, shared by symbolizer.c (processes, files, the cache) and
 * symbolizer_names.c (naming an address): see the design at the top of symbolizer.c. */
#ifndef XSPROF_DAEMON_SYMBOLIZE_SYMBOLIZER_INTERNAL_H
#define XSPROF_DAEMON_SYMBOLIZE_SYMBOLIZER_INTERNAL_H

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/openat2.h>
#include <time.h>
#include <unistd.h>

#include "daemon/base/arena.h"
#include "daemon/base/clock.h"
#include "daemon/base/hash.h"
#include "daemon/symbolize/debuginfo.h"
#include "daemon/symbolize/demangle.h"
#include "daemon/symbolize/dwarf_lines.h"
#include "daemon/symbolize/elf_symtab.h"
#include "daemon/base/fileio.h"
#include "daemon/base/hashmap.h"
#include "daemon/base/proc_stat.h"
#include "daemon/symbolize/frame_names.h"
#include "daemon/symbolize/kallsyms.h"
#include "daemon/symbolize/perf_map.h"
#include "daemon/symbolize/proc_maps.h"
#include "daemon/symbolize/symbolizer.h"

#define UNKNOWN	       "[unknown]"
#define UNKNOWN_KERNEL "[unknown kernel]"
/* A miss re-reads a live process's maps (it may have dlopen'ed) at most this often. */
#define REFRESH_INTERVAL_NS 1000000000ULL
/* A kernel miss re-reads kallsyms (a BPF program loaded since) at most this often. */
#define KALLSYMS_RELOAD_NS (10 * 1000000000ULL)
/* A perf map is checked for growth at most this often per process. */
#define PERF_MAP_RECHECK_NS (100 * 1000000ULL)
/* Labels ([anon:NAME] is chosen by the process) are interned up to this much, then "[anon]". */
#define LABELS_MAX_BYTES (1u << 20)
/* Formatted names may take this share of the cache before trim drops them all. */
#define NAMES_SHARE 8
/* Estimated bytes per snapshot mapping beyond its structs (its path). */
#define MAP_PATH_ESTIMATE 48
/* names key for a kernel symbol's "[bpf] NAME" (never a real offset: offsets are < 2^63). */
#define KNAME_KEY UINT64_MAX

enum slot_kind {
	SLOT_LABEL = 1, /* [heap], [stack], a file without an inode: label+0xOFF */
	SLOT_ANON,	/* anonymous (JIT code lives here): perf map, else [anon]+0xOFF */
	SLOT_FILE,
	SLOT_VDSO,
};

struct file_ident {
	uint64_t size;
	int64_t mtime_ns;
	int64_t ctime_ns;
};

struct elf_file {
	struct elf_file *next; /* every file, for trim and free */
	uint64_t dev, ino;
	char *path;	      /* as the process printed it */
	const char *basename; /* inside path */
	struct file_ident ident;
	bool have_ident;
	bool detached; /* replaced in the table by a newer file at the same (dev, ino) */
	bool debug_tried;
	bool dw_tried;
	int fd;		 /* handle on the mapped file, -1 when none */
	pid_t owner_pid; /* a process that mapped it, to reach its mount namespace */
	uint32_t owner_gen;
	uint64_t map_start, map_end; /* one mapping of it in owner, for map_files */
	struct elf_symtab *tab;
	char *debug_path; /* separate debug file */
	struct dwarf_lines *dw;
	int err;       /* sticky: it cannot be read */
	uint32_t refs; /* snapshot slots bound to it */
	uint64_t last_used;
	size_t bytes;	       /* tab + dw held now */
	uint64_t dropped_ns;   /* when trim last dropped its tables (0: never) */
	uint64_t hot_until_ns; /* kept past the cache until then (opts.hot_bytes) */
};

struct map_slot {
	struct elf_file *file; /* SLOT_FILE */
	const char *label;     /* the others */
	uint8_t kind;
};

struct process {
	pid_t pid;
	uint32_t gen;
	bool dead; /* exited or exec'd: never re-read */
	bool used; /* a sample (or a caller) took its generation: kept after its end until
			 * trimmed; unused, it goes at its end (nothing will ever name it) */
	bool idle; /* snapshotted at exec and not used yet: counted in its user's idle */
	uint64_t start_ticks; /* its start time (/proc/PID/stat), 0: unknown: which process */
	uid_t idle_uid;
	bool counted;	/* in stats.processes (a snapshot was read) */
	bool probed;	/* root, namespace pid and perf map looked at */
	bool host_root; /* its / is ours: host paths reach its files */
	uid_t uid;	/* its user when first probed (the owner of /proc/PID) */
	bool uid_known;
	pid_t nspid;	       /* its pid in its own pid namespace */
	struct process *older; /* previous generation of the same pid */
	struct proc_maps *maps;
	struct map_slot *slots; /* parallel to maps */
	uint64_t read_ns;	/* last read of maps, successful or not */
	uint64_t last_used;
	uint64_t used_ns; /* when a sample last took its generation (pins it: keep_since) */
	size_t bytes;
	struct perf_map *jit;
	bool jit_capped; /* counted once in perf_maps_capped */
	int jit_fd;
	uint64_t jit_checked_ns;
};

struct symbolizer {
	char *proc_root;
	char *kallsyms_path;
	char *kallsyms_cache; /* NULL: none */
	bool demangle;
	bool debug_info;
	bool perf_maps;
	uint64_t cache_bytes;
	uint64_t hot_bytes;	/* opts.hot_bytes */
	bool hot_said;		/* the first hot file was logged */
	uint64_t keep_since_ns; /* ended images used since are still to be named: kept */
	unsigned int max_fds;
	unsigned int nr_fds;
	struct debuginfo *dbg;
	struct hashmap *procs;	/* (pid, gen) -> struct process */
	struct hashmap *cur;	/* (pid, 0) -> its latest generation */
	struct hashmap *idle;	/* (uid, 0) -> 1 + its processes snapshotted at exec, unused */
	struct hashmap *files;	/* (dev, ino) -> struct elf_file (not detached) */
	struct hashmap *names;	/* (owner pointer, offset) -> formatted name */
	struct hashmap *labels; /* (hash, length) -> interned label */
	struct hashmap *lines;	/* (file, vaddr) -> struct frames_memo: DWARF answers until trim */
	struct arena *names_arena;
	struct arena *labels_arena;
	struct elf_file *all_files;
	struct process *last; /* lookups come in runs of one process */
	uint32_t next_gen;
	uint64_t tick; /* LRU clock: one per lookup */
	size_t file_bytes, proc_bytes, jit_bytes;
	struct kallsyms *ksyms, *old_ksyms;
	uint64_t ksyms_ns;
	bool ksyms_tried;
	struct elf_symtab *vdso;
	uint64_t vdso_size;
	bool vdso_tried;
	struct stat root_st;
	bool root_st_ok;
	struct frame_names *frame_names; /* interpreter frames' tokens: made on first use */
	struct frame_sites *sites;	 /* not ours: symbolizer__set_sites */
	bool in_batch;			 /* symbolizer__batch_begin: trims keep what it used */
	uint64_t batch_tick;		 /* s->tick when it began */
	struct symbolizer_stats stats;
};

void sym_note_bytes(struct symbolizer *s);
const char *sym_intern_label(struct symbolizer *s, const char *label);
struct process *sym_process__current(struct symbolizer *s, pid_t pid);
void sym_owner_root(struct symbolizer *s, const struct elf_file *f, char *buf, size_t size);
int sym_file__reopen(struct symbolizer *s, struct elf_file *f);
int sym_file__load(struct symbolizer *s, struct elf_file *f);
void sym_process__open_jit(struct symbolizer *s, struct process *p);
int sym_process__read(struct symbolizer *s, struct process *p);

#endif
