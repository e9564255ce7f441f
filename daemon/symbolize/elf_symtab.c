// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/base/arena.h"
#include "daemon/symbolize/go_pclntab.h"
#include "daemon/base/vec.h"
#include "daemon/symbolize/demangle.h"
#include "daemon/symbolize/elf_plt.h"
#include "daemon/symbolize/elf_symtab.h"

/* String tables a file's symbols use: .dynstr, .strtab (and a few spare). */
#define MAX_STRTABS 4
/* Largest string table read. */
#define MAX_STRTAB_BYTES (256u << 20)

struct raw_syms;

struct elf_segment {
	uint64_t offset;
	uint64_t vaddr;
	uint64_t filesz;
	uint64_t memsz;
};

struct elf_symtab {
	struct elf_sym *syms;
	size_t nr_syms;
	const char **demangled; /* parallel to syms, allocated on first use */
	struct elf_segment *segs;
	size_t nr_segs;
	struct arena *arena;
	int type;
	bool has_symtab;
	bool has_dwarf;
	size_t go_names; /* symbols named from .gopclntab (a stripped Go file) */
	uint32_t debuglink_crc;
	const char *debuglink; /* in the arena; NULL when absent */
	size_t build_id_len;
	uint8_t build_id[ELF_SYMTAB_MAX_BUILD_ID];
	/* Code sections: a zero-size symbol stops at its section's end (_init must not cover
	 * .plt). Files with more code sections than this just lose that bound. */
	struct {
		uint64_t start, end;
	} xsecs[32];
	size_t nr_xsecs;
	/* Images read from memory (the vDSO): where each function of .eh_frame_hdr starts. */
	uint64_t *fn_starts;
	size_t nr_fn_starts;
	bool keep_fn_starts;
	/* String tables read from the file (pread): symbol names point into them. */
	char *strtabs[MAX_STRTABS];
	size_t nr_strtabs, strtab_bytes;
};

/*
 * What a load needs besides the table: the file (fd -1 for an image in memory, whose names
 * libelf gives and build_table copies), and the string tables read so far by section index.
 */
struct load_ctx {
	struct elf_symtab *t;
	Elf *elf;
	int fd;
	uint64_t file_size;
	struct {
		size_t shndx;
		const char *p;
		size_t n;
	} str[MAX_STRTABS];
	size_t nr_str;
	struct raw_syms *rs;
};

/* A symbol while loading: its name points into a string table (ours, or libelf's). */
struct raw_sym {
	uint64_t addr;
	uint64_t size;
	const char *name;
	int rank;   /* lower wins among symbols at one address */
	bool label; /* STT_NOTYPE in code: an assembly entry point such as ld.so's _start */
};

struct raw_syms {
	struct raw_sym *v;
	size_t n;
	size_t cap;
};

static int bind_rank(unsigned char bind)
{
	switch (bind) {
	case STB_GLOBAL:
	case STB_GNU_UNIQUE:
		return 0;
	case STB_WEAK:
		return 1;
	case STB_LOCAL:
		return 2;
	default:
		return 3;
	}
}

static int raw_syms__push(struct raw_syms *rs, const struct raw_sym *s)
{
	if (rs->n >= ELF_SYMTAB_MAX_SYMS)
		return -EFBIG;
	if (vec_reserve(&rs->v, &rs->cap, rs->n + 1))
		return -ENOMEM;
	rs->v[rs->n++] = *s;
	return 0;
}

static bool is_code_section(Elf *elf, size_t shndx)
{
	Elf_Scn *scn;
	GElf_Shdr shdr;

	if (shndx >= SHN_LORESERVE)
		return false;
	scn = elf_getscn(elf, shndx);
	/* NOBITS too: in a separate debug file, .text keeps its flags but not its bytes. */
	return scn && gelf_getshdr(scn, &shdr) &&
	       (shdr.sh_type == SHT_PROGBITS || shdr.sh_type == SHT_NOBITS) &&
	       (shdr.sh_flags & SHF_EXECINSTR);
}

/*
 * The string at off of string table shndx, or NULL. From a file, the table is read once with
 * pread into memory the table owns (names point into it: no copy each, and none of libelf's);
 * from an image in memory, libelf's (copied later).
 */
