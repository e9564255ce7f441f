// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * The global functions of the table walk (unwind.bpf.h says why they are global), defined once
 * for every program that walks user stacks: the CPU sampler, the off-CPU program, the CUDA
 * uprobes, the USDT probe.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include "xsprof_events.h"
#include "shared_maps.bpf.h"
#include "unwind.bpf.h"

/* The hold budget of each CPU (set between open and load): one hold costs unwind_hold_ns of
 * credit, which grows with time up to unwind_hold_burst_ns: 250 a second, and 128 at once,
 * about what a process's first 150 ms at 999 Hz need while libtorch's table (1.4 M rows) is
 * built. Each is a 20 KiB record, and memory in the daemon while it waits. */
const volatile __u64 unwind_hold_ns = 4000000;
const volatile __u64 unwind_hold_burst_ns = 512000000;
/* No hold while the ring buffer has this much unread (the daemon sets half of it): a storm of
 * new processes must not fill it with 20 KiB holds and cost everyone's samples their place. */
const volatile __u64 unwind_hold_ring_limit = 512 << 10;

struct hold_budget {
	__u64 credit_ns;
	__u64 last_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hold_budget);
} unwind_hold SEC(".maps");

/* One bisection step over [lo, hi) per bpf_loop iteration: a bounded loop would have the
 * verifier follow both halves at every step. */
struct unwind_search {
	__u64 key;
	__u32 lo, hi;
	__u32 maps; /* search unwind_maps by start, else unwind_rows by pc */
	__u32 pad;
};

static long unwind__bisect(__u32 i, void *arg)
{
	struct unwind_search *q = arg;
	__u64 at;
	__u32 mid;

	if (q->lo >= q->hi)
		return 1;
	mid = q->lo + ((q->hi - q->lo) >> 1);
	if (q->maps) {
		const struct xsprof_unwind_map *m = bpf_map_lookup_elem(&unwind_maps, &mid);

		if (!m)
			goto fail;
		at = m->start;
	} else {
		const struct xsprof_unwind_row *r = bpf_map_lookup_elem(&unwind_rows, &mid);

		if (!r)
			goto fail;
		at = r->pc;
	}
	if (at <= q->key)
		q->lo = mid + 1;
	else
		q->hi = mid;
	return 0;
fail:
	q->lo = q->hi = 0;
	return 1;
}

/* 1 + the index in [first, first + count) of the last entry at or below key, or 0. */
static __always_inline __u32 bisect(__u32 maps, __u32 first, __u32 count, __u64 key, __u32 steps)
{
	struct unwind_search q = {.key = key, .lo = first, .hi = first + count, .maps = maps};

	bpf_loop(steps, unwind__bisect, &q, 0);
	return q.lo > first ? q.lo : 0;
}

/* Stack words read for a scan out of code without unwind information (JIT-compiled). */
#define SCAN_WORDS 128

struct scan_buf {
	__u64 w[SCAN_WORDS];
	/* The scan's state, off the BPF stack (each level of the chain costs its frame): */
	__u64 lo, hi; /* the process's file mappings span [lo, hi) */
	__u32 found;  /* 1 + the word's index */
	__u32 checked;
	__u32 map_first, map_count; /* the process's mappings (the cursor's) */
	__u32 key;		    /* a map key */
	__u8 code[8];		    /* the bytes before a candidate return address */
	struct unwind_search q;	    /* the mapping search */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scan_buf);
} unwind_scan_buf SEC(".maps");

/* bisect over a search held elsewhere than the BPF stack (bpf_loop's context is a pointer to it). */
static long unwind__bisect_at(__u32 i, void *arg)
{
	return unwind__bisect(i, *(struct unwind_search **)arg);
}

/* The mapping of the cursor's process holding key, or NULL; remembered in c->last_map. */
static __always_inline const struct xsprof_unwind_map *find_map(struct unwind_cursor *c,
								struct xsprof_unwind_stats *st)
{
	const struct xsprof_unwind_map *m;
	__u32 i;

