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
#include "daemon/symbolize/symbolizer_internal.h"

static size_t total_bytes(const struct symbolizer *s)
{
	return s->file_bytes + s->proc_bytes + s->jit_bytes + arena__bytes(s->names_arena) +
	       arena__bytes(s->labels_arena) + (s->ksyms ? kallsyms__bytes(s->ksyms) : 0);
}

void sym_note_bytes(struct symbolizer *s)
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
	s->hot_bytes = opts ? opts->hot_bytes : 0;
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
const char *sym_intern_label(struct symbolizer *s, const char *label)
{
	size_t len = strlen(label);
	uint64_t h = hash_bytes(HASH_INIT, label, len);
	const char *v;

	v = hashmap__get(s->labels, h, len);
	if (v && !strcmp(v, label))
		return v;
	/* The set of [anon:NAME] labels is the processes' choice: bound it. */
	if (arena__bytes(s->labels_arena) > LABELS_MAX_BYTES && strcmp(label, "[anon]"))
		return sym_intern_label(s, "[anon]");
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

struct process *sym_process__current(struct symbolizer *s, pid_t pid)
{
	return hashmap__get(s->cur, (uint64_t)pid, 0);
}

/* Whether (pid, gen) is still the running image of pid, so /proc/pid names it. */
static bool alive(struct symbolizer *s, pid_t pid, uint32_t gen)
{
	struct process *p = sym_process__current(s, pid);

	return p && p->gen == gen && !p->dead;
}

/* The root prefix that reaches the file's owner's view of paths, or "" for ours. */
void sym_owner_root(struct symbolizer *s, const struct elf_file *f, char *buf, size_t size)
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
int sym_file__reopen(struct symbolizer *s, struct elf_file *f)
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
	sym_owner_root(s, f, path, sizeof(path));
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
		sym_owner_root(s, f, root, sizeof(root));
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
int sym_file__load(struct symbolizer *s, struct elf_file *f)
{
	int fd;

	if (f->tab)
		return 0;
	if (f->err)
		return -f->err;
	fd = f->fd >= 0 ? f->fd : sym_file__reopen(s, f);
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
	/* Dropped and needed again at once: its table alone outgrows the cache (a PyTorch
	 * library's can be 100 MiB), and reading it at every batch would stall the loop. */
	if (f->dropped_ns && clock__mono_ns() - f->dropped_ns < SYM_HOT_REREAD_NS) {
		s->stats.reread_soon++;
		if (s->hot_bytes)
			f->hot_until_ns = clock__mono_ns() + SYM_HOT_KEEP_NS;
	}
	sym_note_bytes(s);
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
		sym_file__load(s, f);
	}
	return f;
}

static void bind_slot(struct symbolizer *s, struct process *p, const struct proc_map *m,
		      struct map_slot *slot)
{
	if (!m->path) {
		slot->kind = SLOT_ANON;
		slot->label = sym_intern_label(s, "[anon]");
	} else if (m->path[0] == '/' && m->inode) {
		slot->kind = SLOT_FILE;
		slot->file = file__for_mapping(s, p, m);
		if (slot->file) {
			slot->file->refs++;
			return;
		}
		slot->kind = SLOT_LABEL; /* out of memory: the name alone */
		slot->label = sym_intern_label(s, m->path);
	} else if (!strcmp(m->path, "[vdso]")) {
		slot->kind = SLOT_VDSO;
		slot->label = sym_intern_label(s, m->path);
	} else {
		/* [heap], [stack], [anon:NAME], memfd:NAME, ... */
		slot->kind = strncmp(m->path, "[anon", 5) ? SLOT_LABEL : SLOT_ANON;
		slot->label = sym_intern_label(s, m->path);
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
void sym_process__open_jit(struct symbolizer *s, struct process *p)
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

int sym_process__read(struct symbolizer *s, struct process *p)
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
	sym_process__open_jit(s, p);
	sym_note_bytes(s);
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
	old = sym_process__current(s, pid);
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
	struct process *q = sym_process__current(s, p->pid);

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
	p = sym_process__current(s, pid);
	if (p && !p->dead) {
		process__use(s, p);
		return sym_process__read(s, p);
	}
	p = process__new(s, pid);
	if (!p)
		return -ENOMEM;
	process__use(s, p);
	err = sym_process__read(s, p);
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

	while ((p = sym_process__current(s, pid))) {
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
	err = sym_process__read(s, p);
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
	p = sym_process__current(s, pid);
	if (p && !p->dead)
		process__end(s, p); /* that image is gone; its snapshot names what ran before */
	s->stats.execs++;
	return snapshot_idle(s, pid);
}

void symbolizer__exit(struct symbolizer *s, pid_t pid)
{
	struct process *p = sym_process__current(s, pid);

	if (p && !p->dead) {
		s->stats.exits++;
		process__end(s, p);
	}
}

int symbolizer__verify(struct symbolizer *s, pid_t pid)
{
	struct process *p = sym_process__current(s, pid);
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
	struct process *p = sym_process__current(s, pid);

	if (p && p->dead)
		return symbolizer__gen(s, pid) ? 0 : -ESRCH;
	/* Not snapshotted at its exec (its user's idle ones were at the cap, or it ran before
	 * we started): the same rule now, not a sample's. */
	if (!p)
		return snapshot_idle(s, pid);
	return sym_process__read(s, p);
}

uint32_t symbolizer__gen(struct symbolizer *s, pid_t pid)
{
	struct process *p, *q;

	if (pid <= 0)
		return 0;
	p = sym_process__current(s, pid);
	if (p && !p->dead) {
		process__use(s, p);
		return p->gen;
	}
	q = process__new(s, pid);
	if (!q)
		return p ? p->gen : 0;
	process__use(s, q);
	if (!sym_process__read(s, q) && proc_maps__count(q->maps))
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
	uint64_t now = clock__mono_ns();

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
			/* A hot file stays while all held is under hot_bytes. */
			if (c.v[i].file && c.v[i].file->hot_until_ns > now &&
			    total_bytes(s) <= s->hot_bytes)
				continue;
			if (c.v[i].file) {
				file__drop_tables(s, c.v[i].file);
				c.v[i].file->dropped_ns = now;
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
		/* One dropped lately stays known, so a read again soon is seen as one. */
		if (f->refs || f->bytes ||
		    (f->dropped_ns && now - f->dropped_ns < SYM_HOT_REREAD_NS)) {
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
	ret_stats->hot_files = ret_stats->hot_bytes = 0;
	for (const struct elf_file *f = s->all_files; f; f = f->next) {
		if (f->bytes && f->hot_until_ns > clock__mono_ns()) {
			ret_stats->hot_files++;
			ret_stats->hot_bytes += f->bytes;
		}
	}
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

const char *symbolizer__frame_name(const struct symbolizer *s, uint64_t token)
{
	return s->frame_names && frame_token__is(token) ? frame_names__name(s->frame_names, token)
							: NULL;
}

bool symbolizer__debug_info(const struct symbolizer *s)
{
	return s->debug_info;
}
