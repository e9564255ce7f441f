// SPDX-License-Identifier: Apache-2.0
/*
 * .eh_frame -> unwind rows. Walks the section's CIEs and FDEs in order (not through
 * .eh_frame_hdr: every FDE is visited anyway, and a missing or stale header changes nothing),
 * puts the FDEs in pc order, runs each (eh_frame.c reads them) and merges their rows into one
 * sorted stream; a Go file's rows come from its .gopclntab (gopclntab.c) instead, or beside a
 * cgo file's FDEs.
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/unwind/eh_frame.h"
#include "daemon/unwind/gopclntab.h"
#include "daemon/unwind/unwind_table.h"

struct unwind_table {
	struct xsprof_unwind_row *rows;
	size_t nr, cap;
	struct unwind_table_stats st;
};

/* ---- the build: FDEs in pc order, their rows merged into one sorted stream ---- */

struct fde_ref {
	uint32_t pc, off;
};

static int cmp_fde(const void *a, const void *b)
{
	const struct fde_ref *x = a, *y = b;

	if (x->pc != y->pc)
		return x->pc < y->pc ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

static bool same_rule(const struct xsprof_unwind_row *a, const struct xsprof_unwind_row *b)
{
	return a->type == b->type && a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off;
}

struct fde_sort;

struct unwind_build {
	struct row_out out; /* first: the FDE runs call back through it */
	struct unwind_table_stats st;
	struct eh_src e;
	struct cie_cache cc;
	struct fde_ref *fdes;
	size_t nr_fdes, next;
	/* The collection, a piece per step: the next entry's offset, the array's room; then the
	 * sort, a piece per step too (sort: NULL when the file had them in order). */
	size_t collect_off, collect_cap;
	bool scanned, collected;
	struct fde_sort *sort;
	/* The merge: rows already passed on end with last; pending waits for the next row. */
	struct xsprof_unwind_row last, pending;
	bool has_last, has_pending;
	uint64_t rows_out;
	unwind_row_fn fn;
	void *ctx;
	/* Where the section is mapped from a file: given back to the page cache as it is read,
	 * so a 10 MiB .eh_frame never sits in our RSS whole. */
	Elf *elf;
	uint8_t *drop_start;
	size_t drop_len, since_drop;
	/* A file that can have no table: every step returns err; why says it in words. */
	int err;
	const char *why;
	uint64_t usable_rows; /* rows passed on with a rule the walker can apply */
	char why_buf[96];
	/* A Go file's rows, made at once from its .gopclntab (gopclntab.h): passed on a piece
	 * per step in place of FDEs (pre_only: the file has no .eh_frame), or merged in pc order
	 * with the FDEs' (cgo: C code with FDEs, Go code with none). */
	struct xsprof_unwind_row *pre;
	size_t nr_pre, pre_next;
	bool pre_only;
};

/* Pass a row downstream (the merge's output). */
static int build__pass(struct unwind_build *b, const struct xsprof_unwind_row *r)
{
	int err = b->fn(b->ctx, r);

	if (!err) {
		b->last = *r;
		b->has_last = true;
		b->rows_out++;
		if (r->type != XSPROF_CFA_INVALID)
			b->usable_rows++;
	}
	return err;
}

/* No table can come of b's file: its steps return err from now on. */
static int build__refuse(struct unwind_build *b, int err, const char *why)
{
	b->err = err;
	b->why = why;
	b->nr_fdes = b->next = 0;
	b->scanned = b->collected = true;
	return err;
}

/*
 * Rows arrive per FDE in pc order, FDEs in pc order. At one pc the later row wins (a real rule
 * over the end marker of the FDE before); equal rules in a row are one; a row below one passed
 * on already (overlapping FDEs) is dropped and counted.
 */
static int build__row(struct row_out *o, const struct xsprof_unwind_row *r)
{
	struct unwind_build *b = (struct unwind_build *)o;
	int err;

	if (b->has_pending && r->pc < b->pending.pc) {
		b->st.overlaps++;
		return 0;
	}
	if (b->has_pending && r->pc == b->pending.pc) {
		b->pending = *r;
		if (b->has_last && same_rule(&b->last, r))
			b->has_pending = false;
		return 0;
	}
	if (b->has_pending && same_rule(&b->pending, r))
		return 0;
	if (!b->has_pending && b->has_last && (r->pc <= b->last.pc || same_rule(&b->last, r))) {
		if (r->pc <= b->last.pc)
			b->st.overlaps++;
		return 0;
	}
	if (b->has_pending && (err = build__pass(b, &b->pending)))
		return err;
	b->pending = *r;
	b->has_pending = true;
	return 0;
}

static void build__drop_pages(struct unwind_build *b)
{
	if (b->drop_len)
		madvise(b->drop_start, b->drop_len, MADV_DONTNEED);
	b->since_drop = 0;
}

/*
 * Sort by (pc, off): the FDEs were collected in file order, so off already rises, and a stable
 * sort by pc alone is enough: three passes of 11 bits (a comparison sort was a third of the
 * build of libtorch's 300k FDEs), each counting then placing SORT_STEP entries per step (10M
 * FDEs of a 200 MiB section take ~250 ms in all: not at once on the caller's loop).
 */
#define SORT_BITS    11
#define SORT_BUCKETS (1 << SORT_BITS)
#define SORT_STEP    (1u << 20)

struct fde_sort {
	struct fde_ref *tmp, *src, *dst;
	size_t i;
	int shift;    /* of the pass running */
	bool placing; /* counted: placing */
	size_t count[SORT_BUCKETS];
};

/* Start the sort of b's FDEs; 0, or -ENOMEM (then sorted at once, without the copy). */
static int sort_start(struct unwind_build *b)
{
	struct fde_sort *s = calloc(1, sizeof(*s));

	if (s)
		s->tmp = malloc(b->nr_fdes * sizeof(*s->tmp));
	if (!s || !s->tmp) {
		free(s);
		qsort(b->fdes, b->nr_fdes, sizeof(*b->fdes), cmp_fde);
		return -ENOMEM;
	}
	s->src = b->fdes;
	s->dst = s->tmp;
	b->sort = s;
	return 0;
}

/* One piece of the sort: 1 while more is left, 0 when the FDEs are in order. */
static int sort_step(struct unwind_build *b)
{
	struct fde_sort *s = b->sort;
	size_t n = b->nr_fdes, end = n - s->i > SORT_STEP ? s->i + SORT_STEP : n, sum = 0;
	struct fde_ref *sw;

	if (!s->placing) {
		for (; s->i < end; s->i++)
			s->count[(s->src[s->i].pc >> s->shift) & (SORT_BUCKETS - 1)]++;
		if (s->i < n)
			return 1;
		for (size_t d = 0; d < SORT_BUCKETS; d++) {
			size_t c = s->count[d];

			s->count[d] = sum;
			sum += c;
		}
		s->placing = true;
		s->i = 0;
		return 1;
	}
	for (; s->i < end; s->i++)
		s->dst[s->count[(s->src[s->i].pc >> s->shift) & (SORT_BUCKETS - 1)]++] =
			s->src[s->i];
	if (s->i < n)
		return 1;
	sw = s->src, s->src = s->dst, s->dst = sw;
	s->shift += SORT_BITS;
	s->i = 0;
	s->placing = false;
	memset(s->count, 0, sizeof(s->count));
	if (s->shift < 32)
		return 1;
	if (s->src != b->fdes)
		memcpy(b->fdes, s->src, n * sizeof(*b->fdes));
	free(s->tmp);
	free(s);
	b->sort = NULL;
	return 0;
}

/* The section bytes one step of the collection reads (about 10 ms): a 200 MiB .eh_frame
 * does not hold the caller's loop for half a second. */
#define COLLECT_STEP_BYTES (4u << 20)

/* Every FDE's start and offset, sorted by start, max_bytes of the section per call: 1 while
 * more is left, 0 when done (b->collected), or -errno. */
static int build__collect(struct unwind_build *b, size_t max_bytes)
{
	size_t off = b->collect_off, cap = b->collect_cap, stop;
	int err = 0;

	stop = max_bytes < b->e.size - off ? off + max_bytes : b->e.size;
	while (off + 4 <= b->e.size) {
		if (off >= stop) {
			b->collect_off = off;
			b->collect_cap = cap;
			return 1;
		}
		struct entry en;
		uint32_t start;

		if (eh_frame__entry_at(&b->e, off, &b->cc, &b->st, &en)) {
			b->st.bad_entries++;
			break; /* lengths chain the entries: nothing after this can be found */
		}
		if (!en.next)
			break;
		if (en.fde && eh_frame__fde_start(&b->e, &en, &b->st, &start)) {
			if (b->nr_fdes == cap) {
				size_t ncap = cap ? cap * 2 : 1024;
				struct fde_ref *n = reallocarray(b->fdes, ncap, sizeof(*n));

				if (!n) {
					err = -ENOMEM;
					break;
				}
				b->fdes = n;
				cap = ncap;
			}
			b->fdes[b->nr_fdes++] = (struct fde_ref){start, (uint32_t)off};
		} else if (en.fde) {
			b->st.fdes++;
		}
		if ((b->since_drop += en.next - off) >= (2u << 20))
			build__drop_pages(b);
		off = en.next;
	}
	b->collect_off = off;
	b->collect_cap = cap;
	if (err)
		return err;
	b->scanned = true;
	for (size_t i = 1; i < b->nr_fdes; i++)
		if (cmp_fde(&b->fdes[i - 1], &b->fdes[i]) > 0) {
			if (!sort_start(b))
				return 1; /* sorted a piece per step */
			break;
		}
	b->collected = true;
	return 0;
}

static struct unwind_build *build__new(const uint8_t *sec, size_t size, uint64_t sec_vaddr,
				       uint64_t data_vaddr)
{
	struct unwind_build *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->out.st = &b->st;
	b->out.fn = build__row;
	if (size > UNWIND_TABLE_MAX_SECTION) {
		build__refuse(b, -E2BIG, ".eh_frame over the 256 MiB cap");
		return b;
	}
	b->e = (struct eh_src){sec, size, {sec, sec_vaddr, data_vaddr}};
	b->st.section_bytes = size;
	return b;
}

/* Why no FDE of the section was kept (collected, none with rows): in words, into b. */
static int build__refuse_no_fde(struct unwind_build *b)
{
	const char *why = "no FDE in .eh_frame";

	if (b->st.bad_entries) {
		snprintf(b->why_buf, sizeof(b->why_buf), "no FDE could be parsed (%llu malformed)",
			 (unsigned long long)b->st.bad_entries);
		why = b->why_buf;
	} else if (b->st.far_fdes) {
		snprintf(b->why_buf, sizeof(b->why_buf),
			 "all %llu FDEs past 4 GiB of address space",
			 (unsigned long long)b->st.far_fdes);
		why = b->why_buf;
	} else if (b->st.fdes) {
		why = "every FDE is empty";
	}
	return build__refuse(b, -ENOENT, why);
}

/* The first piece of the section's FDEs; the ELF (if any) and drop range are set by the
 * caller. The rest come in unwind_build__step. 0, or -ENOMEM (a refusal is no error here). */
static int build__start(struct unwind_build *b)
{
	int err;

	if (b->err)
		return 0;
	err = build__collect(b, COLLECT_STEP_BYTES);
	build__drop_pages(b);
	if (err < 0)
		return err;
	if (b->scanned && !b->nr_fdes && !b->nr_pre)
		build__refuse_no_fde(b);
	return 0;
}

static int build__finish(struct unwind_build *b);

/* The Go rows below pc, at most max of them, into the merge: 1 while more below pc are left,
 * else 0 or the row callback's error. A
 * Go row at an FDE's start goes before the FDE's (the later row at one pc wins); one inside an
 * FDE's range comes after its rows and is dropped as an overlap (Go's table covers no C code:
 * there are none). */
static int build__pre_below(struct unwind_build *b, uint64_t pc, size_t max)
{
	int err;

	for (size_t n = 0; b->pre_next < b->nr_pre && b->pre[b->pre_next].pc < pc; n++) {
		if (n == max)
			return 1;
		if ((err = build__row(&b->out, &b->pre[b->pre_next++])))
			return err;
	}
	return 0;
}

int unwind_build__step(struct unwind_build *b, size_t max_fdes, unwind_row_fn fn, void *ctx)
{
	int err = 0;

	b->fn = fn;
	b->ctx = ctx;
	if (b->err)
		return b->err;
	if (b->pre_only) {
		/* A Go function has a few rows: as many per step as FDEs of about that many. */
		err = build__pre_below(b, UINT64_MAX, 8 * max_fdes);
		return err ? err : build__finish(b);
	}
	if (!b->collected) {
		if (!b->scanned) {
			err = build__collect(b, COLLECT_STEP_BYTES);
			build__drop_pages(b);
			if (err < 0)
				return err;
		} else if (!sort_step(b)) {
			b->collected = true;
		}
		if (b->scanned && !b->nr_fdes && !b->nr_pre)
			return build__refuse_no_fde(b);
		return 1;
	}
	for (size_t n = 0; b->next < b->nr_fdes && n < max_fdes; n++) {
		struct fde_ref *f = &b->fdes[b->next++];
		struct entry en;
		struct cursor c;

		/* cgo: the Go functions before this FDE first, within the step's budget (most of
		 * a cgo file's text can lie below its first C function): the rest next step. */
		if (b->nr_pre && (err = build__pre_below(b, f->pc, 8 * max_fdes))) {
			b->next--;
			return err;
		}
		if (eh_frame__entry_at(&b->e, f->off, &b->cc, &b->st, &en) || !en.fde)
			continue; /* read once already: cannot fail now */
		c = (struct cursor){en.body, en.end, false};
		err = eh_frame__do_fde(&b->out, &en.cie, &c, &b->e.pc);
		if (err == -EINVAL) {
			b->st.bad_entries++;
			err = 0;
		}
		if (err)
			return err;
		if ((b->since_drop += (size_t)(en.end - en.body)) >= (2u << 20))
			build__drop_pages(b);
	}
	if (b->next < b->nr_fdes)
		return 1;
	/* cgo: the Go functions after the last FDE, a piece per step. */
	err = build__pre_below(b, UINT64_MAX, 8 * max_fdes);
	return err ? err : build__finish(b);
}

/* The last row passed on, and a table with no rule the walker can apply refused. */
static int build__finish(struct unwind_build *b)
{
	int err;

	build__drop_pages(b);
	if (b->has_pending) {
		err = build__pass(b, &b->pending);
		b->has_pending = false;
		if (err)
			return err;
	}
	if (!b->usable_rows) {
		snprintf(b->why_buf, sizeof(b->why_buf),
			 "no rule the walker can apply (%llu FDEs, %llu cut short)",
			 (unsigned long long)b->st.fdes, (unsigned long long)b->st.bad_entries);
		return build__refuse(b, -ENOENT, b->why_buf);
	}
	return 0;
}

const char *unwind_build__why(const struct unwind_build *b)
{
	return b->why;
}

size_t unwind_build__nr_fdes(const struct unwind_build *b)
{
	return b->nr_fdes;
}

bool unwind_build__collected(const struct unwind_build *b)
{
	return b->collected;
}

void unwind_build__free(struct unwind_build *b)
{
	if (!b)
		return;
	if (b->sort)
		free(b->sort->tmp);
	free(b->sort);
	free(b->fdes);
	free(b->pre);
	elf_end(b->elf);
	free(b);
}

void unwind_build__stats(const struct unwind_build *b, struct unwind_table_stats *ret)
{
	*ret = b->st;
	ret->rows = b->rows_out;
}

/* .eh_frame (and .got, for datarel pointers) of an ELF image. */
struct eh_sections {
	const uint8_t *data;
	size_t size;
	uint64_t addr, got;
};

static int find_eh_frame(Elf *elf, struct eh_sections *ret)
{
	Elf_Data *eh_data = NULL;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Ehdr eh;

	memset(ret, 0, sizeof(*ret));
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    eh.e_machine != EM_X86_64 || elf_getshdrstrndx(elf, &shstrndx))
		return -ENOEXEC;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		/* LLVM's assembler types it SHT_X86_64_UNWIND (the x86-64 psABI's), GNU as
		 * PROGBITS: clang-built files (libLLVM, clang) have the former. */
		if (!strcmp(name, ".eh_frame") &&
		    (sh.sh_type == SHT_PROGBITS || sh.sh_type == SHT_X86_64_UNWIND)) {
			eh_data = elf_getdata(scn, NULL);
			ret->addr = sh.sh_addr;
		} else if (!strcmp(name, ".got")) {
			ret->got = sh.sh_addr;
		}
	}
	if (!eh_data || !eh_data->d_buf || !eh_data->d_size)
		return -ENOENT;
	ret->data = eh_data->d_buf;
	ret->size = eh_data->d_size;
	return 0;
}

