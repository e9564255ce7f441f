/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Go's function table (.gopclntab), which every Go binary keeps for its own tracebacks, stripped
 * or not: per function its entry and end, its name, its flags and the offset of its pc-value
 * table of stack-pointer deltas (pcsp). The symbolizer names a stripped Go file's functions from
 * it; the unwinder makes its rows from it (daemon/unwind/gopclntab.h).
 *
 * The layout read (Go's runtime/symtab.go and cmd/link's pcln.go, 1.18 to today): the header
 * (magic, two pad bytes, the instruction quantum, the pointer size, nfunc, nfiles, textStart,
 * then the offsets of the name, CU, file, pc-value and function tables, each from the header);
 * the function table: nfunc + 1 pairs of (entry offset from textStart, offset of the function's
 * record from the table's start), the last pair's entry the end of the text; a function record:
 * entryOff, nameOff, args, deferreturn, pcsp, pcfile, pcln, npcdata, cuOffset (u32 each), from
 * 1.20 startLine, then funcID and flag bytes. The section comes from a profiled process's file:
 * every read is bounds-checked.
 */
#ifndef XSPROF_DAEMON_SYMBOLIZE_GO_PCLNTAB_H
#define XSPROF_DAEMON_SYMBOLIZE_GO_PCLNTAB_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

/* funcFlag bits. */
#define GO_FUNC_TOPFRAME 0x1 /* the top of a stack: runtime.goexit, mstart, rt0_go */
#define GO_FUNC_SPWRITE	 0x2 /* writes the stack pointer in ways pcsp cannot say */

struct go_pclntab {
	const uint8_t *p; /* the section's bytes (libelf's: valid while the Elf is) */
	size_t size;
	uint64_t nfunc, text_start, pctab, ftab, funcnames;
	uint32_t flag_off;
	uint8_t quantum;
};

struct go_func {
	uint64_t entry, end; /* ELF virtual addresses */
	uint64_t pcsp;	     /* offset of its pcsp table in the section; 0: it has none */
	uint8_t flag;	     /* GO_FUNC_* */
	const char *name;    /* NUL-terminated inside the section; NULL when it is not */
};

/*
 * elf's .gopclntab: 0; -ENOENT when there is none, -ENOEXEC (not x86-64 ELF), -ENOTSUP (a
 * layout before Go 1.18) or -EINVAL (malformed) with *ret_why in words.
 */
int go_pclntab__open(Elf *elf, struct go_pclntab *ret, const char **ret_why);

/* The i-th function (i < nfunc, in address order): 0, or -EINVAL when its entry is out of
 * bounds or not after prev_end (the end of the one before, 0 for none). */
int go_pclntab__func(const struct go_pclntab *t, uint64_t i, uint64_t prev_end,
		     struct go_func *ret);

#endif