	if (c->last_map) {
		i = c->map_first + c->last_map - 1;
		m = bpf_map_lookup_elem(&unwind_maps, &i);
		if (m && c->key >= m->start && c->key < m->end)
			return m;
	}
	if (c->map_count > XSPROF_UNWIND_MAX_MAPS)
		return NULL;
	/* 11 steps cover XSPROF_UNWIND_MAX_MAPS (1024). */
	i = bisect(1, c->map_first, c->map_count, c->key, 11);
	if (!i)
		return NULL;
	i--;
	m = bpf_map_lookup_elem(&unwind_maps, &i);
	if (!m || c->key >= m->end)
		return NULL;
	c->last_map = i - c->map_first + 1;
	return m;
}

/* The file has no table: ask for it once (NONE -> WANTED); whether the caller should hold. */
static __always_inline int no_table(struct unwind_cursor *c, const struct xsprof_unwind_map *m,
				    struct xsprof_unwind_file *f, struct xsprof_unwind_stats *st)
{
	struct xsprof_unwind_want want = {
		.type = XSPROF_REC_UNWIND_WANT,
		.tgid = c->tgid,
		.file = m->file,
		.start = m->start,
	};
	__u64 state = f->state;

	if (state == XSPROF_FILE_NONE &&
	    __sync_val_compare_and_swap(&f->state, XSPROF_FILE_NONE, XSPROF_FILE_WANTED) ==
		    XSPROF_FILE_NONE) {
		if (bpf_ringbuf_output(&samples, &want, sizeof(want), BPF_RB_FORCE_WAKEUP)) {
			/* Not asked after all: the next walk here asks again. */
			f->state = XSPROF_FILE_NONE;
			st->want_drops++;
			return UNWIND_NONE;
		}
		st->wants++;
		c->asked = 1;
		state = XSPROF_FILE_WANTED;
	}
	if (state != XSPROF_FILE_WANTED)
		return UNWIND_NONE;
	if (c->hold) {
		if (unwind_hold_take()) {
			c->file = m->file;
			return UNWIND_HOLD;
		}
		st->hold_budget++;
	}
	st->pending_fp++;
	c->pending = 1;
	return UNWIND_NONE;
}

/* The process ran outside its known mappings: ask once for them to be read again. */
static __always_inline void stale_mappings(struct unwind_cursor *c, struct xsprof_unwind_stats *st)
{
	struct xsprof_unwind_want want = {
		.type = XSPROF_REC_UNWIND_WANT,
		.tgid = c->tgid,
		.start = c->key,
	};
	/* The key from the stack: c is a global function's argument, which Linux 6.1 does not
	 * take as a map key. */
	__u32 tgid = c->tgid;
	struct xsprof_unwind_proc *p = bpf_map_lookup_elem(&unwind_procs, &tgid);

	if (!p || p->stale || __sync_val_compare_and_swap(&p->stale, 0, 1) != 0)
		return;
	if (bpf_ringbuf_output(&samples, &want, sizeof(want), BPF_RB_FORCE_WAKEUP)) {
		p->stale = 0;
		st->want_drops++;
		return;
	}
	st->stale_maps++;
}

static __always_inline __u32 unwind__cache_slot(const struct unwind_cursor *c)
{
	__u64 h = (c->key ^ ((__u64)c->tgid << 32)) * 0x9e3779b97f4a7c15ull;

	return c->cache_base + ((__u32)(h >> 56) & (UNWIND_ROW_CACHE - 1));
}

/* The row for c->key from the cache: UNWIND_FOUND, or -1 on a miss. */
__noinline int unwind_cache_find(struct unwind_cursor *c)
{
	struct unwind_cached_row *e;
	struct xsprof_unwind_file *f;
	__u32 slot;

	if (!c)
		return -1;
	slot = unwind__cache_slot(c);
	e = bpf_map_lookup_elem(&unwind_row_cache, &slot);
	if (!e || e->key != c->key || e->tgid != c->tgid || e->gen != c->gen)
		return -1;
	c->row = e->row;
	c->cached_key = c->key;
	c->row_file = e->file;
	/* Still in use, for the daemon's eviction (as unwind_find marks it). */
	f = bpf_map_lookup_elem(&unwind_files, &e->file);
	if (f && !f->used)
		f->used = 1;
	return UNWIND_FOUND;
}

