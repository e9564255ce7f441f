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

#include "daemon/base/clock.h"
#include "bpf/xsprof_events.h"
#include "daemon/base/hashmap.h"
#include "daemon/symbolize/proc_maps.h"
#include "daemon/unwind/unwind_internal.h"
#include "daemon/unwind/unwind_jvm.h"
#include "daemon/unwind/unwind_table.h"
#include "daemon/unwind/unwind_jvm.h"
#include "daemon/unwind/unwinder.h"

/* ---- first-fit ranges of an array ---- */

static int extents__init(struct extents *x, uint32_t total)
{
	x->cap = 64;
	x->v = malloc(x->cap * sizeof(*x->v));
	if (!x->v)
		return -ENOMEM;
	x->v[0] = (struct extent){0, total};
	x->n = total ? 1 : 0;
	x->used = 0;
	return 0;
}

int uw_extents__alloc(struct extents *x, uint32_t n, uint32_t *ret_first)
{
	for (size_t i = 0; i < x->n; i++) {
		struct extent *e = &x->v[i];

		if (e->len < n)
			continue;
		*ret_first = e->start;
		e->start += n;
		e->len -= n;
		if (!e->len) {
			memmove(e, e + 1, (x->n - i - 1) * sizeof(*e));
			x->n--;
		}
		x->used += n;
		return 0;
	}
	return -ENOSPC;
}

static void extents__release(struct extents *x, uint32_t first, uint32_t n)
{
	size_t i = 0;

	if (!n)
		return;
	while (i < x->n && x->v[i].start < first)
		i++;
	x->used -= n;
	/* Merge with the neighbours where they touch. */
	if (i > 0 && x->v[i - 1].start + x->v[i - 1].len == first) {
		x->v[i - 1].len += n;
		if (i < x->n && first + n == x->v[i].start) {
			x->v[i - 1].len += x->v[i].len;
			memmove(&x->v[i], &x->v[i + 1], (x->n - i - 1) * sizeof(*x->v));
			x->n--;
		}
		return;
	}
	if (i < x->n && first + n == x->v[i].start) {
		x->v[i].start = first;
		x->v[i].len += n;
		return;
	}
	if (x->n == x->cap) {
		struct extent *nv = reallocarray(x->v, x->cap * 2, sizeof(*nv));

		if (!nv)
			return; /* the range is lost until exit; counted as used */
		x->v = nv;
		x->cap *= 2;
	}
	memmove(&x->v[i + 1], &x->v[i], (x->n - i) * sizeof(*x->v));
	x->v[i] = (struct extent){first, n};
	x->n++;
}

/* values[0, n) of value_size bytes into the array map fd from index first. 0 or -errno. */
int uw_array_write(int fd, uint32_t first, const void *values, size_t n, size_t value_size)
{
	enum { CHUNK = 1024 };
	LIBBPF_OPTS(bpf_map_batch_opts, bo);
	uint32_t keys[CHUNK];

	for (size_t off = 0; off < n;) {
		__u32 count = (__u32)(n - off < CHUNK ? n - off : CHUNK);
		const char *v = (const char *)values + off * value_size;

		for (__u32 i = 0; i < count; i++)
			keys[i] = first + (uint32_t)(off + i);
		if (bpf_map_update_batch(fd, keys, v, &count, &bo)) {
			/* A kernel without batch updates for arrays (before 5.6): one by one. */
			if (errno != EINVAL && errno != EOPNOTSUPP)
				return -errno;
			for (__u32 i = 0; i < count; i++)
				if (bpf_map_update_elem(fd, &keys[i], v + i * value_size, 0))
					return -errno;
		}
		off += count;
	}
	return 0;
}

/* ---- files ---- */

void uw_file_write(struct unwinder *u, const struct uw_file *f, uint32_t nr_pages)
{
	struct xsprof_unwind_file v = {
		.page0 = f->page0,
		.page_first = f->page_first,
		.nr_pages = nr_pages,
		.state = f->state,
	};

	bpf_map_update_elem(u->files_fd, &f->id, &v, BPF_ANY);
}

