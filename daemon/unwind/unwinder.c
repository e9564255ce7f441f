// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "bpf/xsprof_events.h"
#include "daemon/base/hashmap.h"
#include "daemon/symbolize/proc_maps.h"
#include "daemon/unwind/unwind_table.h"
#include "daemon/unwind/unwinder.h"

#define MAX_EXEC_SEGS 8

/* One file's table: rows [first, first + count) of the BPF array. */
struct table {
	uint64_t dev, ino, size, mtime_ns;
	uint32_t first, count; /* count 0: the file has no usable table (cached as such) */
	uint32_t refs;	       /* processes mapping it now */
	uint64_t last_used;
	struct {
		uint64_t offset, vaddr, filesz;
	} segs[MAX_EXEC_SEGS]; /* executable PT_LOADs: where mapped offsets land in vaddrs */
	int nr_segs;
};

struct process {
	pid_t pid;
	struct table **tables; /* one reference each */
	size_t nr_tables;
};

/* Free ranges of the row array, sorted by start, coalesced. */
struct extent {
	uint32_t start, len;
};

struct unwinder {
	struct unwinder_opts o;
	struct extent *free;
	size_t nr_free, free_cap;
	struct hashmap *tables; /* (dev, ino) ^ ... -> struct table */
	struct hashmap *procs;	/* pid -> struct process */
	struct table *vdso;	/* the vDSO's table: one image for every process */
	uint64_t tick;
	uint64_t unref_rows; /* rows of tables no process maps */
	struct xsprof_unwind_proc scratch;
	struct unwinder_stats st;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- row allocator: first fit over the free extents ---- */

static int rows__alloc(struct unwinder *u, uint32_t n, uint32_t *ret_first)
{
	for (size_t i = 0; i < u->nr_free; i++) {
		struct extent *e = &u->free[i];

		if (e->len < n)
			continue;
		*ret_first = e->start;
		e->start += n;
		e->len -= n;
		if (!e->len) {
			memmove(e, e + 1, (u->nr_free - i - 1) * sizeof(*e));
			u->nr_free--;
		}
		u->st.rows += n;
		return 0;
	}
	return -ENOSPC;
}

static int rows__release(struct unwinder *u, uint32_t first, uint32_t n)
{
	size_t i = 0;

	if (!n)
		return 0;
	while (i < u->nr_free && u->free[i].start < first)
		i++;
	/* Merge with the neighbours where they touch. */
	if (i > 0 && u->free[i - 1].start + u->free[i - 1].len == first) {
		u->free[i - 1].len += n;
		if (i < u->nr_free && first + n == u->free[i].start) {
			u->free[i - 1].len += u->free[i].len;
			memmove(&u->free[i], &u->free[i + 1],
				(u->nr_free - i - 1) * sizeof(*u->free));
			u->nr_free--;
		}
	} else if (i < u->nr_free && first + n == u->free[i].start) {
		u->free[i].start = first;
		u->free[i].len += n;
	} else {
		if (u->nr_free == u->free_cap) {
			size_t ncap = u->free_cap * 2;
			struct extent *nf = realloc(u->free, ncap * sizeof(*nf));

			if (!nf)
				return -ENOMEM; /* the rows leak until exit: counted in rows */
			u->free = nf;
			u->free_cap = ncap;
		}
		memmove(&u->free[i + 1], &u->free[i], (u->nr_free - i) * sizeof(*u->free));
		u->free[i] = (struct extent){first, n};
		u->nr_free++;
	}
	u->st.rows -= n;
	return 0;
}

/* ---- tables ---- */

static uint64_t table_key2(const struct stat *st)
{
	return ((uint64_t)st->st_size << 1) ^
	       ((uint64_t)st->st_mtim.tv_sec * 1000000000ull + (uint64_t)st->st_mtim.tv_nsec);
}

static void table__drop(struct unwinder *u, struct table *t)
{
	if (t->refs == 0)
		u->unref_rows -= t->count;
	rows__release(u, t->first, t->count);
	free(t);
}

struct lru_ctx {
	struct table *oldest;
};

static void find_lru_cb(void *val, void *ctx)
{
	struct table *t = val;
	struct lru_ctx *c = ctx;

	if (!t->refs && t->count && (!c->oldest || t->last_used < c->oldest->last_used))
		c->oldest = t;
}

/* Evict the least recently used table no process maps; false when there is none. */
static bool evict_one(struct unwinder *u)
{
	struct lru_ctx c = {NULL};

	hashmap__for_each(u->tables, find_lru_cb, &c);
	if (!c.oldest)
		return false;
	hashmap__remove(u->tables, c.oldest->dev ^ (c.oldest->ino << 20), c.oldest->ino);
	u->st.tables--;
	u->st.tables_evicted++;
	table__drop(u, c.oldest);
	return true;
}

/* Executable PT_LOADs of the file at fd. */
static void read_segments(int fd, struct table *t)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t n = 0;