__noinline int unwind_cache_put(struct unwind_cursor *c)
{
	struct unwind_cached_row *e;
	__u32 slot;

	if (!c || !c->gen)
		return 0;
	slot = unwind__cache_slot(c);
	e = bpf_map_lookup_elem(&unwind_row_cache, &slot);
	if (!e)
		return 0;
	e->key = c->key;
	e->tgid = c->tgid;
	e->gen = c->gen;
	e->row = c->row;
	e->file = c->row_file;
	return 0;
}

/* VM_EXEC (include/linux/mm.h): a #define, not in vmlinux.h. */
#define UNWIND_VM_EXEC 0x4

struct vma_seen {
	__u64 start, end, flags;
	__u32 file, pad;
};

static long unwind__vma_seen(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct vma_seen *v = data;

	v->start = vma->vm_start;
	v->end = vma->vm_end;
	v->flags = vma->vm_flags;
	v->file = vma->vm_file != NULL;
	return 0;
}

/* Whether addr is in executable memory of the current process, asked of the kernel: for an
 * address outside the mappings the daemon gave (new JIT code). Once per walk, remembered in
 * c->exec_lo/hi: from the sampler's interrupt each ask costs an irq_work (a self-IPI) to drop
 * mmap_lock, and a second one before it has run is refused. */
static __always_inline bool exec_at(struct unwind_cursor *c, __u64 addr)
{
	struct vma_seen v = {};

	if (addr >= c->exec_lo && addr < c->exec_hi)
		return true;
	if (c->exec_asked)
		return false;
	c->exec_asked = 1;
	if (bpf_find_vma(bpf_get_current_task_btf(), addr, unwind__vma_seen, &v, 0) ||
	    !(v.flags & UNWIND_VM_EXEC))
		return false;
	c->exec_lo = v.start;
	c->exec_hi = v.end;
	c->exec_file = v.file;
	return true;
}

/*
 * A pc outside the process's list, in code of a file the kernel has mapped: the list was read
 * before that file was mapped (libc, for a thread that blocks a millisecond after exec; a
 * library opened since). A walk that may be held stops there (1): the daemon reads the list
 * again and walks the copy with the file's table, where frame pointers would skip a function
 * without a frame of its own (libc's read wrapper) and lose its caller, the one that blocked.
 * 0: JIT code, or no hold to be had (then as JIT code).
 */
static __always_inline int stale_file(struct unwind_cursor *c, struct xsprof_unwind_stats *st)
{
	if (!c->hold || !exec_at(c, c->key) || !c->exec_file)
		return 0;
	if (!unwind_hold_take()) {
		st->hold_budget++;
		return 0;
	}
	c->file = XSPROF_HOLD_FILE_STALE;
	st->held_stale++;
	return 1;
}

__noinline int unwind_find(struct unwind_cursor *c, struct xsprof_unwind_stats *st)
{
	const struct xsprof_unwind_map *m;
	const struct xsprof_unwind_row *r;
	const struct xsprof_unwind_page *pg;
	struct xsprof_unwind_file *f;
	__u64 vaddr, page;
	__u32 i, at;

	if (!c || !st)
		return UNWIND_NONE;
	m = find_map(c, st);
	if (!m) {
		/* Mapped after the list was read: JIT code, most likely. A pc that a
		 * frame-pointer step found may just be wrong: that says nothing. */
		if (!c->trusted)
			return UNWIND_NONE;
		stale_mappings(c, st);
		return stale_file(c, st) ? UNWIND_HOLD : UNWIND_ANON;
	}
	at = m->file;
	if (!at)
		return UNWIND_ANON;
	c->row_file = at;
	f = bpf_map_lookup_elem(&unwind_files, &at);
	if (!f)
		return UNWIND_NONE;
	if (!f->nr_pages || f->state != XSPROF_FILE_READY)
		return no_table(c, m, f, st);
	vaddr = c->key - m->bias;
	page = (vaddr >> XSPROF_UNWIND_PAGE_SHIFT) - f->page0;
	if (vaddr > 0xffffffffull || page >= f->nr_pages) {
		/* Outside every FDE of the file: like a gap between two. */
		c->row.type = XSPROF_CFA_INVALID;
		c->cached_key = c->key;
		return UNWIND_FOUND;
	}
	at = f->page_first + (__u32)page;
	pg = bpf_map_lookup_elem(&unwind_pages, &at);
	if (!pg || !pg->count || pg->count > XSPROF_UNWIND_PAGE_ROWS)
		return UNWIND_NONE;
	/* 13 steps cover XSPROF_UNWIND_PAGE_ROWS. */
	i = bisect(0, pg->first, pg->count, vaddr, 13);
	if (!i)
		return UNWIND_NONE;
	i--;
	r = bpf_map_lookup_elem(&unwind_rows, &i);
	if (!r)
		return UNWIND_NONE;
	c->row = *r;
	c->cached_key = c->key;
	if (!f->used)
		f->used = 1;
	return UNWIND_FOUND;
}

