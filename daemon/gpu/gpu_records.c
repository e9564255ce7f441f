// SPDX-License-Identifier: Apache-2.0
#include "daemon/base/hash.h"
#include "daemon/gpu/gpu_records.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_inject/xsprof_wire.h"

#define DEFAULT_MAX_RECORDS	 (256u * 1024)
#define DEFAULT_MAX_BYTES	 (64u << 20)
#define DEFAULT_MAX_PIDS	 4096u
#define DEFAULT_MAX_OPEN_PER_PID 1024u
#define DEFAULT_MAX_OPEN_BYTES	 (4u << 20)

/* Interned string: kernel names repeat by the million, so each is stored once. */
struct gstr {
	struct gstr *next;
	uint32_t hash;
	uint32_t refs;
	size_t len;
	char s[];
};

struct pid_q;

struct user;

struct node {
	struct node *gprev, *gnext; /* all records, oldest first */
	struct node *pprev, *pnext; /* this process's records, oldest first */
	struct node *uprev, *unext; /* this uid's records, oldest first */
	struct pid_q *q;
	struct user *u;
	struct gstr *name;
	struct gstr *domain;
	struct gpu_activity a;
};

/*
 * Nodes come from slabs of SLAB_BYTES, aligned to their size (a node finds its slab from its
 * address): a flood of records, all freed at a slice's close, is then a few hundred
 * allocations, not one per record (malloc's bins cost more than the rest of storing one). A
 * slab whose last node went waits among the spares for the next burst (taking a new one from
 * malloc faulted its pages in again, slice after slice of a flood) until gpu_store__trim: the
 * spares and the slabs in use are never more than the most the store held at once.
 */
#define SLAB_BYTES (32u * 1024)

struct slab {
	struct slab *prev, *next;   /* the slabs with a node to give, in the store's list (a spare:
				     next only, in the spares) */
	struct slab *aprev, *anext; /* every slab in use, in the store's all list */
	struct node *free;	    /* its freed nodes, linked by gnext */
	uint32_t live, carved;	    /* nodes in use; nodes ever handed out of nodes[]; a slab is
				     in the list while live < SLAB_NODES */
	struct node nodes[];
};

#define SLAB_NODES ((SLAB_BYTES - sizeof(struct slab)) / sizeof(struct node))

struct pid_q {
	struct pid_q *next; /* hash chain */
	uint32_t pid;
	struct node *head, *tail;
};

/* An open NVTX range, its strings copied after it (not interned: they outlive no record). */
struct open_node {
	struct open_node *next; /* this process's, newest first */
	size_t cost;
	struct gpu_activity a;
	char s[];
};

struct open_q {
	struct open_q *next; /* hash chain */
	uint32_t pid;
	size_t n;
	struct open_node *head;
};

/* A uid's share: its records (to evict its oldest), what they weigh, what it lost. */
struct user {
	bool used;
	struct node *head, *tail;
	struct gpu_store_user_stats st;
};

struct gpu_store {
	struct user users[GPU_STORE_MAX_USERS];
	struct user *used[GPU_STORE_MAX_USERS]; /* the users[] in use, in no order */
	size_t max_records;
	size_t max_bytes;
	size_t max_pids;
	size_t max_open_per_pid;
	size_t max_open_bytes;
	struct open_q **opens; /* nr_pid_buckets chains */
	struct node *ghead, *gtail;
	struct slab *slabs;  /* those with a node to give */
	struct slab *spares; /* empty, for the next burst (gpu_store__trim) */
	struct slab *all;    /* every slab with a node in use */
	size_t nr_spares;
	uint64_t end_max; /* no record held ends later (gpu_store__take_ended takes all below) */
	struct pid_q **pids;
	size_t nr_pid_buckets; /* power of two */
	/* Names chained and counted by hand, not base/strset: looked up per record, and a name
	 * leaves with its last record (a strset keeps every string until it is freed). */
	struct gstr **strs;
	size_t nr_str_buckets;	/* power of two, grows with the names held */
	struct gstr *last_name; /* the name stored last (a burst repeats one), or NULL */
	struct gpu_store_stats st;
};

