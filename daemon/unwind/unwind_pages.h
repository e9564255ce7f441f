/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A file's sorted unwind rows cut into pages of 1 << XSPROF_UNWIND_PAGE_SHIFT bytes of its
 * address space, the shape the BPF walk looks rows up in (struct xsprof_unwind_page): for each
 * page from the first row's to the last row's, the rows that apply inside it, the first of them
 * at or below the page's start (carried in from the page before when no row starts there), so
 * a lookup is one index plus a bisection of one page's rows.
 */
#ifndef XSPROF_DAEMON_UNWIND_UNWIND_PAGES_H
#define XSPROF_DAEMON_UNWIND_UNWIND_PAGES_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>

#include "bpf/xsprof_events.h"

/* Most pages one file may span (1 << 20 pages: 4 GiB of code); past it: -E2BIG. */
#define UNWIND_PAGES_MAX (1u << 20)

/* One page's rows, n in [1, XSPROF_UNWIND_PAGE_ROWS]; 0 or a negative errno to stop. */
typedef int (*unwind_page_fn)(void *ctx, uint64_t page, const struct xsprof_unwind_row *rows,
			      uint32_t n);

struct unwind_pager {
	unwind_page_fn fn;
	void *ctx;
	uint64_t page, first_page;
	bool started;
	uint32_t n;
	struct xsprof_unwind_row rows[XSPROF_UNWIND_PAGE_ROWS];
};

void unwind_pager__init(struct unwind_pager *p, unwind_page_fn fn, void *ctx);
/* An unwind_row_fn (ctx: the pager): rows strictly increasing in pc. */
int unwind_pager__row(void *ctx, const struct xsprof_unwind_row *row);
/* The last page. 0, or fn's error. */
int unwind_pager__finish(struct unwind_pager *p);

#endif