/* Whether the bytes before ra end a call instruction (rel32, or indirect through a register
 * or memory, with or without a REX prefix): a word on the stack that points there is likely a
 * return address, not a stale code pointer. */
static __always_inline bool after_call(__u64 ra, __u8 *b)
{

	if (ra < 8 || bpf_probe_read_user(b, 8, (void *)(ra - 8)))
		return false;
	return b[3] == 0xe8 ||				  /* call rel32 */
	       (b[6] == 0xff && (b[7] & 0xf8) == 0xd0) || /* call reg */
	       (b[5] == 0x41 && b[6] == 0xff && (b[7] & 0xf8) == 0xd0) ||
	       (b[5] == 0xff && (b[6] & 0xf8) == 0x50) || /* call [reg + disp8] */
	       (b[4] == 0xff && b[5] == 0x54) ||	  /* ... with a SIB byte */
	       (b[2] == 0xff && (b[3] == 0x15 || (b[3] & 0xf8) == 0x90)) || /* disp32 */
	       (b[6] == 0xff && (b[7] & 0xf8) == 0x10);			    /* call [reg] */
}

static long unwind__scan_word(__u32 i, void *arg)
{
	struct scan_buf *q = *(struct scan_buf **)arg;
	const struct xsprof_unwind_map *m;
	struct unwind_search *sr;
	__u64 v;
	__u32 idx = i;

	if (!q || q->checked >= 8)
		return 1;
	/* Masked after a barrier: clang would drop the mask (bpf_loop bounds i) and the
	 * verifier would see an unbounded index. */
	barrier_var(idx);
	idx &= SCAN_WORDS - 1;
	v = q->w[idx];
	if (v < q->lo || v >= q->hi)
		return 0;
	sr = &q->q;
	sr->key = v;
	sr->lo = q->map_first;
	sr->hi = q->map_first + q->map_count;
	sr->maps = 1;
	bpf_loop(11, unwind__bisect_at, &sr, 0);
	if (sr->lo <= q->map_first)
		return 0;
	q->key = sr->lo - 1;
	m = bpf_map_lookup_elem(&unwind_maps, &q->key);
	if (!m || v >= m->end || !m->file)
		return 0;
	q->checked++;
	if (!after_call(v, q->code))
		return 0;
	q->found = idx + 1;
	return 1;
}

/*
 * The caller of code that has no unwind information and keeps no frame pointer (a JIT
 * compiler's, in an anonymous mapping: oneDNN's kernels in PyTorch): the first word above sp
 * that points into a file of the process right after a call instruction is taken for its
 * return address. 0 with the caller in *w, or 1.
 */
__noinline int unwind_scan(struct unwind_cursor *c, struct unwind_regs *w,
			   struct xsprof_unwind_stats *st)
{
	const struct xsprof_unwind_map *m;
	struct scan_buf *buf;
	__u32 zero = 0, found;