void gpu_store_opts__sized(struct gpu_store_opts *opts, unsigned int mb)
{
	opts->max_bytes = (size_t)mb << 20;
	opts->max_records = opts->max_bytes / GPU_STORE_RECORD_COST;
}

static size_t str_cost(size_t len)
{
	return sizeof(struct gstr) + len + 1;
}

static void slab_unlist(struct gpu_store *st, struct slab *b)
{
	if (b->prev)
		b->prev->next = b->next;
	else
		st->slabs = b->next;
	if (b->next)
		b->next->prev = b->prev;
	b->prev = b->next = NULL;
}

static void slab_list(struct gpu_store *st, struct slab *b)
{
	b->prev = NULL;
	b->next = st->slabs;
	if (st->slabs)
		st->slabs->prev = b;
	st->slabs = b;
}

/* A node, its fields unset (the caller sets them all), or NULL. */
static struct node *node_alloc(struct gpu_store *st)
{
	struct slab *b = st->slabs;
	struct node *n;

	if (!b) {
		b = st->spares;
		if (b) {
			st->spares = b->next;
			st->nr_spares--;
		} else if (!(b = aligned_alloc(SLAB_BYTES, SLAB_BYTES)))
			return NULL;
		memset(b, 0, sizeof(*b));
		slab_list(st, b);
		b->anext = st->all;
		if (st->all)
			st->all->aprev = b;
		st->all = b;
	}
	if (b->free) {
		n = b->free;
		b->free = n->gnext;
	} else {
		n = &b->nodes[b->carved++];
	}
	if (++b->live == SLAB_NODES)
		slab_unlist(st, b);
	return n;
}

static void node_free(struct gpu_store *st, struct node *n)
{
	struct slab *b = (struct slab *)((uintptr_t)n & ~(uintptr_t)(SLAB_BYTES - 1));

	n->gnext = b->free;
	b->free = n;
	if (b->live == SLAB_NODES) /* full until now: it has one to give again */
		slab_list(st, b);
	if (--b->live == 0) {
		slab_unlist(st, b);
		if (b->aprev)
			b->aprev->anext = b->anext;
		else
			st->all = b->anext;
		if (b->anext)
			b->anext->aprev = b->aprev;
		b->next = st->spares;
		st->spares = b;
		st->nr_spares++;
	}
}

void gpu_store__trim(struct gpu_store *st)
{
	if (!st)
		return;
	while (st->spares) {
		struct slab *b = st->spares;

		st->spares = b->next;
		free(b);
	}
	st->nr_spares = 0;
}

struct gpu_store *gpu_store__new(const struct gpu_store_opts *opts)
{
	struct gpu_store *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->max_records = opts && opts->max_records ? opts->max_records : DEFAULT_MAX_RECORDS;
	st->max_bytes = opts && opts->max_bytes ? opts->max_bytes : DEFAULT_MAX_BYTES;
	st->max_pids = opts && opts->max_pids ? opts->max_pids : DEFAULT_MAX_PIDS;
	st->max_open_per_pid =
		opts && opts->max_open_per_pid ? opts->max_open_per_pid : DEFAULT_MAX_OPEN_PER_PID;
	st->max_open_bytes =
		opts && opts->max_open_bytes ? opts->max_open_bytes : DEFAULT_MAX_OPEN_BYTES;
	st->nr_pid_buckets = 64;
	while (st->nr_pid_buckets < st->max_pids)
		st->nr_pid_buckets <<= 1;
	st->nr_str_buckets = 256;
	st->pids = calloc(st->nr_pid_buckets, sizeof(*st->pids));
	st->opens = calloc(st->nr_pid_buckets, sizeof(*st->opens));
	st->strs = calloc(st->nr_str_buckets, sizeof(*st->strs));
	if (!st->pids || !st->opens || !st->strs) {
		gpu_store__free(st);
		return NULL;
	}
	return st;
}