static const char *str_at(struct load_ctx *lc, size_t shndx, size_t off)
{
	Elf_Scn *scn;
	GElf_Shdr sh;
	char *buf;
	size_t i;

	if (lc->fd < 0)
		return elf_strptr(lc->elf, shndx, off);
	for (i = 0; i < lc->nr_str; i++)
		if (lc->str[i].shndx == shndx)
			return off < lc->str[i].n ? lc->str[i].p + off : NULL;
	scn = elf_getscn(lc->elf, shndx);
	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_STRTAB ||
	    sh.sh_size > MAX_STRTAB_BYTES || sh.sh_offset > lc->file_size ||
	    sh.sh_size > lc->file_size - sh.sh_offset || lc->nr_str == MAX_STRTABS)
		return NULL;
	buf = malloc(sh.sh_size + 1);
	if (!buf)
		return NULL;
	for (size_t got = 0; got < sh.sh_size;) {
		ssize_t n = pread(lc->fd, buf + got, sh.sh_size - got, (off_t)(sh.sh_offset + got));

		if (n <= 0) {
			free(buf);
			return NULL;
		}
		got += (size_t)n;
	}
	buf[sh.sh_size] = '\0'; /* a last string left open ends here */
	lc->t->strtabs[lc->t->nr_strtabs++] = buf;
	lc->t->strtab_bytes += sh.sh_size + 1;
	lc->str[lc->nr_str].shndx = shndx;
	lc->str[lc->nr_str].p = buf;
	lc->str[lc->nr_str].n = sh.sh_size;
	lc->nr_str++;
	return off < sh.sh_size ? buf + off : NULL;
}

static int load_symbol_section(struct load_ctx *lc, Elf_Scn *scn, const GElf_Shdr *shdr)
{
	Elf *elf = lc->elf;
	struct raw_syms *rs = lc->rs;
	size_t entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	Elf_Data *data;
	struct raw_sym r;
	GElf_Sym sym;
	size_t i, n;
	const char *name;
	unsigned char type;
	int err;

	if (!entsize || shdr->sh_entsize != entsize)
		return -EBADMSG;
	data = elf_getdata(scn, NULL);
	if (!data)
		return shdr->sh_size ? -EBADMSG : 0;
	n = data->d_size / entsize;
	if (n > INT_MAX)
		return -EBADMSG;
	/* Entry 0 is the reserved null symbol. */
	for (i = 1; i < n; i++) {
		if (!gelf_getsym(data, (int)i, &sym))
			return -EBADMSG;
		type = GELF_ST_TYPE(sym.st_info);
		if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0)
			continue;
		if (type == STT_NOTYPE && !is_code_section(elf, sym.st_shndx))
			continue;
		if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
			continue;
		/* Both ways check the index against the section, and end the string in it. */
		name = str_at(lc, shdr->sh_link, sym.st_name);
		if (!name || !name[0])
			continue;
		r.addr = sym.st_value;
		r.size = sym.st_size;
		r.name = name;
		r.label = type == STT_NOTYPE;
		/* A function beats a label at the same address. */
		r.rank = bind_rank(GELF_ST_BIND(sym.st_info)) + (r.label ? 4 : 0);
		err = raw_syms__push(rs, &r);
		if (err)
			return err;
	}
	return 0;
}

static int cmp_raw_sym(const void *a, const void *b)
{
	const struct raw_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	/* A sized alias tells the function's extent; prefer it. */
	if (x->size != y->size)
		return x->size > y->size ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void parse_build_id(struct elf_symtab *t, Elf_Data *data)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nhdr;

	while ((next = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
		if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == sizeof(ELF_NOTE_GNU) &&
		    !memcmp((const char *)data->d_buf + name_off, ELF_NOTE_GNU,
			    sizeof(ELF_NOTE_GNU)) &&
		    nhdr.n_descsz > 0 && nhdr.n_descsz <= sizeof(t->build_id)) {
			memcpy(t->build_id, (const char *)data->d_buf + desc_off, nhdr.n_descsz);
			t->build_id_len = nhdr.n_descsz;
			return;
		}
		off = next;
	}
}

