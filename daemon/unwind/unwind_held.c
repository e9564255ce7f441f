// SPDX-License-Identifier: Apache-2.0
/*
 * Held samples (struct xsprof_sample_held): the BPF walk stopped where a table was missing and
 * sent the registers there with a copy of the stack above them. The walk goes on here, with the
 * same rules as bpf/unwind.bpf.c, over the copy; where it needs a table that is being built it
 * waits for it (bounded in time and memory), so a process's first samples are as whole as the
 * rest. The frames found are added after the ones BPF stored; the interpreter frames move after
 * them, and the sample goes on as if BPF had walked it whole.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/clock.h"
#include "daemon/base/hashmap.h"
#include "daemon/unwind/unwind_internal.h"

/* How long a held sample may wait for its tables, and how much memory the waiting ones may
 * take (about 400 at a whole stack copy each). */
#define HELD_DEADLINE_NS (3000000000ull)
#define HELD_MAX_BYTES	 (8u << 20)
/* Reads of a process's mappings for held samples that ran outside them, past the rate of one
 * a second (held_reread). */
#define HELD_REREADS 16

/* rt_sigframe offsets at rsp inside __restore_rt (as bpf/unwind.bpf.h). */
#define UC_RBP (40 + 80)
#define UC_RSP (40 + 120)

struct held {
	struct held *next;
	const struct uw_file *waiting; /* the table it waits for */
	struct uw_proc *proc;	       /* a reference (proc->holds) */
	unwinder_done_fn done;
	void *ctx;
	uint64_t cookie, t0;
	size_t bytes;
	uint64_t pc, sp, bp;
	bool exact, fp_used, reread;
	bool gone; /* the process was gone before its walk: its memory and mappings with it */
	uint16_t nr_kernel, nr_user, nr_python;
	uint8_t end; /* enum xsprof_walk_end: how the walk ended */
	uint64_t copy_sp;
	uint32_t copy_len;
	uint8_t hdr[XSPROF_SAMPLE_HDR_SIZE];
	uint64_t ips[2 * XSPROF_MAX_STACK_DEPTH];
	uint8_t data[]; /* nr_python struct xsprof_py_frame, then the stack copy */
};

enum step { STEP_ON, STEP_END, STEP_CUT, STEP_WAIT };

static const uint8_t *copy_of(const struct held *h)
{
	return h->data + h->nr_python * sizeof(struct xsprof_py_frame);
}

/* len bytes at addr of the held stack, from the copy. */
static bool rd(const struct held *h, uint64_t addr, void *out, size_t len)
{
	if (addr < h->copy_sp || addr - h->copy_sp > h->copy_len ||
	    h->copy_len - (addr - h->copy_sp) < len)
		return false;
	memcpy(out, copy_of(h) + (addr - h->copy_sp), len);
	return true;
}

/* The walk ends with reason end (enum xsprof_walk_end): STEP_CUT when the copy ran out, else
 * STEP_END. */
static enum step ends(struct held *h, uint8_t end)
{
	h->end = end;
	return end == XSPROF_END_COPY ? STEP_CUT : STEP_END;
}

static enum step fp_step(struct held *h)
{
	uint64_t fr[2];

	if (h->bp < h->sp || (h->bp & 7))
		return ends(h, h->bp ? XSPROF_END_FP_BROKEN : XSPROF_END_ROOT);
	if (!rd(h, h->bp, fr, sizeof(fr)))
		return ends(h, XSPROF_END_COPY);
	if (!fr[1])
		return ends(h, XSPROF_END_ROOT);
	h->sp = h->bp + 16;
	h->pc = fr[1];
	h->bp = fr[0];
	h->exact = false;
	h->fp_used = true;
	return STEP_ON;
}

/* A row's step, as unwind_row_step() in bpf/unwind.bpf.c; STEP_WAIT: try frame pointers. */
static enum step row_step(struct held *h, const struct xsprof_unwind_row *r)
{
	uint64_t cfa, ra, bp = h->bp, fr[2];
	int32_t off = r->cfa_off, rbp_off = r->rbp_off * 8;

	switch (XSPROF_ROW_TYPE(r->type)) {
	case XSPROF_CFA_OUTERMOST:
		return ends(h, XSPROF_END_ROOT);
	case XSPROF_CFA_SIGNAL:
		if (!rd(h, h->sp + UC_RBP, &bp, 8) || !rd(h, h->sp + UC_RSP, fr, 16))
			return ends(h, XSPROF_END_COPY);
		h->bp = bp;
		h->sp = fr[0];
		h->pc = fr[1];
		h->exact = true;
		return h->pc ? STEP_ON : ends(h, XSPROF_END_ROOT);
	case XSPROF_CFA_RSP:
		cfa = h->sp + off;
		break;
	case XSPROF_CFA_RBP:
		cfa = h->bp + off;
		break;
	case XSPROF_CFA_PLT:
		cfa = h->sp + 8 + ((h->pc & 15) >= (uint64_t)off ? 8 : 0);
		break;
	case XSPROF_CFA_DEREF_RBP:
		if (!rd(h, h->bp + off, &cfa, 8))
			return ends(h, XSPROF_END_COPY);
		break;
	default:
		return STEP_WAIT;
	}
	if (cfa <= h->sp || (cfa & 7))
		return ends(h, XSPROF_END_BAD_CFA);
	if (!rd(h, cfa - 8, &ra, 8))
		return ends(h, XSPROF_END_COPY);
	if (r->type & XSPROF_ROW_RBP_AT_RBP ? !rd(h, h->bp + rbp_off, &bp, 8)
					    : rbp_off && !rd(h, cfa + rbp_off, &bp, 8))
		return ends(h, XSPROF_END_COPY);
	if (!ra)
		return ends(h, XSPROF_END_ROOT);
	h->sp = cfa;
	h->pc = ra;
	h->bp = bp;
	h->exact = false;
	return STEP_ON;
}

