// SPDX-License-Identifier: Apache-2.0
/* The unwinder's build queue: files whose table a walk asked for, built a slice at a time within
 * the event loop's budget, published into the BPF maps, refused with a reason. */
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
#include "daemon/unwind/unwind_table.h"
#include "daemon/unwind/unwinder.h"

static void queue_push(struct unwinder *u, struct uw_file *f)
{
	if (f->queued || f->building)
		return;
	f->queued = true;
	f->qnext = NULL;
	if (u->queue_tail)
		u->queue_tail->qnext = f;
	else
		u->queue = f;
	u->queue_tail = f;
}

/* The first queued file whose user may build now (the others keep their places). */
static struct uw_file *queue_pop(struct unwinder *u)
{
	struct uw_file *f, *prev = NULL;

	for (f = u->queue; f; prev = f, f = f->qnext)
		if (uw_build_allowed(u, f->want_uid))
			break;
	if (!f) {
		if (u->queue)
			u->st.builds_deferred++;
		return NULL;
	}
	if (prev)
		prev->qnext = f->qnext;
	else
		u->queue = f->qnext;
	if (u->queue_tail == f)
		u->queue_tail = prev;
	f->queued = false;
	return f;
}

/* Whether a queued file may be built now. */
static bool queue_ready(struct unwinder *u)
{
	for (struct uw_file *f = u->queue; f; f = f->qnext)
		if (uw_build_allowed(u, f->want_uid))
			return true;
	return false;
}

/* Where f is mapped by pid at start: remembered to open it from. */
static void note_mapping(struct unwinder *u, struct uw_file *f, pid_t pid, uint64_t start)
{
	struct uw_proc *p = uw_proc(u, pid);

	for (uint32_t i = 0; p && i < p->nr_maps; i++)
		if (p->maps[i].start == start && p->maps[i].file == f) {
			f->pid = pid;
			f->start = start;
			f->end = p->maps[i].end;
			return;
		}
}

static int open_file(struct unwinder *u, struct uw_file *f)
{
	char path[PATH_MAX];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/%d/map_files/%" PRIx64 "-%" PRIx64,
		 u->o.proc_root ? u->o.proc_root : "/proc", (int)f->pid, f->start, f->end);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && (fstat(fd, &st) || st.st_ino != f->ino || (uint64_t)st.st_dev != f->dev)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Another live process that maps f, to open it from; false when none does. */
struct find_holder {
	struct uw_file *f;
	bool found;
};

static void find_holder_cb(void *val, void *ctx)
{
	struct uw_proc *p = val;
	struct find_holder *h = ctx;

	for (uint32_t i = 0; !h->found && i < p->nr_maps; i++)
		if (p->maps[i].file == h->f) {
			h->f->pid = p->pid;
			h->f->start = p->maps[i].start;
			h->f->end = p->maps[i].end;
			h->found = true;
		}
}

/* f open for its build: through the mapping that asked, or any other live one. */
static int open_for_build(struct unwinder *u, struct uw_file *f)
{
	struct find_holder h = {f, false};
	int fd = f->pid ? open_file(u, f) : -1;

	if (fd >= 0)
		return fd;
	f->pid = 0;
	hashmap__for_each(u->procs, find_holder_cb, &h);
	return h.found ? open_file(u, f) : -1;
}

/* Nobody maps f any more: frame pointers there until a process maps it again. */
static void file_lost(struct unwinder *u, struct uw_file *f)
{
	u->st.want_lost++;
	f->no_file = true;
	f->state = XSPROF_FILE_UNAVAILABLE;
	uw_file_write(u, f, 0);
	uw_held_wake(u, f);
}

void uw_want_file(struct unwinder *u, struct uw_file *f, pid_t pid, uint64_t start)
{
	if (f->state != XSPROF_FILE_NONE && f->state != XSPROF_FILE_WANTED)
		return;
	if (f->queued || f->building)
		return;
	note_mapping(u, f, pid, start);
	u->st.wants++;
	if (f->evicted_once)
		u->st.tables_rebuilt++;
	/* Opened now, while the process that runs in it is certainly there. */
	if (f->fd < 0)
		f->fd = open_for_build(u, f);
	if (f->fd < 0) {
		file_lost(u, f);
		return;
	}
	if (f->state == XSPROF_FILE_NONE) {
		f->state = XSPROF_FILE_WANTED;
		uw_file_write(u, f, 0);
	}
	f->want_ns = clock__mono_ns();
	queue_push(u, f);
}

/* A walk of pid ran outside its known mappings: read them again, at most once a second
 * (otherwise the entry is only written again, so that the next miss asks again). */