/* A build that only says why the image has no table (find_eh_frame's err); NULL: ENOMEM. */
static struct unwind_build *build__refused_image(int err)
{
	struct unwind_build *b = build__new(NULL, 0, 0, 0);

	if (b)
		build__refuse(b, err,
			      err == -ENOEXEC ? "not an x86-64 ELF file" : "no .eh_frame section");
	return b;
}

/* A build over a Go file's rows (no .eh_frame): elf is read now and can be ended after.
 * NULL: ENOMEM. */
static struct unwind_build *build__new_go(Elf *elf)
{
	struct unwind_build *b = build__new(NULL, 0, 0, 0);
	struct gopclntab_stats gs;
	const char *why = NULL;
	int err;

	if (!b)
		return NULL;
	b->scanned = b->collected = b->pre_only = true;
	err = gopclntab__rows(elf, UNWIND_TABLE_MAX_ROWS, &b->pre, &b->nr_pre, &gs, &why);
	if (err == -ENOMEM) {
		free(b);
		return NULL;
	}
	if (err == -ENOENT) {
		build__refuse(b, -ENOENT, "no .eh_frame section");
	} else if (err) {
		snprintf(b->why_buf, sizeof(b->why_buf), "no .eh_frame, and %s",
			 err == -E2BIG ? "over the row cap in .gopclntab" : why);
		build__refuse(b, err == -E2BIG ? -E2BIG : -ENOENT, b->why_buf);
	} else {
		b->st.fdes = b->st.go_funcs = gs.funcs;
		b->st.bad_entries = gs.bad_funcs;
		b->st.section_bytes = gs.section_size;
		b->nr_fdes = (size_t)gs.funcs;
	}
	return b;
}

