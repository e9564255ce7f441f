/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One file's unwind table: its .eh_frame compiled into the compact rows that bpf/unwind.bpf.h
 * walks (struct xsprof_unwind_row: pc, CFA rule, where rbp is saved; the return address is at
 * CFA - 8 on x86-64). Rows are sorted by pc (ELF virtual addresses of the file), consecutive
 * rows with the same rule are merged, and a gap between FDEs gets an XSPROF_CFA_INVALID row, so
 * "the last row at or below pc" is the answer for any pc.
 *
 * The section comes from a profiled process's files, so every read is bounds-checked; a
 * malformed CIE or FDE is skipped and counted, never trusted.
 */
#ifndef XSPROF_DAEMON_UNWIND_UNWIND_TABLE_H
#define XSPROF_DAEMON_UNWIND_UNWIND_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "bpf/xsprof_events.h"

struct unwind_table;

/* Largest .eh_frame compiled, and most rows kept per table (the rest: -E2BIG). */
#define UNWIND_TABLE_MAX_SECTION (256u << 20)
#define UNWIND_TABLE_MAX_ROWS	 (8u << 20)

struct unwind_table_stats {
	uint64_t cies;
	uint64_t fdes;
	uint64_t bad_entries;	/* CIEs/FDEs that could not be parsed: skipped */
	uint64_t far_fdes;	/* FDEs past 4 GiB of virtual address: skipped */
	uint64_t invalid_rows;	/* rows with a rule the walker cannot apply */
	uint64_t plt_rows;	/* the standard PLT expression */
	uint64_t signal_fdes;	/* signal trampolines ('S' augmentation) */
	uint64_t section_bytes; /* size of the .eh_frame compiled */
	uint64_t overlaps;	/* rows of an FDE overlapping one before it: dropped */
	uint64_t rows;		/* rows passed on */
	uint64_t go_funcs;	/* cgo: Go functions whose .gopclntab rows joined the FDEs' */
};

/*
 * A build that runs a piece at a time, so a daemon can go on reading its ring buffer while a
 * 10 MiB .eh_frame compiles: the FDEs are put in pc order first (one pass over the section,
 * 8 bytes per FDE, a few MiB per step, then a sort), then each step runs some of them, passing their rows on sorted by pc with
 * equal rules merged and FDE gaps marked INVALID. A file's section is read through libelf's
 * mapping and given back to the page cache as it goes, so it never sits in memory whole.
 */
struct unwind_build;
/* Called with each row, in pc order; non-zero (a negative errno) stops the build. */
typedef int (*unwind_row_fn)(void *ctx, const struct xsprof_unwind_row *row);

/* NULL with errno set: ENOMEM. A file that can have no table still gives a build, whose steps
 * fail (-ENOEXEC: not x86-64 ELF; -ENOENT: no .eh_frame, no FDE, no usable row; -E2BIG: over
 * UNWIND_TABLE_MAX_SECTION) and whose unwind_build__why says so. The fd is not kept open by
 * the build, but must stay valid until it is freed. */
struct unwind_build *unwind_build__new_fd(int fd);
/* The same over a section in memory (see unwind_table__from_eh_frame). */
struct unwind_build *unwind_build__new_eh_frame(const void *sec, size_t size, uint64_t sec_vaddr,
						uint64_t data_vaddr);
/* The same for an ELF image in memory (the daemon's own vDSO); image must outlive the build. */
struct unwind_build *unwind_build__new_elf_memory(const void *image, size_t size);
/* Pass on the rows of up to max_fdes more FDEs: 1 while more are left, 0 when the table is
 * complete (its last row passed on), -ENOENT/-ENOEXEC/-E2BIG when the file can have no table
 * (unwind_build__why), or fn's error. */
int unwind_build__step(struct unwind_build *b, size_t max_fdes, unwind_row_fn fn, void *ctx);
/* Why the file can have no table, in a few words ("no .eh_frame section", "no rule the
 * walker can apply (3 FDEs, 0 cut short)"), once a step failed for that (or from the start);
 * NULL otherwise, fn's errors included. Valid until b is freed. */
const char *unwind_build__why(const struct unwind_build *b);
void unwind_build__stats(const struct unwind_build *b, struct unwind_table_stats *ret_stats);
/* The FDEs it will run (all of them once unwind_build__collected: the section is read for
 * them a few MiB per step first): 3 rows or more each, in every file seen. */
size_t unwind_build__nr_fdes(const struct unwind_build *b);
bool unwind_build__collected(const struct unwind_build *b);
void unwind_build__free(struct unwind_build *b);

/*
 * Compile an .eh_frame section's bytes; sec_vaddr is its sh_addr (pc-relative pointers are
 * relative to it), data_vaddr the .got's (for datarel pointers; 0 if none). NULL with errno
 * set: ENOMEM, E2BIG past the caps, ENOENT when nothing usable was found.
 */
struct unwind_table *unwind_table__from_eh_frame(const void *sec, size_t size, uint64_t sec_vaddr,
						 uint64_t data_vaddr);
/*
 * The .eh_frame of the ELF file open at fd (not closed). NULL with errno set: ENOENT when it
 * has none, ENOEXEC when it is not ELF, or as above.
 */
struct unwind_table *unwind_table__from_elf_fd(int fd);
/* The same for an ELF image in memory (tests, fuzzing). */
struct unwind_table *unwind_table__from_elf_memory(const void *image, size_t size);
void unwind_table__free(struct unwind_table *t);

size_t unwind_table__count(const struct unwind_table *t);
const struct xsprof_unwind_row *unwind_table__rows(const struct unwind_table *t);
/* The row that applies at pc, or NULL below the first row. */
const struct xsprof_unwind_row *unwind_table__find(const struct unwind_table *t, uint64_t pc);
void unwind_table__stats(const struct unwind_table *t, struct unwind_table_stats *ret_stats);

#endif