	if (elf && !elf_getphdrnum(elf, &n)) {
		for (size_t i = 0; i < n && t->nr_segs < MAX_EXEC_SEGS; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD ||
			    !(ph.p_flags & PF_X))
				continue;
			t->segs[t->nr_segs].offset = ph.p_offset;
			t->segs[t->nr_segs].vaddr = ph.p_vaddr;
			t->segs[t->nr_segs].filesz = ph.p_filesz;
			t->nr_segs++;
		}
	}
	elf_end(elf);
}

/*
 * rows[0, n) into the BPF array at first, by batched updates: the array is not mapped into
 * our address space, so its megabytes do not count as ours. 0 or -errno.
 */
static int rows__write(const struct unwinder *u, uint32_t first,
		       const struct xsprof_unwind_row *rows, size_t n)
{
	enum { CHUNK = 4096 };
	LIBBPF_OPTS(bpf_map_batch_opts, bo);
	uint32_t keys[CHUNK];

	for (size_t off = 0; off < n;) {
		__u32 count = (__u32)(n - off < CHUNK ? n - off : CHUNK);

		for (__u32 i = 0; i < count; i++)
			keys[i] = first + (uint32_t)(off + i);
		if (bpf_map_update_batch(u->o.rows_fd, keys, &rows[off], &count, &bo)) {
			/* A kernel without batch updates for arrays (before 5.6): one by one. */
			if (errno != EINVAL && errno != EOPNOTSUPP)
				return -errno;
			for (__u32 i = 0; i < count; i++)
				if (bpf_map_update_elem(u->o.rows_fd, &keys[i], &rows[off + i], 0))
					return -errno;
		}
		off += count;
	}
	return 0;
}

/* Copy a compiled table into the row array, evicting old tables for room. */
static void table__place(struct unwinder *u, struct table *t, const struct unwind_table *ut)
{
	size_t n = unwind_table__count(ut);

	if (n > u->o.max_rows) {
		u->st.tables_no_room++;
		return;
	}
	while (rows__alloc(u, (uint32_t)n, &t->first))
		if (!evict_one(u)) {
			u->st.tables_no_room++;
			return;
		}
	if (rows__write(u, t->first, unwind_table__rows(ut), n)) {
		rows__release(u, t->first, (uint32_t)n);
		u->st.tables_no_room++;
		return;
	}
	t->count = (uint32_t)n;
}

/* The table of the open file fd (cached, or compiled now); NULL on allocation failure. */
static struct table *table__get(struct unwinder *u, int fd, const struct stat *st)
{
	uint64_t k1 = (uint64_t)st->st_dev ^ ((uint64_t)st->st_ino << 20), t0;
	struct table *t = hashmap__get(u->tables, k1, st->st_ino);
	struct unwind_table *ut;