	if (!c || !w || !st || !c->map_count || c->map_count > XSPROF_UNWIND_MAX_MAPS)
		return 1;
	buf = bpf_map_lookup_elem(&unwind_scan_buf, &zero);
	if (!buf || bpf_probe_read_user(buf->w, sizeof(buf->w), (void *)w->sp))
		return 1;
	/* Keys and state in the buffer: this frame is one of the chain's. */
	buf->map_first = c->map_first;
	buf->map_count = c->map_count;
	buf->key = buf->map_first;
	m = bpf_map_lookup_elem(&unwind_maps, &buf->key);
	if (!m)
		return 1;
	buf->lo = m->start;
	buf->key = buf->map_first + buf->map_count - 1;
	m = bpf_map_lookup_elem(&unwind_maps, &buf->key);
	if (!m)
		return 1;
	buf->hi = m->end;
	buf->found = 0;
	buf->checked = 0;
	bpf_loop(SCAN_WORDS, unwind__scan_word, &buf, 0);
	found = buf->found;
	if (!found || found > SCAN_WORDS) {
		st->scan_failed++;
		return 1;
	}
	w->pc = buf->w[(found - 1) & (SCAN_WORDS - 1)];
	w->sp += (__u64)found * 8;
	w->exact = 0;
	w->flags &= ~UNWIND_F_FROM_FP;
	st->scanned++;
	return 0;
}

/*
 * The caller of code without a table in an anonymous mapping (JIT code) by its frame pointer,
 * as perf's walk takes it, where the frame is plausible: rbp aligned, above sp and within the
 * thread's stack (c->stack_hi), and the word above it an address in one of the process's
 * executable mappings (known to the daemon, or else to the kernel: JIT code mapped since the
 * list was read, which is then read again). A JIT caller's own rbp is checked in turn at the
 * next frame, which makes the chain rise; a caller with a table goes on by its rows (rbp may
 * be a general register there: it is whatever the JIT code saved). 0 with the caller in *w,
 * or 1 (then the scan).
 */
__noinline int unwind_jit_fp(struct unwind_cursor *c, struct unwind_regs *w,
			     struct xsprof_unwind_stats *st, __u32 win)
{
	const struct xsprof_unwind_map *m;
	const struct unwind_win *ww;
	__u64 fr[2], k, key;
	__u32 zero = 0;

	if (!c || !w || !st)
		return 1;
	if (w->bp < w->sp || (w->bp & 7) || w->bp >= c->stack_hi - 16)
		return 1;
	ww = win ? bpf_map_lookup_elem(&sample_window, &zero) : NULL;
	k = ww && w->bp >= ww->lo ? (w->bp - ww->lo) >> 3 : ~0ull;
	if (ww && k < UNWIND_WINDOW / 8 - 1 && !((w->bp - ww->lo) & 7)) {
		asm volatile("%0 &= 127" : "+r"(k)); /* UNWIND_WINDOW / 8 - 1, for the verifier */
		fr[0] = ww->w[k];
		fr[1] = ww->w[k + 1];
	} else if (bpf_probe_read_user(fr, sizeof(fr), (void *)w->bp)) {
		return 1;
	}
	barrier_var(fr[0]);
	barrier_var(fr[1]);
	/* The call is before the return address: its mapping is the caller's (and the next
	 * frame's lookup starts from it, in c->last_map). */
	if (!fr[1])
		return 1;
	key = c->key;
	c->key = fr[1] - 1;
	m = find_map(c, st);
	if (!m) {
		if (!exec_at(c, fr[1] - 1)) {
			c->key = key;
			return 1;
		}
		stale_mappings(c, st);
	}
	c->key = key;
	w->sp = w->bp + 16;
	w->pc = fr[1];
	w->bp = fr[0];
	w->exact = 0;
	/* A return address in executable memory: as sure as a table's. */
	w->flags &= ~UNWIND_F_FROM_FP;
	st->frames_fp++;
	st->jit_fp++;
	return 0;
}

__noinline int unwind_hold_take(void)
{
	__u32 zero = 0;
	struct hold_budget *b = bpf_map_lookup_elem(&unwind_hold, &zero);
	__u64 now = bpf_ktime_get_ns(), credit;

	if (!b || bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) >= unwind_hold_ring_limit)
		return 0;
	credit = b->credit_ns + (now - b->last_ns);
	if (credit > unwind_hold_burst_ns)
		credit = unwind_hold_burst_ns;
	b->last_ns = now;
	if (credit < unwind_hold_ns) {
		b->credit_ns = credit;
		return 0;
	}
	b->credit_ns = credit - unwind_hold_ns;
	return 1;
}