void gpu_store__free(struct gpu_store *st)
{
	if (!st)
		return;
	for (struct node *n = st->ghead, *next; n; n = next) {
		next = n->gnext;
		node_free(st, n);
	}
	for (size_t i = 0; st->pids && i < st->nr_pid_buckets; i++) {
		for (struct pid_q *q = st->pids[i], *next; q; q = next) {
			next = q->next;
			free(q);
		}
	}
	for (size_t i = 0; st->opens && i < st->nr_pid_buckets; i++) {
		for (struct open_q *q = st->opens[i], *next; q; q = next) {
			next = q->next;
			for (struct open_node *o = q->head, *onext; o; o = onext) {
				onext = o->next;
				free(o);
			}
			free(q);
		}
	}
	for (size_t i = 0; st->strs && i < st->nr_str_buckets; i++) {
		for (struct gstr *s = st->strs[i], *next; s; s = next) {
			next = s->next;
			free(s);
		}
	}
	gpu_store__trim(st);
	free(st->pids);
	free(st->opens);
	free(st->strs);
	free(st);
}

static uint32_t str_hash(const char *s, size_t len)
{
	uint64_t h = hash_bytes(HASH_INIT, s, len);

	return (uint32_t)(h ^ (h >> 32));
}

static void grow_strs(struct gpu_store *st)
{
	size_t n = st->nr_str_buckets;
	struct gstr **b;

	/* Checked by hand, not vec__new_doubled: the CUPTI fuzzer builds this file alone. */
	if (n > SIZE_MAX / 2 / sizeof(*b))
		return;
	n *= 2;
	b = calloc(n, sizeof(*b));
	if (!b)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < st->nr_str_buckets; i++) {
		for (struct gstr *s = st->strs[i], *next; s; s = next) {
			next = s->next;
			s->next = b[s->hash & (n - 1)];
			b[s->hash & (n - 1)] = s;
		}
	}
	free(st->strs);
	st->strs = b;
	st->nr_str_buckets = n;
}

static struct gstr *str_get(struct gpu_store *st, const char *s)
{
	size_t len = strlen(s);
	uint32_t h = str_hash(s, len);
	struct gstr **slot = &st->strs[h & (st->nr_str_buckets - 1)];
	struct gstr *g;

	for (g = *slot; g; g = g->next) {
		if (g->hash == h && g->len == len && memcmp(g->s, s, len) == 0) {
			g->refs++;
			return g;
		}
	}
	g = malloc(str_cost(len));
	if (!g)
		return NULL;
	g->hash = h;
	g->refs = 1;
	g->len = len;
	memcpy(g->s, s, len + 1);
	g->next = *slot;
	*slot = g;
	st->st.names++;
	st->st.bytes += str_cost(len);
	if (st->st.names > st->nr_str_buckets)
		grow_strs(st);
	return g;
}

static void str_put(struct gpu_store *st, struct gstr *g)
{
	struct gstr **p;

	if (!g || --g->refs > 0)
		return;
	for (p = &st->strs[g->hash & (st->nr_str_buckets - 1)]; *p != g; p = &(*p)->next)
		;
	*p = g->next;
	st->st.names--;
	st->st.bytes -= str_cost(g->len);
	if (st->last_name == g)
		st->last_name = NULL;
	free(g);
}

static struct pid_q **pid_slot(const struct gpu_store *st, uint32_t pid)
{
	struct pid_q **p = &st->pids[(pid * 2654435761u) & (st->nr_pid_buckets - 1)];

	while (*p && (*p)->pid != pid)
		p = &(*p)->next;
	return p;
}

/* uid's share; a new one when create (reusing one that holds nothing), else NULL. */
static struct user *user_of(struct gpu_store *st, uint32_t uid, bool create)
{
	struct user *u = NULL;