/* Give a table's memory back; the file has none now (state NONE, or as given). */
void uw_table_drop(struct unwinder *u, struct uw_file *f, uint32_t state)
{
	f->state = state;
	uw_file_write(u, f, 0);
	for (uint32_t i = 0; i < f->nr_blocks; i++)
		u->free_blocks[u->nr_free_blocks++] = f->blocks[i];
	u->st.rows -= f->rows;
	extents__release(&u->page_space, f->page_first, f->nr_pages);
	u->st.pages -= f->nr_pages;
	free(f->blocks);
	free(f->pages);
	f->blocks = NULL;
	f->pages = NULL;
	f->nr_blocks = f->cap_blocks = 0;
	f->nr_pages = 0;
	f->rows = 0;
}

/* Read and clear BPF's marks of use: the tables used since the last time are recent. */
static void refresh_use(struct unwinder *u)
{
	u->tick++;
	for (uint32_t id = 1; id < u->max_files; id++) {
		struct uw_file *f = u->by_id[id];
		struct xsprof_unwind_file v;

		if (!f || f->state != XSPROF_FILE_READY)
			continue;
		if (bpf_map_lookup_elem(u->files_fd, &id, &v) || !v.used)
			continue;
		f->last_used = u->tick;
		v.used = 0;
		bpf_map_update_elem(u->files_fd, &id, &v, BPF_ANY);
	}
}

/* Take away the table used least recently (no process mapping it first), except keep's. */
bool uw_evict_one(struct unwinder *u, const struct uw_file *keep)
{
	struct uw_file *victim = NULL;

	refresh_use(u);
	for (uint32_t id = 1; id < u->max_files; id++) {
		struct uw_file *f = u->by_id[id];

		if (!f || f == keep || f == u->vdso || f->state != XSPROF_FILE_READY)
			continue;
		if (!victim || (!f->refs && victim->refs) ||
		    (!f->refs == !victim->refs && f->last_used < victim->last_used))
			victim = f;
	}
	if (!victim)
		return false;
	uw_table_drop(u, victim, XSPROF_FILE_NONE);
	victim->evicted_once = true;
	u->st.tables--;
	u->st.tables_evicted++;
	return true;
}

static uint64_t mtime_ns(const struct stat *st)
{
	return (uint64_t)st->st_mtim.tv_sec * 1000000000ull + (uint64_t)st->st_mtim.tv_nsec;
}

/* The key beside (dev, ino): the size, not the mtime (a file touched but with the same build
 * id keeps its table: file_for_mapping). Never 0: that is "not in the map". */
static uint64_t file_key2(const struct stat *st)
{
	return ((uint64_t)st->st_ino ^ ((uint64_t)st->st_size << 1)) | 1;
}

/* The GNU build id of elf into id (up to 20 bytes); its length, 0 without one. */
static uint8_t read_build_id(Elf *elf, size_t nr_phdrs, uint8_t *id)
{
	for (size_t i = 0; i < nr_phdrs; i++) {
		GElf_Phdr ph;
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_NOTE || ph.p_filesz > 65536)
			continue;
		d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_NHDR);
		while (d && (off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((const char *)d->d_buf + name_off, "GNU", 4) && nh.n_descsz &&
			    nh.n_descsz <= 20) {
				memcpy(id, (const char *)d->d_buf + desc_off, nh.n_descsz);
				return (uint8_t)nh.n_descsz;
			}
		}
	}
	return 0;
}

/* Executable PT_LOADs of the file at fd, and its build id. */
static void read_segments(int fd, struct uw_file *f)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t n = 0;

	if (elf && !elf_getphdrnum(elf, &n)) {
		for (size_t i = 0; i < n && f->nr_segs < MAX_EXEC_SEGS; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD ||
			    !(ph.p_flags & PF_X))
				continue;
			f->segs[f->nr_segs].offset = ph.p_offset;
			f->segs[f->nr_segs].vaddr = ph.p_vaddr;
			f->segs[f->nr_segs].filesz = ph.p_filesz;
			f->nr_segs++;
		}
		f->build_id_len = read_build_id(elf, n, f->build_id);
	}
	elf_end(elf);
}

/* Whether the file at path has f's build id (f has one): the same code, touched or not. */
static bool same_build_id(const struct uw_file *f, const char *path)
{
	int fd = f->build_id_len ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	struct uw_file now = {0};

	if (fd < 0)
		return false;
	read_segments(fd, &now);
	close(fd);
	return now.build_id_len == f->build_id_len &&
	       !memcmp(now.build_id, f->build_id, f->build_id_len);
}

