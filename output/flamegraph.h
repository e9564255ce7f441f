/* SPDX-License-Identifier: Apache-2.0 */
/* A self-contained interactive SVG flamegraph: no network, no external script or style. */
#ifndef XSPROF_OUTPUT_FLAMEGRAPH_H
#define XSPROF_OUTPUT_FLAMEGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct calltree;
struct calltree_frame;
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

/* Per-frame colour and tooltip, for views such as the differential flamegraph. */
struct flamegraph_style {
	/*
	 * path[0..fr->depth] are the names from the root down to the frame. Return true with rgb
	 * filled to colour the frame; false keeps the usual colour. May be NULL.
	 */
	bool (*fill)(void *ctx, const struct calltree_frame *fr, const char *const *path,
		     unsigned int rgb[3]);
	/* Text appended to the frame's tooltip (e.g. "+2.10 pp"), at most size bytes with its
	   NUL; leave buf empty for none. May be NULL. */
	void (*note)(void *ctx, const struct calltree_frame *fr, const char *const *path, char *buf,
		     size_t size);
	const char *legend; /* a line at the bottom right, e.g. "red: grew"; may be NULL */
	void *ctx;
};

/* flamegraph__write_svg() with a style (NULL: the same output as flamegraph__write_svg()). */
int flamegraph__write_svg_styled(const struct calltree *t, FILE *f, const struct output_meta *meta,
				 const struct flamegraph_style *style);

#endif
