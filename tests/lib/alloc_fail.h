/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Allocation failures on demand, for the error paths of the base's containers: a test linked
 * with ALLOC_FAIL_LINK wraps malloc, calloc and realloc (the calls of everything linked
 * statically into it, the base library included) and makes the one it is told fail.
 */
#ifndef XSPROF_TESTS_ALLOC_FAIL_H
#define XSPROF_TESTS_ALLOC_FAIL_H

#include <stdbool.h>

/* The nth allocation from now (1: the next one) returns NULL with errno ENOMEM; 0: none. */
void alloc_fail__nth(unsigned long n);
/* Whether the armed failure has happened since alloc_fail__nth. */
bool alloc_fail__fired(void);

#endif