/*
 * pc is outside the process's mappings as read before this sample came: most likely a file
 * mapped since (BPF held the walk there for that, XSPROF_HOLD_STALE_MAPS), so the mappings are
 * read again, once per held sample. A process whose walks keep running outside them (JIT code)
 * gets HELD_REREADS such reads, then one a second as any walk's request.
 */
static const struct uw_map *held_reread(struct unwinder *u, struct held *h, uint64_t key)
{
	struct uw_proc *p = h->proc;
	uint64_t now = clock__mono_ns();

	if (h->reread || p->dead || p->read_ns >= h->t0)
		return NULL;
	h->reread = true;
	if (p->held_rereads >= HELD_REREADS && now - p->read_ns < STALE_REREAD_NS)
		return NULL;
	p->held_rereads++;
	u->st.rereads++;
	u->st.held_rereads++;
	if (unwinder__add_process(u, p->pid))
		return NULL;
	return uw_proc_find(p, key);
}

/* One frame further: its caller stored. may_wait: a table being built is waited for. */
static enum step held_step(struct unwinder *u, struct held *h, bool may_wait)
{
	uint64_t key = h->exact ? h->pc : h->pc - 1;
	const struct uw_map *m = h->proc ? uw_proc_find(h->proc, key) : NULL;
	struct uw_file *f;

	/* Sampled in exit(): nothing left to walk by. Frame pointers from the copy would be a
	 * guess (a zero in rbp is no root in code built without them). */
	if (h->gone)
		return ends(h, XSPROF_END_EXITING);

	if (!m && h->proc)
		m = held_reread(u, h, key);
	f = m ? m->file : NULL;
	enum step r = STEP_WAIT;
	struct xsprof_unwind_row row;

	if (f && f->state == XSPROF_FILE_READY) {
		if (uw_table_row(u, f, key - m->bias, &row))
			r = row_step(h, &row);
	} else if (f && f->state != XSPROF_FILE_UNAVAILABLE && may_wait) {
		uw_want_file(u, f, h->proc->pid, m->start);
		if (f->state == XSPROF_FILE_WANTED) {
			h->waiting = f;
			return STEP_WAIT;
		}
	}
	if (r == STEP_WAIT)
		r = fp_step(h);
	if (r != STEP_ON)
		return r;
	h->ips[h->nr_kernel + h->nr_user] = h->pc;
	h->nr_user++;
	return STEP_ON;
}

/* Walk as far as it goes: STEP_WAIT (parked on h->waiting), or how it ended. */
static enum step held_walk(struct unwinder *u, struct held *h, bool may_wait)
{
	enum step r = STEP_ON;

	h->waiting = NULL;
	while (r == STEP_ON) {
		if (h->nr_user >= XSPROF_MAX_STACK_DEPTH)
			return ends(h, XSPROF_END_DEPTH);
		r = held_step(u, h, may_wait);
	}
	return r;
}

static void held_free(struct unwinder *u, struct held *h)
{
	if (h->proc)
		uw_proc_put(u, h->proc);
	free(h);
}

/* The sample, whole, to the owner. */
static void held_finish(struct unwinder *u, struct held *h, enum step how, bool late)
{
	struct xsprof_sample *s = &u->out;
	size_t nips = (size_t)h->nr_kernel + h->nr_user;
	size_t pyb = h->nr_python * sizeof(struct xsprof_py_frame);

	if (late)
		u->st.held_late++;
	else if (how == STEP_CUT)
		u->st.held_cut++;
	else if (h->fp_used)
		u->st.held_fp++;
	else
		u->st.held_whole++;
	memcpy(s, h->hdr, XSPROF_SAMPLE_HDR_SIZE);
	s->walk_end = h->end;
	s->nr_user = h->nr_user;
	s->nr_python = h->nr_python;
	memcpy(s->ips, h->ips, nips * 8);
	memcpy(&s->ips[nips], h->data, pyb);
	h->done(h->ctx, s, XSPROF_SAMPLE_HDR_SIZE + nips * 8 + pyb, h->cookie);
	held_free(u, h);
}

static void park(struct unwinder *u, struct held *h)
{
	h->next = u->waiting;
	u->waiting = h;
	u->st.held_waiting++;
}

