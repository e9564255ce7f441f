/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Open-addressing hash map from a pair of u64 keys to a non-NULL pointer. Enough for the
 * symbolizer's caches (pid, (dev, inode), (owner, address)) without a dependency.
 */
#ifndef XSPROF_DAEMON_BASE_HASHMAP_H
#define XSPROF_DAEMON_BASE_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

struct hashmap;

/* NULL with errno set on failure. */
struct hashmap *hashmap__new(void);
/* Values are not freed: walk them with hashmap__for_each first when they own memory. */
void hashmap__free(struct hashmap *h);

/* The value stored under (k1, k2), or NULL. */
void *hashmap__get(const struct hashmap *h, uint64_t k1, uint64_t k2);
/* Inserts or replaces. -EINVAL for a NULL value, -ENOMEM. */
int hashmap__put(struct hashmap *h, uint64_t k1, uint64_t k2, void *val);
/* Removes and returns the value, or NULL when absent. */
void *hashmap__remove(struct hashmap *h, uint64_t k1, uint64_t k2);
size_t hashmap__count(const struct hashmap *h);
/* Calls fn on every value; fn must not change the map. */
void hashmap__for_each(const struct hashmap *h, void (*fn)(void *val, void *ctx), void *ctx);

#endif