/* An unreferenced file without waiting work, used least recently: its id is taken back. */
static bool reclaim_id(struct unwinder *u)
{
	struct uw_file *victim = NULL;

	for (uint32_t id = 1; id < u->max_files; id++) {
		struct uw_file *f = u->by_id[id];

		if (!f || f->refs || f->queued || f->building || f == u->vdso)
			continue;
		if (!victim || f->last_used < victim->last_used)
			victim = f;
	}
	if (!victim)
		return false;
	if (victim->state == XSPROF_FILE_READY)
		u->st.tables--;
	uw_table_drop(u, victim, XSPROF_FILE_NONE);
	if (victim->key2)
		hashmap__remove(u->files, victim->dev ^ (victim->ino << 20), victim->key2);
	u->by_id[victim->id] = NULL;
	u->free_ids[u->nr_free_ids++] = victim->id;
	u->st.files--;
	if (victim->fd >= 0)
		close(victim->fd);
	free(victim);
	return true;
}

static struct uw_file *file_new(struct unwinder *u)
{
	struct uw_file *f;

	if (!u->nr_free_ids && !reclaim_id(u))
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->id = u->free_ids[--u->nr_free_ids];
	u->by_id[f->id] = f;
	f->fd = -1;
	f->state = XSPROF_FILE_NONE;
	uw_file_write(u, f, 0);
	u->st.files++;
	return f;
}

/* The file behind one executable mapping of pid (known, or registered now), or NULL. */
static struct uw_file *file_for_mapping(struct unwinder *u, pid_t pid, const struct proc_map *m)
{
	char path[PATH_MAX];
	struct uw_file *f;
	struct stat st;
	uint64_t k1;
	int fd, n;