	if (t && t->dev == st->st_dev && t->size == (uint64_t)st->st_size &&
	    t->mtime_ns == table_key2(st))
		return t;
	if (t) {
		/* The file was replaced in place: the old table is wrong now. */
		if (t->refs)
			return t; /* still mapped by someone: keep until they go */
		hashmap__remove(u->tables, k1, st->st_ino);
		u->st.tables--;
		table__drop(u, t);
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->dev = st->st_dev;
	t->ino = st->st_ino;
	t->size = st->st_size;
	t->mtime_ns = table_key2(st);
	t0 = now_ns();
	read_segments(fd, t);
	ut = unwind_table__from_elf_fd(fd);
	if (ut) {
		struct unwind_table_stats ts;

		unwind_table__stats(ut, &ts);
		u->st.eh_frame_bytes += ts.section_bytes;
		u->st.tables_built++;
		table__place(u, t, ut);
		unwind_table__free(ut);
	} else {
		u->st.tables_failed++;
	}
	u->st.build_ns += now_ns() - t0;
	if (hashmap__put(u->tables, k1, st->st_ino, t)) {
		table__drop(u, t);
		return NULL;
	}
	u->st.tables++;
	u->unref_rows += t->count; /* no references yet */
	return t;
}

static void table__ref(struct unwinder *u, struct table *t)
{
	if (t->refs++ == 0)
		u->unref_rows -= t->count;
	t->last_used = ++u->tick;
}

static void table__unref(struct unwinder *u, struct table *t)
{
	if (--t->refs == 0)
		u->unref_rows += t->count;
}

/* Keep the tables no process maps within a quarter of the array. */
static void trim_unreferenced(struct unwinder *u)
{
	while (u->unref_rows > u->o.max_rows / 4 && evict_one(u))
		;
}

/* ---- the vDSO: the same image in every process; ours is read once ---- */

static void load_vdso(struct unwinder *u)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	struct proc_maps *maps;
	const struct proc_map *m;
	struct unwind_table *ut;
	struct table *t;

	if (!base)
		return;
	maps = proc_maps__read(u->o.proc_root, getpid());
	m = maps ? proc_maps__find(maps, base) : NULL;
	if (!m) {
		proc_maps__free(maps);
		return;
	}
	ut = unwind_table__from_elf_memory((const void *)(uintptr_t)m->start, m->end - m->start);
	proc_maps__free(maps);
	t = ut ? calloc(1, sizeof(*t)) : NULL;
	if (t) {
		table__place(u, t, ut);
		t->refs = 1;	/* never evicted */
		t->nr_segs = 1; /* linked at 0, mapped from its start */
		u->vdso = t;
	}
	unwind_table__free(ut);
}

/* ---- processes ---- */

static void process__release(struct unwinder *u, struct process *p)
{
	for (size_t i = 0; i < p->nr_tables; i++)
		table__unref(u, p->tables[i]);
	free(p->tables);
	p->tables = NULL;
	p->nr_tables = 0;
}

/* The bias of mapping m of file t: process address - bias = ELF virtual address. */
static bool mapping_bias(const struct table *t, const struct proc_map *m, uint64_t *ret)
{
	for (int i = 0; i < t->nr_segs; i++) {
		uint64_t seg_start = t->segs[i].offset & ~0xfffull;

		if (m->offset >= seg_start && m->offset < t->segs[i].offset + t->segs[i].filesz) {
			*ret = m->start - m->offset + t->segs[i].offset - t->segs[i].vaddr;
			return true;
		}
	}
	return false;
}

/* The table for one executable mapping of pid, or NULL (no file, no table). */
static struct table *table_for_mapping(struct unwinder *u, pid_t pid, const struct proc_map *m)
{
	char path[PATH_MAX];
	struct table *t = NULL;
	struct stat st;
	int fd, n;

	if (m->path && !strcmp(m->path, "[vdso]"))
		return u->vdso;
	if (!m->path || m->path[0] != '/' || !m->inode)
		return NULL;
	n = snprintf(path, sizeof(path), "%s/%d/map_files/%" PRIx64 "-%" PRIx64,
		     u->o.proc_root ? u->o.proc_root : "/proc", (int)pid, m->start, m->end);
	if (n < 0 || (size_t)n >= sizeof(path))
		return NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode))
		t = table__get(u, fd, &st);
	close(fd);
	return t;
}

/* Fill u->scratch from pid's mappings; the tables it uses go to p (referenced). */
static int process__fill(struct unwinder *u, struct process *p, const struct proc_maps *maps)
{
	struct xsprof_unwind_proc *v = &u->scratch;
	size_t nr = proc_maps__count(maps);

	v->nr_maps = 0;
	p->tables = calloc(nr ? nr : 1, sizeof(*p->tables));
	if (!p->tables)
		return -ENOMEM;
	for (size_t i = 0; i < nr; i++) {
		const struct proc_map *m = proc_maps__at(maps, i);
		struct xsprof_unwind_map *e;
		struct table *t;
		uint64_t bias;

		if (!(m->perms & PROC_MAP_EXEC))
			continue;
		t = table_for_mapping(u, p->pid, m);
		if (!t || !t->count)
			continue;
		if (t == u->vdso)
			bias = m->start;
		else if (!mapping_bias(t, m, &bias))
			continue;
		if (v->nr_maps == XSPROF_UNWIND_MAX_MAPS) {
			u->st.maps_capped++;
			continue;
		}
		if (t != u->vdso) {
			table__ref(u, t);
			p->tables[p->nr_tables++] = t;
		}
		e = &v->maps[v->nr_maps++];
		e->start = m->start;
		e->end = m->end;
		e->bias = bias;
		e->row_first = t->first;
		e->row_count = t->count;
	}
	return 0;
}

