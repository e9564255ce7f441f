/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Names addresses: kernel ones through /proc/kallsyms, user ones through a snapshot of the
 * process's mappings and the symbols of the mapped files (their ELF symbol tables, separate
 * debug files, /tmp/perf-PID.map for JIT code, the vDSO), optionally with DWARF source lines.
 *
 * Processes are tracked per generation: an exec, or a new process that reuses an exited one's
 * pid, starts a new generation with a new snapshot, while the old one stays to name the samples
 * taken before. Callers that store samples to name them later keep the generation with them
 * (symbolizer__gen at sample time, symbolizer__user_gen at naming time).
 *
 * Memory is bounded by opts.cache_bytes: symbol tables, DWARF, snapshots of exited processes
 * and formatted names are evicted (least recently used first) in symbolizer__trim, and only
 * there, so every string returned stays valid until the next symbolizer__trim (or free).
 */
#ifndef XSPROF_DAEMON_SYMBOLIZE_SYMBOLIZER_H
#define XSPROF_DAEMON_SYMBOLIZE_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct symbolizer;

#define SYMBOLIZER_DEFAULT_CACHE_BYTES (256ull << 20)
/* Where xsprofd keeps this boot's static kernel symbols between runs (tmpfs: gone at boot). */
#define XSPROF_KALLSYMS_CACHE	      "/run/xsprof.kallsyms"
#define SYMBOLIZER_DEFAULT_OPEN_FILES 256

struct symbolizer_opts {
	const char *proc_root;	   /* "/proc" when NULL (tests point it elsewhere) */
	const char *kallsyms_path; /* "/proc/kallsyms" when NULL */
	/* With /proc/kallsyms: a cache of its static lines (kallsyms__load_cached), or NULL. */
	const char *kallsyms_cache;
	bool no_demangle; /* keep C++ names mangled */
	/* Where separate debug files are looked for; NULL: { "/usr/lib/debug" }. At most 16. */
	const char *const *debug_dirs;
	size_t nr_debug_dirs;
	bool debuginfod; /* ask DEBUGINFOD_URLS' servers for missing debug files */
	unsigned int debuginfod_timeout_ms; /* per request; 0: 5000 */
	uint64_t cache_bytes;		    /* memory kept between trims; 0: the default */
	/* Files read again soon after trim dropped them (SYM_HOT_REREAD_NS) are kept past
	 * cache_bytes, while everything held stays under this; 0: never (a file whose table
	 * alone is larger than the cache is then read again at every batch that needs it). */
	uint64_t hot_bytes;
	unsigned int max_open_files; /* handles kept on mapped files; 0: the default */
	bool debug_info;	     /* DWARF lines and inlined frames (user_frames) */
	bool no_perf_maps;	     /* ignore /tmp/perf-PID.map */
};

struct symbolizer_stats {
	uint64_t processes;    /* process generations snapshotted */
	uint64_t files_loaded; /* ELF files read (each once, unless evicted and read again) */
	uint64_t files_failed; /* ELF files that could not be read */
	uint64_t user_lookups;
	uint64_t user_unresolved; /* named module+0xOFF or [unknown] */
	uint64_t kernel_lookups;
	uint64_t kernel_unresolved;
	uint64_t execs;		    /* generations started by an exec */
	uint64_t exits;		    /* generations ended by an exit */
	uint64_t ended_unused;	    /* ... (or an exec) never sampled: freed at once */
	uint64_t pid_reused;	    /* snapshots found to be of another process with the same pid */
	uint64_t exec_deferred;	    /* snapshots not taken at exec or at the loader's events: the
				     * user had SYMBOLIZER_IDLE_PER_USER processes not sampled yet
				     * (read at their first sample) */
	uint64_t snapshot_failures; /* maps that could not be read (process already gone) */
	uint64_t debug_files;	/* separate debug files found (build-id, debuglink, debuginfod) */
	uint64_t perf_map_hits; /* frames named by a /tmp/perf-PID.map */
	uint64_t perf_maps_capped; /* maps read only up to PERF_MAP_MAX_BYTES / _ENTRIES */
	uint64_t evictions;	   /* symbol tables, DWARF or snapshots dropped by trim */
	uint64_t idle_dropped;	   /* ... of them, snapshots no sample had taken yet (read again
				    * at their first sample) */
	uint64_t pinned_dropped;   /* ... ended images whose samples were not named yet, dropped
				    * past twice the cache (those frames are [unknown]) */
	uint64_t reread_soon;	   /* files read again within SYM_HOT_REREAD_NS of being dropped */
	uint64_t hot_files;	   /* ... of them kept past the cache now (opts.hot_bytes) */
	uint64_t hot_bytes;	   /* their memory */
	uint64_t open_files;	   /* handles held now */
	uint64_t bytes;		   /* memory held now (estimate) */
	uint64_t peak_bytes;	   /* largest bytes seen */
	uint64_t bogus_frames;	   /* outer frames dropped by symbolizer__user_depth */
	uint64_t frame_names;	   /* interpreter frame names interned (symbolizer__intern_frame) */
	uint64_t frame_name_bytes; /* their memory (never trimmed: stored stacks refer to them) */
	uint64_t frame_names_full; /* names refused: the table's cap was reached */
};

