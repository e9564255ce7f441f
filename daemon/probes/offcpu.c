// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "daemon/probes/offcpu.h"
#include "daemon/probes/sampler.h"
#include "daemon/stacks/stack_table.h"
#include "daemon/base/hashmap.h"
#include "daemon/symbolize/frame_names.h"
#include "daemon/symbolize/symbolizer.h"
#include "daemon/unwind/unwinder.h"
#include "xsprof.skel.h"

/* A key's stack, as the stack table takes it, and the image it blocked in. */
struct pending {
	uint32_t gen;
	struct xsprof_sample s; /* ips[] sized for the frames only (allocated to fit) */
};

/* A woken stretch (struct xsprof_wait), as kept for the chains. */
struct wait_rec {
	uint64_t start_ns, wake_ns, end_ns, hash, waker_hash;
	uint64_t cpu_ns, waker_cpu_ns; /* the thread's CPU time at end_ns, the waker's at wake_ns */
	uint32_t tgid, tid, waker_tgid, waker_tid, flags;
};

/* A thread's waits in the sorted array: [first, first + n). */
struct wait_span {
	size_t first, n;
};

struct offcpu {
	struct sampler *sampler;
	struct symbolizer *sym; /* with --wakers: names the wakers' frames */
	struct wait_rec *waits;
	size_t nwaits, waits_cap;
	uint64_t min_ns; /* stretches shorter are not counted (--min-block-us) */
	struct xsprof_bpf *skel;
	struct bpf_link *link, *wlink; /* sched_switch's, sched_waking's (--wakers) */
	struct hashmap *pending;       /* (tgid << 32 | tid, hash) -> struct pending */
	size_t max_stacks;
	offcpu_gen_fn gen;
	void *ctx;
	struct unwinder *uw; /* finishes held stacks; NULL in fp mode */
	struct xsprof_sample_held *buf;
	struct offcpu_stats st;
	int (*on_chain)(void *ctx, const struct offcpu_chain *c); /* NULL: none */
	void *on_chain_ctx;
};

/* The stack of a new key, as a sample (kernel frames, then user frames). */
static void sample_of(const struct xsprof_offcpu_stack *r, struct xsprof_sample *s)
{
	s->type = XSPROF_REC_SAMPLE;
	s->tgid = r->tgid;
	s->tid = r->tid;
	s->uid = r->uid;
	s->flags = r->flags;
	memcpy(s->comm, r->comm, sizeof(s->comm));
	s->nr_kernel = r->nr_kernel;
	s->nr_user = r->nr_user;
	s->kernel_err = r->kernel_err;
	s->user_err = r->user_err;
	s->walk_end = r->walk_end;
	memcpy(s->ips, r->kips, r->nr_kernel * sizeof(r->kips[0]));
	memcpy(s->ips + r->nr_kernel, r->uips, r->nr_user * sizeof(r->uips[0]));
}

/* Keep s (nr_kernel + nr_user frames, no interpreter frames) for key (tgid, tid, hash). */
static void keep(struct offcpu *oc, const struct xsprof_sample *s, uint64_t hash)
{
	uint64_t k1 = (uint64_t)s->tgid << 32 | s->tid;
	size_t n = (size_t)s->nr_kernel + s->nr_user;
	struct pending *p;

	if (hashmap__get(oc->pending, k1, hash))
		return;
	if (hashmap__count(oc->pending) >= oc->max_stacks) {
		oc->st.pending_full++;
		return;
	}
	p = calloc(1, sizeof(*p) - sizeof(p->s.ips) + n * sizeof(p->s.ips[0]));
	if (!p)
		return;
	p->gen = oc->gen ? oc->gen(oc->ctx, (pid_t)s->tgid) : 0;
	memcpy(&p->s, s, XSPROF_SAMPLE_HDR_SIZE + n * sizeof(s->ips[0]));
	p->s.nr_python = 0;
	if (hashmap__put(oc->pending, k1, hash, p))
		free(p);
}

