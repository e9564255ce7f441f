// SPDX-License-Identifier: Apache-2.0
/*
 * .eh_frame -> unwind rows. Walks the section's CIEs and FDEs in order (not through
 * .eh_frame_hdr: every FDE is visited anyway, and a missing or stale header changes nothing) and
 * runs each FDE's call-frame program, keeping only what the BPF walker uses: the CFA rule, the
 * rule of rbp (DWARF register 6) and of the return address (16). Rows are sorted and merged at
 * the end. Formats: DWARF 4 section 6.4 and the LSB's .eh_frame description (pointer encodings,
 * augmentations "zR", "zPLR", "zRS").
 */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon/unwind/gopclntab.h"
#include "daemon/unwind/unwind_table.h"

#define REG_RBP 6
#define REG_RSP 7
#define REG_RA	16

/* Remember/restore state nesting kept; deeper programs are rejected. */
#define MAX_STATE_STACK 16

struct unwind_table {
	struct xsprof_unwind_row *rows;
	size_t nr, cap;
	struct unwind_table_stats st;
};

/* Where an FDE's rows go, in its own pc order, and what is counted on the way. */
struct row_out {
	struct unwind_table_stats *st;
	int (*fn)(struct row_out *o, const struct xsprof_unwind_row *r);
};

/* A bounds-checked cursor over the section. */
struct cursor {
	const uint8_t *p, *end;
	bool bad;
};

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

struct ptr_ctx {
	const uint8_t *sec;
	uint64_t sec_vaddr, data_vaddr;
};

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

struct cie {
	uint64_t caf; /* code alignment factor */
	int64_t daf;  /* data alignment factor */
	uint64_t ra;  /* return address register */
	uint8_t fde_enc;
	bool has_z, signal;
	const uint8_t *insns, *insns_end;
};

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