static int load_segments(struct elf_symtab *t, Elf *elf)
{
	GElf_Phdr phdr;
	Elf_Data *data;
	size_t n, i;

	if (elf_getphdrnum(elf, &n))
		return -EBADMSG;
	if (!n)
		return 0;
	t->segs = calloc(n, sizeof(*t->segs));
	if (!t->segs)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, (int)i, &phdr))
			return -EBADMSG;
		if (phdr.p_type == PT_LOAD) {
			if (phdr.p_offset + phdr.p_filesz < phdr.p_offset ||
			    phdr.p_vaddr + phdr.p_memsz < phdr.p_vaddr)
				return -EBADMSG;
			t->segs[t->nr_segs++] = (struct elf_segment){
				.offset = phdr.p_offset,
				.vaddr = phdr.p_vaddr,
				.filesz = phdr.p_filesz,
				.memsz = phdr.p_memsz,
			};
		} else if (phdr.p_type == PT_NOTE && !t->build_id_len) {
			/* A note segment past the end of a truncated file only loses the id. */
			data = elf_getdata_rawchunk(elf, (int64_t)phdr.p_offset, phdr.p_filesz,
						    phdr.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
			if (data)
				parse_build_id(t, data);
		}
	}
	return 0;
}

/*
 * .gnu_debuglink: a NUL-terminated file name, padding to 4 bytes, then the CRC-32 of the debug
 * file. Anything that does not fit the section is ignored (the link is only a hint).
 */
static int parse_debuglink(struct elf_symtab *t, Elf *elf, Elf_Scn *scn)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	const char *name;
	size_t len, crc_off;
	uint32_t crc;

	if (!data || !data->d_buf || data->d_size < 6)
		return 0;
	name = data->d_buf;
	len = strnlen(name, data->d_size);
	if (!len || len > ELF_SYMTAB_MAX_DEBUGLINK || memchr(name, '/', len))
		return 0;
	crc_off = (len + 1 + 3) & ~(size_t)3;
	if (crc_off + 4 > data->d_size)
		return 0;
	memcpy(&crc, (const char *)data->d_buf + crc_off, 4);
	/* The CRC is stored in the file's byte order. */
	if ((elf_getident(elf, NULL)[EI_DATA] == ELFDATA2MSB) !=
	    (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__))
		crc = __builtin_bswap32(crc);
	t->debuglink = arena__strndup(t->arena, name, len);
	if (!t->debuglink)
		return -ENOMEM;
	t->debuglink_crc = crc;
	return 0;
}

/*
 * .eh_frame_hdr's search table: the start of every function with unwind information, symbol or
 * not. Read for the vDSO, whose static helpers (the clock reads) have no symbol. Only the
 * encoding linkers emit (datarel sdata4 pairs after a udata4 or sdata4 count) is read.
 */
static int load_fn_starts(struct elf_symtab *t, Elf_Scn *scn, const GElf_Shdr *shdr)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	const unsigned char *b;
	uint32_t count;
	size_t n;

	if (!data || !data->d_buf || data->d_size < 12)
		return 0;
	b = data->d_buf;
	/* version 1; eh_frame_ptr and fde_count 4-byte encodings; table datarel|sdata4 */
	if (b[0] != 1 || (b[1] & 0x0f) != 0x0b || (b[2] & 0x0f) != 0x03 || b[3] != 0x3b)
		return 0;
	memcpy(&count, b + 8, 4);
	n = (data->d_size - 12) / 8;
	if (count < n)
		n = count;
	if (!n)
		return 0;
	t->fn_starts = calloc(n, sizeof(*t->fn_starts));
	if (!t->fn_starts)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		int32_t rel;

		memcpy(&rel, b + 12 + 8 * i, 4);
		t->fn_starts[i] = shdr->sh_addr + (int64_t)rel;
		/* The table is sorted by start; a file that is not keeps what was sorted. */
		if (i && t->fn_starts[i] < t->fn_starts[i - 1])
			break;
		t->nr_fn_starts = i + 1;
	}
	return 0;
}

