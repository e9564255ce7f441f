// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/hash.h"
#include "daemon/base/hashmap.h"
#include "daemon/base/vec.h"
#include "daemon/cuda/launch_store.h"

#define DEFAULT_MAX_STACKS 100000
#define DEFAULT_MAX_EVENTS 1000000
/* Overflow buckets (one per process, thread name and API) come on top of max_stacks, up to
 * this many; past them a call is refused (-ENOSPC) and the caller counts it. */
#define MAX_OVERFLOW_BUCKETS 4096
/* Threads whose last stack is remembered for reuse records; past it the memory is emptied
 * (reuses that then find none are counted). */
#define MAX_LAST 65536

struct entry {
	uint64_t count;
	uint64_t hash;
	uint64_t ips_off; /* into frames[] */
	uint32_t tgid;
	uint32_t api;
	uint16_t kind;
	uint16_t flags;
	uint16_t nr_user;
	int16_t user_err;
	char comm[XSPROF_COMM_LEN];
};

struct launch_store {
	struct entry *entries;
	size_t nr, cap;
	/* Open addressing by hand, not base/hashmap: probed per CUDA call, in 4-byte slots over the
	 * entries' own hashes (a hashmap slot is 24 bytes). */
	uint32_t *slots; /* entry index + 1; 0 is empty */
	size_t nslots;	 /* power of two, at least twice nr */
	uint64_t *frames;
	size_t nframes, cap_frames;
	struct launch_event *events;
	size_t nev, cap_ev;
	struct launch_wait *waits;
	size_t nwaits, cap_waits;
	struct launch_wait *allocs;
	size_t nallocs, cap_allocs;
	struct launch_range *ranges;
	size_t nranges, cap_ranges;
	size_t max_stacks, max_events;
	struct hashmap *last; /* (tid, kind) -> last_val(): the thread's last stack */
	/* The last stacks of the store this one replaced (launch_store__carry_last): reuse
	 * records read after the change count under them. */
	struct launch_store *carried;
	uint64_t weight; /* what the next call stands for (launch_store__set_weight) */
	struct launch_store_stats st;
};

/* What one record contributes; frames point into the record. */
struct key {
	uint32_t tgid, api;
	uint16_t kind, flags, nr_user;
	int16_t user_err;
	const char *comm;
	const uint64_t *ips;
};

struct launch_store *launch_store__new(size_t max_stacks, size_t max_events)
{
	struct launch_store *ls = calloc(1, sizeof(*ls));

	if (!ls)
		return NULL;
	ls->max_stacks = max_stacks ? max_stacks : DEFAULT_MAX_STACKS;
	ls->max_events = max_events ? max_events : DEFAULT_MAX_EVENTS;
	ls->weight = 1;
	ls->last = hashmap__new();
	if (!ls->last) {
		free(ls);
		return NULL;
	}
	return ls;
}

void launch_store__free(struct launch_store *ls)
{
	if (!ls)
		return;
	free(ls->entries);
	free(ls->slots);
	free(ls->frames);
	free(ls->events);
	free(ls->waits);
	free(ls->allocs);
	free(ls->ranges);
	hashmap__free(ls->last);
	launch_store__free(ls->carried);
	free(ls);
}

static uint64_t key_hash(const struct key *k)
{
	uint64_t h = HASH_INIT;

	h = hash_bytes(h, &k->tgid, sizeof(k->tgid));
	h = hash_bytes(h, &k->api, sizeof(k->api));
	h = hash_bytes(h, &k->kind, sizeof(k->kind));
	h = hash_bytes(h, &k->flags, sizeof(k->flags));
	h = hash_bytes(h, &k->user_err, sizeof(k->user_err));
	h = hash_bytes(h, k->comm, XSPROF_COMM_LEN);
	return hash_bytes(h, k->ips, (size_t)k->nr_user * sizeof(*k->ips));
}

static bool key_equal(const struct launch_store *ls, const struct entry *e, const struct key *k,
		      uint64_t h)
{
	return e->hash == h && e->tgid == k->tgid && e->api == k->api && e->kind == k->kind &&
	       e->flags == k->flags && e->nr_user == k->nr_user && e->user_err == k->user_err &&
	       !memcmp(e->comm, k->comm, XSPROF_COMM_LEN) &&
	       !memcmp(ls->frames + e->ips_off, k->ips, (size_t)k->nr_user * sizeof(*k->ips));
}

