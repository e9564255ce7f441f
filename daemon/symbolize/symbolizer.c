// SPDX-License-Identifier: Apache-2.0
/*
 * Design.
 *
 * Processes: one struct process per (pid, generation), each a snapshot of the mappings
 * (sorted, binary-searched) with every mapping bound, when the snapshot is taken, to what names
 * it: a mapped file, the vDSO, or a label ([heap], [anon], ...). A generation ends with exec
 * or exit (told by the caller from the BPF process events); its snapshot is kept and never
 * re-read, so a pid reused later starts fresh instead of inheriting the old mappings.
 *
 * Files: one struct elf_file per mapped file identity, keyed by the (device, inode) that maps
 * prints and checked against the size/mtime/ctime of the mapped file itself (through
 * /proc/PID/map_files), so an inode number reused by a new file is a new entry. When a snapshot
 * binds an executable mapping whose file is not read yet, a handle on the very file mapped is
 * opened through map_files and kept: it outlives the process, a deleted or replaced file, and
 * another mount namespace's view. Handles are capped (max_open_files); past the cap the file
 * is read at once instead. Symbols are read on the first lookup, once per file, then from a
 * separate debug file when the file is stripped (debuginfo.c).
 *
 * Memory: symbol tables, DWARF handles, snapshots of ended generations, perf maps and the
 * formatted "module+0xOFF" names count against cache_bytes. Nothing is freed during lookups;
 * symbolizer__trim evicts least recently used first, so returned strings live until then.
 *
 * Not thread-safe: one symbolizer belongs to one thread (the daemon's event loop).
 */
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
	size_t bytes; /* tab + dw held now */
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

static size_t total_bytes(const struct symbolizer *s)
{
	return s->file_bytes + s->proc_bytes + s->jit_bytes + arena__bytes(s->names_arena) +
	       arena__bytes(s->labels_arena) + (s->ksyms ? kallsyms__bytes(s->ksyms) : 0);
}

static void note_bytes(struct symbolizer *s)
{
	uint64_t b = total_bytes(s);

	if (b > s->stats.peak_bytes)
		s->stats.peak_bytes = b;
}

struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts)
{
	struct debuginfo_opts dopts = {};
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->proc_root = strdup(opts && opts->proc_root ? opts->proc_root : "/proc");
	s->kallsyms_path =
		strdup(opts && opts->kallsyms_path ? opts->kallsyms_path : "/proc/kallsyms");
	if (opts && opts->kallsyms_cache && !opts->kallsyms_path)
		s->kallsyms_cache = strdup(opts->kallsyms_cache);
	s->demangle = !(opts && opts->no_demangle);
	s->debug_info = opts && opts->debug_info;
	s->perf_maps = !(opts && opts->no_perf_maps);
	s->cache_bytes =
		opts && opts->cache_bytes ? opts->cache_bytes : SYMBOLIZER_DEFAULT_CACHE_BYTES;
	s->max_fds =
		opts && opts->max_open_files ? opts->max_open_files : SYMBOLIZER_DEFAULT_OPEN_FILES;
	s->next_gen = 1;
	if (opts) {
		dopts.dirs = opts->debug_dirs;
		dopts.nr_dirs = opts->nr_debug_dirs;
		dopts.debuginfod = opts->debuginfod;
		dopts.debuginfod_timeout_ms = opts->debuginfod_timeout_ms;
	}
	s->dbg = debuginfo__new(&dopts);
	if (!s->dbg && errno == E2BIG) {
		symbolizer__free(s);
		errno = E2BIG;
		return NULL;
	}
	s->procs = hashmap__new();
	s->cur = hashmap__new();
	s->idle = hashmap__new();
	s->files = hashmap__new();
	s->names = hashmap__new();
	s->labels = hashmap__new();
	s->lines = hashmap__new();
	s->names_arena = arena__new();
	s->labels_arena = arena__new();
	if (!s->proc_root || !s->kallsyms_path || !s->dbg || !s->procs || !s->cur || !s->idle ||
	    !s->files || !s->names || !s->labels || !s->lines || !s->names_arena ||
	    !s->labels_arena) {
		symbolizer__free(s);
		errno = ENOMEM;
		return NULL;
	}
	s->root_st_ok = !stat("/", &s->root_st);
	return s;
}

static void file__drop_tables(struct symbolizer *s, struct elf_file *f)
{
	elf_symtab__free(f->tab);
	dwarf_lines__free(f->dw);
	f->tab = NULL;
	f->dw = NULL;
	f->dw_tried = false;
	s->file_bytes -= f->bytes;
	f->bytes = 0;
}

static void file__close(struct symbolizer *s, struct elf_file *f)
{
	if (f->fd >= 0) {
		close(f->fd);
		f->fd = -1;
		s->nr_fds--;
	}
}

static void file__free(struct symbolizer *s, struct elf_file *f)
{
	file__drop_tables(s, f);
	file__close(s, f);
	free(f->debug_path);
	free(f->path);
	free(f);
}

static void process__free_maps(struct symbolizer *s, struct process *p)
{
	size_t i, n = p->maps ? proc_maps__count(p->maps) : 0;

	for (i = 0; i < n; i++) {
		if (p->slots[i].kind == SLOT_FILE && p->slots[i].file)
			p->slots[i].file->refs--;
	}
	proc_maps__free(p->maps);
	free(p->slots);
	p->maps = NULL;
	p->slots = NULL;
	s->proc_bytes -= p->bytes;
	p->bytes = 0;
}

/* A process snapshotted at exec that no sample has used: its user's count, +1 or -1. */
static uint32_t idle_count(const struct symbolizer *s, uid_t uid)
{
	uintptr_t v = (uintptr_t)hashmap__get(s->idle, uid, 0);

	return v ? (uint32_t)(v - 1) : 0;
}

static void idle_add(struct symbolizer *s, uid_t uid, int delta)
{
	uint32_t n = idle_count(s, uid) + (uint32_t)delta;

	/* A failed put (no memory) leaves the count one off; the cap is a bound, not a ledger. */
	if (!n)
		hashmap__remove(s->idle, uid, 0);
	else
		(void)hashmap__put(s->idle, uid, 0, (void *)(uintptr_t)(n + 1));
}

/* A sample (or a caller) takes p's generation: no longer idle. */
static void process__use(struct symbolizer *s, struct process *p)
{
	p->used = true;
	p->used_ns = clock__mono_ns();
	if (p->idle) {
		p->idle = false;
		idle_add(s, p->idle_uid, -1);
	}
}