static int stale_process(struct unwinder *u, pid_t pid)
{
	struct uw_proc *p = uw_proc(u, pid);
	uint64_t now = clock__mono_ns();
	struct xsprof_unwind_proc e;
	__u32 key = (__u32)pid;

	if (!p)
		return 0;
	if (now - p->read_ns >= STALE_REREAD_NS) {
		u->st.rereads++;
		return unwinder__add_process(u, pid) ? 0 : 1;
	}
	e = (struct xsprof_unwind_proc){p->ext_first, p->ext_count, 0, p->gen, 0, p->flags, 0};
	bpf_map_update_elem(u->procs_fd, &key, &e, BPF_EXIST);
	return 0;
}

int unwinder__want(struct unwinder *u, const void *rec, size_t size)
{
	const struct xsprof_unwind_want *w = rec;
	struct uw_file *f;

	if (size < sizeof(*w) || w->type != XSPROF_REC_UNWIND_WANT)
		return -EBADMSG;
	if (!w->file)
		return stale_process(u, (pid_t)w->tgid);
	f = w->file < u->max_files ? u->by_id[w->file] : NULL;
	if (!f) {
		u->st.want_lost++;
		return 0;
	}
	/* BPF moved it NONE -> WANTED itself. */
	if (f->state == XSPROF_FILE_NONE)
		f->state = XSPROF_FILE_WANTED;
	if (!f->queued && !f->building) {
		struct uw_proc *p = uw_proc(u, (pid_t)w->tgid);

		f->want_uid = p ? p->uid : uw_proc_uid(u, (pid_t)w->tgid);
	}
	uw_want_file(u, f, (pid_t)w->tgid, w->start);
	return 0;
}

/* ---- building: a file's rows into blocks, its pages into a range of unwind_pages ---- */

static bool block_take(struct unwinder *u, struct uw_build *b)
{
	struct uw_file *f = b->f;

	while (!u->nr_free_blocks)
		if (!uw_evict_one(u, f))
			return false;
	if (f->nr_blocks == f->cap_blocks) {
		uint32_t ncap = f->cap_blocks ? f->cap_blocks * 2 : 8;
		uint32_t *nb = reallocarray(f->blocks, ncap, sizeof(*nb));

		if (!nb)
			return false;
		f->blocks = nb;
		f->cap_blocks = ncap;
	}
	b->block = u->free_blocks[--u->nr_free_blocks];
	f->blocks[f->nr_blocks++] = b->block;
	b->used = 0;
	b->chunk_first = b->block * BLOCK_ROWS;
	b->chunk_n = 0;
	return true;
}

/*
 * Rows into the array: through a mapping of the block's own pages, made and dropped around the
 * copy (1.4 M rows of libtorch cost ~100 ms more as batched updates, and a mapping of the
 * whole array would count its pages in our RSS once touched).
 */
static int rows_write(struct unwinder *u, uint32_t first, const struct xsprof_unwind_row *rows,
		      uint32_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint64_t from = (uint64_t)first * sizeof(*rows), off = from & ~(uint64_t)(page - 1);
	size_t len = (size_t)(from - off) + n * sizeof(*rows);
	void *map;

	if (!u->rows_mmapable)
		return uw_array_write(u->rows_fd, first, rows, n, sizeof(*rows));
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, u->rows_fd, (off_t)off);
	if (map == MAP_FAILED)
		return uw_array_write(u->rows_fd, first, rows, n, sizeof(*rows));
	memcpy((char *)map + (from - off), rows, n * sizeof(*rows));
	munmap(map, len);
	return 0;
}

static int chunk_flush(struct unwinder *u, struct uw_build *b)
{
	int err = 0;

	if (b->chunk_n)
		err = rows_write(u, b->chunk_first, b->chunk, b->chunk_n);
	b->chunk_first += b->chunk_n;
	b->chunk_n = 0;
	return err;
}

