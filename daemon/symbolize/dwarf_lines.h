/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Source lines and inlined functions from DWARF (elfutils libdw), for --debug-info. Opt-in:
 * opening a file's DWARF and walking its scopes costs far more than a symbol-table lookup.
 * The files come from profiled processes; libdw checks offsets against the file, and the file
 * is read with pread (not mapped), so a file truncated under us fails instead of faulting.
 */
#ifndef XSPROF_DAEMON_SYMBOLIZE_DWARF_LINES_H
#define XSPROF_DAEMON_SYMBOLIZE_DWARF_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Deepest inline chain reported for one address; deeper ones keep their innermost frames. */
#define DWARF_LINES_MAX_INLINE 32

struct arena;
struct dwarf_lines;

struct dwarf_frame {
	const char *name; /* function (linkage name when there is one, still mangled), or NULL */
	const char *file; /* source file as DWARF names it, or NULL */
	uint32_t line;	  /* 0 when unknown */
	bool inlined;	  /* this frame was inlined into the next (outer) one */
};

/* Takes fd (closed by dwarf_lines__free, or here on failure). NULL with errno set. */
struct dwarf_lines *dwarf_lines__open(int fd);
void dwarf_lines__free(struct dwarf_lines *d);

/*
 * Frames for ELF virtual address vaddr, innermost first: the inlined functions (if any) and
 * the function that holds them. Strings are copied into strs. Returns the count (0 when
 * vaddr is in no compilation unit), or -ENOMEM.
 */
int dwarf_lines__frames(struct dwarf_lines *d, uint64_t vaddr, struct arena *strs,
			struct dwarf_frame *ret, int max);
/* Estimate of the memory the open DWARF can hold (its debug sections' sizes). */
size_t dwarf_lines__bytes(const struct dwarf_lines *d);

#endif
