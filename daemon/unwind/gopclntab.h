/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unwind rows for Go code, from the function table every Go binary carries for its own
 * tracebacks (.gopclntab): per function its entry, flags and a pc-value table of how far the
 * stack pointer is below the function's entry value at each pc (pcsp). Go has no .eh_frame, and
 * its frame-pointer chain skips the caller of a leaf without a frame and ends in assembly that
 * uses rbp as a plain register (crypto/sha256.block); the stack pointer's offset is exact for
 * both. The rows are those of unwind_table.h: CFA = rsp + spdelta + 8, the caller's rbp saved at
 * CFA - 16 where the function has made its frame (Go's prologue saves it there). Functions Go
 * marks as the top of a stack (runtime.goexit, mstart, rt0_go) end the walk as outermost;
 * those that write the stack pointer in ways the table cannot say (SPWRITE: stack switches)
 * get no rule, as Go's own traceback stops there.
 *
 * The table is read by daemon/symbolize/go_pclntab.h: Go 1.18 on; older layouts are refused
 * with a reason.
 */
#ifndef XSPROF_DAEMON_UNWIND_GOPCLNTAB_H
#define XSPROF_DAEMON_UNWIND_GOPCLNTAB_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/xsprof_events.h"

struct gopclntab_stats {
	uint64_t funcs;	       /* functions with rows */
	uint64_t top_funcs;    /* marked as the top of a stack: outermost */
	uint64_t spwrite;      /* stack-pointer writers: no rule */
	uint64_t bad_funcs;    /* entries or pc-value tables out of bounds or out of order */
	uint64_t section_size; /* bytes of .gopclntab */
};

/*
 * The rows of elf's Go functions, sorted by pc, a gap between functions marked INVALID:
 * *ret_rows malloc'd (the caller frees), *ret_n rows. 0; -ENOENT when the file has no
 * .gopclntab; -ENOTSUP (a layout not read here) or -EINVAL (malformed, or no function with a
 * table) with *ret_why in words; -ENOMEM; -E2BIG past max_rows.
 */
int gopclntab__rows(Elf *elf, size_t max_rows, struct xsprof_unwind_row **ret_rows, size_t *ret_n,
		    struct gopclntab_stats *ret_stats, const char **ret_why);

#endif