/* Run a call-frame program over s; 0, -EINVAL on a malformed one, or -ENOMEM/-E2BIG. */
static int run_program(struct fde_run *r, struct cfa_state *s, const uint8_t *p, const uint8_t *end)
{
	struct cursor c = {p, end, false};
	const struct cie *cie = r->cie;
	int err = 0;

	while (!err && !c.bad && c.p < c.end) {
		uint8_t op = *c.p++, low = op & 0x3f;
		uint64_t reg, len;
		int64_t off;

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
		case 0x05: /* offset_extended */
			reg = rd_uleb(&c);
			set_reg(s, reg, REG_OFFSET, factored((int64_t)rd_uleb(&c), cie->daf));
			break;
		case 0x06: /* restore_extended */
			restore_reg(s, &r->init, rd_uleb(&c));
			break;
		case 0x07: /* undefined */
			set_reg(s, rd_uleb(&c), REG_UNDEF, 0);
			break;
		case 0x08: /* same_value */
			set_reg(s, rd_uleb(&c), REG_SAME, 0);
			break;
		case 0x09: /* register */
			reg = rd_uleb(&c);
			rd_uleb(&c);
			set_reg(s, reg, REG_OTHER, 0);
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
		case 0x0c: /* def_cfa */
			s->cfa = CFA_REG;
			s->cfa_reg = rd_uleb(&c);
			s->cfa_off = (int64_t)rd_uleb(&c);
			break;
		case 0x0d: /* def_cfa_register */
			if (s->cfa != CFA_REG)
				s->cfa_off = 0;
			s->cfa = CFA_REG;
			s->cfa_reg = rd_uleb(&c);
			break;
		case 0x0e: /* def_cfa_offset */
			s->cfa_off = (int64_t)rd_uleb(&c);
			break;
		case 0x0f: /* def_cfa_expression */
			len = rd_uleb(&c);
			if (c.bad || len > (uint64_t)(c.end - c.p))
				return -EINVAL;
			cfa_expression(s, c.p, len);
			c.p += len;
			break;
		case 0x10: /* expression */
		case 0x16: /* val_expression */
			reg = rd_uleb(&c);
			len = rd_uleb(&c);
			if (c.bad || len > (uint64_t)(c.end - c.p))
				return -EINVAL;
			if (op == 0x10 && reg_at_rbp(c.p, len, &off))
				set_reg(s, reg, REG_AT_RBP, off);
			else
				set_reg(s, reg, REG_OTHER, 0);
			c.p += len;
			break;
		case 0x11: /* offset_extended_sf */
			reg = rd_uleb(&c);
			set_reg(s, reg, REG_OFFSET, factored(rd_sleb(&c), cie->daf));
			break;
		case 0x12: /* def_cfa_sf */
			s->cfa = CFA_REG;
			s->cfa_reg = rd_uleb(&c);
			s->cfa_off = factored(rd_sleb(&c), cie->daf);
			break;
		case 0x13: /* def_cfa_offset_sf */
			s->cfa_off = factored(rd_sleb(&c), cie->daf);
			break;
		case 0x14: /* val_offset */
		case 0x15: /* val_offset_sf */
			reg = rd_uleb(&c);
			if (op == 0x14)
				rd_uleb(&c);
			else
				rd_sleb(&c);
			set_reg(s, reg, REG_OTHER, 0);
			break;
		case 0x2e: /* GNU_args_size: only matters to exception handling */
			rd_uleb(&c);
			break;
		case 0x2f: /* GNU_negative_offset_extended */
			reg = rd_uleb(&c);
			set_reg(s, reg, REG_OFFSET,
				factored(-(int64_t)(rd_uleb(&c) & INT64_MAX), cie->daf));
			break;
		default:
			return -EINVAL;
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

/* Small cache of parsed CIEs: an .eh_frame has few, and every FDE refers to one. */
#define CIE_CACHE 64

struct cie_cache {
	struct {
		size_t off;
		struct cie cie;
		bool ok;
	} e[CIE_CACHE];
	size_t n, next; /* next: the slot replaced when full (round robin) */
};

/* The section being compiled. */
struct eh_src {
	const uint8_t *sec;
	size_t size;
	struct ptr_ctx pc;
};

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

/* One entry of the section at off: its body [body, end), its CIE when it is an FDE. */
struct entry {
	size_t next;		   /* offset of the next entry; 0: none can be found */
	bool fde;		   /* an FDE whose CIE parsed */
	struct cie cie;		   /* its CIE */
	const uint8_t *body, *end; /* after the CIE pointer */
};

/* 0, or -EINVAL when the entry's length breaks the chain (nothing after it can be found). */
static int entry_at(const struct eh_src *e, size_t off, struct cie_cache *cc,
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
static int do_fde(struct row_out *o, const struct cie *cie, struct cursor *c,
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
static bool fde_start(const struct eh_src *e, const struct entry *en, struct unwind_table_stats *st,
		      uint32_t *ret)
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

/* ---- the build: FDEs in pc order, their rows merged into one sorted stream ---- */

struct fde_ref {
	uint32_t pc, off;
};

static int cmp_fde(const void *a, const void *b)
{
	const struct fde_ref *x = a, *y = b;

	if (x->pc != y->pc)
		return x->pc < y->pc ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

static bool same_rule(const struct xsprof_unwind_row *a, const struct xsprof_unwind_row *b)
{
	return a->type == b->type && a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off;
}

struct fde_sort;

struct unwind_build {
	struct row_out out; /* first: the FDE runs call back through it */
	struct unwind_table_stats st;
	struct eh_src e;
	struct cie_cache cc;
	struct fde_ref *fdes;
	size_t nr_fdes, next;
	/* The collection, a piece per step: the next entry's offset, the array's room; then the
	 * sort, a piece per step too (sort: NULL when the file had them in order). */
	size_t collect_off, collect_cap;
	bool scanned, collected;
	struct fde_sort *sort;
	/* The merge: rows already passed on end with last; pending waits for the next row. */
	struct xsprof_unwind_row last, pending;
	bool has_last, has_pending;
	uint64_t rows_out;
	unwind_row_fn fn;
	void *ctx;
	/* Where the section is mapped from a file: given back to the page cache as it is read,
	 * so a 10 MiB .eh_frame never sits in our RSS whole. */
	Elf *elf;
	uint8_t *drop_start;
	size_t drop_len, since_drop;
	/* A file that can have no table: every step returns err; why says it in words. */
	int err;
	const char *why;
	uint64_t usable_rows; /* rows passed on with a rule the walker can apply */
	char why_buf[96];
	/* A Go file's rows, made at once from its .gopclntab (gopclntab.h): passed on a piece
	 * per step in place of FDEs (pre_only: the file has no .eh_frame), or merged in pc order
	 * with the FDEs' (cgo: C code with FDEs, Go code with none). */
	struct xsprof_unwind_row *pre;
	size_t nr_pre, pre_next;
	bool pre_only;
};

/* Pass a row downstream (the merge's output). */
static int build__pass(struct unwind_build *b, const struct xsprof_unwind_row *r)
{
	int err = b->fn(b->ctx, r);

	if (!err) {
		b->last = *r;
		b->has_last = true;
		b->rows_out++;
		if (r->type != XSPROF_CFA_INVALID)
			b->usable_rows++;
	}
	return err;
}

/* No table can come of b's file: its steps return err from now on. */
static int build__refuse(struct unwind_build *b, int err, const char *why)
{
	b->err = err;
	b->why = why;
	b->nr_fdes = b->next = 0;
	b->scanned = b->collected = true;
	return err;
}

/*
 * Rows arrive per FDE in pc order, FDEs in pc order. At one pc the later row wins (a real rule
 * over the end marker of the FDE before); equal rules in a row are one; a row below one passed
 * on already (overlapping FDEs) is dropped and counted.
 */
static int build__row(struct row_out *o, const struct xsprof_unwind_row *r)
{
	struct unwind_build *b = (struct unwind_build *)o;
	int err;

	if (b->has_pending && r->pc < b->pending.pc) {
		b->st.overlaps++;
		return 0;
	}
	if (b->has_pending && r->pc == b->pending.pc) {
		b->pending = *r;
		if (b->has_last && same_rule(&b->last, r))
			b->has_pending = false;
		return 0;
	}
	if (b->has_pending && same_rule(&b->pending, r))
		return 0;
	if (!b->has_pending && b->has_last && (r->pc <= b->last.pc || same_rule(&b->last, r))) {
		if (r->pc <= b->last.pc)
			b->st.overlaps++;
		return 0;
	}
	if (b->has_pending && (err = build__pass(b, &b->pending)))
		return err;
	b->pending = *r;
	b->has_pending = true;
	return 0;
}

static void build__drop_pages(struct unwind_build *b)
{
	if (b->drop_len)
		madvise(b->drop_start, b->drop_len, MADV_DONTNEED);
	b->since_drop = 0;
}

/*
 * Sort by (pc, off): the FDEs were collected in file order, so off already rises, and a stable
 * sort by pc alone is enough: three passes of 11 bits (a comparison sort was a third of the
 * build of libtorch's 300k FDEs), each counting then placing SORT_STEP entries per step (10M
 * FDEs of a 200 MiB section take ~250 ms in all: not at once on the caller's loop).
 */
#define SORT_BITS    11
#define SORT_BUCKETS (1 << SORT_BITS)
#define SORT_STEP    (1u << 20)

struct fde_sort {
	struct fde_ref *tmp, *src, *dst;
	size_t i;
	int shift;    /* of the pass running */
	bool placing; /* counted: placing */
	size_t count[SORT_BUCKETS];
};

/* Start the sort of b's FDEs; 0, or -ENOMEM (then sorted at once, without the copy). */
static int sort_start(struct unwind_build *b)
{
	struct fde_sort *s = calloc(1, sizeof(*s));

	if (s)
		s->tmp = malloc(b->nr_fdes * sizeof(*s->tmp));
	if (!s || !s->tmp) {
		free(s);
		qsort(b->fdes, b->nr_fdes, sizeof(*b->fdes), cmp_fde);
		return -ENOMEM;
	}
	s->src = b->fdes;
	s->dst = s->tmp;
	b->sort = s;
	return 0;
}

/* One piece of the sort: 1 while more is left, 0 when the FDEs are in order. */
static int sort_step(struct unwind_build *b)
{
	struct fde_sort *s = b->sort;
	size_t n = b->nr_fdes, end = n - s->i > SORT_STEP ? s->i + SORT_STEP : n, sum = 0;
	struct fde_ref *sw;

	if (!s->placing) {
		for (; s->i < end; s->i++)
			s->count[(s->src[s->i].pc >> s->shift) & (SORT_BUCKETS - 1)]++;
		if (s->i < n)
			return 1;
		for (size_t d = 0; d < SORT_BUCKETS; d++) {
			size_t c = s->count[d];

			s->count[d] = sum;
			sum += c;
		}
		s->placing = true;
		s->i = 0;
		return 1;
	}
	for (; s->i < end; s->i++)
		s->dst[s->count[(s->src[s->i].pc >> s->shift) & (SORT_BUCKETS - 1)]++] =
			s->src[s->i];
	if (s->i < n)
		return 1;
	sw = s->src, s->src = s->dst, s->dst = sw;
	s->shift += SORT_BITS;
	s->i = 0;
	s->placing = false;
	memset(s->count, 0, sizeof(s->count));
	if (s->shift < 32)
		return 1;
	if (s->src != b->fdes)
		memcpy(b->fdes, s->src, n * sizeof(*b->fdes));
	free(s->tmp);
	free(s);
	b->sort = NULL;
	return 0;
}

/* The section bytes one step of the collection reads (about 10 ms): a 200 MiB .eh_frame
 * does not hold the caller's loop for half a second. */
#define COLLECT_STEP_BYTES (4u << 20)

/* Every FDE's start and offset, sorted by start, max_bytes of the section per call: 1 while
 * more is left, 0 when done (b->collected), or -errno. */
static int build__collect(struct unwind_build *b, size_t max_bytes)
{
	size_t off = b->collect_off, cap = b->collect_cap, stop;
	int err = 0;

	stop = max_bytes < b->e.size - off ? off + max_bytes : b->e.size;
	while (off + 4 <= b->e.size) {
		if (off >= stop) {
			b->collect_off = off;
			b->collect_cap = cap;
			return 1;
		}
		struct entry en;
		uint32_t start;

		if (entry_at(&b->e, off, &b->cc, &b->st, &en)) {
			b->st.bad_entries++;
			break; /* lengths chain the entries: nothing after this can be found */
		}
		if (!en.next)
			break;
		if (en.fde && fde_start(&b->e, &en, &b->st, &start)) {
			if (b->nr_fdes == cap) {
				size_t ncap = cap ? cap * 2 : 1024;
				struct fde_ref *n = reallocarray(b->fdes, ncap, sizeof(*n));

				if (!n) {
					err = -ENOMEM;
					break;
				}
				b->fdes = n;
				cap = ncap;
			}
			b->fdes[b->nr_fdes++] = (struct fde_ref){start, (uint32_t)off};
		} else if (en.fde) {
			b->st.fdes++;
		}
		if ((b->since_drop += en.next - off) >= (2u << 20))
			build__drop_pages(b);
		off = en.next;
	}
	b->collect_off = off;
	b->collect_cap = cap;
	if (err)
		return err;
	b->scanned = true;
	for (size_t i = 1; i < b->nr_fdes; i++)
		if (cmp_fde(&b->fdes[i - 1], &b->fdes[i]) > 0) {
			if (!sort_start(b))
				return 1; /* sorted a piece per step */
			break;
		}
	b->collected = true;
	return 0;
}

static struct unwind_build *build__new(const uint8_t *sec, size_t size, uint64_t sec_vaddr,
				       uint64_t data_vaddr)
{
	struct unwind_build *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->out.st = &b->st;
	b->out.fn = build__row;
	if (size > UNWIND_TABLE_MAX_SECTION) {
		build__refuse(b, -E2BIG, ".eh_frame over the 256 MiB cap");
		return b;
	}
	b->e = (struct eh_src){sec, size, {sec, sec_vaddr, data_vaddr}};
	b->st.section_bytes = size;
	return b;
}

/* Why no FDE of the section was kept (collected, none with rows): in words, into b. */
static int build__refuse_no_fde(struct unwind_build *b)
{
	const char *why = "no FDE in .eh_frame";

	if (b->st.bad_entries) {
		snprintf(b->why_buf, sizeof(b->why_buf), "no FDE could be parsed (%llu malformed)",
			 (unsigned long long)b->st.bad_entries);
		why = b->why_buf;
	} else if (b->st.far_fdes) {
		snprintf(b->why_buf, sizeof(b->why_buf),
			 "all %llu FDEs past 4 GiB of address space",
			 (unsigned long long)b->st.far_fdes);
		why = b->why_buf;
	} else if (b->st.fdes) {
		why = "every FDE is empty";
	}
	return build__refuse(b, -ENOENT, why);
}

/* The first piece of the section's FDEs; the ELF (if any) and drop range are set by the
 * caller. The rest come in unwind_build__step. 0, or -ENOMEM (a refusal is no error here). */
static int build__start(struct unwind_build *b)
{
	int err;

	if (b->err)
		return 0;
	err = build__collect(b, COLLECT_STEP_BYTES);
	build__drop_pages(b);
	if (err < 0)
		return err;
	if (b->scanned && !b->nr_fdes && !b->nr_pre)
		build__refuse_no_fde(b);
	return 0;
}

static int build__finish(struct unwind_build *b);

/* The Go rows below pc, at most max of them, into the merge: 1 while more below pc are left. A
 * Go row at an FDE's start goes before the FDE's (the later row at one pc wins); one inside an
 * FDE's range comes after its rows and is dropped as an overlap (Go's table covers no C code:
 * there are none). */
static int build__pre_below(struct unwind_build *b, uint64_t pc, size_t max)
{
	int err;

	for (size_t n = 0; b->pre_next < b->nr_pre && b->pre[b->pre_next].pc < pc; n++) {
		if (n == max)
			return 1;
		if ((err = build__row(&b->out, &b->pre[b->pre_next++])))
			return err;
	}
	return 0;
}

int unwind_build__step(struct unwind_build *b, size_t max_fdes, unwind_row_fn fn, void *ctx)
{
	int err = 0;

	b->fn = fn;
	b->ctx = ctx;
	if (b->err)
		return b->err;
	if (b->pre_only) {
		/* A Go function has a few rows: as many per step as FDEs of about that many. */
		err = build__pre_below(b, UINT64_MAX, 8 * max_fdes);
		return err ? err : build__finish(b);
	}
	if (!b->collected) {
		if (!b->scanned) {
			err = build__collect(b, COLLECT_STEP_BYTES);
			build__drop_pages(b);
			if (err < 0)
				return err;
		} else if (!sort_step(b)) {
			b->collected = true;
		}
		if (b->scanned && !b->nr_fdes && !b->nr_pre)
			return build__refuse_no_fde(b);
		return 1;
	}
	for (size_t n = 0; b->next < b->nr_fdes && n < max_fdes; n++) {
		struct fde_ref *f = &b->fdes[b->next++];
		struct entry en;
		struct cursor c;

		/* cgo: the Go functions before this FDE first (a few between two C ones). */
		if (b->nr_pre && (err = build__pre_below(b, f->pc, SIZE_MAX)))
			return err;
		if (entry_at(&b->e, f->off, &b->cc, &b->st, &en) || !en.fde)
			continue; /* read once already: cannot fail now */
		c = (struct cursor){en.body, en.end, false};
		err = do_fde(&b->out, &en.cie, &c, &b->e.pc);
		if (err == -EINVAL) {
			b->st.bad_entries++;
			err = 0;
		}
		if (err)
			return err;
		if ((b->since_drop += (size_t)(en.end - en.body)) >= (2u << 20))
			build__drop_pages(b);
	}
	if (b->next < b->nr_fdes)
		return 1;
	/* cgo: the Go functions after the last FDE, a piece per step. */
	err = build__pre_below(b, UINT64_MAX, 8 * max_fdes);
	return err ? err : build__finish(b);
}

/* The last row passed on, and a table with no rule the walker can apply refused. */
static int build__finish(struct unwind_build *b)
{
	int err;

	build__drop_pages(b);
	if (b->has_pending) {
		err = build__pass(b, &b->pending);
		b->has_pending = false;
		if (err)
			return err;
	}
	if (!b->usable_rows) {
		snprintf(b->why_buf, sizeof(b->why_buf),
			 "no rule the walker can apply (%llu FDEs, %llu cut short)",
			 (unsigned long long)b->st.fdes, (unsigned long long)b->st.bad_entries);
		return build__refuse(b, -ENOENT, b->why_buf);
	}
	return 0;
}

const char *unwind_build__why(const struct unwind_build *b)
{
	return b->why;
}

size_t unwind_build__nr_fdes(const struct unwind_build *b)
{
	return b->nr_fdes;
}

bool unwind_build__collected(const struct unwind_build *b)
{
	return b->collected;
}

void unwind_build__free(struct unwind_build *b)
{
	if (!b)
		return;
	if (b->sort)
		free(b->sort->tmp);
	free(b->sort);
	free(b->fdes);
	free(b->pre);
	elf_end(b->elf);
	free(b);
}

void unwind_build__stats(const struct unwind_build *b, struct unwind_table_stats *ret)
{
	*ret = b->st;
	ret->rows = b->rows_out;
}

/* .eh_frame (and .got, for datarel pointers) of an ELF image. */
struct eh_sections {
	const uint8_t *data;
	size_t size;
	uint64_t addr, got;
};

static int find_eh_frame(Elf *elf, struct eh_sections *ret)
{
	Elf_Data *eh_data = NULL;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Ehdr eh;

	memset(ret, 0, sizeof(*ret));
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    eh.e_machine != EM_X86_64 || elf_getshdrstrndx(elf, &shstrndx))
		return -ENOEXEC;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		/* LLVM's assembler types it SHT_X86_64_UNWIND (the x86-64 psABI's), GNU as
		 * PROGBITS: clang-built files (libLLVM, clang) have the former. */
		if (!strcmp(name, ".eh_frame") &&
		    (sh.sh_type == SHT_PROGBITS || sh.sh_type == SHT_X86_64_UNWIND)) {
			eh_data = elf_getdata(scn, NULL);
			ret->addr = sh.sh_addr;
		} else if (!strcmp(name, ".got")) {
			ret->got = sh.sh_addr;
		}
	}
	if (!eh_data || !eh_data->d_buf || !eh_data->d_size)
		return -ENOENT;
	ret->data = eh_data->d_buf;
	ret->size = eh_data->d_size;
	return 0;
}

/* A build that only says why the image has no table (find_eh_frame's err); NULL: ENOMEM. */
static struct unwind_build *build__refused_image(int err)
{
	struct unwind_build *b = build__new(NULL, 0, 0, 0);

	if (b)
		build__refuse(b, err,
			      err == -ENOEXEC ? "not an x86-64 ELF file" : "no .eh_frame section");
	return b;
}

/* A build over a Go file's rows (no .eh_frame): elf is read now and can be ended after.
 * NULL: ENOMEM. */
static struct unwind_build *build__new_go(Elf *elf)
{
	struct unwind_build *b = build__new(NULL, 0, 0, 0);
	struct gopclntab_stats gs;
	const char *why = NULL;
	int err;

	if (!b)
		return NULL;
	b->scanned = b->collected = b->pre_only = true;
	err = gopclntab__rows(elf, UNWIND_TABLE_MAX_ROWS, &b->pre, &b->nr_pre, &gs, &why);
	if (err == -ENOMEM) {
		free(b);
		return NULL;
	}
	if (err == -ENOENT) {
		build__refuse(b, -ENOENT, "no .eh_frame section");
	} else if (err) {
		snprintf(b->why_buf, sizeof(b->why_buf), "no .eh_frame, and %s",
			 err == -E2BIG ? "over the row cap in .gopclntab" : why);
		build__refuse(b, err == -E2BIG ? -E2BIG : -ENOENT, b->why_buf);
	} else {
		b->st.fdes = b->st.go_funcs = gs.funcs;
		b->st.bad_entries = gs.bad_funcs;
		b->st.section_bytes = gs.section_size;
		b->nr_fdes = (size_t)gs.funcs;
	}
	return b;
}

/* A cgo file has .eh_frame for its C code and none for its Go code: the Go functions' rows from
 * its .gopclntab join the FDEs'. A file without one, or with one not read here, keeps its FDEs
 * alone (its Go code walked by frame pointers, as before). 0, or -ENOMEM. */
static int build__add_cgo(struct unwind_build *b, Elf *elf)
{
	struct gopclntab_stats gs;
	const char *why = NULL;
	int err = gopclntab__rows(elf, UNWIND_TABLE_MAX_ROWS, &b->pre, &b->nr_pre, &gs, &why);

	if (err == -ENOMEM)
		return err;
	if (err) {
		free(b->pre);
		b->pre = NULL;
		b->nr_pre = 0;
		return 0;
	}
	b->st.go_funcs = gs.funcs;
	return 0;
}

struct unwind_build *unwind_build__new_fd(int fd)
{
	struct unwind_build *b = NULL;
	struct eh_sections es;
	long page = sysconf(_SC_PAGESIZE);
	Elf *elf;
	int err;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	err = find_eh_frame(elf, &es);
	if (err == -ENOENT) {
		/* Go: its own function table says the frames. */
		b = build__new_go(elf);
		elf_end(elf);
		return b;
	}
	if (err) {
		elf_end(elf);
		return build__refused_image(err);
	}
	b = build__new(es.data, es.size, es.addr, es.got);
	if (!b) {
		elf_end(elf);
		return NULL;
	}
	b->elf = elf;
	err = build__add_cgo(b, elf);
	if (err) {
		unwind_build__free(b);
		errno = -err;
		return NULL;
	}
	/* Given back only where libelf mapped the file (not where it had to copy it). */
	if (page > 0 && elf_rawfile(elf, NULL)) {
		uintptr_t lo = (uintptr_t)es.data & ~((uintptr_t)page - 1);

		b->drop_start = (uint8_t *)lo;
		b->drop_len = (uintptr_t)es.data + es.size - lo;
	}
	err = build__start(b);
	if (err) {
		unwind_build__free(b);
		errno = -err;
		return NULL;
	}
	return b;
}

struct unwind_build *unwind_build__new_eh_frame(const void *sec, size_t size, uint64_t sec_vaddr,
						uint64_t data_vaddr)
{
	struct unwind_build *b = build__new(sec, size, sec_vaddr, data_vaddr);
	int err;

	if (!b)
		return NULL;
	err = build__start(b);
	if (err) {
		unwind_build__free(b);
		errno = -err;
		return NULL;
	}
	return b;
}

struct unwind_build *unwind_build__new_elf_memory(const void *image, size_t size)
{
	struct unwind_build *b = NULL;
	struct eh_sections es;
	Elf *elf;
	int err;

	elf_version(EV_CURRENT);
	elf = elf_memory((char *)image, size);
	err = find_eh_frame(elf, &es);
	if (err) {
		elf_end(elf);
		return build__refused_image(err);
	}
	b = unwind_build__new_eh_frame(es.data, es.size, es.addr, es.got);
	if (!b) {
		elf_end(elf);
		return NULL;
	}
	b->elf = elf; /* freed with the build */
	return b;
}

/* ---- a whole table in memory (tests, the fuzzer) ---- */

static int table__push(void *ctx, const struct xsprof_unwind_row *r)
{
	struct unwind_table *t = ctx;

	if (t->nr == t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 1024;
		struct xsprof_unwind_row *n;

		if (t->nr >= UNWIND_TABLE_MAX_ROWS)
			return -E2BIG;
		if (ncap > UNWIND_TABLE_MAX_ROWS)
			ncap = UNWIND_TABLE_MAX_ROWS;
		n = reallocarray(t->rows, ncap, sizeof(*n));
		if (!n)
			return -ENOMEM;
		t->rows = n;
		t->cap = ncap;
	}
	t->rows[t->nr++] = *r;
	return 0;
}

static struct unwind_table *table__from_build(struct unwind_build *b)
{
	struct unwind_table *t = b ? calloc(1, sizeof(*t)) : NULL;
	int err = b ? -ENOMEM : -errno;

	if (t) {
		while ((err = unwind_build__step(b, SIZE_MAX, table__push, t)) > 0)
			;
		unwind_build__stats(b, &t->st);
	}
	unwind_build__free(b);
	if (err) {
		unwind_table__free(t);
		errno = -err;
		return NULL;
	}
	return t;
}

struct unwind_table *unwind_table__from_eh_frame(const void *sec, size_t size, uint64_t sec_vaddr,
						 uint64_t data_vaddr)
{
	return table__from_build(unwind_build__new_eh_frame(sec, size, sec_vaddr, data_vaddr));
}

struct unwind_table *unwind_table__from_elf_fd(int fd)
{
	return table__from_build(unwind_build__new_fd(fd));
}

struct unwind_table *unwind_table__from_elf_memory(const void *image, size_t size)
{
	return table__from_build(unwind_build__new_elf_memory(image, size));
}

void unwind_table__free(struct unwind_table *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t);
}

size_t unwind_table__count(const struct unwind_table *t)
{
	return t->nr;
}

const struct xsprof_unwind_row *unwind_table__rows(const struct unwind_table *t)
{
	return t->rows;
}

const struct xsprof_unwind_row *unwind_table__find(const struct unwind_table *t, uint64_t pc)
{
	size_t lo = 0, hi = t->nr;

	if (pc > UINT32_MAX)
		pc = UINT32_MAX;
	/* The last row with row.pc <= pc. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &t->rows[lo - 1] : NULL;
}

void unwind_table__stats(const struct unwind_table *t, struct unwind_table_stats *ret)
{
	*ret = t->st;
}
