/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Bump allocator for strings that live as long as their owner: a symbol table, a snapshot,
 * a symbolizer, an intern set, a keyed map's keys. Pointers it hands out never move, so they can
 * be returned to callers.
 */
#ifndef XSPROF_DAEMON_BASE_ARENA_H
#define XSPROF_DAEMON_BASE_ARENA_H

#include <stddef.h>

struct arena;

/* NULL with errno set on failure. */
struct arena *arena__new(void);
void arena__free(struct arena *a);

/* A NUL-terminated copy of s[0..len). NULL with errno ENOMEM. */
const char *arena__strndup(struct arena *a, const char *s, size_t len);
/* size bytes for the caller to fill (no alignment: for text). NULL with errno ENOMEM. */
char *arena__alloc(struct arena *a, size_t size);
/* Bytes held, for memory accounting. */
size_t arena__bytes(const struct arena *a);

#endif