static void process__free(struct symbolizer *s, struct process *p)
{
	if (!p)
		return;
	if (p->idle)
		idle_add(s, p->idle_uid, -1);
	process__free_maps(s, p);
	if (p->jit) {
		s->jit_bytes -= perf_map__bytes(p->jit);
		perf_map__free(p->jit);
	}
	if (p->jit_fd >= 0) {
		close(p->jit_fd);
		s->nr_fds--;
	}
	free(p);
}

struct free_ctx {
	struct symbolizer *s;
};

static void free_process_cb(void *val, void *ctx)
{
	process__free(((struct free_ctx *)ctx)->s, val);
}

void symbolizer__free(struct symbolizer *s)
{
	struct free_ctx ctx = {s};
	struct elf_file *f, *next;

	if (!s)
		return;
	frame_names__free(s->frame_names);
	if (s->procs)
		hashmap__for_each(s->procs, free_process_cb, &ctx);
	for (f = s->all_files; f; f = next) {
		next = f->next;
		file__free(s, f);
	}
	hashmap__free(s->procs);
	hashmap__free(s->cur);
	hashmap__free(s->idle);
	hashmap__free(s->files);
	hashmap__free(s->names);
	hashmap__free(s->labels);
	hashmap__free(s->lines);
	arena__free(s->names_arena);
	arena__free(s->labels_arena);
	kallsyms__free(s->ksyms);
	kallsyms__free(s->old_ksyms);
	elf_symtab__free(s->vdso);
	debuginfo__free(s->dbg);
	free(s->proc_root);
	free(s->kallsyms_path);
	free(s->kallsyms_cache);
	free(s);
}

/* One copy of each label, so the name cache can key on its pointer. */
static const char *intern_label(struct symbolizer *s, const char *label)
{
	size_t len = strlen(label);
	uint64_t h = hash_bytes(HASH_INIT, label, len);
	const char *v;

	v = hashmap__get(s->labels, h, len);
	if (v && !strcmp(v, label))
		return v;
	/* The set of [anon:NAME] labels is the processes' choice: bound it. */
	if (arena__bytes(s->labels_arena) > LABELS_MAX_BYTES && strcmp(label, "[anon]"))
		return intern_label(s, "[anon]");
	v = arena__strndup(s->labels_arena, label, len);
	/* On a hash collision the copy is simply not shared. */
	if (v && !hashmap__get(s->labels, h, len))
		hashmap__put(s->labels, h, len, (void *)v);
	return v;
}

static void ident_of(const struct stat *st, struct file_ident *ret)
{
	ret->size = (uint64_t)st->st_size;
	ret->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec;
	ret->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec;
}

