// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "daemon/unwind/unwind_pages.h"

#define SHIFT XSPROF_UNWIND_PAGE_SHIFT

void unwind_pager__init(struct unwind_pager *p, unwind_page_fn fn, void *ctx)
{
	memset(p, 0, offsetof(struct unwind_pager, rows));
	p->fn = fn;
	p->ctx = ctx;
}

static int flush(struct unwind_pager *p)
{
	return p->n ? p->fn(p->ctx, p->page, p->rows, p->n) : 0;
}

int unwind_pager__row(void *ctx, const struct xsprof_unwind_row *r)
{
	struct unwind_pager *p = ctx;
	uint64_t page = r->pc >> SHIFT;
	struct xsprof_unwind_row carry;
	int err;

	if (!p->started) {
		p->started = true;
		p->page = p->first_page = page;
		p->rows[0] = *r;
		p->n = 1;
		return 0;
	}
	if (p->n && r->pc <= p->rows[p->n - 1].pc)
		return -EINVAL; /* not sorted: the builder's promise is broken */
	if (page == p->page) {
		if (p->n >= XSPROF_UNWIND_PAGE_ROWS)
			return -E2BIG; /* cannot happen: one row per byte at most */
		p->rows[p->n++] = *r;
		return 0;
	}
	if (page - p->first_page >= UNWIND_PAGES_MAX)
		return -E2BIG;
	err = flush(p);
	carry = p->rows[p->n - 1];
	/* Pages without a row of their own: the row carried in covers them whole. */
	for (uint64_t q = p->page + 1; !err && q < page; q++)
		err = p->fn(p->ctx, q, &carry, 1);
	if (err)
		return err;
	p->page = page;
	p->n = 0;
	if (r->pc != page << SHIFT)
		p->rows[p->n++] = carry;
	p->rows[p->n++] = *r;
	return 0;
}

int unwind_pager__finish(struct unwind_pager *p)
{
	int err = flush(p);

	p->n = 0;
	return err;
}