	for (size_t i = 0; i < st->st.users; i++)
		if (st->used[i]->st.uid == uid)
			return st->used[i];
	if (!create)
		return NULL;
	if (st->st.users < GPU_STORE_MAX_USERS) {
		for (size_t i = 0; i < GPU_STORE_MAX_USERS && !u; i++)
			if (!st->users[i].used)
				u = &st->users[i];
		st->used[st->st.users++] = u;
	} else {
		/* Full: one that holds nothing gives its place (and its counts) up. */
		for (size_t i = 0; i < st->st.users && !u; i++)
			if (!st->used[i]->st.records && !st->used[i]->st.open_bytes)
				u = st->used[i];
		if (!u)
			return NULL;
	}
	*u = (struct user){.used = true, .st.uid = uid};
	return u;
}

/* The uid whose records weigh the most: its oldest goes when the store is full. */
static struct user *heaviest(struct gpu_store *st)
{
	struct user *h = NULL;

	for (size_t i = 0; i < st->st.users; i++)
		if (st->used[i]->st.records && (!h || st->used[i]->st.bytes > h->st.bytes))
			h = st->used[i];
	return h;
}

static size_t node_weight(const struct node *n)
{
	return sizeof(*n) + (n->name ? n->name->len + 1 : 0) + (n->domain ? n->domain->len + 1 : 0);
}

static void user_forget_if_empty(struct gpu_store *st, struct user *u)
{
	if (u->st.records || u->st.open_bytes || !u->used || u->st.evicted || u->st.refused ||
	    u->st.open_refused)
		return;
	u->used = false;
	for (size_t i = 0; i < st->st.users; i++)
		if (st->used[i] == u) {
			st->used[i] = st->used[--st->st.users];
			break;
		}
}

static void remove_node(struct gpu_store *st, struct node *n)
{
	struct pid_q *q = n->q;
	struct user *u = n->u;

	if (n->uprev)
		n->uprev->unext = n->unext;
	else
		u->head = n->unext;
	if (n->unext)
		n->unext->uprev = n->uprev;
	else
		u->tail = n->uprev;
	u->st.records--;
	u->st.bytes -= node_weight(n);
	user_forget_if_empty(st, u);

	if (n->gprev)
		n->gprev->gnext = n->gnext;
	else
		st->ghead = n->gnext;
	if (n->gnext)
		n->gnext->gprev = n->gprev;
	else
		st->gtail = n->gprev;
	if (n->pprev)
		n->pprev->pnext = n->pnext;
	else
		q->head = n->pnext;
	if (n->pnext)
		n->pnext->pprev = n->pprev;
	else
		q->tail = n->pprev;
	if (!q->head) {
		struct pid_q **slot = pid_slot(st, q->pid);

		*slot = q->next;
		free(q);
		st->st.pids--;
		st->st.bytes -= sizeof(*q);
	}
	str_put(st, n->name);
	str_put(st, n->domain);
	node_free(st, n);
	st->st.records--;
	st->st.bytes -= sizeof(*n);
}

static bool over_caps(const struct gpu_store *st, uint32_t pid, size_t need)
{
	if (st->st.records + 1 > st->max_records || st->st.bytes + need > st->max_bytes)
		return true;
	return st->st.pids + 1 > st->max_pids && !*pid_slot(st, pid);
}

/* ---- open NVTX ranges ---- */

static struct open_q **open_slot(const struct gpu_store *st, uint32_t pid)
{
	struct open_q **p = &st->opens[(pid * 2654435761u) & (st->nr_pid_buckets - 1)];

	while (*p && (*p)->pid != pid)
		p = &(*p)->next;
	return p;
}

