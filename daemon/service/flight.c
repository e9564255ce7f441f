// SPDX-License-Identifier: Apache-2.0
/* The flight recorder's life, and its ring: frozen slices, one part per user, bounded by bytes and
 * by age; the processes they hold are known to the triggers. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "daemon/base/hashmap.h"
#include "daemon/base/vec.h"
#include "daemon/service/flight.h"
#include "daemon/service/flight_internal.h"
#include "daemon/session/frozen.h"

/* ---- life ---- */

struct flight *flight__new(const struct flight_opts *o, char *msg, size_t size)
{
	struct flight *f = calloc(1, sizeof(*f));

	if (!f) {
		snprintf(msg, size, "out of memory");
		return NULL;
	}
	f->o = *o;
	f->dir = strdup(o->dir);
	f->host = strdup(o->host ? o->host : "");
	f->waits = hashmap__new();
	f->known = hashmap__new();
	f->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	f->next_rule_id = 1;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	if (!f->dir || !f->host || !f->waits || !f->known || f->efd < 0) {
		snprintf(msg, size, "out of memory");
		goto fail;
	}
	if (flight_dumps__open(f, msg, size))
		goto fail;
	if (pthread_create(&f->thread, NULL, flight_dumps__writer, f)) {
		snprintf(msg, size, "starting the dump writer thread failed");
		goto fail;
	}
	f->thread_up = true;
	return f;
fail:
	flight__free(f);
	return NULL;
}

static void free_val(void *val, void *ctx)
{
	(void)ctx;
	free(val);
}

void flight__free(struct flight *f)
{
	if (!f)
		return;
	if (f->thread_up) {
		pthread_mutex_lock(&f->lock);
		f->stop = true;
		pthread_cond_signal(&f->cond);
		pthread_mutex_unlock(&f->lock);
		pthread_join(f->thread, NULL);
	}
	flight_dumps__release(f);
	for (size_t i = 0; i < f->nr_ring; i++)
		frozen__put(f->ring[i]);
	if (f->waits)
		hashmap__for_each(f->waits, free_val, NULL);
	if (f->known)
		hashmap__for_each(f->known, free_val, NULL);
	hashmap__free(f->waits);
	hashmap__free(f->known);
	if (f->efd >= 0)
		close(f->efd);
	pthread_mutex_destroy(&f->lock);
	pthread_cond_destroy(&f->cond);
	free(f->ring);
	free(f->steps);
	free(f->idle);
	free(f->dir);
	free(f->host);
	free(f);
}

/* pid's entry, made when new (NULL: the table is full, counted, or no memory). */
struct known *flight__note_known(struct flight *f, uint32_t pid, uint32_t uid, const char *comm,
				 uint64_t now)
{
	struct known *k = hashmap__get(f->known, pid, 0);

	if (!k) {
		if (hashmap__count(f->known) >= MAX_KNOWN) {
			f->st.tables_full++;
			return NULL;
		}
		k = calloc(1, sizeof(*k));
		if (!k || hashmap__put(f->known, pid, 0, k)) {
			free(k);
			return NULL;
		}
	}
	k->pid = pid;
	k->uid = uid;
	if (comm && comm[0])
		snprintf(k->comm, sizeof(k->comm), "%s", comm);
	k->last_ns = now;
	return k;
}

static void ring_drop(struct flight *f, size_t i)
{
	f->ring_bytes -= frozen__bytes(f->ring[i]);
	frozen__put(f->ring[i]);
	memmove(f->ring + i, f->ring + i + 1, (f->nr_ring - i - 1) * sizeof(*f->ring));
	f->nr_ring--;
}

/* At the cap, the oldest part of the user holding the most goes. */
static void ring_fit(struct flight *f)
{
	while (f->nr_ring > 1 && f->ring_bytes > f->o.max_bytes) {
		uint32_t uids[MAX_USERS];
		size_t bytes[MAX_USERS], nu = 0, most = 0;

		for (size_t i = 0; i < f->nr_ring; i++) {
			uint32_t uid = frozen__uid(f->ring[i]);
			size_t u = 0;

			while (u < nu && uids[u] != uid)
				u++;
			if (u == nu && nu < MAX_USERS) {
				uids[nu] = uid;
				bytes[nu++] = 0;
			}
			if (u < nu)
				bytes[u] += frozen__bytes(f->ring[i]);
		}
		for (size_t u = 1; u < nu; u++)
			if (bytes[u] > bytes[most])
				most = u;
		for (size_t i = 0; i < f->nr_ring; i++)
			if (frozen__uid(f->ring[i]) == uids[most]) {
				ring_drop(f, i);
				f->st.evicted_cap++;
				break;
			}
	}
}

void flight__keep(struct flight *f, struct frozen *part)
{
	size_t n;
	const uint32_t *pids = frozen__pids(part, &n);

	for (size_t i = 0; i < n; i++)
		flight__note_known(f, pids[i], frozen__uid(part), frozen__comm(part, pids[i]),
				   frozen__end_ns(part));
	if (frozen__empty(part) || vec_reserve(&f->ring, &f->cap_ring, f->nr_ring + 1)) {
		frozen__put(part);
		return;
	}
	f->ring[f->nr_ring++] = part;
	f->ring_bytes += frozen__bytes(part);
	f->st.kept++;
	ring_fit(f);
}

struct forget {
	uint64_t before;
	uint32_t pids[256];
	size_t n;
};

static void old_known(void *val, void *ctx)
{
	struct forget *g = ctx;
	const struct known *k = val;

	if (k->last_ns < g->before && !k->waits && g->n < 256)
		g->pids[g->n++] = k->pid;
}

void flight__expire(struct flight *f, uint64_t now)
{
	uint64_t age = f->o.max_age_ns;
	struct forget g = {.before = now > age ? now - age : 0};

	while (f->nr_ring && now > age && frozen__end_ns(f->ring[0]) < now - age) {
		ring_drop(f, 0);
		f->st.evicted_age++;
	}
	/* Processes not seen for the ring's age are forgotten (a few at a time). */
	hashmap__for_each(f->known, old_known, &g);
	for (size_t i = 0; i < g.n; i++)
		free(hashmap__remove(f->known, g.pids[i], 0));
}

bool flight__knows(const struct flight *f, uint32_t pid, uint32_t *ret_uid)
{
	const struct known *k = hashmap__get(f->known, pid, 0);

	if (k && ret_uid)
		*ret_uid = k->uid;
	return k != NULL;
}

/* ---- what it says ---- */

void flight__stats(const struct flight *f, struct flight_stats *ret)
{
	uint32_t uids[MAX_USERS];
	size_t nu = 0;

	*ret = f->st;
	ret->parts = f->nr_ring;
	ret->bytes = f->ring_bytes;
	ret->oldest_ns = f->nr_ring ? frozen__start_ns(f->ring[0]) : 0;
	for (size_t i = 0; i < f->nr_ring; i++) {
		uint32_t uid = frozen__uid(f->ring[i]);
		size_t u = 0;

		while (u < nu && uids[u] != uid)
			u++;
		if (u == nu && nu < MAX_USERS)
			uids[nu++] = uid;
	}
	ret->users = nu;
	ret->dumps = ret->dump_bytes = 0;
	for (size_t i = 0; i < f->nr_dumps; i++)
		if (f->dumps[i].state == DUMP_DONE) {
			ret->dumps++;
			ret->dump_bytes += f->dumps[i].bytes;
		}
}