static int load_named_section(struct elf_symtab *t, Elf *elf, Elf_Scn *scn, const GElf_Shdr *shdr,
			      size_t shstrndx)
{
	const char *name = elf_strptr(elf, shstrndx, shdr->sh_name);

	if (!name)
		return 0;
	if (t->keep_fn_starts && !t->fn_starts && !strcmp(name, ".eh_frame_hdr"))
		return load_fn_starts(t, scn, shdr);
	/* NOBITS .debug_info (a stripped file's placeholder) never reaches here: PROGBITS only. */
	if ((!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")) && shdr->sh_size)
		t->has_dwarf = true;
	else if (!strcmp(name, ".gnu_debuglink") && !t->debuglink)
		return parse_debuglink(t, elf, scn);
	return 0;
}

static int load_sections(struct load_ctx *lc)
{
	struct elf_symtab *t = lc->t;
	Elf *elf = lc->elf;
	Elf_Scn *scn = NULL;
	Elf_Data *data;
	GElf_Shdr shdr;
	size_t nscn, shstrndx, seen = 0;
	int err;

	if (elf_getshdrnum(elf, &nscn) || elf_getshdrstrndx(elf, &shstrndx))
		return -EBADMSG;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		seen++;
		if (!gelf_getshdr(scn, &shdr))
			return -EBADMSG;
		if (shdr.sh_type == SHT_SYMTAB || shdr.sh_type == SHT_DYNSYM) {
			err = load_symbol_section(lc, scn, &shdr);
			if (err)
				return err;
			if (shdr.sh_type == SHT_SYMTAB && shdr.sh_size)
				t->has_symtab = true;
		} else if (shdr.sh_type == SHT_NOTE && !t->build_id_len) {
			data = elf_getdata(scn, NULL);
			if (data)
				parse_build_id(t, data);
		} else if (shdr.sh_type == SHT_PROGBITS) {
			if ((shdr.sh_flags & SHF_EXECINSTR) && shdr.sh_size &&
			    t->nr_xsecs < sizeof(t->xsecs) / sizeof(t->xsecs[0])) {
				t->xsecs[t->nr_xsecs].start = shdr.sh_addr;
				t->xsecs[t->nr_xsecs].end = shdr.sh_addr + shdr.sh_size;
				t->nr_xsecs++;
			}
			err = load_named_section(t, elf, scn, &shdr, shstrndx);
			if (err)
				return err;
		}
	}
	/* elf_nextscn returns NULL on errors too; section 0 is never returned. */
	if (nscn && seen != nscn - 1)
		return -EBADMSG;
	return 0;
}

/* End of the code section holding vaddr, or 0 when unknown. */
static uint64_t section_end_of(const struct elf_symtab *t, uint64_t vaddr)
{
	for (size_t i = 0; i < t->nr_xsecs; i++)
		if (vaddr >= t->xsecs[i].start && vaddr < t->xsecs[i].end)
			return t->xsecs[i].end;
	return 0;
}

static uint64_t segment_end_of(const struct elf_symtab *t, uint64_t vaddr)
{
	size_t i;

	for (i = 0; i < t->nr_segs; i++) {
		const struct elf_segment *s = &t->segs[i];

		if (vaddr >= s->vaddr && vaddr - s->vaddr < s->memsz)
			return s->vaddr + s->memsz;
	}
	return 0;
}

struct sym_order {
	uint64_t addr;
	uint64_t idx; /* into raw_syms */
};

static int cmp_order(const void *a, const void *b, void *ctx)
{
	const struct raw_sym *v = ctx;

	return cmp_raw_sym(&v[((const struct sym_order *)a)->idx],
			   &v[((const struct sym_order *)b)->idx]);
}

/*
 * The order of rs by cmp_raw_sym: a stable radix sort of (addr, index) by addr over the digits
 * that differ, then each run at one address by the comparator (runs are short). libtorch's
 * 100k+ symbols took a comparison sort a twentieth of a profile's CPU. NULL: out of memory.
 */
static struct sym_order *sort_order(const struct raw_syms *rs)
{
	enum { BITS = 11, BUCKETS = 1 << BITS };
	struct sym_order *o = malloc(rs->n * sizeof(*o)), *tmp = malloc(rs->n * sizeof(*tmp));
	struct sym_order *src = o, *dst = tmp, *sw;
	uint64_t all_or = 0, all_and = UINT64_MAX;
	size_t count[BUCKETS], run;

	if (!o || !tmp) {
		free(o);
		free(tmp);
		return NULL;
	}
	for (size_t i = 0; i < rs->n; i++) {
		o[i] = (struct sym_order){rs->v[i].addr, i};
		all_or |= rs->v[i].addr;
		all_and &= rs->v[i].addr;
	}
	for (int shift = 0; shift < 64; shift += BITS) {
		size_t sum = 0;

		if (!(((all_or ^ all_and) >> shift) & (BUCKETS - 1)))
			continue; /* every key has the same digit here */
		memset(count, 0, sizeof(count));
		for (size_t i = 0; i < rs->n; i++)
			count[(src[i].addr >> shift) & (BUCKETS - 1)]++;
		for (size_t d = 0; d < BUCKETS; d++) {
			size_t c = count[d];

			count[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < rs->n; i++)
			dst[count[(src[i].addr >> shift) & (BUCKETS - 1)]++] = src[i];
		sw = src, src = dst, dst = sw;
	}
	for (size_t i = 0; i < rs->n; i += run) {
		for (run = 1; i + run < rs->n && src[i + run].addr == src[i].addr; run++)
			;
		if (run > 1)
			qsort_r(src + i, run, sizeof(*src), cmp_order, rs->v);
	}
	free(dst);
	return src;
}

/* Sort, keep one symbol per address, size zero-size symbols. Names that libelf holds (an
 * image in memory: copy_names) are copied into the arena; the others are the table's already. */
static int build_table(struct elf_symtab *t, struct raw_syms *rs, bool copy_names)
{
	size_t i, n = 0;
	uint64_t end, func_end = 0;
	struct sym_order *order;

	if (!rs->n)
		return 0;
	order = sort_order(rs);
	if (!order)
		return -ENOMEM;
	t->syms = calloc(rs->n, sizeof(*t->syms));
	if (!t->syms) {
		free(order);
		return -ENOMEM;
	}
	for (i = 0; i < rs->n; i++) {
		const struct raw_sym *r = &rs->v[order[i].idx];
		struct elf_sym *s;

		/* A label inside a sized function is a jump target there, not a function. */
		if (r->label && r->addr < func_end)
			continue;
		if (!r->label && r->size && r->addr + r->size > func_end)
			func_end = r->addr + r->size;
		if (n && t->syms[n - 1].addr == r->addr) {
			/* The first one sorted best; only widen it. */
			if (r->size > t->syms[n - 1].size)
				t->syms[n - 1].size = r->size;
			continue;
		}
		s = &t->syms[n++];
		s->addr = r->addr;
		s->size = r->size;
		s->name = copy_names ? arena__strndup(t->arena, r->name, strlen(r->name)) : r->name;
		if (!s->name) {
			free(order);
			return -ENOMEM;
		}
	}
	free(order);
	t->nr_syms = n;
	for (i = 0; i < n; i++) {
		struct elf_sym *s = &t->syms[i];

		if (s->size)
			continue;
		if (i + 1 < n) {
			s->size = t->syms[i + 1].addr - s->addr;
		} else {
			end = segment_end_of(t, s->addr);
			s->size = end > s->addr ? end - s->addr : 1;
		}
		end = section_end_of(t, s->addr);
		if (end > s->addr && s->addr + s->size > end)
			s->size = end - s->addr;
	}
	return 0;
}

/* Tells a truncated or damaged ELF file (an error) from a file that is not ELF at all. */
static bool has_elf_magic(int fd)
{
	char magic[SELFMAG];

	return pread(fd, magic, SELFMAG, 0) == SELFMAG && !memcmp(magic, ELFMAG, SELFMAG);
}

/* libelf quietly reads "no sections" when the section header table lies past the end. */
static bool header_tables_fit(const GElf_Ehdr *eh, uint64_t file_size)
{
	uint64_t shsize = (uint64_t)eh->e_shnum * eh->e_shentsize;
	uint64_t phsize = (uint64_t)eh->e_phnum * eh->e_phentsize;

	if (eh->e_shoff && (eh->e_shoff > file_size || shsize > file_size - eh->e_shoff))
		return false;
	if (eh->e_phoff && (eh->e_phoff > file_size || phsize > file_size - eh->e_phoff))
		return false;
	return true;
}

static struct elf_symtab *elf_symtab__alloc(void)
{
	struct elf_symtab *t;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = ELIBBAD;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->arena = arena__new();
	if (!t->arena) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	return t;
}

static const char *plt_str(void *ctx, size_t shndx, size_t off)
{
	return str_at(ctx, shndx, off);
}

static int push_plt(void *ctx, uint64_t addr, uint64_t size, const char *name)
{
	/* Below every real symbol of the address: a stub never has one, but be sure. */
	struct raw_sym r = {.addr = addr, .size = size, .name = name, .rank = 3};

	return raw_syms__push(((struct load_ctx *)ctx)->rs, &r);
}

/* An IRELATIVE slot holds what the IFUNC resolver returns: name it after the IFUNC. */
static const char *ifunc_name(void *ctx, uint64_t resolver)
{
	const struct raw_syms *rs = ((struct load_ctx *)ctx)->rs;
	const struct raw_sym *best = NULL;

	for (size_t i = 0; i < rs->n; i++)
		if (rs->v[i].addr == resolver && !rs->v[i].label &&
		    (!best || rs->v[i].rank < best->rank))
			best = &rs->v[i];
	return best ? best->name : NULL;
}

/*
 * A stripped Go file (no .symtab) still names its functions in its .gopclntab, which Go keeps
 * for its own tracebacks: they become the file's symbols (after .dynsym's at one address). A
 * file without one, or with a layout not read, simply has none from it.
 */
static int load_go_names(struct load_ctx *lc)
{
	struct go_pclntab g;
	const char *why = NULL;
	uint64_t prev_end = 0;
	int err;

	if (go_pclntab__open(lc->elf, &g, &why))
		return 0;
	for (uint64_t i = 0; i < g.nfunc; i++) {
		struct go_func f;
		struct raw_sym r = {.rank = 2};

		if (go_pclntab__func(&g, i, prev_end, &f) || !f.name || !f.name[0])
			continue;
		prev_end = f.end;
		r.addr = f.entry;
		r.size = f.end - f.entry;
		r.name = arena__strndup(lc->t->arena, f.name, strlen(f.name));
		if (!r.name)
			return -ENOMEM;
		err = raw_syms__push(lc->rs, &r);
		if (err)
			return err;
		lc->t->go_names++;
	}
	return 0;
}

/*
 * Reads everything from an open Elf handle; file_size bounds the header tables. fd: the file
 * (string tables and relocations are read from it directly), or -1 for an image in memory.
 */
static int elf_symtab__load(struct elf_symtab *t, Elf *elf, int fd, uint64_t file_size,
			    bool elf_magic)
{
	struct raw_syms rs = {0};
	struct load_ctx lc = {.t = t, .elf = elf, .fd = fd, .file_size = file_size, .rs = &rs};
	GElf_Ehdr ehdr;
	int err;

	if (elf_kind(elf) != ELF_K_ELF)
		return elf_magic ? -EBADMSG : -ENOEXEC;
	if (!gelf_getehdr(elf, &ehdr) || !header_tables_fit(&ehdr, file_size))
		return -EBADMSG;
	t->type = ehdr.e_type;
	err = load_segments(t, elf);
	if (!err)
		err = load_sections(&lc);
	if (!err && !t->has_symtab)
		err = load_go_names(&lc);
	if (!err)
		err = elf_plt__walk(elf, fd, t->arena,
				    &(struct elf_plt_cb){push_plt, ifunc_name, plt_str, &lc});
	if (!err)
		err = build_table(t, &rs, fd < 0);
	free(rs.v);
	return err;
}

struct elf_symtab *elf_symtab__open_fd(int fd)
{
	struct elf_symtab *t = NULL;
	Elf *elf = NULL;
	struct stat st;
	int err;

	if (fstat(fd, &st))
		return NULL;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		return NULL;
	}
	t = elf_symtab__alloc();
	if (!t)
		return NULL;
	/*
	 * ELF_C_READ rather than a mapping: a file truncated under us would make mapped reads
	 * fault, while reads just fail.
	 */
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		err = -EBADMSG;
		goto out;
	}
	err = elf_symtab__load(t, elf, fd, (uint64_t)st.st_size, has_elf_magic(fd));
out:
	elf_end(elf);
	if (err) {
		elf_symtab__free(t);
		errno = -err;
		return NULL;
	}
	return t;
}

