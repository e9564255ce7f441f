/* SPDX-License-Identifier: Apache-2.0 */
/* The qsort/bsearch comparators more than one module needs, once. */
#ifndef XSPROF_DAEMON_BASE_SORT_H
#define XSPROF_DAEMON_BASE_SORT_H

/* Two uint32_t (pids, stack ids) in ascending order. */
int cmp_u32(const void *a, const void *b);
/* Two uint64_t in ascending order. */
int cmp_u64(const void *a, const void *b);

#endif