	if (m->path && !strcmp(m->path, "[vdso]"))
		return u->vdso;
	if (!m->path || m->path[0] != '/' || !m->inode)
		return NULL;
	n = snprintf(path, sizeof(path), "%s/%d/map_files/%" PRIx64 "-%" PRIx64,
		     u->o.proc_root ? u->o.proc_root : "/proc", (int)pid, m->start, m->end);
	if (n < 0 || (size_t)n >= sizeof(path) || stat(path, &st) || !S_ISREG(st.st_mode))
		return NULL;
	k1 = (uint64_t)st.st_dev ^ ((uint64_t)st.st_ino << 20);
	f = hashmap__get(u->files, k1, file_key2(&st));
	if (f && f->dev == st.st_dev && f->ino == st.st_ino && f->size == (uint64_t)st.st_size &&
	    f->mtime_ns != mtime_ns(&st)) {
		/* Touched (the same build id: the same code), or changed in place: then a new
		 * entry takes the key, the old one stays for the mappings that hold it. */
		if (same_build_id(f, path)) {
			f->mtime_ns = mtime_ns(&st);
			u->st.tables_kept_touched++;
		} else {
			hashmap__remove(u->files, k1, f->key2);
			f->key2 = 0;
			f = NULL;
		}
	}
	if (f && f->dev == st.st_dev && f->ino == st.st_ino && f->size == (uint64_t)st.st_size &&
	    f->mtime_ns == mtime_ns(&st)) {
		if (f->no_file) {
			/* Mapped again: it can be opened now, through this process. */
			f->no_file = false;
			f->state = XSPROF_FILE_NONE;
			uw_file_write(u, f, 0);
		}
		return f;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	f = file_new(u);
	if (!f) {
		u->st.files_full++;
		close(fd);
		return NULL;
	}
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->size = st.st_size;
	f->mtime_ns = mtime_ns(&st);
	f->key2 = file_key2(&st);
	read_segments(fd, f);
	close(fd);
	if (hashmap__put(u->files, k1, f->key2, f)) {
		u->by_id[f->id] = NULL;
		u->free_ids[u->nr_free_ids++] = f->id;
		u->st.files--;
		free(f);
		return NULL;
	}
	return f;
}

/* The bias of mapping m of file f: process address - bias = ELF virtual address. */
static bool mapping_bias(const struct uw_file *f, const struct proc_map *m, uint64_t *ret)
{
	for (int i = 0; i < f->nr_segs; i++) {
		uint64_t seg_start = f->segs[i].offset & ~0xfffull;

		if (m->offset >= seg_start && m->offset < f->segs[i].offset + f->segs[i].filesz) {
			*ret = m->start - m->offset + f->segs[i].offset - f->segs[i].vaddr;
			return true;
		}
	}
	return false;
}

/* ---- processes ---- */

struct uw_proc *uw_proc(struct unwinder *u, pid_t pid)
{
	return hashmap__get(u->procs, (uint64_t)pid, 0);
}

const struct uw_map *uw_proc_find(const struct uw_proc *p, uint64_t pc)
{
	uint32_t lo = 0, hi = p->nr_maps;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (p->maps[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || pc >= p->maps[lo - 1].end)
		return NULL;
	return &p->maps[lo - 1];
}

static void proc_release(struct unwinder *u, struct uw_map *maps, uint32_t nr, uint32_t ext_first,
			 uint32_t ext_count)
{
	for (uint32_t i = 0; i < nr; i++)
		if (maps[i].file && maps[i].file != u->vdso)
			maps[i].file->refs--;
	free(maps);
	extents__release(&u->map_space, ext_first, ext_count);
}

/* pid's executable mappings, each with its file (referenced). */
static int proc_fill(struct unwinder *u, pid_t pid, const struct proc_maps *pm, struct uw_map **ret,
		     uint32_t *ret_nr)
{
	size_t nr = proc_maps__count(pm);
	struct uw_map *maps = calloc(nr ? nr : 1, sizeof(*maps));
	uint32_t n = 0;

	if (!maps)
		return -ENOMEM;
	for (size_t i = 0; i < nr; i++) {
		const struct proc_map *m = proc_maps__at(pm, i);
		struct uw_file *f;
		uint64_t bias = 0;

		if (!(m->perms & PROC_MAP_EXEC))
			continue;
		if (n == XSPROF_UNWIND_MAX_MAPS) {
			u->st.maps_capped++;
			continue;
		}
		f = file_for_mapping(u, pid, m);
		if (f == u->vdso && f)
			bias = m->start;
		else if (f && !mapping_bias(f, m, &bias))
			f = NULL;
		if (f && f != u->vdso) {
			f->refs++;
			if (!f->pid || !uw_proc(u, f->pid) || f->pid == pid) {
				f->pid = pid;
				f->start = m->start;
				f->end = m->end;
			}
		}
		maps[n++] = (struct uw_map){m->start, m->end, bias, f};
	}
	*ret = maps;
	*ret_nr = n;
	return 0;
}

/* Write p's mappings to a new range of unwind_maps and point unwind_procs at it. */
static int proc_publish(struct unwinder *u, struct uw_proc *p)
{
	struct xsprof_unwind_map *v = calloc(p->nr_maps ? p->nr_maps : 1, sizeof(*v));
	/* A new generation per list written, across processes: a row the sampler cached for
	 * a pid under its old list (or a former process's of that pid) never matches again. */
	struct xsprof_unwind_proc e = {0, p->nr_maps, 0, ++u->next_gen, 0, p->flags, 0};
	__u32 key = (__u32)p->pid;
	int err = 0;

	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->nr_maps; i++)
		v[i] = (struct xsprof_unwind_map){p->maps[i].start, p->maps[i].end, p->maps[i].bias,
						  p->maps[i].file ? p->maps[i].file->id : 0, 0};
	if (p->nr_maps && uw_extents__alloc(&u->map_space, p->nr_maps, &e.first)) {
		u->st.maps_full++;
		err = -ENOSPC;
	}
	if (!err && p->nr_maps)
		err = uw_array_write(u->maps_fd, e.first, v, p->nr_maps, sizeof(*v));
	if (!err && bpf_map_update_elem(u->procs_fd, &key, &e, BPF_ANY)) {
		err = -errno;
		if (err == -E2BIG || err == -ENOMEM)
			u->st.procs_full++;
	}
	free(v);
	if (err) {
		if (p->nr_maps && err != -ENOSPC)
			extents__release(&u->map_space, e.first, p->nr_maps);
		return err;
	}
	p->ext_first = e.first;
	p->ext_count = e.count;
	p->gen = e.gen;
	u->st.loads++;
	return 0;
}

/* ---- room: a share per user, and eviction of processes not walked lately ---- */

#define ANY_UID	   UINT32_MAX
#define EVICT_SCAN 256 /* entries looked at per eviction */

static void lru_unlink(struct unwinder *u, struct uw_proc *p)
{
	if (p->older)
		p->older->newer = p->newer;
	else if (u->oldest == p)
		u->oldest = p->newer;
	if (p->newer)
		p->newer->older = p->older;
	else if (u->newest == p)
		u->newest = p->older;
	p->older = p->newer = NULL;
}

static void lru_push(struct unwinder *u, struct uw_proc *p)
{
	p->older = u->newest;
	p->newer = NULL;
	if (u->newest)
		u->newest->newer = p;
	else
		u->oldest = p;
	u->newest = p;
}

static int64_t build_burst_ns(const struct unwinder *u)
{
	return u->o.build_burst_ms ? u->o.build_burst_ms * 1000000ll
				   : UW_BUILD_BURST_S * 1000000000ll;
}

static struct uw_user *user_of(struct unwinder *u, uint32_t uid)
{
	struct uw_user *us = hashmap__get(u->users, uid, 0);