static void open_unlink(struct gpu_store *st, struct open_q **slot, struct open_node **link)
{
	struct open_q *q = *slot;
	struct open_node *o = *link;

	struct user *u = user_of(st, o->a.uid, false);

	*link = o->next;
	st->st.open--;
	st->st.open_bytes -= o->cost;
	if (u) {
		u->st.open_bytes -= o->cost;
		user_forget_if_empty(st, u);
	}
	free(o);
	if (!--q->n) {
		*slot = q->next;
		st->st.open_bytes -= sizeof(*q);
		free(q);
	}
}

static void open_add(struct gpu_store *st, const struct gpu_activity *a)
{
	size_t nl = a->name ? strlen(a->name) + 1 : 0, dl = a->domain ? strlen(a->domain) + 1 : 0;
	size_t cost = sizeof(struct open_node) + nl + dl;
	struct open_q **slot = open_slot(st, a->pid), *q = *slot;
	struct open_node *o;

	struct user *u = user_of(st, a->uid, true);

	/* A process that never ends its ranges (or is killed) holds at most its share, a uid at
	 * most half of them all. */
	if (!u || (q && q->n >= st->max_open_per_pid) ||
	    st->st.open_bytes + cost + sizeof(*q) > st->max_open_bytes ||
	    u->st.open_bytes + cost > st->max_open_bytes / 2)
		goto refuse;
	if (!q) {
		q = calloc(1, sizeof(*q));
		if (!q)
			goto refuse;
		q->pid = a->pid;
		*slot = q;
		st->st.open_bytes += sizeof(*q);
	}
	o = malloc(cost);
	if (!o) {
		if (!q->n) {
			*slot = q->next;
			st->st.open_bytes -= sizeof(*q);
			free(q);
		}
		goto refuse;
	}
	o->cost = cost;
	o->a = *a;
	memcpy(o->s, a->name ? a->name : "", nl);
	memcpy(o->s + nl, a->domain ? a->domain : "", dl);
	o->a.name = nl ? o->s : NULL;
	o->a.domain = dl ? o->s + nl : NULL;
	o->next = q->head;
	q->head = o;
	q->n++;
	st->st.open++;
	st->st.open_bytes += cost;
	u->st.open_bytes += cost;
	return;
refuse:
	st->st.open_refused++;
	if (u)
		u->st.open_refused++;
	else
		st->st.users_refused++;
}

/* A range arrived: the opening it ends, if one is held, goes (the newest first: pops are). */
static void open_end(struct gpu_store *st, const struct gpu_activity *a)
{
	struct open_q **slot = open_slot(st, a->pid);

	if (!*slot)
		return;
	for (struct open_node **p = &(*slot)->head; *p; p = &(*p)->next) {
		const struct gpu_activity *o = &(*p)->a;

		if (o->tid == a->tid && o->nvtx_id == a->nvtx_id && o->start_ns == a->start_ns) {
			open_unlink(st, slot, p);
			st->st.open_ended++;
			return;
		}
	}
}

int gpu_store__for_each_open(const struct gpu_store *st, uint32_t pid, gpu_activity_fn fn,
			     void *ctx)
{
	for (size_t i = 0; i < st->nr_pid_buckets; i++) {
		for (const struct open_q *q = st->opens[i]; q; q = q->next) {
			if (pid && q->pid != pid)
				continue;
			for (const struct open_node *o = q->head; o; o = o->next) {
				int r = fn(ctx, &o->a);

				if (r)
					return r;
			}
		}
	}
	return 0;
}

void gpu_store__end_open(struct gpu_store *st, uint32_t pid, uint64_t end_ns)
{
	struct open_q **slot = open_slot(st, pid), *q = *slot;

	if (!q)
		return;
	/* Taken off first, so that storing them as ranges does not look for them. */
	*slot = q->next;
	for (struct open_node *o = q->head, *next; o; o = next) {
		struct gpu_activity a = o->a;

		next = o->next;
		a.flags &= (uint16_t)~XSPROF_WIRE_F_OPEN;
		a.end_ns = end_ns > a.start_ns ? end_ns : a.start_ns + 1;
		st->st.open_ended_at_exit++;
		st->st.open--;
		st->st.open_bytes -= o->cost;
		gpu_store__add(st, &a); /* its strings are copied before o goes */
		free(o);
	}
	st->st.open_bytes -= sizeof(*q);
	free(q);
}

