/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Folded stacks, the text format flamegraph.pl, inferno and speedscope read: one line per stack
 * with a non-zero self weight, "root;...;leaf WEIGHT\n".
 */
#ifndef XSPROF_OUTPUT_FOLDED_H
#define XSPROF_OUTPUT_FOLDED_H

#include <stdio.h>

struct calltree;

/*
 * Streams the tree to f in calltree__walk order. Since ';' separates frames and '\n' ends a
 * line, a ';' inside a frame name is written as ':', and '\n' or '\r' as ' ', so every line
 * stays parseable (the count is after the last space). Returns 0, -ENOMEM, or -errno (-EIO when
 * stdio gives none) of the first failed write; f is neither flushed nor closed.
 */
int folded__write(const struct calltree *t, FILE *f);

#endif