static bool stack_ok(const struct xsprof_offcpu_stack *r)
{
	return r->nr_kernel <= XSPROF_MAX_STACK_DEPTH && r->nr_user <= XSPROF_MAX_STACK_DEPTH;
}

static int on_record(void *ctx, const void *data, size_t size)
{
	struct offcpu *oc = ctx;
	const struct xsprof_offcpu_stack *r = data;

	if (size < sizeof(*r) || r->type != XSPROF_REC_OFFCPU || !stack_ok(r))
		return -EBADMSG;
	if (hashmap__get(oc->pending, (uint64_t)r->tgid << 32 | r->tid, r->hash))
		return 0;
	sample_of(r, &oc->buf->sample);
	keep(oc, &oc->buf->sample, r->hash);
	return 0;
}

static void on_held_done(void *ctx, const struct xsprof_sample *s, size_t size, uint64_t hash)
{
	struct offcpu *oc = ctx;

	/* Its interpreter frames, if it has some, in place now that the native walk is whole. */
	s = sampler__rewrite(oc->sampler, s, size, &size);
	keep(oc, s, hash);
}

/* A new stack whose walk stopped at a missing table: finished by the unwinder. */
static int on_held(void *ctx, const void *data, size_t size)
{
	struct offcpu *oc = ctx;
	const struct xsprof_offcpu_held *h = data;
	struct xsprof_sample_held *sh = oc->buf;

	if (!oc->uw || size < sizeof(*h) || h->type != XSPROF_REC_OFFCPU_HELD ||
	    h->stack.type != XSPROF_REC_OFFCPU || !stack_ok(&h->stack) || !h->stack.nr_user ||
	    h->copy_len > sizeof(h->copy) || sizeof(h->copy) != sizeof(sh->stack))
		return -EBADMSG;
	if (hashmap__get(oc->pending, (uint64_t)h->stack.tgid << 32 | h->stack.tid, h->stack.hash))
		return 0;
	oc->st.held++;
	memset(sh, 0, XSPROF_SAMPLE_HELD_HDR_SIZE);
	sh->type = XSPROF_REC_SAMPLE_HELD;
	sh->reason = XSPROF_HOLD_NO_TABLE;
	sh->pc = h->pc;
	sh->sp = h->sp;
	sh->bp = h->bp;
	sh->exact = h->exact;
	sh->copy_len = h->copy_len;
	sample_of(&h->stack, &sh->sample);
	/* The interpreter frames after the native ones, as a held sample carries them. */
	sh->sample.nr_python = h->stack.nr_python <= XSPROF_PY_MAX_FRAMES ? h->stack.nr_python : 0;
	memcpy(&sh->sample.ips[h->stack.nr_kernel + h->stack.nr_user],
	       &h->stack.uips[h->stack.nr_user],
	       sh->sample.nr_python * sizeof(struct xsprof_py_frame));
	memcpy(sh->stack, h->copy, h->copy_len);
	return unwinder__hold(oc->uw, sh, sizeof(*sh), on_held_done, oc, h->stack.hash);
}

void offcpu__set_unwinder(struct offcpu *oc, struct unwinder *uw)
{
	oc->uw = uw;
}

/* ---- wakers (--wakers) ---- */

static int on_wait(void *ctx, const void *data, size_t size)
{
	struct offcpu *oc = ctx;
	const struct xsprof_wait *w = data;
	struct wait_rec *r;

	if (size < sizeof(*w) || w->type != XSPROF_REC_WAIT)
		return -EBADMSG;
	if (oc->nwaits == oc->waits_cap) {
		size_t cap = oc->waits_cap ? oc->waits_cap * 2 : 4096;
		struct wait_rec *nw;

		if (cap > OFFCPU_MAX_WAITS || !(nw = realloc(oc->waits, cap * sizeof(*nw)))) {
			oc->st.waits_dropped++;
			return 0;
		}
		oc->waits = nw;
		oc->waits_cap = cap;
	}
	r = &oc->waits[oc->nwaits++];
	*r = (struct wait_rec){
		.start_ns = w->start_ns,
		.wake_ns = w->wake_ns,
		.end_ns = w->end_ns,
		.hash = w->hash,
		.waker_hash = w->waker_hash,
		.cpu_ns = w->cpu_ns,
		.waker_cpu_ns = w->waker_cpu_ns,
		.tgid = w->tgid,
		.tid = w->tid,
		.waker_tgid = w->waker_tgid,
		.waker_tid = w->waker_tid,
		.flags = w->flags,
	};
	return 0;
}