static int grow_slots(struct launch_store *ls)
{
	size_t n = ls->nslots ? ls->nslots * 2 : 1024;
	uint32_t *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < ls->nr; i++) {
		size_t j = ls->entries[i].hash & (n - 1);

		while (slots[j])
			j = (j + 1) & (n - 1);
		slots[j] = i + 1;
	}
	free(ls->slots);
	ls->slots = slots;
	ls->nslots = n;
	return 0;
}

/* Per launch: the common case (room left) stays inline; growth is base's, overflow-checked. */
static inline int reserve(void **p, size_t *cap, size_t need, size_t elem)
{
	return need <= *cap ? 0 : vec__reserve(p, cap, need, elem);
}

/* The index of k's entry, or -ENOENT. */
static long lookup(const struct launch_store *ls, const struct key *k, uint64_t h)
{
	if (!ls->nslots)
		return -ENOENT;
	for (size_t j = h & (ls->nslots - 1); ls->slots[j]; j = (j + 1) & (ls->nslots - 1))
		if (key_equal(ls, &ls->entries[ls->slots[j] - 1], k, h))
			return ls->slots[j] - 1;
	return -ENOENT;
}

/* A new entry for k (not there yet): its index, -ENOSPC past the caps, or -ENOMEM. */
static long insert(struct launch_store *ls, const struct key *k, uint64_t h)
{
	struct entry *e;
	size_t j;
	int err;

	if (ls->nr >= ls->max_stacks + MAX_OVERFLOW_BUCKETS)
		return -ENOSPC;
	if ((ls->nr + 1) * 2 > ls->nslots && (err = grow_slots(ls)))
		return err;
	if ((err = reserve((void **)&ls->entries, &ls->cap, ls->nr + 1, sizeof(*ls->entries))) ||
	    (err = reserve((void **)&ls->frames, &ls->cap_frames, ls->nframes + k->nr_user,
			   sizeof(*ls->frames))))
		return err;
	for (j = h & (ls->nslots - 1); ls->slots[j]; j = (j + 1) & (ls->nslots - 1))
		;
	e = &ls->entries[ls->nr];
	memset(e, 0, sizeof(*e));
	e->hash = h;
	e->tgid = k->tgid;
	e->api = k->api;
	e->kind = k->kind;
	e->flags = k->flags;
	e->nr_user = k->nr_user;
	e->user_err = k->user_err;
	memcpy(e->comm, k->comm, XSPROF_COMM_LEN);
	e->ips_off = ls->nframes;
	if (k->nr_user) /* frames is NULL until a stack has any */
		memcpy(ls->frames + ls->nframes, k->ips, (size_t)k->nr_user * sizeof(*k->ips));
	ls->nframes += k->nr_user;
	ls->slots[j] = ls->nr + 1;
	ls->st.distinct += !(k->flags & LAUNCH_STACK_F_OVERFLOW);
	return ls->nr++;
}

static void remember_last(struct launch_store *ls, uint32_t tid, uint16_t kind, long idx);
static int count_call(struct launch_store *ls, long idx, uint64_t time_ns, uint64_t arg,
		      uint32_t tid, uint16_t rec_flags);

static int add(struct launch_store *ls, const struct key *k, uint64_t time_ns, uint64_t arg,
	       uint32_t tid, uint16_t rec_flags)
{
	uint64_t h = key_hash(k);
	long idx = lookup(ls, k, h);

	if (idx < 0 && ls->st.distinct < ls->max_stacks) {
		idx = insert(ls, k, h);
	} else if (idx < 0) {
		/* Full: a stack already kept still counts as itself, a new one in the bucket. */
		struct key ok = *k;

		ok.flags |= LAUNCH_STACK_F_OVERFLOW;
		ok.nr_user = 0;
		ok.user_err = 0;
		h = key_hash(&ok);
		idx = lookup(ls, &ok, h);
		if (idx < 0)
			idx = insert(ls, &ok, h);
		ls->st.overflowed += idx >= 0;
	}
	if (idx < 0)
		return (int)idx;
	remember_last(ls, tid, k->kind, idx);
	return count_call(ls, idx, time_ns, arg, tid, rec_flags);
}

