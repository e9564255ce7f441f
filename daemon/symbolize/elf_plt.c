// SPDX-License-Identifier: Apache-2.0
/*
 * x86-64 PLT stubs all hold one `jmp *disp32(%rip)` (ff 25), possibly after endbr64 or a bnd
 * prefix: the slot it jumps through is what ties the stub to a relocation. Reading the
 * instruction instead of assuming the linker's layout (PLT0 + 16-byte entries in .rela.plt
 * order) covers lazy .plt, IBT's .plt.sec and the 8- or 16-byte .plt.got stubs alike.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/base/arena.h"
#include "daemon/base/vec.h"
#include "daemon/symbolize/elf_plt.h"

#ifndef R_X86_64_IRELATIVE
#define R_X86_64_IRELATIVE 37
#endif
/* More dynamic relocations of these kinds than any real file has; past it, stop reading. */
#define MAX_SLOTS (1u << 20)

struct slot {
	uint64_t got;	  /* address of the GOT slot */
	const char *name; /* of the function, not yet "@plt" */
};

struct slots {
	struct slot *v;
	size_t n, cap;
};

static int slots__push(struct slots *s, uint64_t got, const char *name)
{
	if (s->n >= MAX_SLOTS)
		return -E2BIG;
	if (vec_reserve(&s->v, &s->cap, s->n + 1))
		return -ENOMEM;
	s->v[s->n++] = (struct slot){.got = got, .name = name};
	return 0;
}

static int cmp_slot(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;

	return x->got < y->got ? -1 : x->got > y->got;
}

static const struct slot *slots__find(const struct slots *s, uint64_t got)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->v[mid].got == got)
			return &s->v[mid];
		if (s->v[mid].got < got)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static const char *dynsym_name(Elf *elf, size_t symtab_idx, size_t sym_idx,
			       const struct elf_plt_cb *cb)
{
	Elf_Scn *scn = elf_getscn(elf, symtab_idx);
	GElf_Shdr shdr;
	Elf_Data *data;
	GElf_Sym sym;

	if (!scn || !gelf_getshdr(scn, &shdr) ||
	    (shdr.sh_type != SHT_DYNSYM && shdr.sh_type != SHT_SYMTAB))
		return NULL;
	data = elf_getdata(scn, NULL);
	if (!data || sym_idx > INT32_MAX || !gelf_getsym(data, (int)sym_idx, &sym))
		return NULL;
	return cb->str(cb->ctx, shdr.sh_link, sym.st_name);
}

/* One relocation: its GOT slot, if it fills one with a function's address. */
static int add_slot(Elf *elf, const GElf_Shdr *shdr, const GElf_Rela *r, struct slots *s,
		    const struct elf_plt_cb *cb)
{
	unsigned type = GELF_R_TYPE(r->r_info);
	const char *name = NULL;

	if (type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT)
		name = dynsym_name(elf, shdr->sh_link, GELF_R_SYM(r->r_info), cb);
	else if (type == R_X86_64_IRELATIVE && cb->ifunc)
		name = cb->ifunc(cb->ctx, (uint64_t)r->r_addend);
	if (!name || !name[0])
		return 0;
	return slots__push(s, r->r_offset, name);
}

/* A relocation section read from the file 64 KiB at a time (x86-64: native Elf64_Rela). */
static int read_rela_fd(Elf *elf, int fd, const GElf_Shdr *shdr, struct slots *s,
			const struct elf_plt_cb *cb)
{
	enum { CHUNK = 2730 };
	Elf64_Rela buf[CHUNK];
	uint64_t n = shdr->sh_size / sizeof(buf[0]);
	int err;

	if (shdr->sh_entsize != sizeof(buf[0]))
		return 0;
	for (uint64_t i = 0; i < n;) {
		size_t want = (size_t)(n - i < CHUNK ? n - i : CHUNK) * sizeof(buf[0]);
		ssize_t got = pread(fd, buf, want, (off_t)(shdr->sh_offset + i * sizeof(buf[0])));

		if (got < (ssize_t)sizeof(buf[0]))
			return 0; /* cut short: what was read stays */
		for (size_t k = 0; k < (size_t)got / sizeof(buf[0]); k++) {
			GElf_Rela r = {buf[k].r_offset, buf[k].r_info, buf[k].r_addend};

			err = add_slot(elf, shdr, &r, s, cb);
			if (err)
				return err;
		}
		i += (size_t)got / sizeof(buf[0]);
	}
	return 0;
}