/* A cgo file has .eh_frame for its C code and none for its Go code: the Go functions' rows from
 * its .gopclntab join the FDEs'. A file without one, or with one not read here, keeps its FDEs
 * alone (its Go code walked by frame pointers, as before). 0, or -ENOMEM. */
static int build__add_cgo(struct unwind_build *b, Elf *elf)
{
	struct gopclntab_stats gs;
	const char *why = NULL;
	int err = gopclntab__rows(elf, UNWIND_TABLE_MAX_ROWS, &b->pre, &b->nr_pre, &gs, &why);

	if (err == -ENOMEM)
		return err;
	if (err) {
		free(b->pre);
		b->pre = NULL;
		b->nr_pre = 0;
		return 0;
	}
	b->st.go_funcs = gs.funcs;
	return 0;
}

struct unwind_build *unwind_build__new_fd(int fd)
{
	struct unwind_build *b = NULL;
	struct eh_sections es;
	long page = sysconf(_SC_PAGESIZE);
	Elf *elf;
	int err;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	err = find_eh_frame(elf, &es);
	if (err == -ENOENT) {
		/* Go: its own function table says the frames. */
		b = build__new_go(elf);
		elf_end(elf);
		return b;
	}
	if (err) {
		elf_end(elf);
		return build__refused_image(err);
	}
	b = build__new(es.data, es.size, es.addr, es.got);
	if (!b) {
		elf_end(elf);
		return NULL;
	}
	b->elf = elf;
	err = build__add_cgo(b, elf);
	if (err) {
		unwind_build__free(b);
		errno = -err;
		return NULL;
	}
	/* Given back only where libelf mapped the file (not where it had to copy it). */
	if (page > 0 && elf_rawfile(elf, NULL)) {
		uintptr_t lo = (uintptr_t)es.data & ~((uintptr_t)page - 1);

		b->drop_start = (uint8_t *)lo;
		b->drop_len = (uintptr_t)es.data + es.size - lo;
	}
	err = build__start(b);
	if (err) {
		unwind_build__free(b);
		errno = -err;
		return NULL;
	}
	return b;
}

