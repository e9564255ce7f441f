// SPDX-License-Identifier: Apache-2.0
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/base/arena.h"
#include "daemon/symbolize/dwarf_lines.h"

struct dwarf_lines {
	int fd;
	Elf *elf;
	Dwarf *dw;
	size_t bytes;
};

static size_t debug_sections_size(Elf *elf)
{
	size_t shstrndx, total = 0;
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (name && (!strncmp(name, ".debug_", 7) || !strncmp(name, ".zdebug_", 8)))
			total += shdr.sh_size;
	}
	return total;
}

struct dwarf_lines *dwarf_lines__open(int fd)
{
	struct dwarf_lines *d = calloc(1, sizeof(*d));
	int err = ENOMEM;

	if (!d)
		goto fail;
	d->fd = fd;
	elf_version(EV_CURRENT);
	/* ELF_C_READ, not a mapping: a truncated file must fail reads, not raise SIGBUS. */
	d->elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!d->elf) {
		err = EBADMSG;
		goto fail;
	}
	d->dw = dwarf_begin_elf(d->elf, DWARF_C_READ, NULL);
	if (!d->dw) {
		err = ENODATA;
		goto fail;
	}
	d->bytes = sizeof(*d) + debug_sections_size(d->elf);
	return d;
fail:
	if (d) {
		elf_end(d->elf);
		free(d);
	}
	close(fd);
	errno = err;
	return NULL;
}

void dwarf_lines__free(struct dwarf_lines *d)
{
	if (!d)
		return;
	dwarf_end(d->dw);
	elf_end(d->elf);
	close(d->fd);
	free(d);
}

size_t dwarf_lines__bytes(const struct dwarf_lines *d)
{
	return d->bytes;
}

static const char *copy(struct arena *strs, const char *s)
{
	return s ? arena__strndup(strs, s, strnlen(s, 4096)) : NULL;
}

/* A function's name: its linkage (mangled) name when it has one, so C++ demangles fully. */
static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name;

	name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	if (!name)
		name = dwarf_diename(die);
	return name;
}

static const char *call_file(Dwarf_Die *cu, Dwarf_Die *inl)
{
	Dwarf_Attribute attr;
	Dwarf_Files *files;
	Dwarf_Word idx;
	size_t nfiles;

	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &attr), &idx) ||
	    dwarf_getsrcfiles(cu, &files, &nfiles) || idx >= nfiles)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

int dwarf_lines__frames(struct dwarf_lines *d, uint64_t vaddr, struct arena *strs,
			struct dwarf_frame *ret, int max)
{
	Dwarf_Die cu, *scopes = NULL;
	Dwarf_Attribute attr;
	Dwarf_Word w;
	Dwarf_Line *line;
	const char *file = NULL;
	int nscopes, n = 0, lineno = 0;

	if (max <= 0 || !dwarf_addrdie(d->dw, vaddr, &cu))
		return 0;
	line = dwarf_getsrc_die(&cu, vaddr);
	if (line) {
		file = dwarf_linesrc(line, NULL, NULL);
		dwarf_lineno(line, &lineno);
	}
	nscopes = dwarf_getscopes(&cu, vaddr, &scopes);
	/*
	 * Innermost scope first. Past an inlined subroutine, dwarf_getscopes goes on in the inlined
	 * function's abstract definition; its caller is found from the concrete DIE upwards.
	 */
	for (int i = 0; i < nscopes && n < max && n < DWARF_LINES_MAX_INLINE;) {
		int tag = dwarf_tag(&scopes[i]);
		Dwarf_Die *outer = NULL;
		int nouter;

		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram) {
			i++;
			continue;
		}
		ret[n].name = copy(strs, die_name(&scopes[i]));
		ret[n].file = copy(strs, file);
		ret[n].line = lineno > 0 ? (uint32_t)lineno : 0;
		ret[n].inlined = tag == DW_TAG_inlined_subroutine;
		n++;
		if (tag == DW_TAG_subprogram)
			break;
		/* The outer frame's position is where this one was inlined. */
		file = call_file(&cu, &scopes[i]);
		lineno = !dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &attr), &w) &&
					 w <= INT32_MAX
				 ? (int)w
				 : 0;
		nouter = dwarf_getscopes_die(&scopes[i], &outer);
		free(scopes);
		scopes = outer;
		nscopes = nouter;
		i = 1; /* outer[0] is the inlined DIE itself */
	}
	free(scopes);
	/* In a unit but in no function DIE (hand-written assembly): the line alone. */
	if (!n && file) {
		ret[0] = (struct dwarf_frame){.file = copy(strs, file),
					      .line = lineno > 0 ? (uint32_t)lineno : 0};
		n = 1;
	}
	return n;
}