struct elf_symtab *elf_symtab__open(const char *path)
{
	struct elf_symtab *t;
	int fd, err;

	/* O_NONBLOCK: a profiled process may have mapped a FIFO or device; never wait on it. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return NULL;
	t = elf_symtab__open_fd(fd);
	err = errno;
	close(fd);
	errno = err;
	return t;
}

struct elf_symtab *elf_symtab__open_memory(const void *buf, size_t len)
{
	struct elf_symtab *t;
	char *copy;
	Elf *elf;
	int err;

	if (len > ELF_SYMTAB_MAX_MEMORY) {
		errno = EFBIG;
		return NULL;
	}
	t = elf_symtab__alloc();
	if (!t)
		return NULL;
	/* libelf may convert the image in place; the caller's bytes stay untouched. */
	copy = malloc(len ? len : 1);
	if (!copy) {
		elf_symtab__free(t);
		errno = ENOMEM;
		return NULL;
	}
	memcpy(copy, buf, len);
	t->keep_fn_starts = true;
	elf = elf_memory(copy, len);
	if (!elf)
		err = -EBADMSG;
	else
		err = elf_symtab__load(t, elf, -1, len,
				       len >= SELFMAG && !memcmp(copy, ELFMAG, SELFMAG));
	elf_end(elf);
	free(copy);
	if (err) {
		elf_symtab__free(t);
		errno = -err;
		return NULL;
	}
	return t;
}

