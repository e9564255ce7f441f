// SPDX-License-Identifier: Apache-2.0
/*
 * The layout read (Go's runtime/symtab.go and cmd/link's pcln.go, 1.18 to today): the header
 * (magic, two pad bytes, the instruction quantum, the pointer size, nfunc, nfiles, textStart,
 * then the offsets of the name, CU, file, pc-value and function tables, each from the header);
 * the function table: nfunc + 1 pairs of (entry offset from textStart, offset of the function's
 * record from the table's start), the last pair's entry the end of the text; a function record:
 * entryOff, nameOff, args, deferreturn, pcsp, pcfile, pcln, npcdata, cuOffset (u32 each), from
 * 1.20 startLine, then funcID and flag bytes. A pc-value table: pairs of varints, a zigzag value
 * delta (the value starts at -1) and a pc delta in quanta, ending at a zero value delta after
 * the first pair.
 */
#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/unwind/gopclntab.h"

#define GO_MAGIC_118 0xfffffff0u
#define GO_MAGIC_120 0xfffffff1u

/* funcFlag bits. */
#define GO_FLAG_TOPFRAME 0x1
#define GO_FLAG_SPWRITE	 0x2

struct go_sec {
	const uint8_t *p;
	size_t size;
};

static bool rd32(const struct go_sec *s, uint64_t off, uint32_t *ret)
{
	if (off > s->size || s->size - off < 4)
		return false;
	memcpy(ret, s->p + off, 4);
	return true;
}

static bool rd64(const struct go_sec *s, uint64_t off, uint64_t *ret)
{
	if (off > s->size || s->size - off < 8)
		return false;
	memcpy(ret, s->p + off, 8);
	return true;
}

/* One varint at *off (at most 5 bytes: a uint32), moving *off past it. */
static bool rd_varint(const struct go_sec *s, uint64_t *off, uint32_t *ret)
{
	uint32_t v = 0;

	for (unsigned int shift = 0; shift < 35; shift += 7) {
		uint8_t b;

		if (*off >= s->size)
			return false;
		b = s->p[(*off)++];
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
	if (flag & GO_FLAG_TOPFRAME)
		return push(r, pc, XSPROF_CFA_OUTERMOST, 8, 0);
	if ((flag & GO_FLAG_SPWRITE) || sp < 0 || sp + 8 > INT16_MAX)
		return push(r, pc, XSPROF_CFA_INVALID, 0, 0);
	/* A frame of its own: Go saves the caller's rbp right below the return address. */
	return push(r, pc, XSPROF_CFA_RSP, sp + 8, sp >= 8 ? -2 : 0);
}

/* The rows of one function [entry, end) from its pcsp table at off (0: none: no stack use). */
static int func_rows(struct row_vec *r, const struct go_sec *s, uint64_t off, uint64_t entry,
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

static int find(Elf *elf, struct go_sec *ret, uint64_t *ret_text)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Ehdr eh;
	int err = -ENOENT;

	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    eh.e_machine != EM_X86_64 || elf_getshdrstrndx(elf, &shstrndx))
		return -ENOEXEC;
	*ret_text = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".text")) {
			*ret_text = sh.sh_addr;
		} else if (!strcmp(name, ".gopclntab") && sh.sh_type == SHT_PROGBITS) {
			Elf_Data *d = elf_getdata(scn, NULL);

			if (d && d->d_buf && d->d_size) {
				ret->p = d->d_buf;
				ret->size = d->d_size;
				err = 0;
			}
		}
	}
	return err;
}

int gopclntab__rows(Elf *elf, size_t max_rows, struct xsprof_unwind_row **ret_rows, size_t *ret_n,
		    struct gopclntab_stats *st, const char **ret_why)
{
	struct row_vec r = {.max = max_rows};
	uint64_t nfunc = 0, text = 0, text_start = 0, pctab = 0, ftab = 0, prev_end = 0;
	uint32_t magic = 0, flag_off;
	struct go_sec s = {0};
	int err;

	memset(st, 0, sizeof(*st));
	err = find(elf, &s, &text);
	if (err)
		return err;
	st->section_size = s.size;
	if (!rd32(&s, 0, &magic) || s.size < 72) {
		*ret_why = ".gopclntab too short for its header";
		return -EINVAL;
	}
	if (magic != GO_MAGIC_118 && magic != GO_MAGIC_120) {
		*ret_why = "a .gopclntab of Go before 1.18 (or not Go's): not read";
		return -ENOTSUP;
	}
	if (s.p[4] || s.p[5] || !s.p[6] || s.p[7] != 8) {
		*ret_why = ".gopclntab: not a 64-bit Go header";
		return -EINVAL;
	}
	flag_off = magic == GO_MAGIC_120 ? 41 : 37;
	rd64(&s, 8, &nfunc);
	rd64(&s, 24, &text_start);
	rd64(&s, 56, &pctab);
	rd64(&s, 64, &ftab);
	/* A position-independent build leaves textStart to a relocation: .text is the same. */
	if (!text_start)
		text_start = text;
	if (!nfunc || pctab >= s.size || ftab >= s.size || (s.size - ftab) / 8 < nfunc + 1) {
		*ret_why = ".gopclntab: its tables do not fit the section";
		return -EINVAL;
	}
	for (uint64_t i = 0; i < nfunc; i++) {
		uint32_t entry_off = 0, func_off = 0, next_off = 0, pcsp = 0;
		uint64_t entry, end, fn;
		uint8_t flag;

		rd32(&s, ftab + 8 * i, &entry_off);
		rd32(&s, ftab + 8 * i + 4, &func_off);
		rd32(&s, ftab + 8 * (i + 1), &next_off);
		entry = text_start + entry_off;
		end = text_start + next_off;
		fn = ftab + func_off;
		if (end <= entry || entry < prev_end || end > UINT32_MAX ||
		    fn + flag_off >= s.size || !rd32(&s, fn + 16, &pcsp)) {
			st->bad_funcs++;
			continue;
		}
		flag = s.p[fn + flag_off];
		err = func_rows(&r, &s, pcsp ? pctab + pcsp : 0, entry, end, s.p[6], flag);
		if (err == -EINVAL) {
			/* Its rows so far stand; the rest of it has none. */
			st->bad_funcs++;
			err = 0;
		}
		if (err)
			goto fail;
		err = push(&r, end, XSPROF_CFA_INVALID, 0, 0);
		if (err)
			goto fail;
		prev_end = end;
		st->funcs++;
		st->top_funcs += !!(flag & GO_FLAG_TOPFRAME);
		st->spwrite += !!(flag & GO_FLAG_SPWRITE);
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