/* A last map's value: 1 + the stack's index (below 2^32), the kind and the tid above, so that a
 * walk of the values finds their keys. */
static void *last_val(uint32_t tid, uint16_t kind, long idx)
{
	return (void *)(uintptr_t)((uint64_t)tid << 34 | (uint64_t)(kind & 3) << 32 |
				   (uint64_t)(idx + 1));
}

static long last_idx(const void *v)
{
	return (long)((uintptr_t)v & 0xffffffffu) - 1;
}

/* The thread's last stack of this kind: what its reuse records count under. */
static void remember_last(struct launch_store *ls, uint32_t tid, uint16_t kind, long idx)
{
	if (hashmap__count(ls->last) >= MAX_LAST) {
		struct hashmap *fresh = hashmap__new();

		if (!fresh)
			return;
		hashmap__free(ls->last);
		ls->last = fresh;
		ls->st.last_emptied++;
	}
	hashmap__put(ls->last, tid, kind, last_val(tid, kind, idx));
}

/* One more call of stack idx, and its event (within the event cap). */
static int count_call(struct launch_store *ls, long idx, uint64_t time_ns, uint64_t arg,
		      uint32_t tid, uint16_t rec_flags)
{
	const struct entry *e;
	struct launch_event *ev;

	ls->entries[idx].count += ls->weight;
	ls->st.weighted += ls->weight > 1;
	if (ls->nev >= ls->max_events ||
	    reserve((void **)&ls->events, &ls->cap_ev, ls->nev + 1, sizeof(*ls->events))) {
		ls->st.events_dropped++;
		return 0;
	}
	e = &ls->entries[idx];
	ev = &ls->events[ls->nev++];
	ev->time_ns = time_ns;
	ev->arg = arg;
	ev->tgid = e->tgid;
	ev->tid = tid;
	ev->api = e->api;
	ev->stack = (uint32_t)idx;
	ev->kind = e->kind;
	ev->flags = rec_flags;
	ev->pad = 0;
	return 0;
}

/* The key of entry e of ls (its frames copied into ips: the store's may move as it grows). */
static struct key key_of(const struct launch_store *ls, const struct entry *e, uint64_t *ips)
{
	memcpy(ips, ls->frames + e->ips_off, (size_t)e->nr_user * sizeof(*ips));
	return (struct key){.tgid = e->tgid,
			    .api = e->api,
			    .kind = e->kind,
			    .flags = e->flags,
			    .nr_user = e->nr_user,
			    .user_err = e->user_err,
			    .comm = e->comm,
			    .ips = ips};
}

/* The entry the thread's last record of kind was stored under in ls, or NULL. */
static const struct entry *last_of(const struct launch_store *ls, uint32_t tid, uint32_t tgid,
				   uint16_t kind)
{
	void *v = ls ? hashmap__get(ls->last, tid, kind) : NULL;
	long idx = v ? last_idx(v) : -1;

	if (idx < 0 || (size_t)idx >= ls->nr || ls->entries[idx].tgid != tgid)
		return NULL;
	return &ls->entries[idx];
}

int launch_store__add_reuse(struct launch_store *ls, const struct xsprof_launch_reuse *r)
{
	uint16_t kind = r->kind == XSPROF_LAUNCH_USDT ? LAUNCH_USDT : LAUNCH_UPROBE;
	const struct entry *e = last_of(ls, r->tid, r->tgid, kind);
	const struct launch_store *from = ls;
	uint64_t ips[XSPROF_MAX_STACK_DEPTH];
	struct key k;
	int err;

	if (!e && (e = last_of(ls->carried, r->tid, r->tgid, kind)))
		from = ls->carried; /* walked before the store was replaced */
	if (!e) {
		ls->st.reuse_orphans++;
		return -ENOENT;
	}
	if (from == ls && e->api == r->api) {
		err = count_call(ls, e - ls->entries, r->time_ns, r->arg, r->tid, r->flags);
	} else {
		/* Another API from the same place, or a stack of the replaced store: that
		 * stack, with this API, entered here. */
		k = key_of(from, e, ips);
		k.api = r->api;
		err = add(ls, &k, r->time_ns, r->arg, r->tid, r->flags);
	}
	if (err)
		return err;
	ls->st.reused++;
	ls->st.calls += kind == LAUNCH_UPROBE;
	ls->st.usdt += kind == LAUNCH_USDT;
	return 0;
}