int offcpu__set_wakers(struct offcpu *oc, struct symbolizer *sym, uint64_t min_ns)
{
	oc->sym = sym;
	oc->min_ns = min_ns;
	return sampler__set_handler(oc->sampler, XSPROF_REC_WAIT, on_wait, oc);
}

struct offcpu *offcpu__attach(struct sampler *s, offcpu_gen_fn gen, void *ctx, size_t max_stacks)
{
	struct offcpu *oc = calloc(1, sizeof(*oc));
	int err;

	if (!oc)
		return NULL;
	oc->sampler = s;
	oc->skel = sampler__skel(s);
	oc->gen = gen;
	oc->ctx = ctx;
	oc->max_stacks = max_stacks ? max_stacks : bpf_map__max_entries(oc->skel->maps.offcpu_agg);
	oc->pending = hashmap__new();
	oc->buf = malloc(sizeof(*oc->buf));
	if (!oc->pending || !oc->buf) {
		err = -ENOMEM;
		goto fail;
	}
	err = sampler__set_handler(s, XSPROF_REC_OFFCPU, on_record, oc);
	if (!err)
		err = sampler__set_handler(s, XSPROF_REC_OFFCPU_HELD, on_held, oc);
	if (err)
		goto fail;
	return oc;
fail:
	offcpu__free(oc);
	errno = -err;
	return NULL;
}

int offcpu__start(struct offcpu *oc)
{
	if (oc->link)
		return 0;
	if (oc->sym && !(oc->wlink = bpf_program__attach(oc->skel->progs.xsprof_waking)))
		return -errno;
	oc->link = bpf_program__attach(oc->skel->progs.xsprof_offcpu);
	return oc->link ? 0 : -errno;
}

void offcpu__stop(struct offcpu *oc)
{
	if (!oc)
		return;
	bpf_link__destroy(oc->link);
	oc->link = NULL;
	bpf_link__destroy(oc->wlink);
	oc->wlink = NULL;
}

static void free_pending(void *val, void *ctx)
{
	free(val);
}

void offcpu__free(struct offcpu *oc)
{
	if (!oc)
		return;
	offcpu__stop(oc);
	if (oc->sampler) {
		sampler__set_handler(oc->sampler, XSPROF_REC_OFFCPU, NULL, NULL);
		sampler__set_handler(oc->sampler, XSPROF_REC_OFFCPU_HELD, NULL, NULL);
		if (oc->sym)
			sampler__set_handler(oc->sampler, XSPROF_REC_WAIT, NULL, NULL);
	}
	free(oc->buf);
	free(oc->waits);
	if (oc->pending) {
		hashmap__for_each(oc->pending, free_pending, NULL);
		hashmap__free(oc->pending);
	}
	free(oc);
}

/* A key whose stack is not here: its time counted under the thread, without frames. */
static int add_lost(struct stack_table *t, const struct xsprof_offcpu_key *k, uint64_t us)
{
	struct xsprof_sample s = {.type = XSPROF_REC_SAMPLE, .tgid = k->tgid, .tid = k->tid};

	snprintf(s.comm, sizeof(s.comm), "[off-cpu lost]");
	return stack_table__add_weighted(t, &s, 0, us);
}

static int cmp_wait(const void *a, const void *b)
{
	const struct wait_rec *x = a, *y = b;
	uint64_t kx = (uint64_t)x->tgid << 32 | x->tid, ky = (uint64_t)y->tgid << 32 | y->tid;

	if (kx != ky)
		return kx < ky ? -1 : 1;
	return x->end_ns < y->end_ns ? -1 : x->end_ns > y->end_ns;
}