	if (!us && (us = calloc(1, sizeof(*us)))) {
		us->build_ns = build_burst_ns(u);
		us->build_at_ns = clock__mono_ns();
		if (hashmap__put(u->users, uid, 0, us)) {
			free(us);
			us = NULL;
		}
	}
	return us;
}

/* Whether uid may build now: its budget, refilled up to now, is not spent. */
bool uw_build_allowed(struct unwinder *u, uint32_t uid)
{
	struct uw_user *us = user_of(u, uid);
	uint64_t now = clock__mono_ns();

	if (!us)
		return true;
	us->build_ns += (int64_t)((double)(now - us->build_at_ns) * UW_BUILD_SHARE);
	if (us->build_ns > build_burst_ns(u))
		us->build_ns = build_burst_ns(u);
	us->build_at_ns = now;
	return us->build_ns > 0;
}

void uw_build_charge(struct unwinder *u, uint32_t uid, uint64_t ns)
{
	struct uw_user *us = user_of(u, uid);

	if (us)
		us->build_ns -= (int64_t)ns;
}

uint32_t uw_proc_uid(const struct unwinder *u, pid_t pid)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%d", u->o.proc_root ? u->o.proc_root : "/proc", (int)pid);
	return stat(path, &st) ? 0 : (uint32_t)st.st_uid;
}

/* Whether a walk used p since the last look; the mark is cleared. */
static bool proc_used(struct unwinder *u, const struct uw_proc *p)
{
	struct xsprof_unwind_proc e;
	__u32 key = (__u32)p->pid;

	if (bpf_map_lookup_elem(u->procs_fd, &key, &e) || !e.used)
		return false;
	e.used = 0;
	bpf_map_update_elem(u->procs_fd, &key, &e, BPF_EXIST);
	return true;
}

/*
 * A loaded process of uid (ANY_UID: of anyone) to take out: the oldest not walked since it was
 * last looked at. One walked meanwhile gets another round (to the newest end). NULL when the
 * first EVICT_SCAN looked at were all in use.
 */
static struct uw_proc *evict_candidate(struct unwinder *u, uint32_t uid, const struct uw_proc *self)
{
	struct uw_proc *p = u->oldest, *next;

	for (int n = 0; p && n < EVICT_SCAN; p = next, n++) {
		next = p->newer;
		if (p == self || (uid != ANY_UID && p->uid != uid))
			continue;
		if (proc_used(u, p)) {
			lru_unlink(u, p);
			lru_push(u, p);
			continue;
		}
		return p;
	}
	return NULL;
}

/* Take out one process of uid (ANY_UID: anyone's) for room; false when none may go. */
static bool evict_proc(struct unwinder *u, uint32_t uid, const struct uw_proc *self)
{
	struct uw_proc *v = evict_candidate(u, uid, self);

	if (!v)
		return false;
	u->st.procs_evicted++;
	unwinder__remove_process(u, v->pid);
	return true;
}

/* Room for one more process of uid: within its share, and in the table. */
static int room_for_process(struct unwinder *u, uint32_t uid)
{
	struct uw_user *us = user_of(u, uid);

	if (!us)
		return -ENOMEM;
	while (us->procs >= u->share_procs) {
		if (!evict_proc(u, uid, NULL)) {
			u->st.procs_over_share++;
			return -ENOSPC;
		}
	}
	while (u->st.processes >= u->max_procs) {
		if (!evict_proc(u, ANY_UID, NULL)) {
			u->st.procs_full++;
			return -ENOSPC;
		}
	}
	return 0;
}

/* Publish p's mappings within its user's share of the mapping array, evicting to make room
 * (its user's first, anyone's when the array itself is full). */