/* One step through the frame-pointer chain: 0, or 1 when the chain ends. */
__noinline int unwind_fp_step(struct unwind_regs *w, struct xsprof_unwind_stats *st)
{
	__u64 fr[2];

	if (!w || !st)
		return 1;
	if (w->bp < w->sp || (w->bp & 7)) {
		/* A zero frame pointer is the root's (_start and clone clear rbp). */
		st->end_fp_chain++;
		w->flags |= UNWIND_END(w->bp ? XSPROF_END_FP_BROKEN : XSPROF_END_ROOT);
		return 1;
	}
	if (bpf_probe_read_user(fr, sizeof(fr), (void *)w->bp)) {
		st->end_fp_chain++;
		w->flags |= UNWIND_END(XSPROF_END_FP_BROKEN);
		return 1;
	}
	barrier_var(fr[0]);
	barrier_var(fr[1]);
	if (!fr[1]) {
		st->end_fp_chain++;
		w->flags |= UNWIND_END(XSPROF_END_ROOT);
		return 1;
	}
	w->sp = w->bp + 16;
	w->pc = fr[1];
	w->bp = fr[0];
	w->exact = 0;
	w->flags |= UNWIND_F_FROM_FP;
	st->frames_fp++;
	return 0;
}

/* One step by a table row: 0, 1 when the walk ends, -1 to try the frame-pointer step. */
__noinline int unwind_row_fast(const struct xsprof_unwind_row *r, struct unwind_regs *w,
			       struct xsprof_unwind_stats *st, __u32 win)
{
	const struct unwind_win *ww;
	__u64 cfa, fr[2], k;
	__u32 zero = 0;
	__u8 type;

	if (!r || !w || !st)
		return 1;
	type = r->type;
	if ((type != XSPROF_CFA_RSP && type != XSPROF_CFA_RBP) ||
	    (r->rbp_off != -2 && r->rbp_off != 0))
		return -1;
	cfa = (type == XSPROF_CFA_RSP ? w->sp : w->bp) + r->cfa_off;
	if (cfa <= w->sp || (cfa & 7)) {
		st->end_bad_cfa++;
		w->flags |= UNWIND_END(XSPROF_END_BAD_CFA);
		return 1;
	}
	ww = win ? bpf_map_lookup_elem(&sample_window, &zero) : NULL;
	k = ww && cfa - 16 >= ww->lo ? (cfa - 16 - ww->lo) >> 3 : ~0ull;
	if (ww && k < UNWIND_WINDOW / 8 - 1 && !((cfa - ww->lo) & 7)) {
		/* Inside the window: two words of the copy instead of a read of user memory. */
		asm volatile("%0 &= 127" : "+r"(k)); /* UNWIND_WINDOW / 8 - 1, for the verifier */
		fr[0] = r->rbp_off ? ww->w[k] : w->bp;
		fr[1] = ww->w[k + 1];
	} else if (r->rbp_off) {
		if (bpf_probe_read_user(fr, 16, (void *)(cfa - 16))) {
			st->end_unreadable++;
			w->flags |= UNWIND_END(XSPROF_END_UNREADABLE);
			return 1;
		}
	} else {
		fr[0] = w->bp;
		if (bpf_probe_read_user(&fr[1], 8, (void *)(cfa - 8))) {
			st->end_unreadable++;
			w->flags |= UNWIND_END(XSPROF_END_UNREADABLE);
			return 1;
		}
	}
	barrier_var(fr[0]);
	barrier_var(fr[1]);
	if (!fr[1]) {
		st->end_outermost++;
		w->flags |= UNWIND_END(XSPROF_END_ROOT);
		return 1;
	}
	w->sp = cfa;
	w->pc = fr[1];
	w->bp = fr[0];
	w->exact = 0;
	w->flags = UNWIND_F_USED_CFI; /* frames_cfi is counted per walk (unwind__walk) */
	return 0;
}

__noinline int unwind_row_step(const struct xsprof_unwind_row *r, struct unwind_regs *w,
			       struct xsprof_unwind_stats *st)
{
	__u64 cfa, ra, bp, fr[2];
	__s32 off, rbp_off;