struct carry_ctx {
	const struct launch_store *old;
	struct launch_store *fresh;
	int err;
};

static void carry_one(void *val, void *ctx)
{
	struct carry_ctx *c = ctx;
	uintptr_t v = (uintptr_t)val;
	long idx = last_idx(val);
	uint64_t ips[XSPROF_MAX_STACK_DEPTH];
	struct key k;
	uint64_t h;
	long at;

	if (c->err || idx < 0 || (size_t)idx >= c->old->nr)
		return;
	k = key_of(c->old, &c->old->entries[idx], ips);
	h = key_hash(&k);
	at = lookup(c->fresh, &k, h);
	if (at < 0)
		at = insert(c->fresh, &k, h);
	if (at < 0) {
		c->err = (int)at;
		return;
	}
	remember_last(c->fresh, (uint32_t)(v >> 34), (uint16_t)(v >> 32 & 3), at);
}

int launch_store__carry_last(struct launch_store *fresh, const struct launch_store *old)
{
	struct carry_ctx c = {.old = old};

	launch_store__free(fresh->carried);
	fresh->carried = NULL;
	if (!old || !hashmap__count(old->last))
		return 0;
	c.fresh = launch_store__new(hashmap__count(old->last), 1);
	if (!c.fresh)
		return -ENOMEM;
	hashmap__for_each(old->last, carry_one, &c);
	if (c.err) {
		launch_store__free(c.fresh);
		return c.err;
	}
	fresh->carried = c.fresh;
	return 0;
}

void launch_store__set_weight(struct launch_store *ls, uint64_t weight)
{
	ls->weight = weight ? weight : 1;
}

/* A record's walk end (XSPROF_CUDA_F_END_SHIFT) as a stack's flag bits. */
static uint16_t end_flags(uint16_t rec_flags)
{
	return (uint16_t)(((rec_flags >> XSPROF_CUDA_F_END_SHIFT) & 0xf)
			  << LAUNCH_STACK_F_END_SHIFT);
}

int launch_store__add_call(struct launch_store *ls, const struct xsprof_cuda_call *r)
{
	struct key k = {
		.tgid = r->tgid,
		.api = r->api,
		.kind = LAUNCH_UPROBE,
		.flags = end_flags(r->flags),
		.nr_user = r->nr_user,
		.user_err = r->user_err,
		.comm = r->comm,
		.ips = (const uint64_t *)r->ips, /* __u64 is unsigned long long */
	};
	int err = add(ls, &k, r->time_ns, r->stream, r->tid, r->flags);

	ls->st.calls += !err;
	return err;
}

int launch_store__add_usdt(struct launch_store *ls, const struct xsprof_usdt_launch *r,
			   unsigned int skip)
{
	struct key k = {
		.tgid = r->tgid,
		.api = r->api,
		.kind = LAUNCH_USDT,
		.nr_user = r->nr_user,
		.user_err = r->user_err,
		.comm = r->comm,
		.ips = (const uint64_t *)r->ips, /* __u64 is unsigned long long */
	};

	if (skip >= k.nr_user)
		skip = 0;
	k.ips += skip;
	k.nr_user -= skip;
	/* A trimmed stack (its probe frames skipped) still ended as its walk did. */
	k.flags = end_flags(r->flags);
	if (!skip)
		k.flags |= LAUNCH_STACK_F_PC_FIRST;
	int err = add(ls, &k, r->time_ns, r->corr_id, r->tid, (uint16_t)r->flags);

	ls->st.usdt += !err;
	return err;
}

static void fill(const struct launch_store *ls, const struct entry *e, struct launch_stack *s)
{
	s->count = e->count;
	s->tgid = e->tgid;
	s->api = e->api;
	s->kind = e->kind;
	s->flags = e->flags;
	s->nr_user = e->nr_user;
	s->user_err = e->user_err;
	memcpy(s->comm, e->comm, XSPROF_COMM_LEN);
	s->ips = ls->frames + e->ips_off;
}