static int publish_with_room(struct unwinder *u, struct uw_proc *p, uint32_t old_count)
{
	struct uw_user *us = user_of(u, p->uid);
	int err;

	if (!us)
		return -ENOMEM;
	while (us->maps - old_count + p->nr_maps > u->share_maps) {
		if (!evict_proc(u, p->uid, p)) {
			u->st.procs_over_share++;
			return -ENOSPC;
		}
	}
	for (int tries = 0;; tries++) {
		err = proc_publish(u, p);
		if (!err || tries == 8 || (err != -ENOSPC && err != -E2BIG && err != -ENOMEM))
			break;
		if (!evict_proc(u, ANY_UID, p))
			break;
	}
	if (!err)
		us->maps = us->maps - old_count + p->ext_count;
	return err;
}

int unwinder__add_process(struct unwinder *u, pid_t pid)
{
	struct uw_proc *p = uw_proc(u, pid), old = {0};
	struct proc_maps *pm;
	uint32_t uid;
	int err;

	if (pid <= 0)
		return -EINVAL;
	uid = p ? p->uid : uw_proc_uid(u, pid);
	if (!p && (err = room_for_process(u, uid)))
		return err;
	pm = proc_maps__read(u->o.proc_root, pid);
	if (!pm) {
		err = -errno;
		if (err == -ESRCH || err == -ENOENT) {
			u->st.gone++;
			err = -ESRCH;
		}
		return err;
	}
	if (!p) {
		struct uw_user *us = user_of(u, uid);

		p = calloc(1, sizeof(*p));
		if (!us || !p || hashmap__put(u->procs, (uint64_t)pid, 0, p)) {
			free(p);
			proc_maps__free(pm);
			return -ENOMEM;
		}
		p->pid = pid;
		p->uid = uid;
		us->procs++;
		lru_push(u, p);
		u->st.processes++;
	}
	/* New references first, then the old ones dropped: files kept by both stay. */
	old = *p;
	/* HotSpot is loaded by its launcher after exec: looked for at every read of the list. */
	if (!p->jvm_checked && jvm__maps_hotspot(pm)) {
		p->jvm_checked = true;
		if (jvm__jit_without_fp(u->o.proc_root, pid)) {
			p->flags |= XSPROF_UNWIND_PROC_JIT_NOFP;
			u->st.jvm_nofp++;
		}
	}
	err = proc_fill(u, pid, pm, &p->maps, &p->nr_maps);
	proc_maps__free(pm);
	if (err) {
		p->maps = old.maps;
		p->nr_maps = old.nr_maps;
		return err;
	}
	err = publish_with_room(u, p, old.ext_count);
	if (err) {
		struct uw_user *us = user_of(u, p->uid);

		if (us)
			us->maps -= old.ext_count;
		p->ext_first = p->ext_count = 0;
	}
	p->read_ns = clock__mono_ns();
	proc_release(u, old.maps, old.nr_maps, old.ext_first, old.ext_count);
	return err;
}

void uw_proc_put(struct unwinder *u, struct uw_proc *p)
{
	if (--p->holds || !p->dead)
		return;
	proc_release(u, p->maps, p->nr_maps, 0, 0);
	free(p);
}

void unwinder__remove_process(struct unwinder *u, pid_t pid)
{
	struct uw_proc *p = hashmap__remove(u->procs, (uint64_t)pid, 0);
	__u32 key = (__u32)pid;

	if (!p)
		return;
	bpf_map_delete_elem(u->procs_fd, &key);
	u->st.processes--;
	lru_unlink(u, p);
	{
		struct uw_user *us = hashmap__get(u->users, p->uid, 0);

		if (us) {
			us->procs--;
			us->maps -= p->ext_count;
		}
	}
	extents__release(&u->map_space, p->ext_first, p->ext_count);
	p->ext_count = 0;
	if (p->holds) {
		/* Its held samples still walk its mappings: they let it go. */
		p->dead = true;
		return;
	}
	proc_release(u, p->maps, p->nr_maps, 0, 0);
	free(p);
}

/* ---- asking for tables ---- */