struct unwind_build *unwind_build__new_eh_frame(const void *sec, size_t size, uint64_t sec_vaddr,
						uint64_t data_vaddr)
{
	struct unwind_build *b = build__new(sec, size, sec_vaddr, data_vaddr);
	int err;

	if (!b)
		return NULL;
	err = build__start(b);
	if (err) {
		unwind_build__free(b);
		errno = -err;
		return NULL;
	}
	return b;
}

struct unwind_build *unwind_build__new_elf_memory(const void *image, size_t size)
{
	struct unwind_build *b = NULL;
	struct eh_sections es;
	Elf *elf;
	int err;

	elf_version(EV_CURRENT);
	elf = elf_memory((char *)image, size);
	err = find_eh_frame(elf, &es);
	if (err) {
		elf_end(elf);
		return build__refused_image(err);
	}
	b = unwind_build__new_eh_frame(es.data, es.size, es.addr, es.got);
	if (!b) {
		elf_end(elf);
		return NULL;
	}
	b->elf = elf; /* freed with the build */
	return b;
}

/* ---- a whole table in memory (tests, the fuzzer) ---- */

static int table__push(void *ctx, const struct xsprof_unwind_row *r)
{
	struct unwind_table *t = ctx;

	if (t->nr == t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 1024;
		struct xsprof_unwind_row *n;

		if (t->nr >= UNWIND_TABLE_MAX_ROWS)
			return -E2BIG;
		if (ncap > UNWIND_TABLE_MAX_ROWS)
			ncap = UNWIND_TABLE_MAX_ROWS;
		n = reallocarray(t->rows, ncap, sizeof(*n));
		if (!n)
			return -ENOMEM;
		t->rows = n;
		t->cap = ncap;
	}
	t->rows[t->nr++] = *r;
	return 0;
}

