/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A run's figures from the profiles xsprofd writes: folded stacks (self and total samples per
 * function, the total) and GPU reports (.gpu.json: GPU time per kernel, per launching stack,
 * per NVTX range, idle time by cause). A set keeps at most `cap` figures of each kind, the
 * largest; what it left out is counted.
 */
#ifndef XSPROF_OUTPUT_HISTORY_FIGURES_H
#define XSPROF_OUTPUT_HISTORY_FIGURES_H

#include "output/history/history.h"

#define HIST_FIGURES_CAP_DEFAULT 2000 /* per kind, per run */

struct hist_figures {
	struct hist_figure *v; /* names owned by the set */
	size_t n, alloc;
	size_t cap;		       /* per kind (0: HIST_FIGURES_CAP_DEFAULT) */
	size_t dropped[HIST_KIND_COUNT]; /* left out past cap, by kind */
};

/* Adds value to the figure (kind, name), made when new. 0 or -ENOMEM. */
int hist_figures__add(struct hist_figures *f, enum hist_kind kind, const char *name,
		      double value);

/*
 * Reads a profile into f, by its content (a GPU report is a JSON object; anything else is read
 * as folded stacks). 0, or -errno with a sentence naming the file (and line) in err.
 */
int hist_figures__read(struct hist_figures *f, const char *path, char *err, size_t errlen);

/* Keeps the cap largest of each kind (counting the rest in dropped). */
void hist_figures__trim(struct hist_figures *f);

void hist_figures__free(struct hist_figures *f);

#endif