/* The record checked and copied; NULL when malformed (or out of memory: *ret_err). */
static struct held *held_new(const struct xsprof_sample_held *rec, size_t size, int *ret_err)
{
	const struct xsprof_sample *s = &rec->sample;
	size_t nips = (size_t)s->nr_kernel + s->nr_user, pyb, bytes;
	struct held *h;

	*ret_err = -EBADMSG;
	if (size < sizeof(*rec) || rec->type != XSPROF_REC_SAMPLE_HELD ||
	    s->type != XSPROF_REC_SAMPLE || s->nr_kernel > XSPROF_MAX_STACK_DEPTH ||
	    s->nr_user > XSPROF_MAX_STACK_DEPTH || s->nr_python > XSPROF_PY_MAX_FRAMES ||
	    rec->copy_len > XSPROF_HOLD_STACK_BYTES)
		return NULL;
	pyb = s->nr_python * sizeof(struct xsprof_py_frame);
	bytes = sizeof(*h) + pyb + rec->copy_len;
	h = malloc(bytes);
	*ret_err = -ENOMEM;
	if (!h)
		return NULL;
	memset(h, 0, sizeof(*h));
	h->bytes = bytes;
	memcpy(h->hdr, s, XSPROF_SAMPLE_HDR_SIZE);
	h->nr_kernel = s->nr_kernel;
	h->nr_user = s->nr_user;
	h->nr_python = s->nr_python;
	memcpy(h->ips, s->ips, nips * 8);
	memcpy(h->data, &s->ips[nips], pyb);
	memcpy(h->data + pyb, rec->stack, rec->copy_len);
	h->copy_sp = rec->sp;
	h->copy_len = rec->copy_len;
	h->pc = rec->pc;
	h->sp = rec->sp;
	h->bp = rec->bp;
	h->exact = rec->exact;
	*ret_err = 0;
	return h;
}

int unwinder__hold(struct unwinder *u, const void *data, size_t size, unwinder_done_fn done,
		   void *ctx, uint64_t cookie)
{
	const struct xsprof_sample_held *rec = data;
	struct held *h;
	enum step r;
	int err;

	h = held_new(rec, size, &err);
	if (!h)
		return err;
	u->st.held++;
	h->done = done;
	h->ctx = ctx;
	h->cookie = cookie;
	h->t0 = clock__mono_ns();
	if (!uw_proc(u, (pid_t)rec->sample.tgid))
		h->gone = unwinder__add_process(u, (pid_t)rec->sample.tgid) == -ESRCH;
	h->proc = uw_proc(u, (pid_t)rec->sample.tgid);
	if (h->proc)
		h->proc->holds++;
	/* A zombie's maps read empty: gone as well. */
	if (h->proc && !h->proc->nr_maps)
		h->gone = true;
	/* The frame at pc is stored already (the last of nr_user): its callers follow. */
	r = held_walk(u, h, u->st.held_bytes + h->bytes <= HELD_MAX_BYTES);
	if (r != STEP_WAIT) {
		held_finish(u, h, r, false);
		return 0;
	}
	u->st.held_bytes += h->bytes;
	park(u, h);
	return 0;
}

void uw_held_wake(struct unwinder *u, const struct uw_file *f)
{
	struct held **pp = &u->waiting;

	while (*pp) {
		struct held *h = *pp;

		if (h->waiting != f) {
			pp = &h->next;
			continue;
		}
		*pp = h->next;
		h->next = u->ready;
		u->ready = h;
	}
}

bool uw_held_waiting(const struct unwinder *u, const void *ctx)
{
	for (const struct held *h = u->waiting; h; h = h->next)
		if (!ctx || h->ctx == ctx)
			return true;
	return false;
}

void uw_held_run(struct unwinder *u, bool force, const void *ctx)
{
	uint64_t now = clock__mono_ns();
	struct held *list = u->ready, **pp;

	u->ready = NULL;
	while (list) {
		struct held *h = list;
		enum step r;

		list = h->next;
		u->st.held_waiting--;
		r = held_walk(u, h, !(force && (!ctx || h->ctx == ctx)));
		if (r == STEP_WAIT) {
			park(u, h);
			continue;
		}
		u->st.held_bytes -= h->bytes;
		held_finish(u, h, r, false);
	}
	/* Past the deadline (a build that cannot keep up), or at the end: with what is there. */
	pp = &u->waiting;
	while (*pp) {
		struct held *h = *pp;

		if (!(force && (!ctx || h->ctx == ctx)) && now - h->t0 < HELD_DEADLINE_NS) {
			pp = &h->next;
			continue;
		}
		*pp = h->next;
		u->st.held_waiting--;
		u->st.held_bytes -= h->bytes;
		held_finish(u, h, held_walk(u, h, false), true);
	}
}

void uw_held_free_all(struct unwinder *u)
{
	struct held *lists[2] = {u->waiting, u->ready};

	for (int i = 0; i < 2; i++)
		while (lists[i]) {
			struct held *h = lists[i];

			lists[i] = h->next;
			held_free(u, h);
		}
	u->waiting = u->ready = NULL;
}
