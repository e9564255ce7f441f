/* SPDX-License-Identifier: Apache-2.0 */
/* A self-contained interactive SVG flamegraph: no network, no external script or style. */
#ifndef XSPROF_OUTPUT_FLAMEGRAPH_H
#define XSPROF_OUTPUT_FLAMEGRAPH_H

#include <stdio.h>

struct calltree;
struct output_meta;

/*
 * Streams one SVG document to f: root at the bottom, widths proportional to total weight, frames
 * narrower than 0.1% of the total left out (and counted in a note), tooltips, click to zoom,
 * Ctrl-F regex search. Colours: warm for user frames, orange for names ending in "_[k]"
 * (kernel), green for "[gpu] " and blue for "[cuda] " prefixes. meta may be NULL. Returns 0,
 * -EINVAL, -ENOMEM, or -errno (-EIO when stdio gives none) of the first failed write; f is
 * neither flushed nor closed.
 */
int flamegraph__write_svg(const struct calltree *t, FILE *f, const struct output_meta *meta);

#endif