static void free_span(void *val, void *ctx)
{
	free(val);
}

/* The waits sorted by thread and end, and each thread's span of them. */
static struct hashmap *index_waits(struct offcpu *oc)
{
	struct hashmap *spans = hashmap__new();

	if (!spans)
		return NULL;
	qsort(oc->waits, oc->nwaits, sizeof(*oc->waits), cmp_wait);
	for (size_t i = 0; i < oc->nwaits;) {
		uint64_t k = (uint64_t)oc->waits[i].tgid << 32 | oc->waits[i].tid;
		struct wait_span *sp = malloc(sizeof(*sp));
		size_t j = i;

		while (j < oc->nwaits &&
		       ((uint64_t)oc->waits[j].tgid << 32 | oc->waits[j].tid) == k)
			j++;
		if (!sp || hashmap__put(spans, k, 0, sp)) {
			free(sp);
			hashmap__for_each(spans, free_span, NULL);
			hashmap__free(spans);
			return NULL;
		}
		sp->first = i;
		sp->n = j - i;
		i = j;
	}
	return spans;
}

/* The thread's last wait that ended at or before t, or NULL. */
static const struct wait_rec *wait_before(const struct offcpu *oc, const struct hashmap *spans,
					  uint32_t tgid, uint32_t tid, uint64_t t)
{
	const struct wait_span *sp = hashmap__get(spans, (uint64_t)tgid << 32 | tid, 0);
	size_t lo = 0, hi;

	if (!sp)
		return NULL;
	hi = sp->n;
	while (lo < hi) { /* the first that ended after t */
		size_t mid = (lo + hi) / 2;

		if (oc->waits[sp->first + mid].end_ns <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &oc->waits[sp->first + lo - 1] : NULL;
}

static uint64_t intern(struct offcpu *oc, const char *name)
{
	uint64_t tok = symbolizer__intern_frame(oc->sym, name);

	if (!tok)
		oc->st.chain_names_full++;
	return tok;
}

/*
 * Whether a waker's stack was taken in an interrupt (a timer's, a device's), which runs in the
 * context of whatever thread it interrupted: that thread woke nothing.
 */
static bool in_interrupt(struct offcpu *oc, const struct pending *p)
{
	static const char *const entries[] = {"asm_sysvec_", "sysvec_", "asm_common_interrupt",
					      "common_interrupt", "asm_exc_nmi"};

	for (size_t i = 0; i < p->s.nr_kernel; i++) {
		const char *k = symbolizer__kernel(oc->sym, p->s.ips[i] - (i > 0 ? 1 : 0));

		for (size_t e = 0; e < sizeof(entries) / sizeof(entries[0]); e++)
			if (!strncmp(k, entries[e], strlen(entries[e])))
				return true;
	}
	return false;
}

/*
 * Whether a woken stretch's own stack is a sleep only a timer ends (or a signal): nanosleep
 * and clock_nanosleep (C's sleep and usleep, Python's time.sleep since 3.11). A waker the
 * session does not watch has no stack to tell an interrupt by; such a sleep's waker is then
 * only the thread the timer interrupted.
 */
static bool timer_sleep(struct offcpu *oc, const struct pending *me)
{
	for (size_t i = 0; i < me->s.nr_kernel; i++) {
		const char *k = symbolizer__kernel(oc->sym, me->s.ips[i] - (i > 0 ? 1 : 0));

		if (!strncmp(k, "do_nanosleep", 12) || !strncmp(k, "hrtimer_nanosleep", 17))
			return true;
	}
	return false;
}

/* Whether a waker passed the wakeup it got (it ended wait since) on: it ran under
 * OFFCPU_RELAY_NS of CPU until it woke the next thread (at its CPU time cpu_ns). */
static bool relayed(const struct wait_rec *since, uint64_t cpu_ns)
{
	return cpu_ns >= since->cpu_ns && cpu_ns - since->cpu_ns <= OFFCPU_RELAY_NS;
}

/* The hop of thread (tgid, tid) in the chain, or -1. */
static int chain_index(const struct offcpu_hop *hops, size_t nh, uint32_t tgid, uint32_t tid)
{
	for (size_t i = 0; i < nh; i++)
		if (hops[i].tgid == tgid && hops[i].tid == tid)
			return (int)i;
	return -1;
}

static bool woke_by(const struct wait_rec *x, const struct wait_rec *w)
{
	return x->waker_tgid == w->tgid && x->waker_tid == w->tid;
}

/* A hop's frames, innermost first, into ips (at most max): the few innermost native frames (how
 * it woke the thread: a write, a lock's release), then its Python frames, else its native ones
 * (named: they are another thread's). Their count. */
static size_t hop_frames(struct offcpu *oc, const struct offcpu_hop *h, uint64_t *ips, size_t max)
{
	const struct xsprof_sample *s = h->s;
	size_t n = 0, python = 0;

	for (size_t i = 0; i < s->nr_user; i++)
		python += frame_token__is(s->ips[s->nr_kernel + i]);
	for (size_t i = 0; i < s->nr_user && n < max; i++) {
		uint64_t a = s->ips[s->nr_kernel + i];

		if (!frame_token__is(a)) {
			if (python && i >= OFFCPU_HOP_NATIVE)
				continue;
			a = intern(oc, symbolizer__user_gen(oc->sym, (pid_t)h->tgid, h->gen,
							    a - (i > 0 ? 1 : 0)));
		}
		if (a)
			ips[n++] = a;
	}
	return n;
}

/*
 * The stack a woken stretch is charged to (into out, as a sample of the woken thread): its own
 * user frames, then its kernel frames, then for each hop "[woken by COMM TID]" and the waker's
 * frames where it woke it (named here: they are another thread's, maybe another process's),
 * the nearest hop first. A hop is followed to the waker's own waker while the waker had run
 * under OFFCPU_RELAY_NS of CPU since its own wakeup (it passed the wakeup on, however long it
 * waited for a CPU to do it); a waker that computed longer is where the time went, and the
 * chain ends there. A relay woken by a hop of the chain
 * only answered that hop's request: it is dropped, and the chain goes on from the hop's wait
 * before it asked. 0, or -1 (not charged); the hops into hops, their count into *ret_nh.
 */
static int compose(struct offcpu *oc, const struct hashmap *spans, const struct wait_rec *w,
		   const struct pending *me, struct xsprof_sample *out, struct offcpu_hop *hops,
		   size_t *ret_nh)
{
	const struct wait_rec *cur = w;
	uint64_t *ips = (uint64_t *)out->ips;
	char name[512];
	size_t nh = 0, n = 0, own = (size_t)me->s.nr_kernel + me->s.nr_user, room, per;
	unsigned int answered = 0;

	while (nh < OFFCPU_MAX_HOPS) {
		const struct wait_rec *next;
		int j;

		const struct pending *p = NULL;

		if (cur->flags & XSPROF_WAKE_STACK) {
			p = hashmap__get(oc->pending,
					 (uint64_t)cur->waker_tgid << 32 | cur->waker_tid,
					 cur->waker_hash);
			if (p && in_interrupt(oc, p)) {
				oc->st.wake_irq += cur == w;
				break;
			}
		} else if (!(cur->flags & XSPROF_WAKE_UNWATCHED)) {
			break; /* an interrupt or a kernel thread: no thread to blame */
		} else if (cur == w && timer_sleep(oc, me)) {
			oc->st.wake_irq++;
			break;
		}
		hops[nh++] = (struct offcpu_hop){.tgid = cur->waker_tgid,
						 .tid = cur->waker_tid,
						 .gen = p ? p->gen : 0,
						 .wake_ns = cur->wake_ns,
						 .cpu_ns = cur->waker_cpu_ns,
						 .s = p ? &p->s : NULL};
		if (!(cur->flags & XSPROF_WAKE_STACK))
			break;
		next = wait_before(oc, spans, cur->waker_tgid, cur->waker_tid, cur->wake_ns);
		if (next)
			hops[nh - 1].run_ns = next->end_ns;
		if (!next || !relayed(next, cur->waker_cpu_ns) || next == w || woke_by(next, w))
			break; /* the waker did the work, or answered the waiting thread */
		j = chain_index(hops, nh, next->waker_tgid, next->waker_tid);
		if (j >= 0) {
			/*
			 * The waker only answered hop j, which asked it (a resource-sharing
			 * thread sending a file descriptor back): it is left out, and the chain
			 * goes on from hop j's wait before it asked, if hop j was passing the
			 * wakeup on too; else hop j did the work.
			 */
			if (++answered > OFFCPU_MAX_HOPS)
				break;
			nh = (size_t)j + 1;
			next = wait_before(oc, spans, hops[j].tgid, hops[j].tid, next->wake_ns);
			if (next)
				hops[j].run_ns = next->end_ns;
			if (!next || !relayed(next, hops[j].cpu_ns) || next == w ||
			    woke_by(next, w) ||
			    chain_index(hops, nh, next->waker_tgid, next->waker_tid) >= 0)
				break;
		}
		cur = next;
	}
	if (!nh || own + 2 * nh > XSPROF_MAX_STACK_DEPTH)
		return -1;
	room = XSPROF_MAX_STACK_DEPTH - own - nh;
	per = room / nh;
	for (size_t h = nh; h-- > 0;) {
		const struct xsprof_sample *hs = hops[h].s;

		if (hs) {
			n += hop_frames(oc, &hops[h], &ips[n], per);
			snprintf(name, sizeof(name), "[woken by %.16s %u]", hs->comm, hops[h].tid);
		} else
			snprintf(name, sizeof(name), "[woken by pid %u tid %u]", hops[h].tgid,
				 hops[h].tid);
		if ((ips[n] = intern(oc, name)))
			n++;
	}
	for (size_t i = 0; i < me->s.nr_kernel; i++) {
		const char *k = symbolizer__kernel(oc->sym, me->s.ips[i] - (i > 0 ? 1 : 0));

		snprintf(name, sizeof(name), "%s_[k]", k);
		if ((ips[n] = intern(oc, name)))
			n++;
	}
	memcpy(&ips[n], &me->s.ips[me->s.nr_kernel], me->s.nr_user * sizeof(ips[0]));
	n += me->s.nr_user;
	memcpy(out, &me->s, XSPROF_SAMPLE_HDR_SIZE);
	out->nr_kernel = 0;
	out->nr_user = (uint16_t)n;
	out->kernel_err = 0;
	oc->st.chain_hops += nh;
	*ret_nh = nh;
	return 0;
}

void offcpu__on_chain(struct offcpu *oc, int (*fn)(void *ctx, const struct offcpu_chain *c),
		      void *ctx)
{
	oc->on_chain = fn;
	oc->on_chain_ctx = ctx;
}

/*
 * With --wakers: each woken stretch charged to its chain's stack (compose), its time taken from
 * its own key's sum; ret_taken: (tgid << 32 | tid, hash) -> 1 + the ns taken.
 */
static int charge_waits(struct offcpu *oc, struct stack_table *t, struct hashmap **ret_taken)
{
	struct hashmap *spans, *taken;
	int err = 0;

	*ret_taken = NULL;
	if (!oc->sym || !oc->nwaits)
		return 0;
	spans = index_waits(oc);
	taken = hashmap__new();
	if (!spans || !taken) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < oc->nwaits && !err; i++) {
		const struct wait_rec *w = &oc->waits[i];
		uint64_t k1 = (uint64_t)w->tgid << 32 | w->tid, ns = w->end_ns - w->start_ns;
		const struct pending *me = hashmap__get(oc->pending, k1, w->hash);
		struct offcpu_hop hops[OFFCPU_MAX_HOPS];
		size_t nh = 0;
		uintptr_t had;

		if (ns < oc->min_ns)
			continue; /* its time is not counted; it was kept for the chains */
		if (!me || compose(oc, spans, w, me, &oc->buf->sample, hops, &nh)) {
			oc->st.waits_unchained++;
			continue;
		}
		err = stack_table__add_weighted(t, &oc->buf->sample, me->gen, (ns + 500) / 1000);
		if (!err && oc->on_chain &&
		    (err = oc->on_chain(oc->on_chain_ctx,
					&(struct offcpu_chain){.tgid = w->tgid,
							       .tid = w->tid,
							       .gen = me->gen,
							       .start_ns = w->start_ns,
							       .end_ns = w->end_ns,
							       .s = &me->s,
							       .hops = hops,
							       .nr_hops = nh})) > 0) {
			oc->st.chains_untimed++;
			err = 0;
		}
		had = (uintptr_t)hashmap__get(taken, k1, w->hash);
		if (!err)
			err = hashmap__put(taken, k1, w->hash, (void *)(had ? had + ns : ns + 1));
		oc->st.waits_chained++;
	}
out:
	if (spans) {
		hashmap__for_each(spans, free_span, NULL);
		hashmap__free(spans);
	}
	if (err) {
		hashmap__free(taken);
		return err;
	}
	*ret_taken = taken;
	return 0;
}

int offcpu__collect(struct offcpu *oc, struct stack_table *t)
{
	int fd = bpf_map__fd(oc->skel->maps.offcpu_agg);
	struct xsprof_offcpu_key key, next, *prev = NULL;
	struct xsprof_offcpu_val v;
	struct hashmap *taken;
	int err = charge_waits(oc, t, &taken);

	if (err)
		return err;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		struct pending *p;
		uint64_t us, ns;
		uintptr_t tk;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &v))
			continue;
		oc->st.keys++;
		oc->st.ns += v.ns;
		ns = v.ns;
		/* What the chains took of it is theirs now. */
		tk = taken ? (uintptr_t)hashmap__get(taken, (uint64_t)key.tgid << 32 | key.tid,
						     key.hash)
			   : 0;
		if (tk)
			ns = ns > tk - 1 ? ns - (tk - 1) : 0;
		us = (ns + 500) / 1000;
		if (!us)
			continue;
		p = hashmap__get(oc->pending, (uint64_t)key.tgid << 32 | key.tid, key.hash);
		if (p) {
			err = stack_table__add_weighted(t, &p->s, p->gen, us);
		} else {
			oc->st.keys_lost++;
			err = add_lost(t, &key, us);
		}
		if (err)
			break;
	}
	hashmap__free(taken);
	return err;
}

void offcpu__stats(const struct offcpu *oc, struct offcpu_stats *ret)
{
	int ncpu = sampler__nr_cpus(oc->sampler);
	struct xsprof_offcpu_stats *v;
	__u32 zero = 0;

	*ret = oc->st;
	if (ncpu <= 0 || !(v = calloc((size_t)ncpu, sizeof(*v))))
		return;
	if (!bpf_map__lookup_elem(oc->skel->maps.offcpu_stats, &zero, sizeof(zero), v,
				  sizeof(*v) * (size_t)ncpu, 0)) {
		for (int i = 0; i < ncpu; i++) {
			ret->switches += v[i].switches;
			ret->blocks += v[i].blocks;
			ret->below_min += v[i].below_min;
			ret->new_stacks += v[i].new_stacks;
			ret->agg_full += v[i].agg_full;
			ret->drop_ringbuf += v[i].drop_ringbuf;
			ret->start_full += v[i].start_full;
			ret->ustack_err += v[i].ustack_err;
			ret->wakeups += v[i].wakeups;
			ret->waits += v[i].waits;
			ret->wait_lost += v[i].wait_lost;
		}
	}
	free(v);
}
