/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Growable arrays: the one place that doubles a capacity and checks the arithmetic, instead of
 * a `cap = cap ? cap * 2 : N; realloc(p, cap * size)` at every array.
 */
#ifndef XSPROF_DAEMON_BASE_VEC_H
#define XSPROF_DAEMON_BASE_VEC_H

#include <stddef.h>

/*
 * Makes *p (an array of *cap elements of elem bytes) hold at least need elements: to twice *cap,
 * or need when that is more, at least 8. 0 when it already does. -ENOMEM when the size does not
 * fit a size_t or realloc fails; then *p (with its contents) and *cap are as they were.
 * -EINVAL for a zero elem.
 */
int vec__reserve(void **p, size_t *cap, size_t need, size_t elem);

/*
 * A new zeroed array of twice nr elements of elem bytes (a hash table's slots, doubled), its
 * length in *ret_nr. NULL with errno ENOMEM when the size does not fit a size_t or calloc fails.
 */
void *vec__new_doubled(size_t nr, size_t elem, size_t *ret_nr);

/* vec__reserve for an array pointer pp (T **) and its capacity capp (size_t *). */
#define vec_reserve(pp, capp, need) vec__reserve((void **)(pp), (capp), (need), sizeof(**(pp)))

#endif
