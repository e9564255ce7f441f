/* SPDX-License-Identifier: Apache-2.0 */
/*
 * .eh_frame's CIEs and FDEs read, and an FDE's call-frame program run into unwind rows: the
 * part of the table's build that knows DWARF (section 6.4) and the LSB's .eh_frame format
 * (pointer encodings, augmentations "zR", "zPLR", "zRS"). unwind_table.c puts the FDEs in pc
 * order and merges their rows; this file reads one at a time. Internal to daemon/unwind/.
 */
#ifndef XSPROF_DAEMON_UNWIND_EH_FRAME_H
#define XSPROF_DAEMON_UNWIND_EH_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/unwind/unwind_table.h"

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

struct ptr_ctx {
	const uint8_t *sec;
	uint64_t sec_vaddr, data_vaddr;
};

struct cie {
	uint64_t caf; /* code alignment factor */
	int64_t daf;  /* data alignment factor */
	uint64_t ra;  /* return address register */
	uint8_t fde_enc;
	bool has_z, signal;
	const uint8_t *insns, *insns_end;
};

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

/* One entry of the section at off: its body [body, end), its CIE when it is an FDE. */
struct entry {
	size_t next;		   /* offset of the next entry; 0: none can be found */
	bool fde;		   /* an FDE whose CIE parsed */
	struct cie cie;		   /* its CIE */
	const uint8_t *body, *end; /* after the CIE pointer */
};

/* The entry at off: 0 (ret->fde when it is an FDE whose CIE parsed; ret->next 0 at the
 * terminator), or -EINVAL when its length breaks the chain (nothing after it can be found). */
int eh_frame__entry_at(const struct eh_src *e, size_t off, struct cie_cache *cc,
		       struct unwind_table_stats *st, struct entry *ret);

/* Run one FDE (c over its body after the CIE pointer): its rows in pc order to o, then an end
 * marker (an INVALID row at its end). 0; -EINVAL for a malformed one; o's error. */
int eh_frame__do_fde(struct row_out *o, const struct cie *cie, struct cursor *c,
		     const struct ptr_ctx *pc);

/* Where an FDE starts (its pc_begin), without running it: for the sort. False for one that
 * yields no rows (empty, past 4 GiB, unreadable), counted as eh_frame__do_fde would. */
bool eh_frame__fde_start(const struct eh_src *e, const struct entry *en,
			 struct unwind_table_stats *st, uint32_t *ret);

#endif
