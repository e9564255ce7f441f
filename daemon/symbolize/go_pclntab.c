// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <string.h>

#include "daemon/symbolize/go_pclntab.h"

#define GO_MAGIC_118 0xfffffff0u
#define GO_MAGIC_120 0xfffffff1u

static bool rd32(const struct go_pclntab *s, uint64_t off, uint32_t *ret)
{
	if (off > s->size || s->size - off < 4)
		return false;
	memcpy(ret, s->p + off, 4);
	return true;
}

static uint64_t rd64(const struct go_pclntab *s, uint64_t off)
{
	uint64_t v = 0;

	if (off <= s->size && s->size - off >= 8)
		memcpy(&v, s->p + off, 8);
	return v;
}

int go_pclntab__open(Elf *elf, struct go_pclntab *ret, const char **ret_why)
{
	struct go_pclntab s = {0};
	Elf_Scn *scn = NULL;
	uint64_t text = 0;
	size_t shstrndx;
	uint32_t magic = 0;
	GElf_Ehdr eh;

	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    eh.e_machine != EM_X86_64 || elf_getshdrstrndx(elf, &shstrndx))
		return -ENOEXEC;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".text"))
			text = sh.sh_addr;
		else if (!strcmp(name, ".gopclntab") && sh.sh_type == SHT_PROGBITS &&
			 (d = elf_getdata(scn, NULL)) && d->d_buf && d->d_size) {
			s.p = d->d_buf;
			s.size = d->d_size;
		}
	}
	if (!s.p)
		return -ENOENT;
	if (!rd32(&s, 0, &magic) || s.size < 72) {
		*ret_why = ".gopclntab too short for its header";
		return -EINVAL;
	}
	if (magic != GO_MAGIC_118 && magic != GO_MAGIC_120) {
		*ret_why = "a .gopclntab of Go before 1.18 (or not Go's): not read";
		return -ENOTSUP;
	}
	if (s.p[4] || s.p[5] || !s.p[6] || s.p[7] != 8) {
		*ret_why = ".gopclntab: not a 64-bit Go header";
		return -EINVAL;
	}
	s.quantum = s.p[6];
	s.flag_off = magic == GO_MAGIC_120 ? 41 : 37;
	s.nfunc = rd64(&s, 8);
	s.text_start = rd64(&s, 24);
	s.funcnames = rd64(&s, 32);
	s.pctab = rd64(&s, 56);
	s.ftab = rd64(&s, 64);
	/* A position-independent build leaves textStart to a relocation: .text is the same. */
	if (!s.text_start)
		s.text_start = text;
	if (!s.nfunc || s.pctab >= s.size || s.funcnames >= s.size || s.ftab >= s.size ||
	    (s.size - s.ftab) / 8 < s.nfunc + 1) {
		*ret_why = ".gopclntab: its tables do not fit the section";
		return -EINVAL;
	}
	*ret = s;
	return 0;
}

int go_pclntab__func(const struct go_pclntab *t, uint64_t i, uint64_t prev_end, struct go_func *ret)
{
	uint32_t entry_off = 0, func_off = 0, next_off = 0, pcsp = 0, name_off = 0;
	uint64_t fn, name;

	if (i >= t->nfunc || !rd32(t, t->ftab + 8 * i, &entry_off) ||
	    !rd32(t, t->ftab + 8 * i + 4, &func_off) || !rd32(t, t->ftab + 8 * (i + 1), &next_off))
		return -EINVAL;
	ret->entry = t->text_start + entry_off;
	ret->end = t->text_start + next_off;
	fn = t->ftab + func_off;
	if (ret->end <= ret->entry || ret->entry < prev_end || fn + t->flag_off >= t->size ||
	    !rd32(t, fn + 4, &name_off) || !rd32(t, fn + 16, &pcsp))
		return -EINVAL;
	ret->flag = t->p[fn + t->flag_off];
	ret->pcsp = pcsp ? t->pctab + pcsp : 0;
	if (ret->pcsp >= t->size)
		return -EINVAL;
	name = t->funcnames + name_off;
	ret->name = name < t->size && memchr(t->p + name, '\0', t->size - name)
			    ? (const char *)t->p + name
			    : NULL;
	return 0;
}
