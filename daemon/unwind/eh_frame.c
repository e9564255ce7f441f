// SPDX-License-Identifier: Apache-2.0
/*
 * .eh_frame -> unwind rows, one FDE at a time (eh_frame.h). Keeps only what the BPF walker
 * uses: the CFA rule, the rule of rbp (DWARF register 6) and of the return address (16).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "daemon/unwind/eh_frame.h"

#define REG_RBP 6
#define REG_RSP 7
#define REG_RA	16

/* Remember/restore state nesting kept; deeper programs are rejected. */
#define MAX_STATE_STACK 16

static uint64_t rd_u(struct cursor *c, size_t n)
{
	uint64_t v = 0;

	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = true;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)c->p[i] << (8 * i);
	c->p += n;
	return v;
}

static uint64_t rd_uleb(struct cursor *c)
{
	uint64_t v = 0;
	unsigned int shift = 0;

	while (!c->bad) {
		uint8_t b;

		if (c->p >= c->end) {
			c->bad = true;
			break;
		}
		b = *c->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	return v;
}

static int64_t rd_sleb(struct cursor *c)
{
	uint64_t v = 0;
	unsigned int shift = 0;
	uint8_t b = 0;

	while (!c->bad) {
		if (c->p >= c->end) {
			c->bad = true;
			return 0;
		}
		b = *c->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	if (shift < 64 && (b & 0x40))
		v |= ~0ull << shift;
	return (int64_t)v;
}

/* DW_EH_PE_* */
#define PE_OMIT	   0xff
#define PE_FORMAT  0x0f
#define PE_APPLY   0x70
#define PE_PCREL   0x10
#define PE_DATAREL 0x30

/* Read a pointer in encoding enc; apply: add its base (pc_begin), or not (pc_range). */
static uint64_t rd_ptr(struct cursor *c, uint8_t enc, const struct ptr_ctx *pc, bool apply)
{
	uint64_t at = pc->sec_vaddr + (uint64_t)(c->p - pc->sec), v;

	switch (enc & PE_FORMAT) {
	case 0x00:
		v = rd_u(c, 8);
		break; /* absptr */
	case 0x01:
		v = rd_uleb(c);
		break; /* uleb128 */
	case 0x02:
		v = rd_u(c, 2);
		break; /* udata2 */
	case 0x03:
		v = rd_u(c, 4);
		break; /* udata4 */
	case 0x04:
		v = rd_u(c, 8);
		break; /* udata8 */
	case 0x09:
		v = (uint64_t)rd_sleb(c);
		break; /* sleb128 */
	case 0x0a:
		v = (uint64_t)(int16_t)rd_u(c, 2);
		break; /* sdata2 */
	case 0x0b:
		v = (uint64_t)(int32_t)rd_u(c, 4);
		break; /* sdata4 */
	case 0x0c:
		v = rd_u(c, 8);
		break; /* sdata8 */
	default:
		c->bad = true;
		return 0;
	}
	if (!apply || !v)
		return v;
	switch (enc & PE_APPLY) {
	case 0x00:
		return v;
	case PE_PCREL:
		return v + at;
	case PE_DATAREL:
		return v + pc->data_vaddr;
	default:
		c->bad = true;
		return 0; /* textrel, funcrel, aligned: not on x86-64 */
	}
}

/* A factored offset; one past what a row can hold on overflow (the row becomes invalid). */
static int64_t factored(int64_t v, int64_t factor)
{
	int64_t r;

	return __builtin_mul_overflow(v, factor, &r) ? INT64_MAX : r;
}

/* What the walker needs of one row of the CFA table. */
enum cfa_kind { CFA_REG, CFA_PLT, CFA_DEREF_RBP, CFA_OTHER };
/* REG_AT_RBP: saved at rbp + off (DW_CFA_expression DW_OP_breg6 off: GCC's realigned frames,
 * where the CFA is not a fixed distance from rbp). */
enum reg_kind { REG_SAME, REG_OFFSET, REG_UNDEF, REG_AT_RBP, REG_OTHER };

struct cfa_state {
	enum cfa_kind cfa;
	uint64_t cfa_reg;
	int64_t cfa_off;
	enum reg_kind rbp, ra;
	int64_t rbp_off, ra_off;
};

static struct xsprof_unwind_row row_of(struct row_out *o, const struct cfa_state *s, uint64_t pc,
				       bool signal)
{
	struct xsprof_unwind_row r = {.pc = (uint32_t)pc, .type = XSPROF_CFA_INVALID};

	if (signal) {
		r.type = XSPROF_CFA_SIGNAL;
		return r;
	}
	if (s->ra == REG_UNDEF) {
		r.type = XSPROF_CFA_OUTERMOST;
		return r;
	}
	if (s->ra != REG_OFFSET || s->ra_off != -8)
		goto invalid;
	if (s->rbp == REG_OTHER)
		goto invalid;
	if (s->rbp == REG_OFFSET || s->rbp == REG_AT_RBP) {
		if ((s->rbp == REG_OFFSET && s->rbp_off == 0) || (s->rbp_off & 7) ||
		    s->rbp_off < INT8_MIN * 8 || s->rbp_off > INT8_MAX * 8)
			goto invalid;
		r.rbp_off = (int8_t)(s->rbp_off / 8);
	}
	if (s->cfa_off < INT16_MIN || s->cfa_off > INT16_MAX)
		goto invalid;
	r.cfa_off = (int16_t)s->cfa_off;
	r.type = s->rbp == REG_AT_RBP ? XSPROF_ROW_RBP_AT_RBP : 0;
	switch (s->cfa) {
	case CFA_REG:
		if (s->cfa_reg == REG_RSP)
			r.type |= XSPROF_CFA_RSP;
		else if (s->cfa_reg == REG_RBP)
			r.type |= XSPROF_CFA_RBP;
		else
			goto invalid;
		return r;
	case CFA_PLT:
		o->st->plt_rows++;
		r.type = XSPROF_CFA_PLT;
		r.rbp_off = 0;
		return r;
	case CFA_DEREF_RBP:
		r.type |= XSPROF_CFA_DEREF_RBP;
		return r;
	default:
		break;
	}
invalid:
	o->st->invalid_rows++;
	r.type = XSPROF_CFA_INVALID;
	r.cfa_off = 0;
	r.rbp_off = 0;
	return r;
}

/*
 * Recognise the CFA expressions compilers emit: the PLT's
 *   DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_litN; DW_OP_ge; DW_OP_lit3;
 *   DW_OP_shl; DW_OP_plus     (N = 11 for .plt, 10 for IBT's .plt.sec)
 * and GCC's stack realignment, DW_OP_breg6 OFF; DW_OP_deref. Others: CFA_OTHER.
 */
static void cfa_expression(struct cfa_state *s, const uint8_t *e, size_t len)
{
	static const uint8_t plt_head[] = {0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a};
	static const uint8_t plt_tail[] = {0x2a, 0x33, 0x24, 0x22};

	s->cfa = CFA_OTHER;
	if (len == 11 && !memcmp(e, plt_head, 6) && e[6] >= 0x30 && e[6] <= 0x4f &&
	    !memcmp(e + 7, plt_tail, 4)) {
		s->cfa = CFA_PLT;
		s->cfa_off = e[6] - 0x30;
		return;
	}
	if (len >= 3 && e[0] == 0x76 && e[len - 1] == 0x06) {
		struct cursor c = {e + 1, e + len - 1, false};
		int64_t off = rd_sleb(&c);

		if (!c.bad && c.p == c.end) {
			s->cfa = CFA_DEREF_RBP;
			s->cfa_off = off;
		}
	}
}

/* DW_OP_breg6 off alone: the register is saved at rbp + off. */
static bool reg_at_rbp(const uint8_t *e, size_t len, int64_t *ret_off)
{
	struct cursor c = {e + 1, e + len, false};
	int64_t off;

	if (len < 2 || e[0] != 0x76)
		return false;
	off = rd_sleb(&c);
	if (c.bad || c.p != c.end)
		return false;
	*ret_off = off;
	return true;
}

static void set_reg(struct cfa_state *s, uint64_t reg, enum reg_kind k, int64_t off)
{
	if (reg == REG_RBP) {
		s->rbp = k;
		s->rbp_off = off;
	} else if (reg == REG_RA) {
		s->ra = k;
		s->ra_off = off;
	}
}

static void restore_reg(struct cfa_state *s, const struct cfa_state *init, uint64_t reg)
{
	if (reg == REG_RBP) {
		s->rbp = init->rbp;
		s->rbp_off = init->rbp_off;
	} else if (reg == REG_RA) {
		s->ra = init->ra;
		s->ra_off = init->ra_off;
	}
}

struct fde_run {
	struct row_out *out;
	const struct cie *cie;
	const struct ptr_ctx *pc;
	uint64_t loc, end;
	bool emit; /* false while running the CIE's initial instructions */
	struct cfa_state init;
	struct cfa_state stack[MAX_STATE_STACK];
	int depth;
};

/* The row at loc holds until the location advances to nloc. */
static int advance(struct fde_run *r, const struct cfa_state *s, uint64_t nloc)
{
	struct xsprof_unwind_row row;
	int err = 0;

	if (!r->emit || nloc <= r->loc)
		return 0;
	if (r->loc < r->end) {
		row = row_of(r->out, s, r->loc, r->cie->signal);
		err = r->out->fn(r->out, &row);
	}
	r->loc = nloc < r->end ? nloc : r->end;
	return err;
}

/* The ops that set the CFA rule: 1 when op is one (done), 0 when not, -EINVAL. */
static int cfa_rule_op(struct cfa_state *s, const struct cie *cie, struct cursor *c, uint8_t op)
{
	uint64_t len;

	switch (op) {
	case 0x0c: /* def_cfa */
		s->cfa = CFA_REG;
		s->cfa_reg = rd_uleb(c);
		s->cfa_off = (int64_t)rd_uleb(c);
		return 1;
	case 0x0d: /* def_cfa_register */
		if (s->cfa != CFA_REG)
			s->cfa_off = 0;
		s->cfa = CFA_REG;
		s->cfa_reg = rd_uleb(c);
		return 1;
	case 0x0e: /* def_cfa_offset */
		s->cfa_off = (int64_t)rd_uleb(c);
		return 1;
	case 0x0f: /* def_cfa_expression */
		len = rd_uleb(c);
		if (c->bad || len > (uint64_t)(c->end - c->p))
			return -EINVAL;
		cfa_expression(s, c->p, len);
		c->p += len;
		return 1;
	case 0x12: /* def_cfa_sf */
		s->cfa = CFA_REG;
		s->cfa_reg = rd_uleb(c);
		s->cfa_off = factored(rd_sleb(c), cie->daf);
		return 1;
	case 0x13: /* def_cfa_offset_sf */
		s->cfa_off = factored(rd_sleb(c), cie->daf);
		return 1;
	default:
		return 0;
	}
}

/* The extended ops that set a register's rule: 1 when op is one (done), 0 when not, -EINVAL. */
static int reg_rule_op(struct fde_run *r, struct cfa_state *s, struct cursor *c, uint8_t op)
{
	const struct cie *cie = r->cie;
	uint64_t reg, len;
	int64_t off;

	switch (op) {
	case 0x05: /* offset_extended */
		reg = rd_uleb(c);
		set_reg(s, reg, REG_OFFSET, factored((int64_t)rd_uleb(c), cie->daf));
		return 1;
	case 0x06: /* restore_extended */
		restore_reg(s, &r->init, rd_uleb(c));
		return 1;
	case 0x07: /* undefined */
		set_reg(s, rd_uleb(c), REG_UNDEF, 0);
		return 1;
	case 0x08: /* same_value */
		set_reg(s, rd_uleb(c), REG_SAME, 0);
		return 1;
	case 0x09: /* register */
		reg = rd_uleb(c);
		rd_uleb(c);
		set_reg(s, reg, REG_OTHER, 0);
		return 1;
	case 0x10: /* expression */
	case 0x16: /* val_expression */
		reg = rd_uleb(c);
		len = rd_uleb(c);
		if (c->bad || len > (uint64_t)(c->end - c->p))
			return -EINVAL;
		if (op == 0x10 && reg_at_rbp(c->p, len, &off))
			set_reg(s, reg, REG_AT_RBP, off);
		else
			set_reg(s, reg, REG_OTHER, 0);
		c->p += len;
		return 1;
	case 0x11: /* offset_extended_sf */
		reg = rd_uleb(c);
		set_reg(s, reg, REG_OFFSET, factored(rd_sleb(c), cie->daf));
		return 1;
	case 0x14: /* val_offset */
	case 0x15: /* val_offset_sf */
		reg = rd_uleb(c);
		if (op == 0x14)
			rd_uleb(c);
		else
			rd_sleb(c);
		set_reg(s, reg, REG_OTHER, 0);
		return 1;
	case 0x2e: /* GNU_args_size: only matters to exception handling */
		rd_uleb(c);
		return 1;
	case 0x2f: /* GNU_negative_offset_extended */
		reg = rd_uleb(c);
		set_reg(s, reg, REG_OFFSET, factored(-(int64_t)(rd_uleb(c) & INT64_MAX), cie->daf));
		return 1;
	default:
		return 0;
	}
}

/* Run a call-frame program over s; 0, -EINVAL on a malformed one, or -ENOMEM/-E2BIG. */
static int run_program(struct fde_run *r, struct cfa_state *s, const uint8_t *p, const uint8_t *end)
{
	struct cursor c = {p, end, false};
	const struct cie *cie = r->cie;
	int err = 0, done;

	while (!err && !c.bad && c.p < c.end) {
		uint8_t op = *c.p++, low = op & 0x3f;

		switch (op >> 6) {
		case 1: /* advance_loc */
			err = advance(r, s, r->loc + low * cie->caf);
			continue;
		case 2: /* offset */
			set_reg(s, low, REG_OFFSET, factored((int64_t)rd_uleb(&c), cie->daf));
			continue;
		case 3: /* restore */
			restore_reg(s, &r->init, low);
			continue;
		}
		switch (op) {
		case 0x00: /* nop */
			break;
		case 0x01: /* set_loc */
			err = advance(r, s, rd_ptr(&c, cie->fde_enc, r->pc, true));
			break;
		case 0x02:
			err = advance(r, s, r->loc + rd_u(&c, 1) * cie->caf);
			break;
		case 0x03:
			err = advance(r, s, r->loc + rd_u(&c, 2) * cie->caf);
			break;
		case 0x04:
			err = advance(r, s, r->loc + rd_u(&c, 4) * cie->caf);
			break;
		case 0x0a: /* remember_state */
			if (r->depth >= MAX_STATE_STACK)
				return -EINVAL;
			r->stack[r->depth++] = *s;
			break;
		case 0x0b: /* restore_state: the whole row, CFA rule included */
			if (r->depth <= 0)
				return -EINVAL;
			*s = r->stack[--r->depth];
			break;
		default:
			done = cfa_rule_op(s, cie, &c, op);
			if (!done)
				done = reg_rule_op(r, s, &c, op);
			if (done <= 0)
				return -EINVAL; /* malformed, or an op not known */
		}
	}
	if (err)
		return err;
	return c.bad ? -EINVAL : 0;
}

/* Parse the CIE at p (its length field already read: body is [p, end)). */
static int parse_cie(struct cursor *c, const struct ptr_ctx *pc, struct cie *ret)
{
	const char *aug;
	size_t aug_len;
	uint8_t version;
	struct cie cie = {.fde_enc = 0};
	const uint8_t *aug_end = NULL;

	version = (uint8_t)rd_u(c, 1);
	if (c->bad || (version != 1 && version != 3 && version != 4))
		return -EINVAL;
	aug = (const char *)c->p;
	aug_len = strnlen(aug, (size_t)(c->end - c->p));
	if (aug_len == (size_t)(c->end - c->p))
		return -EINVAL;
	c->p += aug_len + 1;
	if (strstr(aug, "eh"))
		rd_u(c, 8); /* GCC 2.x's eh_ptr */
	if (version == 4) {
		rd_u(c, 1); /* address_size */
		rd_u(c, 1); /* segment_size */
	}
	cie.caf = rd_uleb(c);
	cie.daf = rd_sleb(c);
	cie.ra = version == 1 ? rd_u(c, 1) : rd_uleb(c);
	if (c->bad || cie.ra != REG_RA)
		return -EINVAL;
	if (aug[0] == 'z') {
		uint64_t len = rd_uleb(c);

		if (c->bad || len > (uint64_t)(c->end - c->p))
			return -EINVAL;
		cie.has_z = true;
		aug_end = c->p + len;
	}
	for (size_t i = aug[0] == 'z' ? 1 : 0; i < aug_len && !c->bad; i++) {
		switch (aug[i]) {
		case 'L':
			rd_u(c, 1);
			break;
		case 'R':
			cie.fde_enc = (uint8_t)rd_u(c, 1);
			break;
		case 'S':
			cie.signal = true;
			break;
		case 'P': {
			uint8_t enc = (uint8_t)rd_u(c, 1);

			rd_ptr(c, enc & 0x7f, pc, false);
			break;
		}
		case 'B': /* AArch64 pointer auth */
		case 'G': /* MTE */
			break;
		case 'e': /* "eh", read above */
		case 'h':
			break;
		default:
			/* Unknown: with 'z' its data can be skipped, without it nothing can. */
			if (!aug_end)
				return -EINVAL;
			c->p = aug_end;
			i = aug_len;
			break;
		}
	}
	if (aug_end)
		c->p = aug_end;
	if (c->bad || c->p > c->end)
		return -EINVAL;
	cie.insns = c->p;
	cie.insns_end = c->end;
	*ret = cie;
	return 0;
}

static int cie_at(const struct eh_src *e, size_t off, struct cie_cache *cc,
		  struct unwind_table_stats *st, struct cie *ret)
{
	struct cursor c = {e->sec + off, e->sec + e->size, false};
	uint64_t len;
	struct cie cie;
	size_t slot;
	int err;

	for (size_t i = 0; i < cc->n; i++)
		if (cc->e[i].off == off) {
			*ret = cc->e[i].cie;
			return cc->e[i].ok ? 0 : -EINVAL;
		}
	len = rd_u(&c, 4);
	if (len == 0xffffffff)
		len = rd_u(&c, 8);
	if (c.bad || len > (uint64_t)(c.end - c.p) || len < 4)
		return -EINVAL;
	c.end = c.p + len;
	if (rd_u(&c, 4) != 0) /* a CIE's id is 0 in .eh_frame */
		return -EINVAL;
	err = parse_cie(&c, &e->pc, &cie);
	if (!err)
		st->cies++;
	slot = cc->n < CIE_CACHE ? cc->n++ : cc->next++ % CIE_CACHE;
	cc->e[slot].off = off;
	cc->e[slot].cie = cie;
	cc->e[slot].ok = !err;
	if (!err)
		*ret = cie;
	return err;
}

/* 0, or -EINVAL when the entry's length breaks the chain (nothing after it can be found). */
int eh_frame__entry_at(const struct eh_src *e, size_t off, struct cie_cache *cc,
		       struct unwind_table_stats *st, struct entry *ret)
{
	struct cursor c = {e->sec + off, e->sec + e->size, false};
	uint64_t len = rd_u(&c, 4), id;
	const uint8_t *id_at;

	ret->fde = false;
	ret->next = 0;
	if (len == 0)
		return 0; /* the terminator */
	if (len == 0xffffffff)
		len = rd_u(&c, 8);
	if (c.bad || len > (uint64_t)(c.end - c.p) || len < 4)
		return -EINVAL;
	ret->next = (size_t)(c.p - e->sec) + len;
	c.end = c.p + len;
	id_at = c.p;
	id = rd_u(&c, 4);
	if (id == 0)
		return 0; /* a CIE: parsed when an FDE refers to it */
	if (id > (uint64_t)(id_at - e->sec) ||
	    cie_at(e, (size_t)(id_at - e->sec) - id, cc, st, &ret->cie)) {
		st->bad_entries++;
		return 0;
	}
	ret->fde = true;
	ret->body = c.p;
	ret->end = c.end;
	return 0;
}

/* Run one FDE: its rows in pc order, then an end marker (an INVALID row at its end). */
int eh_frame__do_fde(struct row_out *o, const struct cie *cie, struct cursor *c,
		     const struct ptr_ctx *pc)
{
	struct fde_run run, *r = &run; /* on the stack: its state stack is not cleared */
	struct cfa_state s = {.cfa = CFA_OTHER, .rbp = REG_SAME, .ra = REG_SAME};
	struct xsprof_unwind_row end_row = {.type = XSPROF_CFA_INVALID};
	uint64_t start, range;
	int err;

	start = rd_ptr(c, cie->fde_enc, pc, true);
	range = rd_ptr(c, cie->fde_enc & PE_FORMAT, pc, false);
	if (cie->has_z) {
		uint64_t len = rd_uleb(c);

		if (c->bad || len > (uint64_t)(c->end - c->p))
			return -EINVAL;
		c->p += len;
	}
	if (c->bad)
		return -EINVAL;
	if (!range)
		return 0; /* an empty FDE (a discarded function): nothing to say */
	if (start > UINT32_MAX || range > UINT32_MAX || start + range > UINT32_MAX) {
		o->st->far_fdes++;
		return 0;
	}
	r->out = o;
	r->cie = cie;
	r->pc = pc;
	r->loc = start;
	r->end = start + range;
	r->emit = false;
	r->depth = 0;
	err = run_program(r, &s, cie->insns, cie->insns_end);
	if (!err) {
		r->init = s;
		r->depth = 0;
		r->emit = true;
		err = run_program(r, &s, c->p, c->end);
	}
	if (err == -EINVAL) {
		/* Keep what was emitted before the bad op; the rest of the FDE is unknown. */
		o->st->bad_entries++;
		err = 0;
	} else if (!err) {
		err = advance(r, &s, r->end);
	}
	if (!err && cie->signal)
		o->st->signal_fdes++;
	if (!err) {
		end_row.pc = (uint32_t)r->end;
		err = o->fn(o, &end_row);
	}
	o->st->fdes++;
	return err;
}

/* Where an FDE starts (its pc_begin), without running it: for the sort. False for one that
 * yields no rows (empty, past 4 GiB, unreadable), counted as do_fde would. */
bool eh_frame__fde_start(const struct eh_src *e, const struct entry *en,
			 struct unwind_table_stats *st, uint32_t *ret)
{
	struct cursor c = {en->body, en->end, false};
	uint64_t start = rd_ptr(&c, en->cie.fde_enc, &e->pc, true);
	uint64_t range = rd_ptr(&c, en->cie.fde_enc & PE_FORMAT, &e->pc, false);

	if (c.bad) {
		st->bad_entries++;
		return false;
	}
	if (!range)
		return false;
	if (start > UINT32_MAX || range > UINT32_MAX || start + range > UINT32_MAX) {
		st->far_fdes++;
		return false;
	}
	*ret = (uint32_t)start;
	return true;
}
