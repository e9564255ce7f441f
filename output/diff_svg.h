/* SPDX-License-Identifier: Apache-2.0 */
#ifndef XSPROF_OUTPUT_DIFF_SVG_H
#define XSPROF_OUTPUT_DIFF_SVG_H

#include <stdio.h>

struct diff;
struct output_meta;

/*
 * The differential flamegraph: the shape and widths of `after`; each frame red when its share
 * (same stack from the root) grew, blue when it shrank, the stronger the larger the change
 * next to the largest change; its tooltip gives the change in pp. 0 or -errno.
 */
int diff__write_svg(const struct diff *d, FILE *f, const struct output_meta *meta);

#endif
