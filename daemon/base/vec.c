// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "daemon/base/vec.h"

#define VEC_MIN 8

int vec__reserve(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t max, n;
	void *np;

	if (need <= *cap)
		return 0;
	if (!elem)
		return -EINVAL;
	max = SIZE_MAX / elem;
	if (need > max)
		return -ENOMEM;
	/* Doubling keeps appends amortised O(1); past half the limit, the limit itself. */
	n = *cap <= max / 2 ? *cap * 2 : max;
	if (n < need)
		n = need;
	if (n < VEC_MIN && VEC_MIN <= max)
		n = VEC_MIN;
	np = realloc(*p, n * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = n;
	return 0;
}

void *vec__new_doubled(size_t nr, size_t elem, size_t *ret_nr)
{
	void *p;

	if (!elem || nr > SIZE_MAX / 2 / elem) {
		errno = ENOMEM;
		return NULL;
	}
	p = calloc(nr * 2, elem);
	if (p)
		*ret_nr = nr * 2;
	return p;
}
