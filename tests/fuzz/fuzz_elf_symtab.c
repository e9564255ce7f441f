// SPDX-License-Identifier: Apache-2.0
/* libFuzzer: ELF files (symbols, segments, notes, debuglink), as mapped by profiled processes. */
#include <stddef.h>
#include <stdint.h>

#include "daemon/symbolize/elf_symtab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_symtab *t = elf_symtab__open_memory(data, size), *u;
	const uint8_t *id;
	uint64_t v;
	uint32_t crc;

	if (!t)
		return 0;
	for (size_t i = 0; i < elf_symtab__count(t); i++) {
		const struct elf_sym *s = elf_symtab__at(t, i);

		elf_symtab__lookup(t, s->addr + s->size / 2);
		elf_symtab__demangled(t, s);
		elf_symtab__vaddr_to_offset(t, s->addr, &v);
	}
	elf_symtab__offset_to_vaddr(t, size / 2, &v);
	elf_symtab__build_id(t, &id);
	elf_symtab__debuglink(t, &crc);
	/* As a stripped file's own debug file: merging must hold too. */
	u = elf_symtab__open_memory(data, size);
	if (u) {
		elf_symtab__merge(t, u);
		elf_symtab__free(u);
	}
	elf_symtab__free(t);
	return 0;
}
