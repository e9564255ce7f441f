// SPDX-License-Identifier: Apache-2.0
/*
 * Design: each process is a snapshot of its mappings (sorted, binary-searched); each mapped
 * file is read once into an ELF cache keyed by the (device, inode) that maps prints, shared by
 * every process that maps it, and kept, failed or not, until the symbolizer is freed. Every
 * string handed out is interned (symbol names in the file's table, "module+0x..." names in a
 * cache here), so a warm lookup allocates nothing and the pointers stay valid until free.
 * Not thread-safe: one symbolizer belongs to one thread (the daemon's event loop).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "daemon/symbolize/arena.h"
#include "daemon/symbolize/elf_symtab.h"
#include "daemon/symbolize/hashmap.h"
#include "daemon/symbolize/kallsyms.h"
#include "daemon/symbolize/proc_maps.h"
#include "daemon/symbolize/symbolizer.h"

#define UNKNOWN "[unknown]"
/* A miss re-reads a live process's maps (it may have dlopen'ed) at most this often. */
#define REFRESH_INTERVAL_NS 1000000000ULL

struct elf_entry {
	struct elf_symtab *tab; /* NULL when the file could not be read */
	const char *basename;
	int err;
};

/* Per mapping, what it resolves to; filled on the first lookup that lands in it. */
struct map_slot {
	struct elf_entry *elf; /* file-backed */
	const char *label;     /* "[heap]", "[vdso]", "[anon]", ...: no file to read */
	bool resolved;
};

struct process {
	pid_t pid;
	struct proc_maps *maps;
	struct map_slot *slots; /* parallel to maps */
	uint64_t read_ns;	/* last read of maps, successful or not */
};