int gpu_store__add(struct gpu_store *st, const struct gpu_activity *a)
{
	/* The name stored last, found by one compare (a burst's records repeat it). */
	struct gstr *same = a->name && st->last_name && !strcmp(st->last_name->s, a->name)
				    ? st->last_name
				    : NULL;
	/* Worst case: both strings new and a new process entry. */
	size_t need = sizeof(struct node) + sizeof(struct pid_q) +
		      (same	 ? str_cost(same->len)
		       : a->name ? str_cost(strlen(a->name))
				 : 0) +
		      (a->domain ? str_cost(strlen(a->domain)) : 0);
	struct pid_q **slot, *q;
	struct user *u = NULL;
	struct node *n;

	if (a->kind == GPU_ACT_NVTX && (a->flags & XSPROF_WIRE_F_OPEN)) {
		open_add(st, a);
		return 0;
	}
	if (a->kind == GPU_ACT_NVTX && a->end_ns > a->start_ns)
		open_end(st, a);
	u = user_of(st, a->uid, true);
	if (!u) {
		st->st.users_refused++;
		goto reject;
	}
	/* Full: the uid holding the most pays, with its oldest record (its own when it floods). */
	while (st->ghead && over_caps(st, a->pid, need)) {
		struct user *h = heaviest(st);

		h->st.evicted++;
		remove_node(st, h->head);
		st->st.evicted++;
	}
	if (over_caps(st, a->pid, need))
		goto reject; /* a store too small for even one record */
	n = node_alloc(st);
	if (!n)
		goto reject;
	/* Every field set once: a burst's nodes are new memory, written through once. */
	n->gnext = n->pnext = n->unext = NULL;
	n->a = *a;
	if (same && st->last_name == same) { /* (eviction above may have freed it) */
		same->refs++;
		n->name = same;
	} else {
		n->name = a->name ? str_get(st, a->name) : NULL;
		st->last_name = n->name;
	}
	n->domain = a->domain ? str_get(st, a->domain) : NULL;
	if ((a->name && !n->name) || (a->domain && !n->domain)) {
		str_put(st, n->name);
		str_put(st, n->domain);
		node_free(st, n);
		goto reject;
	}
	n->a.name = n->name ? n->name->s : NULL;
	n->a.domain = n->domain ? n->domain->s : NULL;

	slot = pid_slot(st, a->pid);
	q = *slot;
	if (!q) {
		q = calloc(1, sizeof(*q));
		if (!q) {
			str_put(st, n->name);
			str_put(st, n->domain);
			node_free(st, n);
			goto reject;
		}
		q->pid = a->pid;
		*slot = q;
		st->st.pids++;
		st->st.bytes += sizeof(*q);
	}
	n->q = q;
	n->pprev = q->tail;
	if (q->tail)
		q->tail->pnext = n;
	else
		q->head = n;
	q->tail = n;
	n->gprev = st->gtail;
	if (st->gtail)
		st->gtail->gnext = n;
	else
		st->ghead = n;
	st->gtail = n;
	n->u = u;
	n->uprev = u->tail;
	if (u->tail)
		u->tail->unext = n;
	else
		u->head = n;
	u->tail = n;
	u->st.records++;
	u->st.bytes += node_weight(n);
	st->st.records++;
	st->st.bytes += sizeof(*n);
	st->st.added++;
	n->a.seq = st->st.added;
	if (a->end_ns > st->end_max)
		st->end_max = a->end_ns;
	return 0;

reject:
	st->st.rejected++;
	if (u) {
		u->st.refused++;
		user_forget_if_empty(st, u);
	}
	return -ENOMEM;
}

