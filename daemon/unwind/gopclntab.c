// SPDX-License-Identifier: Apache-2.0
/*
 * A pc-value table (pcsp): pairs of varints, a zigzag value delta (the value starts at -1) and
 * a pc delta in quanta, ending at a zero value delta after the first pair.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/symbolize/go_pclntab.h"
#include "daemon/unwind/gopclntab.h"

/* One varint of t at *off (at most 5 bytes: a uint32), moving *off past it. */
static bool rd_varint(const struct go_pclntab *t, uint64_t *off, uint32_t *ret)
{
	uint32_t v = 0;

	for (unsigned int shift = 0; shift < 35; shift += 7) {
		uint8_t b;

		if (*off >= t->size)
			return false;
		b = t->p[(*off)++];
		v |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret = v;
			return true;
		}
	}
	return false;
}

struct row_vec {
	struct xsprof_unwind_row *v;
	size_t n, cap, max;
};

static int push(struct row_vec *r, uint64_t pc, uint8_t type, int64_t cfa_off, int8_t rbp_off)
{
	struct xsprof_unwind_row *row;

	if (r->n && r->v[r->n - 1].pc == pc) {
		r->n--; /* a later rule at the same pc wins (an empty range before it) */
	} else if (r->n >= r->max) {
		return -E2BIG;
	}
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 4096;
		struct xsprof_unwind_row *v = realloc(r->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->v = v;
		r->cap = cap;
	}
	row = &r->v[r->n++];
	row->pc = (uint32_t)pc;
	row->type = type;
	row->cfa_off = (int16_t)cfa_off;
	row->rbp_off = rbp_off;
	return 0;
}

/* The row for a range where the stack pointer is sp below its entry value. */
static int push_sp(struct row_vec *r, uint64_t pc, uint8_t flag, int64_t sp)
{
	if (flag & GO_FUNC_TOPFRAME)
		return push(r, pc, XSPROF_CFA_OUTERMOST, 8, 0);
	if ((flag & GO_FUNC_SPWRITE) || sp < 0 || sp + 8 > INT16_MAX)
		return push(r, pc, XSPROF_CFA_INVALID, 0, 0);
	/* A frame of its own: Go saves the caller's rbp right below the return address. */
	return push(r, pc, XSPROF_CFA_RSP, sp + 8, sp >= 8 ? -2 : 0);
}

/* The rows of one function [entry, end) from its pcsp table at off (0: none: no stack use). */
static int func_rows(struct row_vec *r, const struct go_pclntab *s, uint64_t off, uint64_t entry,
		     uint64_t end, uint8_t quantum, uint8_t flag)
{
	uint64_t pc = entry;
	int64_t val = -1;
	int err;

	if (!off)
		return push_sp(r, entry, flag, 0);
	for (bool first = true; pc < end; first = false) {
		uint32_t vd, pd;
		uint64_t at = off;

		if (at >= s->size)
			return -EINVAL;
		if (!s->p[at] && !first)
			break;
		if (!rd_varint(s, &off, &vd) || !rd_varint(s, &off, &pd))
			return -EINVAL;
		val += (int32_t)((vd >> 1) ^ -(vd & 1));
		if (pd) {
			err = push_sp(r, pc, flag, val);
			if (err)
				return err;
		}
		pc += (uint64_t)pd * quantum;
	}
	return pc > end ? -EINVAL : 0;
}

int gopclntab__rows(Elf *elf, size_t max_rows, struct xsprof_unwind_row **ret_rows, size_t *ret_n,
		    struct gopclntab_stats *st, const char **ret_why)
{
	struct row_vec r = {.max = max_rows};
	struct go_pclntab t;
	uint64_t prev_end = 0;
	int err;

	memset(st, 0, sizeof(*st));
	err = go_pclntab__open(elf, &t, ret_why);
	if (err)
		return err;
	st->section_size = t.size;
	for (uint64_t i = 0; i < t.nfunc; i++) {
		struct go_func f;

		if (go_pclntab__func(&t, i, prev_end, &f) || f.end > UINT32_MAX) {
			st->bad_funcs++;
			continue;
		}
		err = func_rows(&r, &t, f.pcsp, f.entry, f.end, t.quantum, f.flag);
		if (err == -EINVAL) {
			/* Its rows so far stand; the rest of it has none. */
			st->bad_funcs++;
			err = 0;
		}
		if (err)
			goto fail;
		err = push(&r, f.end, XSPROF_CFA_INVALID, 0, 0);
		if (err)
			goto fail;
		prev_end = f.end;
		st->funcs++;
		st->top_funcs += !!(f.flag & GO_FUNC_TOPFRAME);
		st->spwrite += !!(f.flag & GO_FUNC_SPWRITE);
	}
	if (!st->funcs) {
		*ret_why = ".gopclntab: no function could be read";
		free(r.v);
		return -EINVAL;
	}
	*ret_rows = r.v;
	*ret_n = r.n;
	return 0;
fail:
	free(r.v);
	return err;
}
