/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The function symbols of one ELF file (.symtab merged with .dynsym; a stripped Go file's from its
 * .gopclntab), sorted for binary search,
 * plus what is needed to turn a file offset into an ELF virtual address (the PT_LOAD segments),
 * the ELF type, and the GNU build-id. Files come from profiled processes: anything malformed
 * gives an error, never a crash or a read outside the file.
 */
#ifndef XSPROF_DAEMON_SYMBOLIZE_ELF_SYMTAB_H
#define XSPROF_DAEMON_SYMBOLIZE_ELF_SYMTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ELF_SYMTAB_MAX_BUILD_ID 64
/* More symbols than any real binary carries; past it the file is treated as corrupt. */
#define ELF_SYMTAB_MAX_SYMS (32u << 20)
/* Longest .gnu_debuglink name kept (a file name, not a path). */
#define ELF_SYMTAB_MAX_DEBUGLINK 255
/* Largest in-memory image elf_symtab__open_memory takes (a vDSO is 8 KiB). */
#define ELF_SYMTAB_MAX_MEMORY (64u << 20)

struct elf_sym {
	uint64_t addr;	  /* ELF virtual address */
	uint64_t size;	  /* never 0: zero-size symbols reach to the next symbol */
	const char *name; /* as in the file (mangled); owned by the table */
};

struct elf_symtab;

/*
 * Reads path. NULL with errno set: the open(2) errno (ENOENT, EACCES, ...), EINVAL when it is
 * not a regular file, ENOEXEC when it is not ELF, EBADMSG when it is corrupt or truncated,
 * EFBIG past ELF_SYMTAB_MAX_SYMS, ENOMEM.
 */
struct elf_symtab *elf_symtab__open(const char *path);
/* Same from an open file (read with pread, not mapped); fd stays the caller's. */
struct elf_symtab *elf_symtab__open_fd(int fd);
/* Same from an image in memory (copied while parsing); EFBIG past ELF_SYMTAB_MAX_MEMORY. */
struct elf_symtab *elf_symtab__open_memory(const void *buf, size_t len);
void elf_symtab__free(struct elf_symtab *t);

size_t elf_symtab__count(const struct elf_symtab *t);
/* The idx-th symbol in address order, NULL past the end. */
const struct elf_sym *elf_symtab__at(const struct elf_symtab *t, size_t idx);
/* The symbol whose [addr, addr + size) contains vaddr, or NULL. */
const struct elf_sym *elf_symtab__lookup(const struct elf_symtab *t, uint64_t vaddr);
/* The symbol with this (mangled) name, or NULL; linear, not for hot paths. */
const struct elf_sym *elf_symtab__find(const struct elf_symtab *t, const char *name);
/*
 * sym's name demangled when it is a C++ name, else sym->name. Demangled once, then cached in
 * the table; the string lives as long as t.
 */
const char *elf_symtab__demangled(struct elf_symtab *t, const struct elf_sym *sym);

/*
 * Images read by elf_symtab__open_memory: the start of the function holding vaddr according to
 * .eh_frame_hdr, for code that no symbol covers. -ENOENT when unknown.
 */
int elf_symtab__fn_start(const struct elf_symtab *t, uint64_t vaddr, uint64_t *ret_start);

/* File offset -> ELF virtual address through the PT_LOAD segment holding it; -ENOENT. */
int elf_symtab__offset_to_vaddr(const struct elf_symtab *t, uint64_t off, uint64_t *ret_vaddr);
/* ELF virtual address -> file offset (what uprobes take); -ENOENT when no segment holds it. */
int elf_symtab__vaddr_to_offset(const struct elf_symtab *t, uint64_t vaddr, uint64_t *ret_off);

/* The PT_LOAD segment holding vaddr: its first address, end and file offset; -ENOENT. */
int elf_symtab__segment(const struct elf_symtab *t, uint64_t vaddr, uint64_t *ret_start,
			uint64_t *ret_end, uint64_t *ret_off);

/* e_type: ET_EXEC, ET_DYN (PIE executables and shared libraries), ... */
int elf_symtab__type(const struct elf_symtab *t);
/* Length of the GNU build-id (0 when absent); *ret_id points into t. */
size_t elf_symtab__build_id(const struct elf_symtab *t, const uint8_t **ret_id);

/* Memory held, for the symbolizer's cache accounting. */
size_t elf_symtab__bytes(const struct elf_symtab *t);
/* Symbols named from the file's .gopclntab: a stripped Go file's functions (0 otherwise). */
size_t elf_symtab__go_names(const struct elf_symtab *t);
/* Whether the file has a .symtab (false: stripped, only .dynsym was read). */
bool elf_symtab__has_symtab(const struct elf_symtab *t);
/* Whether the file has DWARF (.debug_info with contents, not the NOBITS of a stripped file). */
bool elf_symtab__has_dwarf(const struct elf_symtab *t);
/* The .gnu_debuglink file name and its CRC-32, or NULL when there is none. */
const char *elf_symtab__debuglink(const struct elf_symtab *t, uint32_t *ret_crc);
/*
 * Adds the symbols of dbg, the separate debug file of t, that t lacks (t keeps its own at an
 * address both have). Names are copied; dbg can be freed after. 0, -ENOMEM or -EFBIG.
 */
int elf_symtab__merge(struct elf_symtab *t, const struct elf_symtab *dbg);

#endif