/* One frame of symbolizer__user_frames. */
struct symbolizer_frame {
	const char *name; /* as symbolizer__user would name the address */
	const char *file; /* source file, NULL without debug info */
	uint32_t line;	  /* 0 without debug info */
	bool inlined;	  /* inlined into the next (outer) frame */
};

/* A file read again this soon after trim dropped it is hot: kept for SYM_HOT_KEEP_NS. */
#define SYM_HOT_REREAD_NS (30ull * 1000000000ull)
#define SYM_HOT_KEEP_NS	  (120ull * 1000000000ull)

/* NULL with errno set on failure. opts may be NULL. */
/* Processes of one user snapshotted at exec and not sampled yet, at most. */
#define SYMBOLIZER_IDLE_PER_USER 1024

struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts);
void symbolizer__free(struct symbolizer *s);

/*
 * Snapshot pid's mappings now (call when the process first appears: it may be gone by the time
 * the profile is written). Refreshes the current generation's snapshot, or starts a new
 * generation when the last one exited. -ESRCH when it is gone.
 */
int symbolizer__add_process(struct symbolizer *s, pid_t pid);
/* Drops every generation of pid. */
void symbolizer__forget_process(struct symbolizer *s, pid_t pid);

/* pid exec'd: a new generation starts, snapshotted now. -ESRCH when it is already gone. */
int symbolizer__exec(struct symbolizer *s, pid_t pid);
/* pid's whole process exited: its snapshot stays for naming, but is never read again. */
void symbolizer__exit(struct symbolizer *s, pid_t pid);
/* pid mapped more code (the loader's libraries, dlopen): re-read its current snapshot. */
int symbolizer__refresh(struct symbolizer *s, pid_t pid);
/* Whether pid's current snapshot is still of this process (its start time): when not (the pid
 * was reused while its exit and the new exec went unseen), that image ends and 1 is returned;
 * the next lookup snapshots the process now there. 0 otherwise. One read of /proc/PID/stat. */
int symbolizer__verify(struct symbolizer *s, pid_t pid);
/*
 * The generation of pid's current image, to keep with a sample taken now; snapshots pid when it
 * is new, or reuses the pid of an exited process. 0 for pid <= 0.
 */
uint32_t symbolizer__gen(struct symbolizer *s, pid_t pid);

/*
 * Name an address. Never NULL: a symbol (demangled), else "module+0xADDR" (module is the file's
 * basename, ADDR the ELF virtual address, as addr2line -e takes it), else "[unknown]". Valid
 * until the next symbolizer__trim. Callers pass return addresses minus one so a call that ends
 * a function names that function. symbolizer__user names it in pid's latest generation.
 */
const char *symbolizer__user(struct symbolizer *s, pid_t pid, uint64_t addr);
const char *symbolizer__user_gen(struct symbolizer *s, pid_t pid, uint32_t gen, uint64_t addr);
/*
 * How many of a user stack's frames (ips innermost first: the pc, then return addresses) are
 * real: a frame-pointer walk that met a function using rbp for data reads on into values that
 * are not return addresses. The first return address lying in a mapping known not to hold code
 * ([stack], a file's data) ends the stack there: it and the frames outside it are dropped.
 */