static void load_vdso(struct unwinder *u)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	struct proc_maps *maps;
	const struct proc_map *m;
	struct unwind_build *ub = NULL;
	struct uw_build *b = NULL;
	struct uw_file *f = NULL;
	int err;

	if (!base)
		return;
	maps = proc_maps__read(u->o.proc_root, getpid());
	m = maps ? proc_maps__find(maps, base) : NULL;
	if (m)
		ub = unwind_build__new_elf_memory((const void *)(uintptr_t)m->start,
						  m->end - m->start);
	proc_maps__free(maps);
	if (ub && unwind_build__why(ub)) {
		/* Refused outright (no .eh_frame): no file for it, frame pointers there. */
		unwind_build__free(ub);
		ub = NULL;
	}
	if (ub)
		f = file_new(u);
	if (f)
		b = malloc(sizeof(*b));
	if (!b) {
		unwind_build__free(ub);
		return;
	}
	memset(b, 0, offsetof(struct uw_build, chunk));
	b->f = f;
	b->fd = -1;
	b->block = UINT32_MAX;
	b->b = ub;
	b->t0 = clock__mono_ns();
	f->building = true;
	f->state = XSPROF_FILE_WANTED;
	u->build = b;
	u->vdso = f;
	unwind_pager__init(&b->pager, uw_on_page, u);
	while ((err = unwind_build__step(ub, SIZE_MAX, unwind_pager__row, &b->pager)) > 0)
		;
	if (!err)
		err = unwind_pager__finish(&b->pager);
	if (!err)
		err = uw_build_publish(u);
	uw_build_end(u, err ? XSPROF_FILE_UNAVAILABLE : XSPROF_FILE_READY);
}

/* ---- the maps ---- */

static void sizes_for(struct unwinder *u, uint32_t mb)
{
	uint64_t bytes = (uint64_t)mb << 20;

	/* 7/8 rows, 1/16 pages, 1/32 mappings, 1/64 files. */
	u->max_rows = (uint32_t)((bytes / 8 * 7 / 8) / BLOCK_ROWS * BLOCK_ROWS);
	u->max_pages = (uint32_t)(bytes / 16 / sizeof(struct xsprof_unwind_page));
	u->max_maps = (uint32_t)(bytes / 32 / sizeof(struct xsprof_unwind_map));
	u->max_files = (uint32_t)(bytes / 64 / sizeof(struct xsprof_unwind_file));
	u->max_procs =
		u->o.max_procs && u->o.max_procs < u->max_files ? u->o.max_procs : u->max_files;
	/* No user may take more than a quarter of the processes or of the mappings. */
	u->share_procs = u->max_procs / 4 ? u->max_procs / 4 : 1;
	u->share_maps =
		u->max_maps / 4 > XSPROF_UNWIND_MAX_MAPS ? u->max_maps / 4 : XSPROF_UNWIND_MAX_MAPS;
}

static int create_maps(struct unwinder *u)
{
	LIBBPF_OPTS(bpf_map_create_opts, hash_opts, .map_flags = BPF_F_NO_PREALLOC);

	LIBBPF_OPTS(bpf_map_create_opts, mmap_opts, .map_flags = BPF_F_MMAPABLE);

	u->rows_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "unwind_rows", 4,
				    sizeof(struct xsprof_unwind_row), u->max_rows, &mmap_opts);
	u->rows_mmapable = u->rows_fd >= 0;
	if (u->rows_fd < 0) /* before Linux 5.5 */
		u->rows_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "unwind_rows", 4,
					    sizeof(struct xsprof_unwind_row), u->max_rows, NULL);
	u->pages_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "unwind_pages", 4,
				     sizeof(struct xsprof_unwind_page), u->max_pages, NULL);
	u->files_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "unwind_files", 4,
				     sizeof(struct xsprof_unwind_file), u->max_files, NULL);
	u->maps_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "unwind_maps", 4,
				    sizeof(struct xsprof_unwind_map), u->max_maps, NULL);
	u->procs_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "unwind_procs", 4,
				     sizeof(struct xsprof_unwind_proc), u->max_procs, &hash_opts);
	if (u->rows_fd < 0 || u->pages_fd < 0 || u->files_fd < 0 || u->maps_fd < 0 ||
	    u->procs_fd < 0)
		return -errno;
	return 0;
}

struct unwinder *unwinder__new(const struct unwinder_opts *opts)
{
	struct unwinder *u = calloc(1, sizeof(*u));
	uint32_t mb = opts->table_mb ? opts->table_mb : UNWINDER_DEFAULT_MB;
	int err = -ENOMEM;