struct symbolizer {
	char *proc_root;
	char *kallsyms_path;
	bool demangle;
	struct hashmap *procs;	/* pid -> struct process */
	struct hashmap *elfs;	/* (dev, inode) -> struct elf_entry */
	struct hashmap *names;	/* (owner pointer, offset) -> "module+0xOFF" */
	struct hashmap *labels; /* (hash, length) -> interned label */
	struct arena *arena;
	struct process *last; /* lookups come in runs of one pid */
	struct kallsyms *ksyms;
	bool ksyms_tried;
	struct symbolizer_stats stats;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->proc_root = strdup(opts && opts->proc_root ? opts->proc_root : "/proc");
	s->kallsyms_path =
		strdup(opts && opts->kallsyms_path ? opts->kallsyms_path : "/proc/kallsyms");
	s->demangle = !(opts && opts->no_demangle);
	s->procs = hashmap__new();
	s->elfs = hashmap__new();
	s->names = hashmap__new();
	s->labels = hashmap__new();
	s->arena = arena__new();
	if (!s->proc_root || !s->kallsyms_path || !s->procs || !s->elfs || !s->names ||
	    !s->labels || !s->arena) {
		symbolizer__free(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

static void process__free(struct process *p)
{
	if (!p)
		return;
	proc_maps__free(p->maps);
	free(p->slots);
	free(p);
}

static void free_process_cb(void *val, void *ctx)
{
	process__free(val);
}

static void free_elf_cb(void *val, void *ctx)
{
	struct elf_entry *e = val;

	elf_symtab__free(e->tab);
	free(e);
}

void symbolizer__free(struct symbolizer *s)
{
	if (!s)
		return;
	if (s->procs)
		hashmap__for_each(s->procs, free_process_cb, NULL);
	if (s->elfs)
		hashmap__for_each(s->elfs, free_elf_cb, NULL);
	hashmap__free(s->procs);
	hashmap__free(s->elfs);
	hashmap__free(s->names);
	hashmap__free(s->labels);
	arena__free(s->arena);
	kallsyms__free(s->ksyms);
	free(s->proc_root);
	free(s->kallsyms_path);
	free(s);
}

/*
 * Reads p's maps. An empty result (a zombie, or a pid that is gone) does not replace a snapshot
 * that has mappings, since those still name the addresses it sampled before it exited.
 */
static int process__read(struct symbolizer *s, struct process *p)
{
	struct map_slot *slots;
	struct proc_maps *m;
	size_t n;

	p->read_ns = now_ns();
	m = proc_maps__read(s->proc_root, p->pid);
	if (!m)
		return -errno;
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
	proc_maps__free(p->maps);
	free(p->slots);
	p->maps = m;
	p->slots = slots;
	return 0;
}

static struct process *process__new(pid_t pid)
{
	struct process *p = calloc(1, sizeof(*p));

	if (p)
		p->pid = pid;
	return p;
}

int symbolizer__add_process(struct symbolizer *s, pid_t pid)
{
	struct process *p;
	bool fresh = false;
	int err;

	if (pid <= 0)
		return -EINVAL;
	p = hashmap__get(s->procs, (uint64_t)pid, 0);
	if (!p) {
		p = process__new(pid);
		if (!p)
			return -ENOMEM;
		fresh = true;
	}
	err = process__read(s, p);
	if (err) {
		if (fresh)
			process__free(p);
		return err;
	}
	if (fresh) {
		err = hashmap__put(s->procs, (uint64_t)pid, 0, p);
		if (err) {
			process__free(p);
			return err;
		}
		s->stats.processes++;
	}
	return 0;
}

void symbolizer__forget_process(struct symbolizer *s, pid_t pid)
{
	struct process *p = hashmap__remove(s->procs, (uint64_t)pid, 0);

	if (p == s->last)
		s->last = NULL;
	process__free(p);
}

/*
 * A pid looked up without add_process is snapshotted now. One that cannot be read is kept with
 * no mappings, so it is retried at the refresh rate rather than on every lookup.
 */
static struct process *process__get(struct symbolizer *s, pid_t pid)
{
	struct process *p;

	if (s->last && s->last->pid == pid)
		return s->last;
	p = hashmap__get(s->procs, (uint64_t)pid, 0);
	if (!p) {
		if (pid <= 0)
			return NULL;
		p = process__new(pid);
		if (!p)
			return NULL;
		if (!process__read(s, p))
			s->stats.processes++;
		if (hashmap__put(s->procs, (uint64_t)pid, 0, p)) {
			process__free(p);
			return NULL;
		}
	}
	s->last = p;
	return p;
}

static uint64_t hash_str(const char *str, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)str[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* One copy of each label, so the name cache can key on its pointer. */
static const char *intern_label(struct symbolizer *s, const char *label)
{
	size_t len = strlen(label);
	uint64_t h = hash_str(label, len);
	const char *v;

	v = hashmap__get(s->labels, h, len);
	if (v && !strcmp(v, label))
		return v;
	v = arena__strndup(s->arena, label, len);
	/* On a hash collision the copy is simply not shared. */
	if (v && !hashmap__get(s->labels, h, len))
		hashmap__put(s->labels, h, len, (void *)v);
	return v;
}

static bool is_content_error(int err)
{
	return err == ENOEXEC || err == EBADMSG || err == EFBIG || err == ENOMEM;
}

/*
 * The file behind a mapping: through the process's root first (containers see their own
 * files), then the path as printed if it is still the mapped inode. A deleted file is only
 * reachable through map_files.
 */
static struct elf_symtab *open_mapped_file(struct symbolizer *s, pid_t pid,
					   const struct proc_map *m)
{
	char path[PATH_MAX + 64];
	struct elf_symtab *t;
	struct stat st;
	int n;

	if (m->deleted) {
		n = snprintf(path, sizeof(path), "%s/%d/map_files/%" PRIx64 "-%" PRIx64,
			     s->proc_root, (int)pid, m->start, m->end);
		if (n < 0 || (size_t)n >= sizeof(path)) {
			errno = ENAMETOOLONG;
			return NULL;
		}
		return elf_symtab__open(path);
	}
	n = snprintf(path, sizeof(path), "%s/%d/root%s", s->proc_root, (int)pid, m->path);
	if (n > 0 && (size_t)n < sizeof(path)) {
		t = elf_symtab__open(path);
		if (t || is_content_error(errno))
			return t;
	}
	if (stat(m->path, &st))
		return NULL;
	if (m->inode && st.st_ino != m->inode) {
		errno = ESTALE;
		return NULL;
	}
	return elf_symtab__open(m->path);
}

static struct elf_entry *elf_entry__get(struct symbolizer *s, pid_t pid, const struct proc_map *m)
{
	uint64_t dev = (uint64_t)m->dev_major << 32 | m->dev_minor;
	const char *base;
	struct elf_entry *e;

	e = hashmap__get(s->elfs, dev, m->inode);
	if (e)
		return e;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	base = strrchr(m->path, '/');
	base = base && base[1] ? base + 1 : m->path;
	e->basename = arena__strndup(s->arena, base, strlen(base));
	if (!e->basename) {
		free(e);
		return NULL;
	}
	e->tab = open_mapped_file(s, pid, m);
	e->err = e->tab ? 0 : errno;
	if (hashmap__put(s->elfs, dev, m->inode, e)) {
		elf_symtab__free(e->tab);
		free(e);
		return NULL;
	}
	if (e->tab)
		s->stats.files_loaded++;
	else
		s->stats.files_failed++;
	return e;
}

static int map_slot__resolve(struct symbolizer *s, pid_t pid, const struct proc_map *m,
			     struct map_slot *slot)
{
	if (!m->path)
		slot->label = intern_label(s, "[anon]");
	else if (m->path[0] != '/' || !m->inode)
		slot->label = intern_label(s, m->path); /* [heap], [vdso], [anon:name], ... */
	else
		slot->elf = elf_entry__get(s, pid, m);
	if (!slot->label && !slot->elf)
		return -ENOMEM;
	slot->resolved = true;
	return 0;
}

/* "module+0xOFF", formatted once per (owner, offset). */
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
	name = arena__alloc(s->arena, (size_t)len + 1);
	if (!name)
		return UNKNOWN;
	snprintf(name, (size_t)len + 1, "%s+0x%" PRIx64, module, off);
	hashmap__put(s->names, (uintptr_t)owner, off, name);
	return name;
}

/* The name for addr inside mapping m; false when it is only "module+0xOFF". */
static bool name_in_mapping(struct symbolizer *s, const struct proc_map *m,
			    const struct map_slot *slot, uint64_t addr, const char **ret_name)
{
	struct elf_entry *e = slot->elf;
	const struct elf_sym *sym;
	uint64_t off, vaddr;

	if (slot->label) {
		*ret_name = unnamed(s, slot->label, slot->label, addr - m->start);
		return false;
	}
	off = addr - m->start + m->offset;
	/* Without a file (or a segment holding off), the file offset is the best address left. */
	if (!e->tab || elf_symtab__offset_to_vaddr(e->tab, off, &vaddr)) {
		*ret_name = unnamed(s, e, e->basename, off);
		return false;
	}
	sym = elf_symtab__lookup(e->tab, vaddr);
	if (!sym) {
		*ret_name = unnamed(s, e, e->basename, vaddr);
		return false;
	}
	*ret_name = s->demangle ? elf_symtab__demangled(e->tab, sym) : sym->name;
	return true;
}

const char *symbolizer__user(struct symbolizer *s, pid_t pid, uint64_t addr)
{
	const char *name = UNKNOWN;
	struct map_slot *slot;
	struct process *p;
	ssize_t idx = -ENOENT;

	s->stats.user_lookups++;
	p = process__get(s, pid);
	if (!p)
		goto unresolved;
	if (p->maps)
		idx = proc_maps__index(p->maps, addr);
	if (idx < 0 && now_ns() - p->read_ns >= REFRESH_INTERVAL_NS) {
		if (!process__read(s, p) && p->maps)
			idx = proc_maps__index(p->maps, addr);
	}
	if (idx < 0)
		goto unresolved;
	slot = &p->slots[idx];
	if (!slot->resolved && map_slot__resolve(s, pid, proc_maps__at(p->maps, (size_t)idx), slot))
		goto unresolved;
	if (name_in_mapping(s, proc_maps__at(p->maps, (size_t)idx), slot, addr, &name))
		return name;
unresolved:
	s->stats.user_unresolved++;
	return name;
}

const char *symbolizer__kernel(struct symbolizer *s, uint64_t addr)
{
	const struct ksym *ks;

	s->stats.kernel_lookups++;
	if (!s->ksyms_tried) {
		/* Read once: a failure (no permission, kptr_restrict) will not change later. */
		s->ksyms_tried = true;
		s->ksyms = kallsyms__load(s->kallsyms_path);
	}
	ks = s->ksyms ? kallsyms__lookup(s->ksyms, addr) : NULL;
	if (ks)
		return ks->name;
	s->stats.kernel_unresolved++;
	return UNKNOWN;
}

void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *ret_stats)
{
	*ret_stats = s->stats;
}
