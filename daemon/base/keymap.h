/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A hash map from keys the caller gives as byte strings (pointer, length) to a non-NULL pointer.
 * The map copies each key (into an arena, NUL-terminated), so a caller's key may be a string, a
 * struct of ids or a buffer it reuses, and the map's copy stays valid until the map is freed:
 * a string key's copy serves as the interned string. Keys are compared by their bytes, so a
 * struct key must have no padding. hashmap.h stays the map for keys that are one or two u64s.
 * Entries are never removed: the tables this serves only grow, and their keys share one arena.
 */
#ifndef XSPROF_DAEMON_BASE_KEYMAP_H
#define XSPROF_DAEMON_BASE_KEYMAP_H

#include <stddef.h>
#include <stdint.h>

/* The longest key: 4 GiB - 1. */
#define KEYMAP_MAX_KEY UINT32_MAX

struct keymap;

/* NULL with errno set on failure. */
struct keymap *keymap__new(void);
/* Values are not freed: walk them with keymap__for_each first when they own memory. */
void keymap__free(struct keymap *m);

/* The value stored under the len bytes at key, or NULL (always for a key past KEYMAP_MAX_KEY). */
void *keymap__get(const struct keymap *m, const void *key, size_t len);
/*
 * Inserts the key (a copy) with val, or replaces the value of an equal key. ret_key, when not
 * NULL: the map's copy of the key. -EINVAL for a NULL value, -E2BIG for a key longer than
 * KEYMAP_MAX_KEY, -ENOMEM; the map is unchanged then.
 */
int keymap__put(struct keymap *m, const void *key, size_t len, void *val, const void **ret_key);
size_t keymap__count(const struct keymap *m);
/* Calls fn on every entry, in no particular order; fn must not change the map. */
void keymap__for_each(const struct keymap *m,
		      void (*fn)(const void *key, size_t len, void *val, void *ctx), void *ctx);

#endif