/* The GOT slots that dynamic relocations fill with a function's address. */
static int read_slots(Elf *elf, int fd, struct slots *s, const struct elf_plt_cb *cb)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	GElf_Rela r;
	int err;

	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		Elf_Data *data;
		size_t n;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_RELA ||
		    !(shdr.sh_flags & SHF_ALLOC) || !shdr.sh_entsize)
			continue;
		if (fd >= 0) {
			err = read_rela_fd(elf, fd, &shdr, s, cb);
			if (err)
				return err == -E2BIG ? 0 : err;
			continue;
		}
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		n = data->d_size / shdr.sh_entsize;
		for (size_t i = 0; i < n && i <= INT32_MAX; i++) {
			if (!gelf_getrela(data, (int)i, &r))
				break;
			err = add_slot(elf, &shdr, &r, s, cb);
			if (err)
				return err == -E2BIG ? 0 : err;
		}
	}
	return 0;
}

/* The slot the stub at bytes[0..len) jumps through, or 0. */
static uint64_t stub_slot(const unsigned char *bytes, size_t len, uint64_t addr)
{
	for (size_t k = 0; k + 6 <= len; k++) {
		int32_t disp;

		if (bytes[k] != 0xff || bytes[k + 1] != 0x25)
			continue;
		memcpy(&disp, bytes + k + 2, sizeof(disp));
		return addr + k + 6 + (int64_t)disp;
	}
	return 0;
}

static int name_stubs(Elf *elf, size_t shstrndx, const struct slots *s, struct arena *arena,
		      const struct elf_plt_cb *cb)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	char buf[512];
	int err;

	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		const char *sname;
		Elf_Data *data;
		uint64_t esz;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_PROGBITS ||
		    !(shdr.sh_flags & SHF_EXECINSTR))
			continue;
		sname = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (!sname || strncmp(sname, ".plt", 4))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf || data->d_size > shdr.sh_size)
			continue;
		esz = shdr.sh_entsize == 8 || shdr.sh_entsize == 16 ? shdr.sh_entsize : 16;
		for (uint64_t off = 0; off + esz <= data->d_size; off += esz) {
			uint64_t addr = shdr.sh_addr + off;
			const struct slot *sl;
			const char *name;
			int len;

			sl = slots__find(
				s, stub_slot((const unsigned char *)data->d_buf + off, esz, addr));
			if (!sl)
				continue;
			len = snprintf(buf, sizeof(buf), "%s@plt", sl->name);
			if (len < 0 || (size_t)len >= sizeof(buf))
				continue;
			name = arena__strndup(arena, buf, (size_t)len);
			if (!name)
				return -ENOMEM;
			err = cb->stub(cb->ctx, addr, esz, name);
			if (err)
				return err;
		}
	}
	return 0;
}

int elf_plt__walk(Elf *elf, int fd, struct arena *arena, const struct elf_plt_cb *cb)
{
	struct slots s = {0};
	GElf_Ehdr eh;
	size_t shstrndx;
	int err;

	if (!gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 ||
	    elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	err = read_slots(elf, fd, &s, cb);
	if (!err && s.n) {
		qsort(s.v, s.n, sizeof(*s.v), cmp_slot);
		err = name_stubs(elf, shstrndx, &s, arena, cb);
	}
	free(s.v);
	return err;
}
