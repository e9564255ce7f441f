/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Names for the procedure linkage table: no symbol covers a PLT stub, so a sample in one (a call
 * through the PLT on its way to another library, or an IFUNC'd libc routine) would read
 * "libc.so.6+0x262c0". Each stub jumps through one GOT slot, and the dynamic relocation of that
 * slot says which function it is for: the stub is named "FUNC@plt", as perf and objdump do.
 */
#ifndef XSPROF_DAEMON_SYMBOLIZE_ELF_PLT_H
#define XSPROF_DAEMON_SYMBOLIZE_ELF_PLT_H

#include <gelf.h>
#include <stdint.h>

struct arena;

struct elf_plt_cb {
	/* Called once per named stub; name lives in the arena. Non-zero stops the walk. */
	int (*stub)(void *ctx, uint64_t addr, uint64_t size, const char *name);
	/* Resolves an IRELATIVE relocation's addend (the IFUNC resolver) to a name, or NULL. */
	const char *(*ifunc)(void *ctx, uint64_t resolver);
	/* The string at off of string table section shndx, or NULL (a symbol's name). */
	const char *(*str)(void *ctx, size_t shndx, size_t off);
	void *ctx;
};

/*
 * Walks the x86-64 PLT sections of elf (.plt, .plt.sec, .plt.got) and reports a symbol for each
 * stub whose GOT slot has a JUMP_SLOT, GLOB_DAT or IRELATIVE relocation. fd: the file, whose
 * relocation sections are then read in pieces (libtorch's .rela.dyn is 4 MiB) rather than
 * whole through libelf; -1 for an image in memory. Returns 0, the callback's non-zero value,
 * -ENOMEM; a section it cannot read is skipped (names are a bonus). Other machines: returns 0
 * and reports nothing.
 */
int elf_plt__walk(Elf *elf, int fd, struct arena *arena, const struct elf_plt_cb *cb);

#endif
