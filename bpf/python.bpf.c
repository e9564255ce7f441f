// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * The interpreter walk of python.bpf.h, defined once for every program that walks user stacks.
 * Two bpf_loop walks: the thread list (only when the per-thread cache misses) and the frames.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "xsprof_events.h"
#include "python.bpf.h"

static __always_inline __u64 read_ptr(__u64 addr)
{
	__u64 v;

	if (!addr || bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

/* bpf_loop's contexts must be on the stack: the pointers, the state in py_scratch. */
struct py_tsearch {
	const struct xsprof_py_proc *p;
	struct py_tsearch_state *q;
};

static long py_tsearch_step(__u32 i, void *arg)
{
	struct py_tsearch *t = arg;
	const struct xsprof_py_proc *p = t->p;
	struct py_tsearch_state *q = t->q;
	__u64 ntid;

	if (!p || !q)
		return 1;
	if (q->ts) {
		if (bpf_probe_read_user(&ntid, sizeof(ntid),
					(void *)(q->ts + p->tstate_native_tid))) {
			q->err = 1;
			return 1;
		}
		if (ntid == q->tid) {
			q->found.ts[q->n & (PY_MAX_TSTATES - 1)] = q->ts;
			if (++q->n >= PY_MAX_TSTATES)
				return 1;
			/* One per interpreter: on to the next interpreter. */
			q->ts = 0;
			return 0;
		}
		q->ts = read_ptr(q->ts + p->tstate_next);
		return 0;
	}
	q->interp = read_ptr(q->interp + p->interp_next);
	if (!q->interp)
		return 1;
	q->ts = read_ptr(q->interp + p->interp_threads_head);
	return 0;
}

struct py_fwalk {
	const struct xsprof_py_proc *p;
	struct py_scratch *out;
};

/* Read the frame at addr into o->chunk: 0, or an error. The size is bounded right before the
 * read, in the register the helper takes (Linux 6.1 loses a bound across a spill). */
static __always_inline long read_frame(struct py_scratch *o, const struct xsprof_py_proc *p,
				       __u64 addr)
{
	__u64 size = p->frame_size;

	if (size < 8 || size > PY_FRAME_READ)
		return -1;
	barrier_var(size);
	return bpf_probe_read_user(o->chunk, size & (2 * PY_FRAME_READ - 1), (void *)addr);
}

static __always_inline __u64 chunk_word(const struct py_scratch *o, __u16 off)
{
	return *(const __u64 *)&o->chunk[off & (PY_FRAME_READ - 8)];
}

/* The code object's identity beyond its address (struct xsprof_py_frame's key); 0 when
 * unreadable. */
static __always_inline __u64 code_key(struct py_scratch *o, __u64 addr)
{
	__u64 h = 0x9e3779b97f4a7c15ull;

	if (bpf_probe_read_user(o->key_words, sizeof(o->key_words), (void *)addr))
		return 0;
	for (int i = 0; i < XSPROF_PY_KEY_BYTES / 8; i++) {
		h ^= o->key_words[i];
		h *= 0xbf58476d1ce4e5b9ull;
		h ^= h >> 31;
	}
	return h;
}

static long py_frame_step(__u32 i, void *arg)
{
	struct py_fwalk *fw = arg;
	const struct xsprof_py_proc *p = fw->p;
	struct py_scratch *o = fw->out;
	struct py_fwalk_state *w;
	struct xsprof_py_frame *f;
	__u64 code, instr, first;

	if (!p || !o)
		return 1;
	w = &o->fw;
	if (!w->frame)
		return 1;
	if (read_frame(o, p, w->frame)) {
		w->err = 1;
		return 1;
	}
	/* Few values live across the helper calls: each one held is a slot of the BPF stack. */
	w->frame = chunk_word(o, p->frame_previous);
	if (p->frame_kind == XSPROF_PY_FRAME_INTERP &&
	    o->chunk[p->frame_owner & (PY_FRAME_READ - 1)] == p->owner_cstack) {
		/* A shim frame under an activation's first frame (3.12 on). */
		if (w->n)
			o->f[(w->n - 1) & (XSPROF_PY_MAX_FRAMES - 1)].flags |= XSPROF_PY_F_ENTRY;
		return 0;
	}
	if (w->n >= XSPROF_PY_MAX_FRAMES) {
		w->full = 1;
		return 1;
	}
	f = &o->f[w->n & (XSPROF_PY_MAX_FRAMES - 1)];
	code = chunk_word(o, p->frame_code) & ~(__u64)p->code_tag_bits;
	instr = chunk_word(o, p->frame_instr);
	f->code = code;
	if (p->frame_kind != XSPROF_PY_FRAME_INTERP) {
		/* A PyFrameObject: one C activation each; f_lasti an int, -1 before the first
		 * instruction. */
		__s32 lasti = (__s32)instr;

		f->flags = XSPROF_PY_F_ENTRY;
		if (lasti < 0)
			f->instr = XSPROF_PY_INSTR_NONE;
		else
			f->instr = p->frame_kind == XSPROF_PY_FRAME_OBJECT_BYTES ? (__u32)lasti >> 1
										 : (__u32)lasti;
		w->n++;
		f->key = code_key(o, code + p->code_key);
		return 0;
	}
	f->flags = p->frame_is_entry != XSPROF_PY_NO_OFFSET &&
				   o->chunk[p->frame_is_entry & (PY_FRAME_READ - 1)]
			   ? XSPROF_PY_F_ENTRY
			   : 0;
	first = code + p->code_adaptive;
	if (!code || instr < first || (instr - first) >> 1 >= XSPROF_PY_INSTR_NONE)
		f->instr = XSPROF_PY_INSTR_NONE;
	else
		f->instr = (__u32)((instr - first) >> 1);
	w->n++;
	f->key = code_key(o, code + p->code_key);
	return 0;
}

/*
 * What the thread states of the running thread (tid in its own pid namespace) hold in their
 * tstate_native_tid field: tid itself, or before 3.11 its pthread_t, which on x86-64 is the
 * thread's TLS base (set by clone() or arch_prctl(), kept in thread.fsbase). 0: none known.
 */
static __always_inline __u64 thread_ident(const struct xsprof_py_proc *p, __u32 tid)
{
	if (p->thread_kind == XSPROF_PY_THREAD_NATIVE_TID)
		return tid;
#if defined(__TARGET_ARCH_x86)
	if (p->thread_kind == XSPROF_PY_THREAD_PTHREAD) {
		struct task_struct *task = (struct task_struct *)bpf_get_current_task();

		return BPF_CORE_READ(task, thread.fsbase);
	}
#endif
	return 0;
}

/* Whether every thread state of c still belongs to the thread (ident: thread_ident), and c is
 * recent enough. */
static __always_inline bool cache_valid(const struct xsprof_py_proc *p, const struct py_thread *c,
					__u64 tid)
{
	__u64 ntid;

	if (!c->ts[0] || bpf_ktime_get_ns() - c->scanned_ns > PY_RESCAN_NS)
		return false;
	for (int i = 0; i < PY_MAX_TSTATES; i++) {
		if (!c->ts[i])
			break;
		if (bpf_probe_read_user(&ntid, sizeof(ntid),
					(void *)(c->ts[i] + p->tstate_native_tid)) ||
		    ntid != tid)
			return false;
	}
	return true;
}

/* The thread states of tid into o->th: the cached ones if they still say tid, else a scan.
 * false: none. */
static __always_inline bool find_tstates(const struct xsprof_py_proc *p, __u32 tgid, __u32 tid,
					 struct xsprof_py_stats *st, struct py_scratch *o)
{
	struct py_tsearch_state *q = &o->q;
	struct py_tsearch t = {.p = p, .q = q};
	struct py_thread *cached;
	__u64 ident = thread_ident(p, tid);

	/* The key in the scratch (a map value: every kernel takes it as a key), not on the stack. */
	o->thread_key = (__u64)tgid << 32 | tid;
	cached = bpf_map_lookup_elem(&py_threads, &o->thread_key);
	if (!ident)
		return false;
	if (cached && cache_valid(p, cached, ident)) {
		o->th = *cached;
		return true;
	}
	st->thread_scans++;
	__builtin_memset(q, 0, sizeof(*q));
	q->tid = ident;
	q->interp = read_ptr(p->interp_head);
	if (!q->interp) {
		st->unreadable++;
		return false;
	}
	q->ts = read_ptr(q->interp + p->interp_threads_head);
	bpf_loop(512, py_tsearch_step, &t, 0);
	if (q->err)
		st->unreadable++;
	if (!q->n)
		return false;
	q->found.scanned_ns = bpf_ktime_get_ns();
	bpf_map_update_elem(&py_threads, &o->thread_key, &q->found, BPF_ANY);
	o->th = q->found;
	return true;
}

/* The current frame of thread state ts; 0 when it runs no Python code. */
static __always_inline __u64 current_frame(const struct xsprof_py_proc *p, __u64 ts)
{
	__u64 cf;

	if (p->tstate_cframe == XSPROF_PY_NO_OFFSET)
		return read_ptr(ts + p->current_frame);
	cf = read_ptr(ts + p->tstate_cframe);
	return cf ? read_ptr(cf + p->current_frame) : 0;
}

/*
 * The interpreter frames of thread tid of process tgid into this CPU's py_scratch (f), innermost
 * first, by a caller that holds it (busy): how many (0 when tgid is not a known CPython process,
 * or the walk found none). Inline in each python_append_* (global functions): one frame of
 * the BPF stack fewer under every program that walks.
 */
static __always_inline int python_walk(__u32 tgid, __u32 tid)
{
	const struct xsprof_py_proc *p;
	struct xsprof_py_stats *st;
	struct py_fwalk_state *w;
	struct py_scratch *out;
	struct py_fwalk fw;
	__u32 zero = 0;
	bool any = false;

	/* The caller's scratch, looked up again: a map value, which every kernel takes where
	 * a global function's argument would not be (a map key or value on Linux 6.1). */
	out = bpf_map_lookup_elem(&py_scratch, &zero);
	if (!out)
		return 0;
	p = bpf_map_lookup_elem(&py_procs, &tgid);
	if (!p)
		return 0;
	st = bpf_map_lookup_elem(&py_stats, &zero);
	if (!st)
		return 0;
	st->walks++;
	if (!find_tstates(p, tgid, tid, st, out)) {
		st->no_thread++;
		return 0;
	}
	fw.p = p;
	fw.out = out;
	w = &out->fw;
	w->n = 0;
	w->err = 0;
	w->full = 0;
	/* Each interpreter's frames, the innermost interpreter's first: one chain. */
	for (int i = 0; i < PY_MAX_TSTATES; i++) {
		__u64 ts = out->th.ts[i];

		if (!ts || w->err || w->full)
			break;
		w->frame = current_frame(p, ts);
		if (!w->frame)
			continue;
		any = true;
		bpf_loop(2 * XSPROF_PY_MAX_FRAMES, py_frame_step, &fw, 0);
	}
	if (!any)
		st->no_frame++;
	if (w->err)
		st->unreadable++;
	if (w->full)
		st->truncated++;
	st->frames += w->n;
	return w->n;
}

/* Interpreter frames in a launch's key (launch_reuse.bpf.h): the call's own and its two
 * callers (a layer's forward is told from another's by its caller's line). */
#define PY_KEY_FRAMES 3

__noinline __u64 python_key(__u32 tgid, __u32 tid)
{
	const struct xsprof_py_proc *p = bpf_map_lookup_elem(&py_procs, &tgid);
	struct xsprof_py_stats *st;
	struct py_scratch *o;
	__u64 frame, h = 0xcbf29ce484222325ull;
	__u32 zero = 0;

	if (!p)
		return 0;
	st = bpf_map_lookup_elem(&py_stats, &zero);
	o = bpf_map_lookup_elem(&py_scratch, &zero);
	if (!st || !o)
		return 0;
	/* Its scratch in use by the program this one interrupted: no key (the launch walks). */
	if (__sync_val_compare_and_swap(&o->busy, 0, 1) != 0) {
		st->nested++;
		return 0;
	}
	if (!find_tstates(p, tgid, tid, st, o)) {
		o->busy = 0;
		return 0;
	}
	frame = current_frame(p, o->th.ts[0]);
	for (int k = 0; k < PY_KEY_FRAMES && frame; k++) {
		if (read_frame(o, p, frame))
			break;
		h = (h ^ frame) * 0x100000001b3ull;
		h = (h ^ chunk_word(o, p->frame_instr)) * 0x100000001b3ull;
		frame = chunk_word(o, p->frame_previous);
	}
	o->busy = 0;
	return h | 1;
}

/*
 * Walk and append the frames to a record whose used ips[] end at index at (mask: a constant
 * that bounds at so that at + 2 * XSPROF_PY_MAX_FRAMES stays inside ips[]). Returns how many
 * frames were appended; the caller puts that in the record's nr_python.
 */
static __always_inline int python__append(__u64 *ips, __u32 at, __u32 mask, __u32 tgid, __u32 tid)
{
	struct xsprof_py_stats *st;
	struct py_scratch *ps;
	__u32 zero = 0;
	long size;
	int n;

	ps = bpf_map_lookup_elem(&py_scratch, &zero);
	if (!ps)
		return 0;
	if (__sync_val_compare_and_swap(&ps->busy, 0, 1) != 0) {
		st = bpf_map_lookup_elem(&py_stats, &zero);
		if (st)
			st->nested++;
		return 0;
	}
	n = python_walk(tgid, tid);
	if (n <= 0) {
		ps->busy = 0;
		return 0;
	}
	if (n > XSPROF_PY_MAX_FRAMES)
		n = XSPROF_PY_MAX_FRAMES;
	size = (long)n * sizeof(struct xsprof_py_frame);
	/* at + size / 8 <= mask + 3 * XSPROF_PY_MAX_FRAMES, inside ips[] (xsprof_events.h). */
	barrier_var(size);
	if (size > XSPROF_PY_MAX_FRAMES * sizeof(struct xsprof_py_frame))
		size = XSPROF_PY_MAX_FRAMES * sizeof(struct xsprof_py_frame);
	barrier_var(size);
	if (size <= 0 || bpf_probe_read_kernel(&ips[at & mask], size, ps->f)) {
		ps->busy = 0;
		st = bpf_map_lookup_elem(&py_stats, &zero);
		if (st)
			st->copy_err += n;
		return 0;
	}
	ps->busy = 0;
	return n;
}

__noinline int python_append_sample(struct xsprof_sample *s, __u32 tid)
{
	__u32 at;

	if (!s)
		return 0;
	/* nr_kernel + nr_user <= 254: the mask keeps the copy inside ips[]. */
	at = (__u32)s->nr_kernel + s->nr_user;
	s->nr_python = python__append(s->ips, at, 0xff, s->tgid, tid);
	return s->nr_python;
}

__noinline int python_append_call(struct xsprof_cuda_call *r, __u32 tid)
{
	if (!r)
		return 0;
	r->nr_python = python__append(r->ips, r->nr_user, 0x7f, r->tgid, tid);
	return r->nr_python;
}

__noinline int python_append_usdt(struct xsprof_usdt_launch *r, __u32 tid)
{
	if (!r)
		return 0;
	r->nr_python = python__append(r->ips, r->nr_user, 0x7f, r->tgid, tid);
	return r->nr_python;
}

__noinline int python_append_offcpu(struct xsprof_offcpu_stack *r, __u32 tid)
{
	if (!r)
		return 0;
	r->nr_python = python__append(r->uips, r->nr_user, 0x7f, r->tgid, tid);
	return r->nr_python;
}

/* The kernel wants a GPL-compatible licence for the GPL-only helpers: the SPDX line's GPL-2.0. */
char LICENSE[] SEC("license") = "GPL";
