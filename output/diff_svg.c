// SPDX-License-Identifier: Apache-2.0
/* The differential flamegraph: a diff (output/diff/diff.h) drawn by the flamegraph writer. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "output/diff/diff.h"
#include "output/diff_svg.h"
#include "output/flamegraph.h"
#include "output/model/calltree.h"

#define MAX_FRAMES 4096 /* as deep as diff.c reads */

struct style_ctx {
	const struct diff *d;
	uint64_t hash[MAX_FRAMES + 1];
};

static double frame_delta(struct style_ctx *c, const struct calltree_frame *fr,
			  const char *const *path, double *ret_before)
{
	double before;

	/* The walk is depth first: ancestors' hashes are already in place. */
	if (fr->depth > MAX_FRAMES)
		return 0;
	c->hash[fr->depth] =
		diff__path_step(fr->depth ? c->hash[fr->depth - 1] : 0, path[fr->depth]);
	before = diff__before_share(c->d, c->hash[fr->depth]);
	*ret_before = before;
	return diff__after_share(c->d, fr->total) - before;
}

static bool diff_fill(void *ctx, const struct calltree_frame *fr, const char *const *path,
		      unsigned int rgb[3])
{
	struct style_ctx *c = ctx;
	double before, delta = frame_delta(c, fr, path, &before);
	/* sqrt: small changes stay visible next to one large one. */
	double max = diff__max_change(c->d);
	double k = max > 0 ? sqrt(fabs(delta) / max) : 0;
	unsigned int strong = (unsigned int)(225 - 175 * k);

	if (delta > 0) {
		rgb[0] = 255, rgb[1] = strong, rgb[2] = strong;
	} else if (delta < 0) {
		rgb[0] = strong, rgb[1] = strong, rgb[2] = 255;
	} else {
		rgb[0] = rgb[1] = rgb[2] = 225;
	}
	return true;
}

static void diff_note(void *ctx, const struct calltree_frame *fr, const char *const *path,
		      char *buf, size_t size)
{
	struct style_ctx *c = ctx;
	double before = 0, delta;

	/* fill() ran first for this frame and set its hash. */
	if (fr->depth > MAX_FRAMES)
		return;
	before = diff__before_share(c->d, c->hash[fr->depth]);
	delta = diff__after_share(c->d, fr->total) - before;
	snprintf(buf, size, "[%+.2f pp: %.2f%% before, %.2f%% after]", delta, before,
		 before + delta);
}

int diff__write_svg(const struct diff *d, FILE *f, const struct output_meta *meta)
{
	struct style_ctx *c;
	struct flamegraph_style st = {
		.fill = diff_fill,
		.note = diff_note,
		.legend =
			"red: larger share than before, blue: smaller (stronger = larger change); "
			"widths: after",
	};
	int err;

	if (!d || !f)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->d = d;
	st.ctx = c;
	err = flamegraph__write_svg_styled(diff__after(d), f, meta, &st);
	free(c);
	return err;
}
