// SPDX-License-Identifier: Apache-2.0
#include <pthread.h>
#include <stdlib.h>

#include "output/model/shelf.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	void *p;
	size_t bytes;
} slots[SHELF_SLOTS];
static size_t shelved;

void *shelf__take(size_t need, size_t *ret_bytes)
{
	size_t best = SHELF_SLOTS;
	void *p;

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < SHELF_SLOTS; i++)
		if (slots[i].p && slots[i].bytes >= need &&
		    (best == SHELF_SLOTS || slots[i].bytes < slots[best].bytes))
			best = i;
	if (best < SHELF_SLOTS) {
		p = slots[best].p;
		*ret_bytes = slots[best].bytes;
		shelved -= slots[best].bytes;
		slots[best].p = NULL;
		slots[best].bytes = 0;
		pthread_mutex_unlock(&lock);
		return p;
	}
	pthread_mutex_unlock(&lock);
	if (need >= SHELF_MIN_BYTES && need <= SHELF_MAX_BYTES) {
		size_t p2 = SHELF_MIN_BYTES;

		while (p2 < need)
			p2 <<= 1;
		need = p2;
	}
	p = malloc(need ? need : 1);
	*ret_bytes = p ? need : 0;
	return p;
}

void shelf__put(void *p, size_t bytes)
{
	size_t free_at = SHELF_SLOTS;

	if (!p)
		return;
	if (bytes < SHELF_MIN_BYTES || bytes > SHELF_MAX_BYTES) {
		free(p);
		return;
	}
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < SHELF_SLOTS && free_at == SHELF_SLOTS; i++)
		if (!slots[i].p)
			free_at = i;
	if (free_at < SHELF_SLOTS && shelved + bytes <= SHELF_MAX_BYTES) {
		slots[free_at].p = p;
		slots[free_at].bytes = bytes;
		shelved += bytes;
		p = NULL;
	}
	pthread_mutex_unlock(&lock);
	free(p);
}

void shelf__clear(void)
{
	void *gone[SHELF_SLOTS];

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < SHELF_SLOTS; i++) {
		gone[i] = slots[i].p;
		slots[i].p = NULL;
		slots[i].bytes = 0;
	}
	shelved = 0;
	pthread_mutex_unlock(&lock);
	for (size_t i = 0; i < SHELF_SLOTS; i++)
		free(gone[i]);
}

size_t shelf__bytes(void)
{
	size_t n;

	pthread_mutex_lock(&lock);
	n = shelved;
	pthread_mutex_unlock(&lock);
	return n;
}
