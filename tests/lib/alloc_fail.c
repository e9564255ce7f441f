// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stddef.h>

#include "tests/lib/alloc_fail.h"

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);

static unsigned long countdown;
static bool fired;

void alloc_fail__nth(unsigned long n)
{
	countdown = n;
	fired = false;
}

bool alloc_fail__fired(void)
{
	return fired;
}

static bool fail_now(void)
{
	if (!countdown || --countdown)
		return false;
	fired = true;
	errno = ENOMEM;
	return true;
}

void *__wrap_malloc(size_t size)
{
	return fail_now() ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return fail_now() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size)
{
	return fail_now() ? NULL : __real_realloc(p, size);
}