void elf_symtab__free(struct elf_symtab *t)
{
	if (!t)
		return;
	arena__free(t->arena);
	for (size_t i = 0; i < t->nr_strtabs; i++)
		free(t->strtabs[i]);
	free(t->demangled);
	free(t->syms);
	free(t->segs);
	free(t->fn_starts);
	free(t);
}

int elf_symtab__fn_start(const struct elf_symtab *t, uint64_t vaddr, uint64_t *ret_start)
{
	size_t lo = 0, hi = t->nr_fn_starts;
	uint64_t end = section_end_of(t, vaddr);

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->fn_starts[mid] <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* The start must be in the same code section: padding between sections is no function. */
	if (!lo || !end || section_end_of(t, t->fn_starts[lo - 1]) != end)
		return -ENOENT;
	*ret_start = t->fn_starts[lo - 1];
	return 0;
}

size_t elf_symtab__count(const struct elf_symtab *t)
{
	return t->nr_syms;
}

const struct elf_sym *elf_symtab__at(const struct elf_symtab *t, size_t idx)
{
	return idx < t->nr_syms ? &t->syms[idx] : NULL;
}

const struct elf_sym *elf_symtab__lookup(const struct elf_symtab *t, uint64_t vaddr)
{
	size_t lo = 0, hi = t->nr_syms;
	const struct elf_sym *s;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &t->syms[lo - 1];
	return vaddr - s->addr < s->size ? s : NULL;
}