static struct unwind_table *table__from_build(struct unwind_build *b)
{
	struct unwind_table *t = b ? calloc(1, sizeof(*t)) : NULL;
	int err = b ? -ENOMEM : -errno;

	if (t) {
		while ((err = unwind_build__step(b, SIZE_MAX, table__push, t)) > 0)
			;
		unwind_build__stats(b, &t->st);
	}
	unwind_build__free(b);
	if (err) {
		unwind_table__free(t);
		errno = -err;
		return NULL;
	}
	return t;
}

struct unwind_table *unwind_table__from_eh_frame(const void *sec, size_t size, uint64_t sec_vaddr,
						 uint64_t data_vaddr)
{
	return table__from_build(unwind_build__new_eh_frame(sec, size, sec_vaddr, data_vaddr));
}

struct unwind_table *unwind_table__from_elf_fd(int fd)
{
	return table__from_build(unwind_build__new_fd(fd));
}

struct unwind_table *unwind_table__from_elf_memory(const void *image, size_t size)
{
	return table__from_build(unwind_build__new_elf_memory(image, size));
}

void unwind_table__free(struct unwind_table *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t);
}

size_t unwind_table__count(const struct unwind_table *t)
{
	return t->nr;
}

const struct xsprof_unwind_row *unwind_table__rows(const struct unwind_table *t)
{
	return t->rows;
}

const struct xsprof_unwind_row *unwind_table__find(const struct unwind_table *t, uint64_t pc)
{
	size_t lo = 0, hi = t->nr;

	if (pc > UINT32_MAX)
		pc = UINT32_MAX;
	/* The last row with row.pc <= pc. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &t->rows[lo - 1] : NULL;
}

void unwind_table__stats(const struct unwind_table *t, struct unwind_table_stats *ret)
{
	*ret = t->st;
}