static bool ident_eq(const struct file_ident *a, const struct file_ident *b)
{
	return a->size == b->size && a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

static int map_files_path(const struct symbolizer *s, pid_t pid, uint64_t start, uint64_t end,
			  char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/%d/map_files/%" PRIx64 "-%" PRIx64, s->proc_root, (int)pid,
			 start, end);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static struct process *process__current(struct symbolizer *s, pid_t pid)
{
	return hashmap__get(s->cur, (uint64_t)pid, 0);
}

/* Whether (pid, gen) is still the running image of pid, so /proc/pid names it. */
static bool alive(struct symbolizer *s, pid_t pid, uint32_t gen)
{
	struct process *p = process__current(s, pid);

	return p && p->gen == gen && !p->dead;
}

/* The root prefix that reaches the file's owner's view of paths, or "" for ours. */
static void owner_root(struct symbolizer *s, const struct elf_file *f, char *buf, size_t size)
{
	int n;

	buf[0] = '\0';
	if (!alive(s, f->owner_pid, f->owner_gen))
		return;
	n = snprintf(buf, size, "%s/%d/root", s->proc_root, (int)f->owner_pid);
	if (n < 0 || (size_t)n >= size)
		buf[0] = '\0';
}

/*
 * Opens the file behind f without a handle: the owner's map_files entry while it runs, then
 * its root's view of the path, then the path as printed if it is still the mapped file.
 */
static int file__reopen(struct symbolizer *s, struct elf_file *f)
{
	char path[PATH_MAX + 64];
	struct file_ident id;
	struct stat st;
	int fd, n;

	if (alive(s, f->owner_pid, f->owner_gen) &&
	    !map_files_path(s, f->owner_pid, f->map_start, f->map_end, path, sizeof(path))) {
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (fd >= 0)
			return fd;
	}
	if (f->path[0] != '/')
		return -ENOENT;
	owner_root(s, f, path, sizeof(path));
	if (path[0]) {
		n = snprintf(path + strlen(path), sizeof(path) - strlen(path), "%s", f->path);
		if (n > 0 && (size_t)n < sizeof(path) - 1) {
			fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
			if (fd >= 0)
				return fd;
		}
	}
	fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	/* The path may hold another file by now: only the mapped one names the addresses. */
	if (fstat(fd, &st) || (f->ino && st.st_ino != f->ino)) {
		close(fd);
		return -ESTALE;
	}
	ident_of(&st, &id);
	if (f->have_ident && !ident_eq(&id, &f->ident)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/* Adds the symbols of f's separate debug file when f itself is stripped. */
static void file__add_debug_symbols(struct symbolizer *s, struct elf_file *f)
{
	struct elf_symtab *dbg = NULL;
	char root[PATH_MAX];
	const uint8_t *a, *b;
	size_t la, lb;

	if (elf_symtab__has_symtab(f->tab))
		return;
	if (f->debug_path) {
		/* Read before and evicted since: the same file, if it still matches. */
		dbg = elf_symtab__open(f->debug_path);
		la = dbg ? elf_symtab__build_id(dbg, &a) : 0;
		lb = elf_symtab__build_id(f->tab, &b);
		if (dbg && lb && (la != lb || memcmp(a, b, la))) {
			elf_symtab__free(dbg);
			dbg = NULL;
		}
	} else if (!f->debug_tried) {
		f->debug_tried = true;
		owner_root(s, f, root, sizeof(root));
		dbg = debuginfo__find(s->dbg, f->tab, root, f->path, &f->debug_path);
		if (dbg)
			s->stats.debug_files++;
	}
	if (dbg) {
		elf_symtab__merge(f->tab, dbg);
		elf_symtab__free(dbg);
	}
}

/* Reads f's symbols once (again after an eviction). 0 or -errno (also kept in f->err). */
static int file__load(struct symbolizer *s, struct elf_file *f)
{
	int fd;

	if (f->tab)
		return 0;
	if (f->err)
		return -f->err;
	fd = f->fd >= 0 ? f->fd : file__reopen(s, f);
	if (fd < 0) {
		f->err = -fd;
		s->stats.files_failed++;
		return fd;
	}
	f->tab = elf_symtab__open_fd(fd);
	if (!f->tab) {
		f->err = errno ? errno : EBADMSG;
		/* Out of memory is not the file's fault: try again later. */
		if (f->err == ENOMEM)
			f->err = 0;
		s->stats.files_failed++;
	}
	if (fd != f->fd) {
		/* A handle for the DWARF reader and for a read after an eviction, while there is room. */
		if (f->tab && s->nr_fds < s->max_fds) {
			f->fd = fd;
			s->nr_fds++;
		} else {
			close(fd);
		}
	}
	if (!f->tab)
		return -EBADMSG;
	file__add_debug_symbols(s, f);
	f->bytes = elf_symtab__bytes(f->tab);
	s->file_bytes += f->bytes;
	s->stats.files_loaded++;
	note_bytes(s);
	return 0;
}

static struct elf_file *file__new(struct symbolizer *s, struct process *p, const struct proc_map *m,
				  uint64_t dev)
{
	struct elf_file *f = calloc(1, sizeof(*f));
	const char *base;

	if (!f)
		return NULL;
	f->path = strdup(m->path);
	if (!f->path) {
		free(f);
		return NULL;
	}
	base = strrchr(f->path, '/');
	f->basename = base && base[1] ? base + 1 : f->path;
	f->dev = dev;
	f->ino = m->inode;
	f->fd = -1;
	f->owner_pid = p->pid;
	f->owner_gen = p->gen;
	f->map_start = m->start;
	f->map_end = m->end;
	if (hashmap__put(s->files, dev, m->inode, f)) {
		free(f->path);
		free(f);
		return NULL;
	}
	f->next = s->all_files;
	s->all_files = f;
	return f;
}

/*
 * The file entry for a file-backed mapping, made when new. An executable mapping's file gets a
 * handle now, while the process runs: afterwards only the path is left.
 */
static struct elf_file *file__for_mapping(struct symbolizer *s, struct process *p,
					  const struct proc_map *m)
{
	uint64_t dev = (uint64_t)m->dev_major << 32 | m->dev_minor;
	char mf[PATH_MAX];
	struct file_ident id;
	struct elf_file *f;
	struct stat st;
	bool have = false;
	int fd;

	if ((m->perms & PROC_MAP_EXEC) &&
	    !map_files_path(s, p->pid, m->start, m->end, mf, sizeof(mf)) && !stat(mf, &st)) {
		ident_of(&st, &id);
		have = true;
	}
	f = hashmap__get(s->files, dev, m->inode);
	if (f && have && f->have_ident && !ident_eq(&id, &f->ident)) {
		/* Same inode number, another file: the old entry stays for its old mappings. */
		hashmap__remove(s->files, dev, m->inode);
		f->detached = true;
		f = NULL;
	}
	if (!f) {
		f = file__new(s, p, m, dev);
		if (!f)
			return NULL;
	}
	if (have && !f->have_ident) {
		f->ident = id;
		f->have_ident = true;
	}
	if (!have || f->tab || f->fd >= 0 || f->err)
		return f;
	/* The owner that can still reach the file is the one mapping it now. */
	f->owner_pid = p->pid;
	f->owner_gen = p->gen;
	f->map_start = m->start;
	f->map_end = m->end;
	if (s->nr_fds < s->max_fds) {
		fd = open(mf, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
		if (fd >= 0) {
			f->fd = fd;
			s->nr_fds++;
		}
	} else {
		/* No room for another handle: read it now, while the process runs. */
		file__load(s, f);
	}
	return f;
}

static void bind_slot(struct symbolizer *s, struct process *p, const struct proc_map *m,
		      struct map_slot *slot)
{
	if (!m->path) {
		slot->kind = SLOT_ANON;
		slot->label = intern_label(s, "[anon]");
	} else if (m->path[0] == '/' && m->inode) {
		slot->kind = SLOT_FILE;
		slot->file = file__for_mapping(s, p, m);
		if (slot->file) {
			slot->file->refs++;
			return;
		}
		slot->kind = SLOT_LABEL; /* out of memory: the name alone */
		slot->label = intern_label(s, m->path);
	} else if (!strcmp(m->path, "[vdso]")) {
		slot->kind = SLOT_VDSO;
		slot->label = intern_label(s, m->path);
	} else {
		/* [heap], [stack], [anon:NAME], memfd:NAME, ... */
		slot->kind = strncmp(m->path, "[anon", 5) ? SLOT_LABEL : SLOT_ANON;
		slot->label = intern_label(s, m->path);
	}
	if (!slot->label)
		slot->kind = 0;
}

/* Its root, its pid inside its namespace, and its perf map: once per generation. */
static void process__probe(struct symbolizer *s, struct process *p)
{
	char path[PATH_MAX], *buf = NULL, *line;
	struct stat st;
	size_t len;
	int n;

	p->probed = true;
	p->nspid = p->pid;
	n = snprintf(path, sizeof(path), "%s/%d/root", s->proc_root, (int)p->pid);
	if (n > 0 && (size_t)n < sizeof(path) && !stat(path, &st) && s->root_st_ok)
		p->host_root = st.st_dev == s->root_st.st_dev && st.st_ino == s->root_st.st_ino;
	/* /proc/PID belongs to the process's user: kept for its perf map after it exits. */
	n = snprintf(path, sizeof(path), "%s/%d", s->proc_root, (int)p->pid);
	if (n > 0 && (size_t)n < sizeof(path) && !stat(path, &st)) {
		p->uid = st.st_uid;
		p->uid_known = true;
	}
	/* "NSpid:\tHOST ... INNERMOST": the JIT names its map with the innermost one. */
	n = snprintf(path, sizeof(path), "%s/%d/status", s->proc_root, (int)p->pid);
	if (n > 0 && (size_t)n < sizeof(path) && !file__read_all(path, 64 << 10, &buf, &len)) {
		line = strstr(buf, "\nNSpid:");
		if (line) {
			char *end = strchr(line + 1, '\n'), *last = NULL, *q;

			if (end)
				*end = '\0';
			for (q = line + 7; (q = strpbrk(q, "0123456789"));
			     q += strspn(q, "0123456789"))
				last = q;
			if (last && atoi(last) > 0)
				p->nspid = atoi(last);
		}
		free(buf);
	}
}

/*
 * Opens a perf map the profiled process controls without letting it make us read another
 * file: path resolved inside root (its own root: a symlink cannot leave it), no symlink as the
 * last component, a regular file, owned by the process's user (root's only for root's).
 * Like perf, which refuses maps it does not own.
 */
static int open_perf_map(const char *root, const char *rel, uid_t owner, bool owner_known)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	struct stat st;
	int dfd, fd;

	dfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	fd = (int)syscall(SYS_openat2, dfd, rel, &how, sizeof(how));
	close(dfd);
	if (fd < 0)
		return -1;
	/*
	 * The opened file itself must be the process's user's: a root-owned file is taken only from
	 * a root process (a user can bind-mount one there inside a user namespace), and an unknown
	 * owner gets nothing.
	 */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !owner_known || st.st_uid != owner) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Opens pid's /tmp/perf-NSPID.map (in its own root) if there is one and room for it. */
static void process__open_jit(struct symbolizer *s, struct process *p)
{
	char root[PATH_MAX], dir[PATH_MAX], rel[64];
	struct stat st;
	bool owner_known = false;
	uid_t owner = 0;
	int n;

	if (!s->perf_maps || p->jit_fd >= 0 || s->nr_fds >= s->max_fds)
		return;
	snprintf(rel, sizeof(rel), "tmp/perf-%d.map", (int)p->nspid);
	if (!p->dead) {
		n = snprintf(root, sizeof(root), "%s/%d/root", s->proc_root, (int)p->pid);
		/* /proc/PID belongs to the process's user. */
		snprintf(dir, sizeof(dir), "%s/%d", s->proc_root, (int)p->pid);
		if (!stat(dir, &st)) {
			owner = st.st_uid;
			owner_known = true;
		}
	} else if (p->host_root) {
		/* Gone, but it lived in our root: the file outlives it, and must be its user's. */
		n = snprintf(root, sizeof(root), "/");
		owner = p->uid;
		owner_known = p->uid_known;
	} else {
		return;
	}
	if (n < 0 || (size_t)n >= sizeof(root))
		return;
	p->jit_fd = open_perf_map(root, rel, owner, owner_known);
	if (p->jit_fd >= 0)
		s->nr_fds++;
}

/*
 * Reads p's maps. An empty result (a zombie, or a pid that is gone) does not replace a snapshot
 * that has mappings, since those still name the addresses it sampled before it exited.
 */
/* The start time of pid (clock ticks since boot); 0 when unreadable. */
static uint64_t start_ticks_of(const struct symbolizer *s, pid_t pid)
{
	struct proc_stat ps;

	return proc_stat__read(s->proc_root, pid, &ps) ? 0 : ps.start_ticks;
}

static int process__read(struct symbolizer *s, struct process *p)
{
	struct map_slot *slots;
	struct proc_maps *m;
	size_t n, i;

	if (p->dead)
		return -ESRCH;
	p->read_ns = clock__mono_ns();
	if (!p->start_ticks)
		p->start_ticks = start_ticks_of(s, p->pid);
	m = proc_maps__read(s->proc_root, p->pid);
	if (!m) {
		s->stats.snapshot_failures++;
		return -errno;
	}
	n = proc_maps__count(m);
	if (!n && p->maps && proc_maps__count(p->maps)) {
		proc_maps__free(m);
		return 0;
	}
	slots = calloc(n ? n : 1, sizeof(*slots));
	if (!slots) {
		proc_maps__free(m);
		return -ENOMEM;
	}
	if (!p->probed)
		process__probe(s, p);
	for (i = 0; i < n; i++)
		bind_slot(s, p, proc_maps__at(m, i), &slots[i]);
	process__free_maps(s, p);
	p->maps = m;
	p->slots = slots;
	if (!p->counted && n) {
		p->counted = true;
		s->stats.processes++;
	}
	p->bytes = sizeof(*p) +
		   n * (sizeof(struct proc_map) + sizeof(struct map_slot) + MAP_PATH_ESTIMATE);
	s->proc_bytes += p->bytes;
	process__open_jit(s, p);
	note_bytes(s);
	return 0;
}

/* A new generation of pid, made current (its older ones stay under their own keys). */
static struct process *process__new(struct symbolizer *s, pid_t pid)
{
	struct process *p = calloc(1, sizeof(*p)), *old;

	if (!p)
		return NULL;
	p->pid = pid;
	p->gen = s->next_gen++;
	p->jit_fd = -1;
	if (!s->next_gen)
		s->next_gen = 1; /* 0 means "latest" */
	old = process__current(s, pid);
	if (hashmap__put(s->procs, (uint64_t)pid, p->gen, p)) {
		free(p);
		return NULL;
	}
	if (hashmap__put(s->cur, (uint64_t)pid, 0, p)) {
		hashmap__remove(s->procs, (uint64_t)pid, p->gen);
		free(p);
		return NULL;
	}
	p->older = old;
	return p;
}

/* Unlinks p from every table (the caller frees it). */
static void process__unlink(struct symbolizer *s, struct process *p)
{
	struct process *q = process__current(s, p->pid);

	hashmap__remove(s->procs, (uint64_t)p->pid, p->gen);
	if (q == p) {
		if (p->older)
			hashmap__put(s->cur, (uint64_t)p->pid, 0, p->older);
		else
			hashmap__remove(s->cur, (uint64_t)p->pid, 0);
	} else {
		while (q && q->older != p)
			q = q->older;
		if (q)
			q->older = p->older;
	}
	if (s->last == p)
		s->last = NULL;
}

int symbolizer__add_process(struct symbolizer *s, pid_t pid)
{
	struct process *p;
	int err;

	if (pid <= 0)
		return -EINVAL;
	p = process__current(s, pid);
	if (p && !p->dead) {
		process__use(s, p);
		return process__read(s, p);
	}
	p = process__new(s, pid);
	if (!p)
		return -ENOMEM;
	process__use(s, p);
	err = process__read(s, p);
	if (err) {
		process__unlink(s, p);
		process__free(s, p);
	}
	return err;
}

/* pid's current image ended (exit, exec): kept to name what it ran, if anything will. */
static void process__end(struct symbolizer *s, struct process *p)
{
	if (p->used) {
		p->dead = true;
		return;
	}
	/* Never sampled: a process table flood must not grow our memory until the trim. */
	s->stats.ended_unused++;
	process__unlink(s, p);
	process__free(s, p);
}

void symbolizer__forget_process(struct symbolizer *s, pid_t pid)
{
	struct process *p;

	while ((p = process__current(s, pid))) {
		process__unlink(s, p);
		process__free(s, p);
	}
}

/*
 * A snapshot of pid taken before any sample needs it (at exec, at the loader's events), not
 * used yet. A user's such processes are snapshotted up to a cap: past it, a new one is read at
 * its first sample instead (a flood of idle processes costs us nothing). NULL with *ret_err:
 * 0 when deferred so, -ESRCH when gone, -ENOMEM.
 */
static struct process *process__new_idle(struct symbolizer *s, pid_t pid, int *ret_err)
{
	char path[PATH_MAX];
	struct process *p;
	struct stat st;

	snprintf(path, sizeof(path), "%s/%d", s->proc_root, (int)pid);
	if (stat(path, &st)) {
		*ret_err = -ESRCH;
		return NULL;
	}
	if (idle_count(s, st.st_uid) >= SYMBOLIZER_IDLE_PER_USER) {
		s->stats.exec_deferred++;
		*ret_err = 0;
		return NULL;
	}
	p = process__new(s, pid);
	if (!p) {
		*ret_err = -ENOMEM;
		return NULL;
	}
	p->idle = true;
	p->idle_uid = st.st_uid;
	idle_add(s, st.st_uid, 1);
	return p;
}

/* A new idle snapshot of pid, read now (process__new_idle's cap applies). */
static int snapshot_idle(struct symbolizer *s, pid_t pid)
{
	struct process *p;
	int err;

	p = process__new_idle(s, pid, &err);
	if (!p)
		return err;
	err = process__read(s, p);
	/* Gone already: nothing will ever be readable under this generation. */
	if (err == -ESRCH)
		process__end(s, p);
	return err;
}

int symbolizer__exec(struct symbolizer *s, pid_t pid)
{
	struct process *p;

	if (pid <= 0)
		return -EINVAL;
	p = process__current(s, pid);
	if (p && !p->dead)
		process__end(s, p); /* that image is gone; its snapshot names what ran before */
	s->stats.execs++;
	return snapshot_idle(s, pid);
}

void symbolizer__exit(struct symbolizer *s, pid_t pid)
{
	struct process *p = process__current(s, pid);

	if (p && !p->dead) {
		s->stats.exits++;
		process__end(s, p);
	}
}

int symbolizer__verify(struct symbolizer *s, pid_t pid)
{
	struct process *p = process__current(s, pid);
	uint64_t start;

	if (!p || p->dead || !p->start_ticks)
		return 0;
	start = start_ticks_of(s, pid);
	if (!start || start == p->start_ticks)
		return 0;
	/* Its exit and the new one's exec were not seen (lost, or not watched): that image is
	 * another process's; the next lookup snapshots this one. */
	s->stats.pid_reused++;
	process__end(s, p);
	return 1;
}

int symbolizer__refresh(struct symbolizer *s, pid_t pid)
{
	struct process *p = process__current(s, pid);

	if (p && p->dead)
		return symbolizer__gen(s, pid) ? 0 : -ESRCH;
	/* Not snapshotted at its exec (its user's idle ones were at the cap, or it ran before
	 * we started): the same rule now, not a sample's. */
	if (!p)
		return snapshot_idle(s, pid);
	return process__read(s, p);
}

uint32_t symbolizer__gen(struct symbolizer *s, pid_t pid)
{
	struct process *p, *q;

	if (pid <= 0)
		return 0;
	p = process__current(s, pid);
	if (p && !p->dead) {
		process__use(s, p);
		return p->gen;
	}
	q = process__new(s, pid);
	if (!q)
		return p ? p->gen : 0;
	process__use(s, q);
	if (!process__read(s, q) && proc_maps__count(q->maps))
		return q->gen;
	if (p) {
		/*
		 * Nothing to read: this is the exited process itself, sampled between its exit
		 * event and its last instruction, not a new one with its pid.
		 */
		process__unlink(s, q);
		process__free(s, q);
		process__use(s, p);
		return p->gen;
	}
	/* Kept without mappings so it is retried at the refresh rate, not on every lookup. */
	return q->gen;
}

/* The process a lookup names addresses in; gen 0 is the latest, snapshotted when new. */
static struct process *process__get(struct symbolizer *s, pid_t pid, uint32_t gen)
{
	struct process *p;

	if (gen) {
		if (s->last && s->last->pid == pid && s->last->gen == gen)
			return s->last;
		p = hashmap__get(s->procs, (uint64_t)pid, gen);
	} else {
		p = process__current(s, pid);
		if (!p && pid > 0 && symbolizer__gen(s, pid))
			p = process__current(s, pid);
	}
	if (p)
		s->last = p;
	return p;
}

/* "module+0xOFF", formatted once per (owner, offset) until the next trim. */
static const char *unnamed(struct symbolizer *s, const void *owner, const char *module,
			   uint64_t off)
{
	char *name;
	int len;

	name = hashmap__get(s->names, (uintptr_t)owner, off);
	if (name)
		return name;
	len = snprintf(NULL, 0, "%s+0x%" PRIx64, module, off);
	if (len < 0)
		return UNKNOWN;
	name = arena__alloc(s->names_arena, (size_t)len + 1);
	if (!name)
		return UNKNOWN;
	snprintf(name, (size_t)len + 1, "%s+0x%" PRIx64, module, off);
	hashmap__put(s->names, (uintptr_t)owner, off, name);
	return name;
}

static struct elf_symtab *vdso_table(struct symbolizer *s)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	const struct proc_map *m;
	struct proc_maps *maps;

	if (s->vdso_tried)
		return s->vdso;
	s->vdso_tried = true;
	if (!base)
		return NULL;
	/* Every process of this kernel and ABI maps the same image: read our own. */
	maps = proc_maps__read(NULL, getpid());
	m = maps ? proc_maps__find(maps, base) : NULL;
	if (m && m->start == base) {
		s->vdso_size = m->end - m->start;
		s->vdso = elf_symtab__open_memory((const void *)(uintptr_t)base, s->vdso_size);
	}
	proc_maps__free(maps);
	return s->vdso;
}

/* "vdso_fn@0xSTART": a vDSO function without a symbol, one name for all its addresses. */
static const char *vdso_fn_name(struct symbolizer *s, uint64_t start)
{
	char buf[40];
	const char *name;

	snprintf(buf, sizeof(buf), "vdso_fn@0x%" PRIx64, start);
	name = intern_label(s, buf);
	return name ? name : UNKNOWN;
}

static const char *jit_name(struct symbolizer *s, struct process *p, uint64_t addr)
{
	const struct perf_map_sym *sym = NULL;
	uint64_t now;
	size_t before;

	if (!s->perf_maps)
		return NULL;
	now = clock__mono_ns();
	if (p->jit_fd < 0 &&
	    (!p->jit_checked_ns || now - p->jit_checked_ns >= PERF_MAP_RECHECK_NS)) {
		/* Written after our snapshot, maybe: look again, not on every lookup. */
		p->jit_checked_ns = now;
		process__open_jit(s, p);
		if (p->jit_fd >= 0)
			p->jit_checked_ns = 0;
	}
	if (p->jit_fd < 0)
		return NULL;
	if (!p->jit) {
		p->jit = perf_map__new();
		if (!p->jit)
			return NULL;
	}
	sym = perf_map__lookup(p->jit, addr);
	/* A miss may be code compiled since the last read: the file only grows. */
	if (!sym && (!p->jit_checked_ns || now - p->jit_checked_ns >= PERF_MAP_RECHECK_NS)) {
		p->jit_checked_ns = now;
		before = perf_map__bytes(p->jit);
		if (perf_map__update_fd(p->jit, p->jit_fd) == -EFBIG && !p->jit_capped) {
			p->jit_capped = true;
			s->stats.perf_maps_capped++;
		}
		s->jit_bytes += perf_map__bytes(p->jit) - before;
		note_bytes(s);
		sym = perf_map__lookup(p->jit, addr);
	}
	if (!sym)
		return NULL;
	s->stats.perf_map_hits++;
	return sym->name;
}

/* What an address resolved to: the name, and for symbols in files, where to find DWARF. */
struct resolved {
	const char *name;
	struct elf_file *file;
	uint64_t vaddr;
	bool named; /* a symbol, not module+0xOFF */
};

static void name_in_mapping(struct symbolizer *s, struct process *p, size_t idx, uint64_t addr,
			    struct resolved *r)
{
	const struct proc_map *m = proc_maps__at(p->maps, idx);
	const struct map_slot *slot = &p->slots[idx];
	struct elf_file *f = slot->file;
	const struct elf_sym *sym;
	struct elf_symtab *vdso;
	uint64_t off, vaddr;
	const char *jit;

	switch (slot->kind) {
	case SLOT_FILE:
		break;
	case SLOT_VDSO:
		vdso = vdso_table(s);
		if (vdso && m->end - m->start == s->vdso_size &&
		    !elf_symtab__offset_to_vaddr(vdso, addr - m->start, &vaddr)) {
			if ((sym = elf_symtab__lookup(vdso, vaddr))) {
				r->name = sym->name;
				r->named = true;
				return;
			}
			/* A static helper (the clock read): named by where it starts. */
			if (!elf_symtab__fn_start(vdso, vaddr, &off)) {
				r->name = vdso_fn_name(s, off);
				r->named = strcmp(r->name, UNKNOWN) != 0;
				return;
			}
		}
		r->name = unnamed(s, slot->label, slot->label, addr - m->start);
		return;
	case SLOT_ANON:
	case SLOT_LABEL:
		jit = jit_name(s, p, addr);
		if (jit) {
			r->name = jit;
			r->named = true;
			return;
		}
		r->name = unnamed(s, slot->label, slot->label, addr - m->start);
		return;
	default:
		return;
	}
	f->last_used = s->tick;
	off = addr - m->start + m->offset;
	/* Without a file (or a segment holding off), the file offset is the best address left. */
	if (file__load(s, f) || elf_symtab__offset_to_vaddr(f->tab, off, &vaddr)) {
		r->name = unnamed(s, f, f->basename, off);
		return;
	}
	r->file = f;
	r->vaddr = vaddr;
	sym = elf_symtab__lookup(f->tab, vaddr);
	if (!sym) {
		r->name = unnamed(s, f, f->basename, vaddr);
		return;
	}
	r->name = s->demangle ? elf_symtab__demangled(f->tab, sym) : sym->name;
	r->named = true;
}

/* What addr is, without counting a lookup (resolve_user counts). */
static void locate_user(struct symbolizer *s, pid_t pid, uint32_t gen, uint64_t addr,
			struct resolved *r)
{
	struct process *p;
	ssize_t idx = -ENOENT;

	memset(r, 0, sizeof(*r));
	r->name = UNKNOWN;
	s->tick++;
	if (frame_token__is(addr)) {
		const char *name = frame_names__name(s->frame_names, addr);

		r->name = name ? name : UNKNOWN;
		r->named = name != NULL;
		return;
	}
	p = process__get(s, pid, gen);
	if (!p)
		return;
	p->last_used = s->tick;
	if (p->maps)
		idx = proc_maps__index(p->maps, addr);
	if (idx < 0 && !p->dead && clock__mono_ns() - p->read_ns >= REFRESH_INTERVAL_NS) {
		if (!process__read(s, p) && p->maps)
			idx = proc_maps__index(p->maps, addr);
	}
	if (idx >= 0)
		name_in_mapping(s, p, (size_t)idx, addr, r);
}

static void resolve_user(struct symbolizer *s, pid_t pid, uint32_t gen, uint64_t addr,
			 struct resolved *r)
{
	locate_user(s, pid, gen, addr, r);
	s->stats.user_lookups++;
	if (!r->named)
		s->stats.user_unresolved++;
}

const char *symbolizer__user_gen(struct symbolizer *s, pid_t pid, uint32_t gen, uint64_t addr)
{
	struct resolved r;

	resolve_user(s, pid, gen, addr, &r);
	return r.name;
}

size_t symbolizer__user_depth(struct symbolizer *s, pid_t pid, uint32_t gen, const uint64_t *ips,
			      size_t n)
{
	struct process *p = process__get(s, pid, gen);
	const struct proc_map *m;

	if (!p || !p->maps)
		return n;
	for (size_t i = 1; i < n; i++) {
		m = proc_maps__find(p->maps, ips[i] - 1);
		if (m && !(m->perms & PROC_MAP_EXEC)) {
			s->stats.bogus_frames += n - i;
			return i;
		}
	}
	return n;
}

const char *symbolizer__user(struct symbolizer *s, pid_t pid, uint64_t addr)
{
	return symbolizer__user_gen(s, pid, 0, addr);
}

int symbolizer__user_site(struct symbolizer *s, pid_t pid, uint32_t gen, uint64_t addr,
			  struct symbolizer_site *ret)
{
	struct resolved r;

	/* The frame was named (and counted) already: this asks again where it lies. */
	locate_user(s, pid, gen, addr, &r);
	if (!r.file || !r.file->tab ||
	    elf_symtab__segment(r.file->tab, r.vaddr, &ret->seg_start, &ret->seg_end,
				&ret->seg_off))
		return -ENOENT;
	ret->path = r.file->path;
	ret->vaddr = r.vaddr;
	ret->build_id_len = elf_symtab__build_id(r.file->tab, &ret->build_id);
	if (!ret->build_id_len)
		ret->build_id = NULL;
	return 0;
}

void symbolizer__set_sites(struct symbolizer *s, struct frame_sites *sites)
{
	s->sites = sites;
}

struct frame_sites *symbolizer__sites(const struct symbolizer *s)
{
	return s->sites;
}

static struct dwarf_lines *file__dwarf(struct symbolizer *s, struct elf_file *f)
{
	struct elf_symtab *dbg;
	char root[PATH_MAX];
	int fd = -1;

	if (f->dw || f->dw_tried)
		return f->dw;
	f->dw_tried = true;
	if (elf_symtab__has_dwarf(f->tab)) {
		fd = f->fd >= 0 ? fcntl(f->fd, F_DUPFD_CLOEXEC, 0) : file__reopen(s, f);
	} else {
		if (!f->debug_path && !f->debug_tried) {
			/* Not stripped, so never looked for, but its DWARF may be split off. */
			f->debug_tried = true;
			owner_root(s, f, root, sizeof(root));
			dbg = debuginfo__find(s->dbg, f->tab, root, f->path, &f->debug_path);
			if (dbg)
				s->stats.debug_files++;
			elf_symtab__free(dbg);
		}
		if (f->debug_path)
			fd = open(f->debug_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	}
	if (fd < 0)
		return NULL;
	f->dw = dwarf_lines__open(fd);
	if (f->dw) {
		f->bytes += dwarf_lines__bytes(f->dw);
		s->file_bytes += dwarf_lines__bytes(f->dw);
		note_bytes(s);
	}
	return f->dw;
}

static const char *demangled_copy(struct symbolizer *s, const char *name)
{
	const char *copy;
	char *d;

	if (!s->demangle || !demangle__is_cxx(name))
		return name;
	d = demangle__cxx(name);
	if (!d)
		return name;
	copy = arena__strndup(s->names_arena, d, strlen(d));
	free(d);
	return copy ? copy : name;
}

/* A DWARF answer kept until the next trim: walking scopes costs ~100 us, a lookup here ~50 ns. */
struct frames_memo {
	int n;
	struct symbolizer_frame f[];
};

static struct frames_memo *memo_new(struct symbolizer *s, int n)
{
	size_t size = sizeof(struct frames_memo) + (size_t)n * sizeof(struct symbolizer_frame);
	char *p = arena__alloc(s->names_arena, size + 7);

	/* The arena is for text: align by hand. */
	return p ? (struct frames_memo *)(((uintptr_t)p + 7) & ~(uintptr_t)7) : NULL;
}

int symbolizer__user_frames(struct symbolizer *s, pid_t pid, uint32_t gen, uint64_t addr,
			    struct symbolizer_frame *ret, int max)
{
	struct dwarf_frame df[DWARF_LINES_MAX_INLINE];
	struct frames_memo *memo;
	struct dwarf_lines *dw;
	struct resolved r;
	int n, i;

	if (max < 1)
		return -EINVAL;
	resolve_user(s, pid, gen, addr, &r);
	ret[0] = (struct symbolizer_frame){.name = r.name};
	if (!s->debug_info || !r.file || !r.file->tab)
		return 1;
	memo = hashmap__get(s->lines, (uintptr_t)r.file, r.vaddr);
	if (memo && memo->n <= max) {
		memcpy(ret, memo->f, (size_t)memo->n * sizeof(*ret));
		return memo->n;
	}
	dw = file__dwarf(s, r.file);
	if (!dw)
		return 1;
	n = dwarf_lines__frames(dw, r.vaddr, s->names_arena, df,
				max < DWARF_LINES_MAX_INLINE ? max : DWARF_LINES_MAX_INLINE);
	if (n <= 0)
		return 1;
	for (i = 0; i < n; i++) {
		ret[i].file = df[i].file;
		ret[i].line = df[i].line;
		ret[i].inlined = df[i].inlined;
		/* The function that holds the rest keeps its symbol-table name, as without DWARF. */
		if (i == n - 1 && !df[i].inlined)
			ret[i].name = r.name;
		else
			ret[i].name = df[i].name ? demangled_copy(s, df[i].name) : r.name;
	}
	memo = memo_new(s, n);
	if (memo) {
		memo->n = n;
		memcpy(memo->f, ret, (size_t)n * sizeof(*ret));
		hashmap__put(s->lines, (uintptr_t)r.file, r.vaddr, memo);
	}
	note_bytes(s);
	return n;
}

/* "[bpf] NAME" for kallsyms' bpf_prog_TAG_NAME (and other [bpf] entries, trampolines). */
static const char *bpf_name(struct symbolizer *s, const struct ksym *ks)
{
	const char *n = ks->name, *p;
	char *name;
	size_t len;

	/* Keyed by the symbol's address: ks is a view that the next lookup reuses. */
	name = hashmap__get(s->names, (uintptr_t)ks->addr, KNAME_KEY);
	if (name)
		return name;
	if (!strncmp(n, "bpf_prog_", 9)) {
		p = n + 9 + strspn(n + 9, "0123456789abcdef");
		n = *p == '_' && p[1] ? p + 1 : n + 4; /* "prog_TAG" when it has no name */
	} else if (!strncmp(n, "bpf_", 4)) {
		n += 4;
	}
	len = strlen(n) + sizeof("[bpf] ");
	name = arena__alloc(s->names_arena, len);
	if (!name)
		return ks->name;
	snprintf(name, len, "[bpf] %s", n);
	hashmap__put(s->names, (uintptr_t)ks->addr, KNAME_KEY, name);
	return name;
}

const char *symbolizer__kernel(struct symbolizer *s, uint64_t addr)
{
	const struct ksym *ks = NULL;
	struct kallsyms *k;

	s->stats.kernel_lookups++;
	if (!s->ksyms_tried) {
		/* Read once: a failure (no permission, kptr_restrict) will not change later. */
		s->ksyms_tried = true;
		if (s->kallsyms_cache) {
			bool cached;

			s->ksyms = kallsyms__load_cached(s->kallsyms_cache, &cached);
			/* The cache lacks BPF programs and trampolines: the first frame it cannot
			 * name reads /proc/kallsyms at once, not 10 s later. */
			s->ksyms_ns = cached ? 0 : clock__mono_ns();
		} else {
			s->ksyms = kallsyms__load(s->kallsyms_path);
			s->ksyms_ns = clock__mono_ns();
		}
	}
	if (s->ksyms)
		ks = kallsyms__lookup(s->ksyms, addr);
	if (!ks && s->ksyms && !s->old_ksyms &&
	    clock__mono_ns() - s->ksyms_ns >= KALLSYMS_RELOAD_NS) {
		/* A BPF program or module loaded since the last read. The old table's strings
		 * stay valid until the next trim. */
		k = kallsyms__load(s->kallsyms_path);
		s->ksyms_ns = clock__mono_ns();
		if (k) {
			s->old_ksyms = s->ksyms;
			s->ksyms = k;
			ks = kallsyms__lookup(k, addr);
		}
	}
	if (!ks) {
		s->stats.kernel_unresolved++;
		return UNKNOWN_KERNEL;
	}
	if (ks->module && !strcmp(ks->module, "bpf"))
		return bpf_name(s, ks);
	return ks->name;
}

/* What trim may drop, cheapest to lose first, then least recently used. */
enum victim_class {
	VICTIM_IDLE,   /* a live process's snapshot no sample took yet: read again at its first */
	VICTIM_CACHE,  /* a file's tables (read again), an ended image nothing is to name */
	VICTIM_PINNED, /* an ended image samples not named yet refer to: its names are lost */
};

struct victim {
	enum victim_class cls;
	uint64_t last_used;
	struct elf_file *file;
	struct process *proc;
};

static int cmp_victim(const void *a, const void *b)
{
	const struct victim *x = a, *y = b;

	if (x->cls != y->cls)
		return x->cls < y->cls ? -1 : 1;
	return x->last_used < y->last_used ? -1 : x->last_used > y->last_used;
}

struct collect_ctx {
	struct victim *v;
	size_t n, cap;
	uint64_t keep_since_ns;
	uint64_t pinned_bytes; /* of the VICTIM_PINNED images */
};

static void collect_procs_cb(void *val, void *arg)
{
	struct collect_ctx *c = arg;
	struct process *p = val;
	enum victim_class cls;

	if (c->n >= c->cap)
		return;
	if (p->dead)
		cls = p->used_ns >= c->keep_since_ns ? VICTIM_PINNED : VICTIM_CACHE;
	else if (p->idle)
		cls = VICTIM_IDLE;
	else
		return;
	/* Idle snapshots are never looked up: the oldest generation goes first. */
	c->v[c->n++] = (struct victim){
		.cls = cls, .last_used = cls == VICTIM_IDLE ? p->gen : p->last_used, .proc = p};
	if (cls == VICTIM_PINNED)
		c->pinned_bytes += p->bytes;
}

void symbolizer__keep_since(struct symbolizer *s, uint64_t ns)
{
	s->keep_since_ns = ns;
}

void symbolizer__batch_begin(struct symbolizer *s)
{
	s->in_batch = true;
	s->batch_tick = s->tick + 1;
}

void symbolizer__batch_end(struct symbolizer *s)
{
	s->in_batch = false;
	symbolizer__trim(s);
}

void symbolizer__trim(struct symbolizer *s)
{
	struct collect_ctx c = {};
	struct elf_file **pp, *f;
	bool freed = false;
	size_t nfiles = 0, i;

	if (s->old_ksyms) {
		kallsyms__free(s->old_ksyms);
		s->old_ksyms = NULL;
		freed = true; /* "[bpf] NAME" strings are keyed by its symbols' addresses */
	}
	if (total_bytes(s) > s->cache_bytes) {
		for (f = s->all_files; f; f = f->next)
			nfiles++;
		c.cap = nfiles + hashmap__count(s->procs);
		c.v = calloc(c.cap ? c.cap : 1, sizeof(*c.v));
	}
	if (c.v) {
		for (f = s->all_files; f; f = f->next) {
			if (f->bytes)
				c.v[c.n++] = (struct victim){
					.cls = VICTIM_CACHE, .last_used = f->last_used, .file = f};
		}
		c.keep_since_ns = s->keep_since_ns;
		hashmap__for_each(s->procs, collect_procs_cb, &c);
		qsort(c.v, c.n, sizeof(*c.v), cmp_victim);
		/* Images still to be named are outside the cache until it is twice over: the
		 * files' tables are not given up for them (each stack would read them again). */
		for (i = 0; i < c.n && total_bytes(s) - c.pinned_bytes > s->cache_bytes; i++) {
			if (c.v[i].cls == VICTIM_PINNED)
				break;
			/* What the batch being named has used stays until it ends. */
			if (c.v[i].cls != VICTIM_IDLE && s->in_batch &&
			    c.v[i].last_used >= s->batch_tick)
				continue;
			if (c.v[i].file) {
				file__drop_tables(s, c.v[i].file);
			} else {
				if (c.v[i].cls == VICTIM_IDLE)
					s->stats.idle_dropped++;
				process__unlink(s, c.v[i].proc);
				process__free(s, c.v[i].proc);
			}
			/* Memoised DWARF answers point into what was dropped. */
			freed = true;
			s->stats.evictions++;
		}
		/* Past twice the cache, the least recently used of them go too (counted). */
		for (; i < c.n && total_bytes(s) > 2 * s->cache_bytes; i++) {
			if (c.v[i].cls != VICTIM_PINNED)
				continue;
			s->stats.pinned_dropped++;
			s->stats.evictions++;
			process__unlink(s, c.v[i].proc);
			process__free(s, c.v[i].proc);
			freed = true;
		}
		free(c.v);
	}
	/* Entries no snapshot refers to any more, with nothing loaded, are only weight. */
	for (pp = &s->all_files; (f = *pp);) {
		if (f->refs || f->bytes) {
			pp = &f->next;
			continue;
		}
		*pp = f->next;
		if (!f->detached)
			hashmap__remove(s->files, f->dev, f->ino);
		file__free(s, f);
		freed = true;
	}
	/* Names are keyed by their owner's address: a freed owner's may be reused. */
	if (freed || arena__bytes(s->names_arena) > s->cache_bytes / NAMES_SHARE) {
		struct hashmap *h = hashmap__new(), *l = hashmap__new();
		struct arena *a = arena__new();

		if (h && l && a) {
			hashmap__free(s->names);
			hashmap__free(s->lines);
			arena__free(s->names_arena);
			s->names = h;
			s->lines = l;
			s->names_arena = a;
		} else {
			hashmap__free(h);
			hashmap__free(l);
			arena__free(a);
		}
	}
}

uint64_t symbolizer__cache_bytes(const struct symbolizer *s)
{
	return s->cache_bytes;
}

void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *ret_stats)
{
	struct frame_names_stats fs;

	*ret_stats = s->stats;
	ret_stats->open_files = s->nr_fds;
	ret_stats->bytes = total_bytes(s);
	frame_names__stats(s->frame_names, &fs);
	ret_stats->frame_names = fs.names;
	ret_stats->frame_name_bytes = fs.bytes;
	ret_stats->frame_names_full = fs.full;
}

uint64_t symbolizer__intern_frame(struct symbolizer *s, const char *name)
{
	if (!s->frame_names)
		s->frame_names = frame_names__new(0, 0);
	return s->frame_names ? frame_names__intern(s->frame_names, name) : 0;
}

bool symbolizer__debug_info(const struct symbolizer *s)
{
	return s->debug_info;
}