/* One page of the file: its rows into the current block (or a new one), its index entry. */
int uw_on_page(void *ctx, uint64_t page, const struct xsprof_unwind_row *rows, uint32_t n)
{
	struct unwinder *u = ctx;
	struct uw_build *b = u->build;
	struct xsprof_unwind_page pg = {0, n};
	int err;

	if (!b->nr_pages)
		b->page0 = page;
	if (b->nr_pages == b->cap_pages) {
		size_t ncap = b->cap_pages ? b->cap_pages * 2 : 64;
		struct xsprof_unwind_page *np = reallocarray(b->pages, ncap, sizeof(*np));

		if (!np)
			return -ENOMEM;
		b->pages = np;
		b->cap_pages = ncap;
	}
	if (n == 1 && b->has_last && !memcmp(&rows[0], &b->last, sizeof(rows[0]))) {
		/* A page inside one rule (no row of its own): the row already written covers it. */
		pg.first = b->last_at;
	} else {
		if ((b->block == UINT32_MAX || b->used + n > BLOCK_ROWS) &&
		    ((err = chunk_flush(u, b)) || !block_take(u, b)))
			return err ? err : -ENOSPC;
		pg.first = b->chunk_first + b->chunk_n;
		memcpy(&b->chunk[b->chunk_n], rows, n * sizeof(*rows));
		b->chunk_n += n;
		b->used += n;
		b->f->rows += n;
		u->st.rows += n;
		b->last = rows[n - 1];
		b->last_at = pg.first + n - 1;
		b->has_last = true;
	}
	b->pages[b->nr_pages++] = pg;
	return 0;
}

/* Why b's file (at b->fd) has no table, after err: the builder's words when it has them. */
static const char *refusal(const struct uw_build *b, int err)
{
	const char *why = b->b ? unwind_build__why(b->b) : NULL;

	if (why)
		return why;
	switch (err) {
	case -ENOMEM:
		return "out of memory";
	case -E2BIG:
		return "table spans more pages than a file may";
	default:
		return strerror(-err);
	}
}

/* b's file has no table (err): counted, and among the first ones named with why. */
static void build_refused(struct unwinder *u, const struct uw_build *b, int err)
{
	struct unwinder_refused *r;
	char link[64], path[PATH_MAX];
	ssize_t n;

	u->st.tables_failed++;
	if (b->f->refused)
		return;
	b->f->refused = true;
	u->st.refused_files++;
	if (u->st.nr_refused >= UW_REFUSED_NAMED)
		return;
	r = &u->st.refused[u->st.nr_refused];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", b->fd);
	n = b->fd >= 0 ? readlink(link, path, sizeof(path) - 1) : -1;
	if (n >= 0)
		path[n] = '\0';
	r->path = n >= 0 ? strdup(path) : NULL;
	r->why = strdup(refusal(b, err));
	if (!r->why) {
		free((char *)r->path);
		r->path = NULL;
		return; /* not named: counted only */
	}
	u->st.nr_refused++;
}

void uw_build_end(struct unwinder *u, uint32_t state)
{
	struct uw_build *b = u->build;
	struct uw_file *f = b->f;

	u->st.build_ns += clock__mono_ns() - b->t0;
	if (state == XSPROF_FILE_READY && f->want_ns &&
	    clock__mono_ns() - f->want_ns > u->st.want_to_ready_max_ns)
		u->st.want_to_ready_max_ns = clock__mono_ns() - f->want_ns;
	unwind_build__free(b->b);
	if (b->fd >= 0)
		close(b->fd);
	free(b->pages);
	f->building = false;
	u->build = NULL;
	if (state == XSPROF_FILE_READY)
		u->st.tables++;
	if (state != XSPROF_FILE_READY)
		uw_table_drop(u, f, state);
	uw_held_wake(u, f);
	free(b);
}

/* The rows are in: write the pages, then make the file READY (pages before the flag). */
int uw_build_publish(struct unwinder *u)
{
	struct uw_build *b = u->build;
	struct uw_file *f = b->f;
	int err = chunk_flush(u, b);

	if (err)
		return err;
	while (uw_extents__alloc(&u->page_space, (uint32_t)b->nr_pages, &f->page_first))
		if (!uw_evict_one(u, f))
			return -ENOSPC;
	f->nr_pages = (uint32_t)b->nr_pages;
	u->st.pages += f->nr_pages;
	err = uw_array_write(u->pages_fd, f->page_first, b->pages, b->nr_pages, sizeof(*b->pages));
	if (err)
		return err;
	f->page0 = b->page0;
	f->pages = b->pages;
	b->pages = NULL;
	uw_file_write(u, f, 0);
	f->state = XSPROF_FILE_READY;
	f->last_used = u->tick;
	uw_file_write(u, f, f->nr_pages);
	return 0;
}