size_t symbolizer__user_depth(struct symbolizer *s, pid_t pid, uint32_t gen, const uint64_t *ips,
			      size_t n);
/*
 * With opts.debug_info, the frames at addr innermost first (inlined functions, then the one
 * that holds them) with source file and line; else, or without DWARF, the one frame that
 * symbolizer__user_gen names. Returns how many were filled (1..max), or -EINVAL for max < 1.
 */
int symbolizer__user_frames(struct symbolizer *s, pid_t pid, uint32_t gen, uint64_t addr,
			    struct symbolizer_frame *ret, int max);
/* Where a user address lies in its file, for formats that keep addresses (pprof). */
struct symbolizer_site {
	const char *path;	 /* the mapped file as the process named it */
	const uint8_t *build_id; /* NULL when the file has none */
	size_t build_id_len;
	uint64_t vaddr;			      /* addr as the file's ELF virtual address */
	uint64_t seg_start, seg_end, seg_off; /* the PT_LOAD segment holding it, its file offset */
};
/*
 * Fills ret for addr of pid's generation gen when it lies in a mapped ELF file that could be
 * read (not anonymous memory, JIT code or the vDSO): 0, else -ENOENT. Strings stay valid until
 * the next symbolizer__trim.
 */
int symbolizer__user_site(struct symbolizer *s, pid_t pid, uint32_t gen, uint64_t addr,
			  struct symbolizer_site *ret);

/* Whether it was made with opts.debug_info (callers then ask for user_frames). */
bool symbolizer__debug_info(const struct symbolizer *s);
/*
 * Kernel address: a symbol (vmlinux or a module), "[bpf] NAME" inside a BPF program or
 * trampoline, "[unknown kernel]" otherwise. Valid until the next symbolizer__trim.
 */
const char *symbolizer__kernel(struct symbolizer *s, uint64_t addr);

/*
 * Where the stages that name stacks record each name's address (output/model/frame_sites.h): set by
 * whoever made both, NULL for none (the default). The symbolizer only holds the pointer.
 */
struct frame_sites;
void symbolizer__set_sites(struct symbolizer *s, struct frame_sites *sites);
struct frame_sites *symbolizer__sites(const struct symbolizer *s);

/*
 * Evicts until memory is under opts.cache_bytes: first snapshots of live processes no sample
 * has taken yet (read again at their first sample), then the least recently used files'
 * tables and ended images, and an ended image taken by a sample at or after the
 * symbolizer__keep_since time (samples of it may not be named yet) only past twice the cache
 * (counted: pinned_dropped). Every string returned before is invalid after it: call it between
 * batches (e.g. after each stack was copied into a call tree).
 */
void symbolizer__trim(struct symbolizer *s);
/* The oldest CLOCK_MONOTONIC time whose samples may still be named (0, the default: any). */
void symbolizer__keep_since(struct symbolizer *s, uint64_t ns);

/*
 * A batch (naming a whole stack table): until symbolizer__batch_end, trims keep the files and
 * processes the batch has used, so a file whose tables or DWARF alone exceed the cache is read
 * once per batch rather than once per stack. batch_end trims to the cache size.
 */
void symbolizer__batch_begin(struct symbolizer *s);
void symbolizer__batch_end(struct symbolizer *s);

void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *ret_stats);
/* opts.cache_bytes, or the default taken in its place. */
uint64_t symbolizer__cache_bytes(const struct symbolizer *s);

/*
 * A frame that is not native code (an interpreter frame, daemon/python) as a value to put in a
 * user stack: the user lookups above name it name (frame_names.h). Interned once; kept for the
 * symbolizer's life, capped. 0 when the cap is reached (counted) or out of memory.
 */
uint64_t symbolizer__intern_frame(struct symbolizer *s, const char *name);
/* The name a token of symbolizer__intern_frame stands for; NULL for any other value. */
const char *symbolizer__frame_name(const struct symbolizer *s, uint64_t token);

#endif