	if (!r || !w || !st)
		return -1;
	bp = w->bp;
	off = r->cfa_off;
	rbp_off = r->rbp_off * 8;
	switch (XSPROF_ROW_TYPE(r->type)) {
	case XSPROF_CFA_OUTERMOST:
		st->end_outermost++;
		w->flags |= UNWIND_END(XSPROF_END_ROOT);
		return 1;
	case XSPROF_CFA_SIGNAL:
		if (bpf_probe_read_user(&bp, 8, (void *)(w->sp + UNWIND_UC_RBP)) ||
		    bpf_probe_read_user(fr, 16, (void *)(w->sp + UNWIND_UC_RSP))) {
			st->end_unreadable++;
			w->flags |= UNWIND_END(XSPROF_END_UNREADABLE);
			return 1;
		}
		st->signal_frames++;
		w->bp = bp;
		w->sp = fr[0];
		w->pc = fr[1];
		w->exact = 1;
		w->flags = UNWIND_F_USED_CFI;
		return w->pc ? 0 : 1;
	case XSPROF_CFA_RSP:
		cfa = w->sp + off;
		break;
	case XSPROF_CFA_RBP:
		cfa = w->bp + off;
		break;
	case XSPROF_CFA_PLT:
		cfa = w->sp + 8 + ((w->pc & 15) >= (__u64)off ? 8 : 0);
		break;
	case XSPROF_CFA_DEREF_RBP:
		if (bpf_probe_read_user(&cfa, 8, (void *)(w->bp + off))) {
			st->end_unreadable++;
			w->flags |= UNWIND_END(XSPROF_END_UNREADABLE);
			return 1;
		}
		break;
	default:
		return -1;
	}
	if (cfa <= w->sp || (cfa & 7)) {
		st->end_bad_cfa++;
		w->flags |= UNWIND_END(XSPROF_END_BAD_CFA);
		return 1;
	}
	if (r->type & XSPROF_ROW_RBP_AT_RBP) {
		if (bpf_probe_read_user(&ra, 8, (void *)(cfa - 8)) ||
		    bpf_probe_read_user(&bp, 8, (void *)(w->bp + rbp_off))) {
			st->end_unreadable++;
			w->flags |= UNWIND_END(XSPROF_END_UNREADABLE);
			return 1;
		}
	} else if (rbp_off == -16) {
		/* The usual prologue: push rbp right after the call, one read for both. */
		if (bpf_probe_read_user(fr, 16, (void *)(cfa - 16))) {
			st->end_unreadable++;
			w->flags |= UNWIND_END(XSPROF_END_UNREADABLE);
			return 1;
		}
		barrier_var(fr[0]);
		barrier_var(fr[1]);
		bp = fr[0];
		ra = fr[1];
	} else {
		if (bpf_probe_read_user(&ra, 8, (void *)(cfa - 8))) {
			st->end_unreadable++;
			w->flags |= UNWIND_END(XSPROF_END_UNREADABLE);
			return 1;
		}
		if (rbp_off && bpf_probe_read_user(&bp, 8, (void *)(cfa + rbp_off))) {
			st->end_unreadable++;
			w->flags |= UNWIND_END(XSPROF_END_UNREADABLE);
			return 1;
		}
	}
	if (!ra) {
		/* Thread entry code that marks no rule ends its chain with a zero. */
		st->end_outermost++;
		w->flags |= UNWIND_END(XSPROF_END_ROOT);
		return 1;
	}
	w->sp = cfa;
	w->pc = ra;
	w->bp = bp;
	w->exact = 0;
	w->flags = UNWIND_F_USED_CFI;
	return 0;
}

__noinline __u64 unwind_uret_orig(__u64 slot, __u64 tramp)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct return_instance *ri = BPF_CORE_READ(task, utask, return_instances);

	for (int i = 0; i < URET_MAX && ri; i++) {
		if (BPF_CORE_READ(ri, stack) == slot)
			return BPF_CORE_READ(ri, orig_ret_vaddr);
		ri = BPF_CORE_READ(ri, next);
	}
	return tramp;
}

/* The kernel wants a GPL-compatible licence for the GPL-only helpers: the SPDX line's GPL-2.0. */
char LICENSE[] SEC("license") = "GPL";