static void build_start(struct unwinder *u, struct uw_file *f)
{
	struct uw_build *b = malloc(sizeof(*b));
	int fd = f->fd >= 0 ? f->fd : open_for_build(u, f);

	f->fd = -1;
	if (!b || fd < 0) {
		if (fd >= 0)
			close(fd);
		free(b);
		file_lost(u, f);
		return;
	}
	memset(b, 0, offsetof(struct uw_build, chunk));
	b->f = f;
	b->fd = fd;
	b->block = UINT32_MAX;
	b->t0 = clock__mono_ns();
	f->building = true;
	u->build = b;
	unwind_pager__init(&b->pager, uw_on_page, u);
	b->b = unwind_build__new_fd(fd);
	if (!b->b) {
		build_refused(u, b, -ENOMEM);
		uw_build_end(u, XSPROF_FILE_UNAVAILABLE);
		return;
	}
}

/* A table surely larger than all the memory: refused before it evicts everything (known once
 * its FDEs are collected). True when refused. */
static bool build_too_big(struct unwinder *u, struct uw_build *b)
{
	if (b->sized || !unwind_build__collected(b->b))
		return false;
	b->sized = true;
	if (unwind_build__nr_fdes(b->b) * ROWS_PER_FDE_MIN <= u->max_rows)
		return false;
	u->st.tables_no_room++;
	uw_build_end(u, XSPROF_FILE_UNAVAILABLE);
	return true;
}

/* One step of the build in progress. */
static void build_slice(struct unwinder *u)
{
	struct uw_build *b = u->build;
	struct unwind_table_stats ts;
	int err;

	uint64_t t0 = clock__mono_ns();

	if (build_too_big(u, b))
		return;
	err = unwind_build__step(b->b, SLICE_FDES, unwind_pager__row, &b->pager);
	uw_build_charge(u, b->f->want_uid, clock__mono_ns() - t0);
	if (err > 0)
		return;
	if (!err)
		err = unwind_pager__finish(&b->pager);
	if (!err)
		err = uw_build_publish(u);
	unwind_build__stats(b->b, &ts);
	u->st.eh_frame_bytes += ts.section_bytes;
	if (!err) {
		u->st.tables_built++;
		uw_build_end(u, XSPROF_FILE_READY);
		return;
	}
	if (err == -ENOSPC)
		u->st.tables_no_room++;
	else
		build_refused(u, b, err);
	uw_build_end(u, XSPROF_FILE_UNAVAILABLE);
}

int unwinder__busy(const struct unwinder *u)
{
	/* Queued builds whose users' budgets are spent are not work now (the owner looks
	 * again from time to time); held samples waiting for them give up at their deadline. */
	return u->build || queue_ready((struct unwinder *)u) || u->ready ||
	       (u->waiting && !u->queue);
}

int unwinder__work(struct unwinder *u, uint64_t budget_ns)
{
	uint64_t t0 = clock__mono_ns();

	do {
		if (!u->build) {
			struct uw_file *f = queue_pop(u);

			if (!f)
				break;
			build_start(u, f);
			continue;
		}
		build_slice(u);
	} while (clock__mono_ns() - t0 < budget_ns);
	uw_held_run(u, false, NULL);
	return unwinder__busy(u);
}

void unwinder__flush(struct unwinder *u, const void *ctx, uint64_t deadline_ns)
{
	while (uw_held_waiting(u, ctx) && (u->build || queue_ready(u)) &&
	       clock__mono_ns() < deadline_ns)
		unwinder__work(u, 5000000);
	uw_held_run(u, true, ctx);
}

bool unwinder__build_queued(struct unwinder *u, uint64_t deadline_ns)
{
	while ((u->build || queue_ready(u)) && clock__mono_ns() < deadline_ns)
		unwinder__work(u, 5000000);
	if (u->build || u->queue) {
		u->st.table_waits_late++;
		return false;
	}
	return true;
}

/* ---- a READY table read back (held samples) ---- */

bool uw_table_row(struct unwinder *u, const struct uw_file *f, uint64_t vaddr,
		  struct xsprof_unwind_row *ret)
{
	uint64_t page = (vaddr >> XSPROF_UNWIND_PAGE_SHIFT) - f->page0;
	const struct xsprof_unwind_page *pg;
	uint32_t lo, hi;

	if (vaddr > UINT32_MAX || page >= f->nr_pages || !f->pages) {
		memset(ret, 0, sizeof(*ret));
		ret->type = XSPROF_CFA_INVALID;
		return true;
	}
	pg = &f->pages[page];
	lo = pg->first;
	hi = pg->first + pg->count;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		struct xsprof_unwind_row r;

		if (bpf_map_lookup_elem(u->rows_fd, &mid, &r))
			return false;
		if (r.pc <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo <= pg->first)
		return false;
	lo--;
	return !bpf_map_lookup_elem(u->rows_fd, &lo, ret);
}

/* ---- the vDSO: the same image in every process; ours is compiled once, at the start ---- */
