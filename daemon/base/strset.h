/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A string-intern set: one copy of each distinct string, at an address that stays valid until
 * the set is freed, so interned strings compare by pointer and live as long as the set.
 */
#ifndef XSPROF_DAEMON_BASE_STRSET_H
#define XSPROF_DAEMON_BASE_STRSET_H

#include <stddef.h>

struct strset;

/* max_bytes caps strset__bytes (0: no cap). NULL with errno set on failure. */
struct strset *strset__new(size_t max_bytes);
void strset__free(struct strset *s);

/*
 * The set's copy of str, made on first use. NULL with errno ENOMEM, or E2BIG when the copy would
 * take the set past its max_bytes; strings already in the set are still found.
 */
const char *strset__intern(struct strset *s, const char *str);
size_t strset__count(const struct strset *s);
/* The bytes of the strings held, each NUL included: what max_bytes caps. */
size_t strset__bytes(const struct strset *s);

#endif
