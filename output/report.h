/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A text summary of a call tree, like perf report --stdio's: the functions that take the most,
 * by self (the stacks that ended there) and by total (the stacks that passed through, counted
 * once per stack even in recursion), each as a share of everything.
 */
#ifndef XSPROF_OUTPUT_REPORT_H
#define XSPROF_OUTPUT_REPORT_H

#include <stddef.h>
#include <stdio.h>

struct calltree;

/*
 * Write the top n functions by self and by total to f; unit names the weights ("samples",
 * "us"). The first frame of every stack (the process name) counts as a function too. 0 or
 * -errno (-ENOMEM, or the write's error).
 */
int report__write(const struct calltree *t, size_t n, const char *unit, FILE *f);

struct profile_data;

/* The same of a whole profile: the tree a flamegraph of it shows (profile__build_tree), in
 * its unit. 0 or -errno. */
int report__write_profile(const struct profile_data *pd, size_t n, FILE *f);

#endif