int launch_store__for_each(const struct launch_store *ls,
			   int (*fn)(void *ctx, const struct launch_stack *s), void *ctx)
{
	struct launch_stack s;
	int ret;

	for (size_t i = 0; i < ls->nr; i++) {
		fill(ls, &ls->entries[i], &s);
		ret = fn(ctx, &s);
		if (ret)
			return ret;
	}
	return 0;
}

size_t launch_store__nr_stacks(const struct launch_store *ls)
{
	return ls->nr;
}

int launch_store__stack(const struct launch_store *ls, size_t i, struct launch_stack *ret)
{
	if (i >= ls->nr)
		return -ERANGE;
	fill(ls, &ls->entries[i], ret);
	return 0;
}

size_t launch_store__nr_events(const struct launch_store *ls)
{
	return ls->nev;
}

const struct launch_event *launch_store__events(const struct launch_store *ls)
{
	return ls->events;
}

void launch_store__stats(const struct launch_store *ls, struct launch_store_stats *ret)
{
	*ret = ls->st;
	ret->bytes = sizeof(*ls) + ls->cap * sizeof(*ls->entries) +
		     ls->nslots * sizeof(*ls->slots) + ls->cap_frames * sizeof(*ls->frames) +
		     ls->cap_ev * sizeof(*ls->events) + ls->cap_waits * sizeof(*ls->waits) +
		     ls->cap_allocs * sizeof(*ls->allocs) + ls->cap_ranges * sizeof(*ls->ranges) +
		     hashmap__count(ls->last) * 32; /* about a hash map entry each */
	if (ls->carried) {
		struct launch_store_stats c;

		launch_store__stats(ls->carried, &c);
		ret->bytes += c.bytes;
	}
}

/* A timed call (a wait or an allocation) into *v, up to the event cap: kept or dropped counted. */
static int add_timed(struct launch_store *ls, struct launch_wait **v, size_t *n, size_t *cap,
		     const struct xsprof_cuda_wait *w, uint64_t *kept, uint64_t *dropped)
{
	if (*n >= ls->max_events || reserve((void **)v, cap, *n + 1, sizeof(**v))) {
		(*dropped)++;
		return -ENOSPC;
	}
	(*v)[(*n)++] = (struct launch_wait){
		.entry_ns = w->entry_ns,
		.return_ns = w->return_ns,
		.stream = w->stream,
		.tgid = w->tgid,
		.tid = w->tid,
		.api = w->api,
		.flags = w->flags,
		.device = w->device,
	};
	(*kept)++;
	return 0;
}

int launch_store__add_wait(struct launch_store *ls, const struct xsprof_cuda_wait *w)
{
	return add_timed(ls, &ls->waits, &ls->nwaits, &ls->cap_waits, w, &ls->st.waits,
			 &ls->st.waits_dropped);
}

int launch_store__add_alloc(struct launch_store *ls, const struct xsprof_cuda_wait *w)
{
	return add_timed(ls, &ls->allocs, &ls->nallocs, &ls->cap_allocs, w, &ls->st.allocs,
			 &ls->st.allocs_dropped);
}

size_t launch_store__nr_allocs(const struct launch_store *ls)
{
	return ls->nallocs;
}

const struct launch_wait *launch_store__allocs(const struct launch_store *ls)
{
	return ls->allocs;
}

int launch_store__add_range(struct launch_store *ls, const struct launch_range *r)
{
	if (ls->nranges >= ls->max_events ||
	    reserve((void **)&ls->ranges, &ls->cap_ranges, ls->nranges + 1, sizeof(*ls->ranges))) {
		ls->st.ranges_dropped++;
		return -ENOSPC;
	}
	ls->ranges[ls->nranges++] = *r;
	ls->st.ranges++;
	return 0;
}

size_t launch_store__nr_ranges(const struct launch_store *ls)
{
	return ls->nranges;
}

const struct launch_range *launch_store__ranges(const struct launch_store *ls)
{
	return ls->ranges;
}

size_t launch_store__nr_waits(const struct launch_store *ls)
{
	return ls->nwaits;
}

const struct launch_wait *launch_store__waits(const struct launch_store *ls)
{
	return ls->waits;
}