int unwinder__add_process(struct unwinder *u, pid_t pid)
{
	struct process *p = hashmap__get(u->procs, (uint64_t)pid, 0), old = {0};
	struct proc_maps *maps;
	__u32 key = (__u32)pid;
	bool fresh = !p;
	int err;

	if (pid <= 0)
		return -EINVAL;
	maps = proc_maps__read(u->o.proc_root, pid);
	if (!maps) {
		err = -errno;
		if (err == -ESRCH || err == -ENOENT) {
			u->st.gone++;
			err = -ESRCH;
		}
		return err;
	}
	if (fresh) {
		p = calloc(1, sizeof(*p));
		if (!p || hashmap__put(u->procs, (uint64_t)pid, 0, p)) {
			free(p);
			proc_maps__free(maps);
			return -ENOMEM;
		}
		p->pid = pid;
		u->st.processes++;
	}
	/* New references first, then the old ones dropped: tables kept by both stay. */
	old = *p;
	p->tables = NULL;
	p->nr_tables = 0;
	err = process__fill(u, p, maps);
	proc_maps__free(maps);
	process__release(u, &old);
	if (err)
		return err;
	if (bpf_map_update_elem(u->o.procs_fd, &key, &u->scratch, BPF_ANY)) {
		err = -errno;
		if (err == -E2BIG || err == -ENOMEM)
			u->st.procs_full++;
		return err;
	}
	u->st.loads++;
	trim_unreferenced(u);
	return 0;
}

void unwinder__remove_process(struct unwinder *u, pid_t pid)
{
	struct process *p = hashmap__remove(u->procs, (uint64_t)pid, 0);
	__u32 key = (__u32)pid;

	if (!p)
		return;
	bpf_map_delete_elem(u->o.procs_fd, &key);
	process__release(u, p);
	free(p);
	u->st.processes--;
	trim_unreferenced(u);
}

struct unwinder *unwinder__new(const struct unwinder_opts *opts)
{
	struct unwinder *u = calloc(1, sizeof(*u));
	int err;

	if (!u)
		return NULL;
	u->o = *opts;
	u->free_cap = 64;
	u->free = malloc(u->free_cap * sizeof(*u->free));
	u->tables = hashmap__new();
	u->procs = hashmap__new();
	if (!u->free || !u->tables || !u->procs) {
		err = -ENOMEM;
		goto fail;
	}
	u->free[0] = (struct extent){0, opts->max_rows};
	u->nr_free = 1;
	u->st.max_rows = opts->max_rows;
	elf_version(EV_CURRENT);
	load_vdso(u);
	return u;
fail:
	unwinder__free(u);
	errno = -err;
	return NULL;
}

static void free_table_cb(void *val, void *ctx)
{
	free(val);
}

static void free_process_cb(void *val, void *ctx)
{
	struct process *p = val;

	free(p->tables);
	free(p);
}

void unwinder__free(struct unwinder *u)
{
	if (!u)
		return;
	if (u->procs) {
		hashmap__for_each(u->procs, free_process_cb, NULL);
		hashmap__free(u->procs);
	}
	if (u->tables) {
		hashmap__for_each(u->tables, free_table_cb, NULL);
		hashmap__free(u->tables);
	}
	free(u->vdso);
	free(u->free);
	free(u);
}

void unwinder__stats(const struct unwinder *u, struct unwinder_stats *ret)
{
	*ret = u->st;
	ret->map_bytes = (uint64_t)u->o.max_rows * sizeof(struct xsprof_unwind_row) +
			 u->st.processes * sizeof(struct xsprof_unwind_proc);
}
