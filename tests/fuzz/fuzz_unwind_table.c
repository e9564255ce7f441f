// SPDX-License-Identifier: Apache-2.0
/* libFuzzer: .eh_frame sections (as raw bytes) and whole ELF images, as profiled processes map. */
#include <stddef.h>
#include <stdint.h>

#include "daemon/unwind/unwind_table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct unwind_table *t = unwind_table__from_eh_frame(data, size, 0x1000, 0x4000);

	if (t) {
		size_t n = unwind_table__count(t);

		/* Sorted and bounded: every row is found where it is. */
		for (size_t i = 0; i < n; i++)
			if (unwind_table__find(t, unwind_table__rows(t)[i].pc) !=
			    &unwind_table__rows(t)[i])
				__builtin_trap();
		unwind_table__free(t);
	}
	unwind_table__free(unwind_table__from_elf_memory(data, size));
	return 0;
}