const struct elf_sym *elf_symtab__find(const struct elf_symtab *t, const char *name)
{
	size_t i;

	for (i = 0; i < t->nr_syms; i++) {
		if (!strcmp(t->syms[i].name, name))
			return &t->syms[i];
	}
	return NULL;
}

const char *elf_symtab__demangled(struct elf_symtab *t, const struct elf_sym *sym)
{
	size_t idx = (size_t)(sym - t->syms);
	const char *name;
	char *d;

	if (idx >= t->nr_syms || !demangle__is_cxx(sym->name))
		return sym->name;
	if (!t->demangled) {
		t->demangled = calloc(t->nr_syms, sizeof(*t->demangled));
		if (!t->demangled)
			return sym->name;
	}
	if (t->demangled[idx])
		return t->demangled[idx];
	d = demangle__cxx(sym->name);
	if (!d && errno == ENOMEM)
		return sym->name; /* try again next time */
	/* A name that does not demangle is remembered as itself, so it is tried once. */
	name = d ? arena__strndup(t->arena, d, strlen(d)) : sym->name;
	free(d);
	if (!name)
		return sym->name;
	t->demangled[idx] = name;
	return name;
}

int elf_symtab__offset_to_vaddr(const struct elf_symtab *t, uint64_t off, uint64_t *ret_vaddr)
{
	size_t i;

	for (i = 0; i < t->nr_segs; i++) {
		const struct elf_segment *s = &t->segs[i];

		if (off >= s->offset && off - s->offset < s->filesz) {
			*ret_vaddr = s->vaddr + (off - s->offset);
			return 0;
		}
	}
	/* The mapping of a segment's last page runs on past p_filesz (into .bss). */
	for (i = 0; i < t->nr_segs; i++) {
		const struct elf_segment *s = &t->segs[i];

		if (off >= s->offset && off - s->offset < s->memsz) {
			*ret_vaddr = s->vaddr + (off - s->offset);
			return 0;
		}
	}
	return -ENOENT;
}