static struct node *first_of(const struct gpu_store *st, uint32_t pid)
{
	struct pid_q *q;

	if (!pid)
		return st->ghead;
	q = *pid_slot(st, pid);
	return q ? q->head : NULL;
}

static struct node *next_of(const struct node *n, uint32_t pid)
{
	return pid ? n->pnext : n->gnext;
}

int gpu_store__for_each(const struct gpu_store *st, uint32_t pid, gpu_activity_fn fn, void *ctx)
{
	for (struct node *n = first_of(st, pid); n; n = next_of(n, pid)) {
		int r = fn(ctx, &n->a);

		if (r)
			return r;
	}
	return 0;
}

int gpu_store__take(struct gpu_store *st, uint32_t pid, gpu_activity_fn fn, void *ctx)
{
	struct node *n = first_of(st, pid), *next;

	for (; n; n = next) {
		int r = fn(ctx, &n->a);

		if (r)
			return r;
		next = next_of(n, pid);
		remove_node(st, n);
	}
	return 0;
}

/* Every record at once, by slab, user, process and name: no node is read. */
static void take_all(struct gpu_store *st)
{
	for (struct slab *b = st->all, *next; b; b = next) {
		next = b->anext;
		b->next = st->spares;
		st->spares = b;
		st->nr_spares++;
	}
	st->all = st->slabs = NULL;
	st->ghead = st->gtail = NULL;
	st->st.bytes -= st->st.records * sizeof(struct node);
	st->st.records = 0;
	for (size_t i = st->st.users; i-- > 0;) { /* user_forget_if_empty moves the last one */
		struct user *u = st->used[i];

		u->head = u->tail = NULL;
		u->st.records = 0;
		u->st.bytes = 0;
		user_forget_if_empty(st, u);
	}
	for (size_t i = 0; st->st.pids && i < st->nr_pid_buckets; i++) {
		for (struct pid_q *q = st->pids[i], *next; q; q = next) {
			next = q->next;
			free(q);
			st->st.pids--;
			st->st.bytes -= sizeof(*q);
		}
		st->pids[i] = NULL;
	}
	for (size_t i = 0; st->st.names && i < st->nr_str_buckets; i++) {
		for (struct gstr *g = st->strs[i], *next; g; g = next) {
			next = g->next;
			st->st.names--;
			st->st.bytes -= str_cost(g->len);
			free(g);
		}
		st->strs[i] = NULL;
	}
	st->last_name = NULL;
	st->end_max = 0;
}

void gpu_store__take_ended(struct gpu_store *st, uint64_t before_ns)
{
	/* A flood's slice took them all: the usual case, in O(slabs + processes + names). */
	if (st->end_max < before_ns) {
		take_all(st);
		return;
	}
	while (st->ghead && st->ghead->a.end_ns < before_ns)
		remove_node(st, st->ghead);
}

void gpu_store__forget(struct gpu_store *st, uint32_t pid)
{
	struct open_q **oslot;
	struct pid_q *q;

	if (!pid)
		return;
	/* remove_node frees q along with the last record: re-read it each time. */
	while ((q = *pid_slot(st, pid)))
		remove_node(st, q->head);
	oslot = open_slot(st, pid);
	while (*oslot)
		open_unlink(st, oslot, &(*oslot)->head);
}

uint64_t gpu_store__last_seq(const struct gpu_store *st)
{
	return st->st.added;
}

void gpu_store__stats(const struct gpu_store *st, struct gpu_store_stats *ret)
{
	*ret = st->st;
	ret->spare_bytes = st->nr_spares * SLAB_BYTES;
}

size_t gpu_store__user_stats(const struct gpu_store *st, struct gpu_store_user_stats *ret,
			     size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < GPU_STORE_MAX_USERS && n < max; i++)
		if (st->users[i].used)
			ret[n++] = st->users[i].st;
	return n;
}