	if (!u)
		return NULL;
	u->rows_fd = u->pages_fd = u->files_fd = u->maps_fd = u->procs_fd = -1;
	if (mb < UNWINDER_MIN_MB || mb > UNWINDER_MAX_MB) {
		err = -EINVAL;
		goto fail;
	}
	u->o = *opts;
	u->table_mb = mb;
	sizes_for(u, mb);
	u->nr_blocks = u->max_rows / BLOCK_ROWS;
	u->free_blocks = malloc(u->nr_blocks * sizeof(*u->free_blocks));
	u->free_ids = malloc(u->max_files * sizeof(*u->free_ids));
	u->by_id = calloc(u->max_files, sizeof(*u->by_id));
	u->files = hashmap__new();
	u->procs = hashmap__new();
	u->users = hashmap__new();
	if (!u->free_blocks || !u->free_ids || !u->by_id || !u->files || !u->procs || !u->users ||
	    extents__init(&u->page_space, u->max_pages) ||
	    extents__init(&u->map_space, u->max_maps))
		goto fail;
	/* Taken from the end, so the first blocks and ids go first. */
	for (uint32_t i = 0; i < u->nr_blocks; i++)
		u->free_blocks[i] = u->nr_blocks - 1 - i;
	u->nr_free_blocks = u->nr_blocks;
	for (uint32_t i = 1; i < u->max_files; i++)
		u->free_ids[u->nr_free_ids++] = u->max_files - i; /* id 0 is "none" */
	err = create_maps(u);
	if (err)
		goto fail;
	u->st.max_rows = u->max_rows;
	u->st.max_pages = u->max_pages;
	elf_version(EV_CURRENT);
	load_vdso(u);
	return u;
fail:
	unwinder__free(u);
	errno = -err;
	return NULL;
}

static void free_file_cb(void *val, void *ctx)
{
	struct uw_file *f = val;

	if (f->fd >= 0)
		close(f->fd);
	free(f->blocks);
	free(f->pages);
	free(f);
}

static void free_user_cb(void *val, void *ctx)
{
	(void)ctx;
	free(val);
}

static void free_proc_cb(void *val, void *ctx)
{
	struct uw_proc *p = val;

	free(p->maps);
	free(p);
}

void unwinder__free(struct unwinder *u)
{
	if (!u)
		return;
	uw_held_free_all(u);
	if (u->build) {
		unwind_build__free(u->build->b);
		if (u->build->fd >= 0)
			close(u->build->fd);
		free(u->build->pages);
		free(u->build);
	}
	if (u->procs) {
		hashmap__for_each(u->procs, free_proc_cb, NULL);
		hashmap__free(u->procs);
	}
	if (u->users) {
		hashmap__for_each(u->users, free_user_cb, NULL);
		hashmap__free(u->users);
	}
	if (u->by_id) {
		for (uint32_t id = 1; id < u->max_files; id++)
			if (u->by_id[id])
				free_file_cb(u->by_id[id], NULL);
	}
	hashmap__free(u->files);
	free(u->by_id);
	free(u->free_ids);
	free(u->free_blocks);
	free(u->page_space.v);
	free(u->map_space.v);
	for (uint32_t i = 0; i < u->st.nr_refused; i++) {
		free((char *)u->st.refused[i].path);
		free((char *)u->st.refused[i].why);
	}
	for (int *fd = &u->rows_fd; fd <= &u->procs_fd; fd++)
		if (*fd >= 0)
			close(*fd);
	free(u);
}

void unwinder__maps(const struct unwinder *u, struct unwinder_maps *ret)
{
	*ret = (struct unwinder_maps){u->rows_fd, u->pages_fd, u->files_fd, u->maps_fd,
				      u->procs_fd};
}

uint32_t unwinder__table_mb(const struct unwinder *u)
{
	return u->table_mb;
}

void unwinder__stats(const struct unwinder *u, struct unwinder_stats *ret)
{
	*ret = u->st;
	ret->map_bytes = (uint64_t)u->max_rows * sizeof(struct xsprof_unwind_row) +
			 (uint64_t)u->max_pages * sizeof(struct xsprof_unwind_page) +
			 (uint64_t)u->max_maps * sizeof(struct xsprof_unwind_map) +
			 (uint64_t)u->max_files * sizeof(struct xsprof_unwind_file) +
			 u->st.processes * 64;
	ret->max_procs = u->max_procs;
	ret->share_procs = u->share_procs;
}