int elf_symtab__vaddr_to_offset(const struct elf_symtab *t, uint64_t vaddr, uint64_t *ret_off)
{
	size_t i;

	for (i = 0; i < t->nr_segs; i++) {
		const struct elf_segment *s = &t->segs[i];

		if (vaddr >= s->vaddr && vaddr - s->vaddr < s->filesz) {
			*ret_off = s->offset + (vaddr - s->vaddr);
			return 0;
		}
	}
	return -ENOENT;
}

int elf_symtab__segment(const struct elf_symtab *t, uint64_t vaddr, uint64_t *ret_start,
			uint64_t *ret_end, uint64_t *ret_off)
{
	for (size_t i = 0; i < t->nr_segs; i++) {
		const struct elf_segment *s = &t->segs[i];

		if (vaddr >= s->vaddr && vaddr - s->vaddr < s->memsz) {
			*ret_start = s->vaddr;
			*ret_end = s->vaddr + s->memsz;
			*ret_off = s->offset;
			return 0;
		}
	}
	return -ENOENT;
}

int elf_symtab__type(const struct elf_symtab *t)
{
	return t->type;
}

size_t elf_symtab__build_id(const struct elf_symtab *t, const uint8_t **ret_id)
{
	*ret_id = t->build_id;
	return t->build_id_len;
}

size_t elf_symtab__bytes(const struct elf_symtab *t)
{
	return sizeof(*t) + arena__bytes(t->arena) + t->nr_syms * sizeof(*t->syms) +
	       (t->demangled ? t->nr_syms * sizeof(*t->demangled) : 0) +
	       t->nr_segs * sizeof(*t->segs) + t->strtab_bytes;
}

size_t elf_symtab__go_names(const struct elf_symtab *t)
{
	return t->go_names;
}

bool elf_symtab__has_symtab(const struct elf_symtab *t)
{
	return t->has_symtab;
}

bool elf_symtab__has_dwarf(const struct elf_symtab *t)
{
	return t->has_dwarf;
}

const char *elf_symtab__debuglink(const struct elf_symtab *t, uint32_t *ret_crc)
{
	if (t->debuglink && ret_crc)
		*ret_crc = t->debuglink_crc;
	return t->debuglink;
}

int elf_symtab__merge(struct elf_symtab *t, const struct elf_symtab *dbg)
{
	size_t i = 0, j = 0, n = 0, total = t->nr_syms + dbg->nr_syms;
	struct elf_sym *out;

	if (total > ELF_SYMTAB_MAX_SYMS)
		return -EFBIG;
	out = calloc(total ? total : 1, sizeof(*out));
	if (!out)
		return -ENOMEM;
	/* Both are sorted with one symbol per address; at a shared address t's own one stays. */
	while (i < t->nr_syms || j < dbg->nr_syms) {
		/* The lookup only ever reads the nearest symbol below, so overlaps are harmless. */
		if (j == dbg->nr_syms || (i < t->nr_syms && t->syms[i].addr <= dbg->syms[j].addr)) {
			if (j < dbg->nr_syms && t->syms[i].addr == dbg->syms[j].addr)
				j++;
			out[n++] = t->syms[i++];
			continue;
		}
		out[n] = dbg->syms[j++];
		out[n].name = arena__strndup(t->arena, out[n].name, strlen(out[n].name));
		if (!out[n].name) {
			free(out);
			return -ENOMEM;
		}
		n++;
	}
	free(t->syms);
	free(t->demangled);
	t->demangled = NULL;
	t->syms = out;
	t->nr_syms = n;
	t->has_symtab = t->has_symtab || dbg->has_symtab;
	return 0;
}
