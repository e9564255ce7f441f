// SPDX-License-Identifier: Apache-2.0
/* Where the CUDA APIs and the xsprof:launch USDT are in an ELF file. */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/cuda/cuda_api.h"
#include "daemon/cuda/cuda_elf.h"
#include "daemon/cuda/usdt_site.h"

/* The probe's name when the note is one of provider xsprof's, else NULL. */
static const char *usdt_note_xsprof(const char *desc, size_t len)
{
	const char *end = desc + len, *prov = desc + 3 * 8, *name;

	/* pc, base, semaphore addresses, then "provider\0name\0args\0". */
	if (len <= 3 * 8)
		return NULL;
	name = memchr(prov, '\0', end - prov);
	if (!name)
		return NULL;
	name++;
	if (!memchr(name, '\0', end - name))
		return NULL;
	return strcmp(prov, "xsprof") ? NULL : name;
}

/* The note's pc (its first word) as a file offset, through the executable segment holding it. */
static void usdt_site_offset(struct cuda_file *fi, const char *desc, const GElf_Phdr *loads,
			     size_t nloads)
{
	uint64_t pc;

	memcpy(&pc, desc, sizeof(pc));
	for (size_t j = 0; j < nloads; j++)
		if (pc >= loads[j].p_vaddr && pc < loads[j].p_vaddr + loads[j].p_filesz)
			fi->usdt_off = pc - loads[j].p_vaddr + loads[j].p_offset;
}

/* symbols: the CUDA API entry points too, else only the notes (cheap on any library). */
static int read_file(int fd, struct cuda_file *fi, bool symbols)
{
	GElf_Phdr *loads = NULL;
	size_t nphdr, nloads = 0, shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	Elf *elf;
	int err = 0;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	/* Stream locations are x86-64 calling conventions. */
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 ||
	    elf_getphdrnum(elf, &nphdr) || elf_getshdrstrndx(elf, &shstrndx)) {
		err = -ENOEXEC;
		goto out;
	}
	loads = calloc(nphdr ? nphdr : 1, sizeof(*loads));
	if (!loads) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nphdr; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
			loads[nloads++] = ph;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		const char *secname;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		secname = elf_strptr(elf, shstrndx, sh.sh_name);
		if (sh.sh_type == SHT_NOTE && secname && !strcmp(secname, ".note.stapsdt")) {
			size_t off = 0, noff, doff;
			GElf_Nhdr nh;

			data = elf_getdata(scn, NULL);
			while (data && (off = gelf_getnote(data, off, &nh, &noff, &doff)) > 0) {
				const char *probe =
					nh.n_type == 3 && nh.n_namesz == 8 &&
							!memcmp((char *)data->d_buf + noff,
								"stapsdt", 8)
						? usdt_note_xsprof((char *)data->d_buf + doff,
								   nh.n_descsz)
						: NULL;

				if (probe && !strcmp(probe, "launch")) {
					fi->usdt = true;
					usdt_site_offset(fi, (char *)data->d_buf + doff, loads,
							 nloads);
				} else if (probe && (!strcmp(probe, "scope_begin") ||
						     !strcmp(probe, "scope_end"))) {
					fi->scopes = true;
				}
			}
			continue;
		}
		if (!symbols || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			const struct cuda_api *api;
			const char *name;
			GElf_Sym sym;

			if (!gelf_getsym(data, i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    sym.st_shndx == SHN_UNDEF || !sym.st_value)
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (!name || !(api = cuda_api__by_name(name)) || fi->off[api->id])
				continue;
			for (size_t j = 0; j < nloads; j++) {
				if (sym.st_value >= loads[j].p_vaddr &&
				    sym.st_value < loads[j].p_vaddr + loads[j].p_filesz) {
					fi->off[api->id] =
						sym.st_value - loads[j].p_vaddr + loads[j].p_offset;
					fi->nr_apis++;
					break;
				}
			}
		}
	}
out:
	free(loads);
	elf_end(elf);
	if (!err && fi->usdt_off) {
		uint8_t insn[5];
		enum usdt_site_mode m = USDT_SITE_UNKNOWN;

		if (pread(fd, insn, sizeof(insn), (off_t)fi->usdt_off) == (ssize_t)sizeof(insn))
			m = usdt_site__decode(insn, sizeof(insn));
		fi->usdt_nop5 = m == USDT_SITE_NOP && insn[0] == 0x0f;
	}
	return err;
}

int cuda_file__read(int fd, struct cuda_file *fi)
{
	return read_file(fd, fi, true);
}

int cuda_file__read_notes(int fd, struct cuda_file *fi)
{
	return read_file(fd, fi, false);
}
