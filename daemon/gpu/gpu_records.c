// SPDX-License-Identifier: Apache-2.0
#include "daemon/base/hash.h"
#include "daemon/gpu/gpu_records.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_RECORDS (256u * 1024)
#define DEFAULT_MAX_BYTES   (64u << 20)
#define DEFAULT_MAX_PIDS    4096u

/* Interned string: kernel names repeat by the million, so each is stored once. */
struct gstr {
	struct gstr *next;
	uint32_t hash;
	uint32_t refs;
	size_t len;
	char s[];
};

struct pid_q;

struct node {
	struct node *gprev, *gnext; /* all records, oldest first */
	struct node *pprev, *pnext; /* this process's records, oldest first */
	struct pid_q *q;
	struct gstr *name;
	struct gstr *domain;
	struct gpu_activity a;
};

struct pid_q {
	struct pid_q *next; /* hash chain */
	uint32_t pid;
	struct node *head, *tail;
};

struct gpu_store {
	size_t max_records;
	size_t max_bytes;
	size_t max_pids;
	struct node *ghead, *gtail;
	struct pid_q **pids;
	size_t nr_pid_buckets; /* power of two */
	/* Names chained and counted by hand, not base/strset: looked up per record, and a name
	 * leaves with its last record (a strset keeps every string until it is freed). */
	struct gstr **strs;
	size_t nr_str_buckets; /* power of two, grows with the names held */
	struct gpu_store_stats st;
};

static size_t str_cost(size_t len)
{
	return sizeof(struct gstr) + len + 1;
}

struct gpu_store *gpu_store__new(const struct gpu_store_opts *opts)
{
	struct gpu_store *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	st->max_records = opts && opts->max_records ? opts->max_records : DEFAULT_MAX_RECORDS;
	st->max_bytes = opts && opts->max_bytes ? opts->max_bytes : DEFAULT_MAX_BYTES;
	st->max_pids = opts && opts->max_pids ? opts->max_pids : DEFAULT_MAX_PIDS;
	st->nr_pid_buckets = 64;
	while (st->nr_pid_buckets < st->max_pids)
		st->nr_pid_buckets <<= 1;
	st->nr_str_buckets = 256;
	st->pids = calloc(st->nr_pid_buckets, sizeof(*st->pids));
	st->strs = calloc(st->nr_str_buckets, sizeof(*st->strs));
	if (!st->pids || !st->strs) {
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
		free(n);
	}
	for (size_t i = 0; st->pids && i < st->nr_pid_buckets; i++) {
		for (struct pid_q *q = st->pids[i], *next; q; q = next) {
			next = q->next;
			free(q);
		}
	}
	for (size_t i = 0; st->strs && i < st->nr_str_buckets; i++) {
		for (struct gstr *s = st->strs[i], *next; s; s = next) {
			next = s->next;
			free(s);
		}
	}
	free(st->pids);
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
	free(g);
}

static struct pid_q **pid_slot(const struct gpu_store *st, uint32_t pid)
{
	struct pid_q **p = &st->pids[(pid * 2654435761u) & (st->nr_pid_buckets - 1)];

	while (*p && (*p)->pid != pid)
		p = &(*p)->next;
	return p;
}

static void remove_node(struct gpu_store *st, struct node *n)
{
	struct pid_q *q = n->q;

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
	free(n);
	st->st.records--;
	st->st.bytes -= sizeof(*n);
}

static bool over_caps(const struct gpu_store *st, uint32_t pid, size_t need)
{
	if (st->st.records + 1 > st->max_records || st->st.bytes + need > st->max_bytes)
		return true;
	return st->st.pids + 1 > st->max_pids && !*pid_slot(st, pid);
}

int gpu_store__add(struct gpu_store *st, const struct gpu_activity *a)
{
	/* Worst case: both strings new and a new process entry. */
	size_t need = sizeof(struct node) + sizeof(struct pid_q) +
		      (a->name ? str_cost(strlen(a->name)) : 0) +
		      (a->domain ? str_cost(strlen(a->domain)) : 0);
	struct pid_q **slot, *q;
	struct node *n;

	while (st->ghead && over_caps(st, a->pid, need)) {
		remove_node(st, st->ghead);
		st->st.evicted++;
	}
	if (over_caps(st, a->pid, need))
		goto reject; /* a store too small for even one record */
	n = calloc(1, sizeof(*n));
	if (!n)
		goto reject;
	n->a = *a;
	n->name = a->name ? str_get(st, a->name) : NULL;
	n->domain = a->domain ? str_get(st, a->domain) : NULL;
	if ((a->name && !n->name) || (a->domain && !n->domain)) {
		str_put(st, n->name);
		str_put(st, n->domain);
		free(n);
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
			free(n);
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
	st->st.records++;
	st->st.bytes += sizeof(*n);
	st->st.added++;
	return 0;

reject:
	st->st.rejected++;
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

void gpu_store__forget(struct gpu_store *st, uint32_t pid)
{
	struct pid_q *q;

	if (!pid)
		return;
	/* remove_node frees q along with the last record: re-read it each time. */
	while ((q = *pid_slot(st, pid)))
		remove_node(st, q->head);
}

void gpu_store__stats(const struct gpu_store *st, struct gpu_store_stats *ret)
{
	*ret = st->st;
}
