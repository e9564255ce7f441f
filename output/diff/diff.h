/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Comparing two profiles by share (a function's weight over the profile's total), so profiles
 * of different lengths or rates compare: a differential flamegraph in the shape of the second,
 * and a table of the functions whose share changed most.
 */
#ifndef XSPROF_OUTPUT_DIFF_H
#define XSPROF_OUTPUT_DIFF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct calltree;
struct diff;

/* Shares are in percent of the profile's total; changes in percentage points (pp). */
struct diff_row {
	const char *name;
	double self_before, self_after;	  /* samples whose leaf is the function */
	double total_before, total_after; /* samples with the function anywhere on the stack */
};

/*
 * Reads folded stacks ("frame;frame;... COUNT" per line). Blank lines and lines starting with
 * '#' are skipped; an empty frame becomes "[unknown]". Returns 0, -ENOMEM, -errno of a read,
 * or -EINVAL for a malformed line, whose number is then in *ret_bad_line.
 */
int diff__read_folded(FILE *f, struct calltree *t, size_t *ret_bad_line);

/* Compares two trees (kept by the caller while the diff is used). NULL with errno set. */
struct diff *diff__new(const struct calltree *before, const struct calltree *after);
void diff__free(struct diff *d);

/* Every function of either profile, the largest change (self or total) first. */
const struct diff_row *diff__rows(const struct diff *d, size_t *ret_n);

/*
 * The largest growth of any function's share, self or total, in pp (0 when none grew), and
 * that function (NULL when none grew).
 */
double diff__max_growth(const struct diff *d, const char **ret_name);

/* A text table of the top rows (all when top is 0). 0 or -errno. */
int diff__write_table(const struct diff *d, FILE *f, size_t top);

/* What the differential flamegraph (output/diff_svg.h) draws: the shape of `after`, ... */
const struct calltree *diff__after(const struct diff *d);
/* ... the largest change of a stack's share (pp), for the colour scale, ... */
double diff__max_change(const struct diff *d);
/* ... a stack's path hash from its parent's (0 above the root) and its outermost frame, ... */
uint64_t diff__path_step(uint64_t parent, const char *name);
/* ... the share of `before` (percent) of the stack with that path hash, and of `after` of a
 * weight. */
double diff__before_share(const struct diff *d, uint64_t path);
double diff__after_share(const struct diff *d, uint64_t weight);

#endif
