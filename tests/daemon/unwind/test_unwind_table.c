// SPDX-License-Identifier: Apache-2.0
/*
 * The .eh_frame compiler against binutils: every row `readelf --debug-dump=frames-interp` prints
 * for real files (the test's own -fomit-frame-pointer workload and library, libc, the loader,
 * libstdc++, libpython) must give the same CFA rule, rbp slot and return-address rule here. And
 * malformed sections (cut short, bytes flipped) must never crash nor yield rows past the data.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/unwind/unwind_pages.h"
#include "daemon/unwind/unwind_table.h"

struct cmp_stats {
	unsigned long rows, mismatches, exprs;
};

static void expect_row(const struct unwind_table *t, const char *file, unsigned long long loc,
		       const char *cfa, const char *rbp, const char *ra, struct cmp_stats *cs)
{
	const struct xsprof_unwind_row *r = unwind_table__find(t, loc);
	int want_type = XSPROF_CFA_INVALID;
	long want_off = 0, want_rbp = 0;
	char reg[8];
	bool ok;

	cs->rows++;
	if (!r || r->pc > loc) {
		cs->mismatches++;
		cr_log_error("%s: no row at %#llx", file, loc);
		return;
	}
	if (r->type == XSPROF_CFA_SIGNAL)
		return; /* the whole FDE is the signal trampoline's: its rules are not used */
	if (!strcmp(ra, "u")) {
		want_type = XSPROF_CFA_OUTERMOST;
	} else if (strcmp(ra, "c-8")) {
		want_type = XSPROF_CFA_INVALID;
	} else if (sscanf(cfa, "%7[a-z0-9]+%ld", reg, &want_off) == 2) {
		want_type = !strcmp(reg, "rsp")	  ? XSPROF_CFA_RSP
			    : !strcmp(reg, "rbp") ? XSPROF_CFA_RBP
						  : XSPROF_CFA_INVALID;
	} else if (!strcmp(cfa, "exp")) {
		/* Expressions: the PLT's or GCC's realignment, else not supported. */
		cs->exprs++;
		ok = r->type == XSPROF_CFA_PLT || r->type == XSPROF_CFA_DEREF_RBP ||
		     r->type == XSPROF_CFA_INVALID;
		if (!ok) {
			cs->mismatches++;
			cr_log_error("%s %#llx: exp gave type %d", file, loc, r->type);
		}
		return;
	}
	if (want_type == XSPROF_CFA_INVALID || want_type == XSPROF_CFA_OUTERMOST) {
		ok = r->type == want_type;
	} else {
		if (rbp && !strncmp(rbp, "c-", 2))
			want_rbp = -strtol(rbp + 2, NULL, 10);
		else if (rbp && !strncmp(rbp, "c+", 2))
			want_rbp = strtol(rbp + 2, NULL, 10);
		/* Past what a row holds: marked invalid, never wrong. */
		if (want_off > INT16_MAX || (want_rbp & 7))
			ok = r->type == XSPROF_CFA_INVALID;
		else if (rbp && !strcmp(rbp, "exp"))
			/* Saved through an expression: at rbp + off (GCC's realigned frames), or
			 * invalid; never taken as unchanged. */
			ok = r->type == XSPROF_CFA_INVALID ||
			     ((r->type & XSPROF_ROW_RBP_AT_RBP) &&
			      XSPROF_ROW_TYPE(r->type) == want_type && r->cfa_off == want_off);
		else
			ok = r->type == want_type && r->cfa_off == want_off &&
			     r->rbp_off * 8 == want_rbp;
	}
	if (!ok) {
		cs->mismatches++;
		cr_log_error(
			"%s %#llx: readelf cfa %s rbp %s ra %s; ours type %d cfa_off %d rbp_off "
			"%d",
			file, loc, cfa, rbp ? rbp : "-", ra, r->type, r->cfa_off, r->rbp_off);
	}
}

/* Compare every row readelf prints for path; returns how many were compared. */
static unsigned long compare_with_readelf(const char *path)
{
	struct cmp_stats cs = {0};
	char cmd[512], line[1024];
	struct unwind_table *t;
	int fd, rbp_col = -1, ra_col = -1;
	unsigned long long fde_end = 0;
	FILE *p;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	t = unwind_table__from_elf_fd(fd);
	close(fd);
	cr_assert(t, "%s: no table: %s", path, strerror(errno));
	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	cr_assert(p);
	while (fgets(line, sizeof(line), p)) {
		char *tok[32], *save = NULL;
		int n = 0;
		unsigned long long loc;

		for (char *s = strtok_r(line, " \t\n", &save); s && n < 32;
		     s = strtok_r(NULL, " \t\n", &save)) {
			/* "r10 (r10)" is one column: a register rule. */
			if (s[0] == '(' && n)
				continue;
			tok[n++] = s;
		}
		if (n >= 2 && !strcmp(tok[0], "LOC")) {
			rbp_col = ra_col = -1;
			for (int i = 0; i < n; i++) {
				if (!strcmp(tok[i], "rbp"))
					rbp_col = i;
				if (!strcmp(tok[i], "ra"))
					ra_col = i;
			}
			continue;
		}
		/* readelf also prints the row an advance to the FDE's very end starts. */
		if (n >= 3 && strlen(tok[0]) == 16 && ra_col > 0 && ra_col < n &&
		    sscanf(tok[0], "%llx", &loc) == 1 && loc > 0 && loc < fde_end)
			expect_row(t, path, loc, tok[1], rbp_col > 0 ? tok[rbp_col] : NULL,
				   tok[ra_col], &cs);
		/* A new CIE or FDE: its rows come after its own LOC header. */
		for (int i = 0; i < n; i++) {
			unsigned long long a, b;

			if (!strcmp(tok[i], "FDE") || !strcmp(tok[i], "CIE"))
				ra_col = -1;
			if (sscanf(tok[i], "pc=%llx..%llx", &a, &b) == 2)
				fde_end = b;
		}
	}
	pclose(p);
	cr_log_info("%s: %zu rows; %lu readelf rows compared (%lu expressions), %lu differ\n", path,
		    unwind_table__count(t), cs.rows, cs.exprs, cs.mismatches);
	cr_expect_eq(cs.mismatches, 0, "%s: %lu of %lu rows differ from readelf", path,
		     cs.mismatches, cs.rows);
	unwind_table__free(t);
	return cs.rows;
}

Test(unwind_table, workload_without_frame_pointers_matches_readelf)
{
	cr_expect(compare_with_readelf(XS_NOFP_PATH) > 20);
	cr_expect(compare_with_readelf(XS_NOFP_LIB_PATH) >= 2);
}

Test(unwind_table, system_libraries_match_readelf, .timeout = 120)
{
	static const char *const libs[] = {
		"/lib/x86_64-linux-gnu/libc.so.6",
		"/lib64/ld-linux-x86-64.so.2",
		"/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
		"/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0",
	};

	cr_expect(compare_with_readelf(libs[0]) > 10000);
	for (size_t i = 1; i < sizeof(libs) / sizeof(libs[0]); i++)
		if (!access(libs[i], R_OK))
			compare_with_readelf(libs[i]);
}

/* Files clang built (Debian's clang-14, from scripts/deps.sh): LLVM's assembler types their
 * .eh_frame SHT_X86_64_UNWIND, not PROGBITS (once a reason to refuse them whole), and the
 * libraries hold 5 MiB of it each. */
static const struct {
	const char *path;
	size_t min_rows, min_functions;
} clang_built[] = {
	{"/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1", 500000, 20000},
	{"/usr/lib/x86_64-linux-gnu/libclang-cpp.so.14", 500000, 10000},
	{"/usr/lib/llvm-14/bin/clang", 500, 10},
};

static Elf *elf_of(int fd, const char *path)
{
	Elf *elf;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	cr_assert(elf && elf_kind(elf) == ELF_K_ELF, "%s: not ELF", path);
	return elf;
}

static GElf_Word eh_frame_type(Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;

	cr_assert(!elf_getshdrstrndx(elf, &shstrndx));
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) &&
		    !strcmp(elf_strptr(elf, shstrndx, sh.sh_name) ?: "", ".eh_frame"))
			return sh.sh_type;
	return SHT_NULL;
}

/* The exported functions (.dynsym) whose entry has the rule a call leaves (CFA rsp+8, rbp
 * unchanged), or _start's (the outermost frame): every one a compiler emitted CFI for. */
static size_t entries_with_call_rule(Elf *elf, const struct unwind_table *t, size_t *ret_funcs)
{
	Elf_Scn *scn = NULL;
	size_t funcs = 0, ok = 0;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		cr_assert(d);
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			const struct xsprof_unwind_row *r;
			GElf_Sym s;

			if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    s.st_shndx == SHN_UNDEF || !s.st_value)
				continue;
			funcs++;
			r = unwind_table__find(t, s.st_value);
			ok += r && ((r->type == XSPROF_CFA_RSP && r->cfa_off == 8 && !r->rbp_off) ||
				    r->type == XSPROF_CFA_OUTERMOST);
		}
	}
	*ret_funcs = funcs;
	return ok;
}

Test(unwind_table, clang_built_files_have_whole_tables, .timeout = 300)
{
	for (size_t i = 0; i < sizeof(clang_built) / sizeof(clang_built[0]); i++) {
		const char *path = clang_built[i].path;
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		struct unwind_table_stats st;
		struct unwind_table *t;
		size_t funcs, ok;
		Elf *elf;

		cr_assert_geq(fd, 0, "%s: %s (clang-14, from scripts/deps.sh)", path,
			      strerror(errno));
		elf = elf_of(fd, path);
		cr_expect_eq(eh_frame_type(elf), SHT_X86_64_UNWIND,
			     "%s: the .eh_frame this test is for is LLVM's SHT_X86_64_UNWIND",
			     path);
		t = unwind_table__from_elf_fd(fd);
		cr_assert(t, "%s: no table: %s", path, strerror(errno));
		unwind_table__stats(t, &st);
		/* Every FDE run to its end, and hardly a row the walker cannot apply (a frame
		 * past the 32 KiB a row's CFA offset holds). */
		cr_expect(st.fdes > 50 && st.bad_entries == 0 && st.far_fdes == 0,
			  "%s: %llu FDEs, %llu cut short, %llu past 4 GiB", path,
			  (unsigned long long)st.fdes, (unsigned long long)st.bad_entries,
			  (unsigned long long)st.far_fdes);
		cr_expect_gt(unwind_table__count(t), clang_built[i].min_rows, "%s: %zu rows", path,
			     unwind_table__count(t));
		cr_expect_lt(st.invalid_rows * 1000, st.rows, "%s: %llu of %llu rows invalid", path,
			     (unsigned long long)st.invalid_rows, (unsigned long long)st.rows);
		ok = entries_with_call_rule(elf, t, &funcs);
		cr_expect_geq(funcs, clang_built[i].min_functions, "%s: %zu functions", path,
			      funcs);
		cr_expect_geq(ok * 100, funcs * 99, "%s: %zu of %zu functions without a rule", path,
			      funcs - ok, funcs);
		cr_log_info("%s: %zu rows from %llu FDEs; %zu of %zu exported functions' entries "
			    "have the call's rule\n",
			    path, unwind_table__count(t), (unsigned long long)st.fdes, ok, funcs);
		unwind_table__free(t);
		elf_end(elf);
		close(fd);
		/* And every row readelf prints for it (1.1 million for libLLVM). */
		cr_expect_gt(compare_with_readelf(path), clang_built[i].min_rows);
	}
}

/* Functions of the workload, as the tests and the walker rely on them. */
Test(unwind_table, rules_of_known_functions)
{
	int fd = open(XS_NOFP_PATH, O_RDONLY | O_CLOEXEC);
	struct unwind_table *t = unwind_table__from_elf_fd(fd);
	struct unwind_table_stats st;
	const struct xsprof_unwind_row *r;
	bool outermost = false, plt = false, rbp = false;

	close(fd);
	cr_assert(t);
	unwind_table__stats(t, &st);
	cr_expect(st.fdes > 5 && st.cies >= 1 && st.bad_entries == 0);
	for (size_t i = 0; i < unwind_table__count(t); i++) {
		r = &unwind_table__rows(t)[i];
		outermost |= r->type == XSPROF_CFA_OUTERMOST;
		plt |= r->type == XSPROF_CFA_PLT;
		rbp |= r->type == XSPROF_CFA_RBP && r->rbp_off == -2;
		if (i)
			cr_expect(r->pc > unwind_table__rows(t)[i - 1].pc, "rows not sorted");
	}
	cr_expect(outermost, "_start's undefined return address not seen");
	cr_expect(plt, "the PLT's expression not recognised");
	cr_expect(rbp, "xs_nofp_burn_a's rbp-based frame not seen");
	/* Below the first FDE: nothing. */
	cr_expect_null(unwind_table__find(t, 0));
	unwind_table__free(t);
}

static void *slurp(const char *path, size_t *ret_size)
{
	struct stat st;
	void *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	cr_assert(fd >= 0 && !fstat(fd, &st));
	buf = malloc(st.st_size);
	cr_assert(buf && read(fd, buf, st.st_size) == st.st_size);
	close(fd);
	*ret_size = st.st_size;
	return buf;
}

/* The .eh_frame of an ELF image: offset, size, address. */
static void find_eh_frame(void *img, size_t size, size_t *ret_off, size_t *ret_size,
			  uint64_t *ret_addr)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	elf_version(EV_CURRENT);
	elf = elf_memory(img, size);
	cr_assert(elf && !elf_getshdrstrndx(elf, &shstrndx));
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		gelf_getshdr(scn, &sh);
		if (!strcmp(elf_strptr(elf, shstrndx, sh.sh_name), ".eh_frame")) {
			*ret_off = sh.sh_offset;
			*ret_size = sh.sh_size;
			*ret_addr = sh.sh_addr;
		}
	}
	elf_end(elf);
}

Test(unwind_table, malformed_sections_never_crash, .timeout = 120)
{
	size_t size, off = 0, len = 0;
	uint64_t addr = 0;
	uint8_t *img = slurp("/lib/x86_64-linux-gnu/libc.so.6", &size), *sec, *copy;
	struct unwind_table *t, *whole;
	unsigned int seed = 1;

	find_eh_frame(img, size, &off, &len, &addr);
	cr_assert(len > 4096);
	sec = img + off;
	whole = unwind_table__from_eh_frame(sec, len, addr, 0);
	cr_assert(whole);
	/* Cut short anywhere: a prefix's rows, never more than the whole. */
	for (size_t cut = 0; cut < len; cut += 997) {
		copy = malloc(cut ? cut : 1);
		memcpy(copy, sec, cut);
		t = unwind_table__from_eh_frame(copy, cut, addr, 0);
		if (t)
			cr_expect_leq(unwind_table__count(t), unwind_table__count(whole) + 1);
		else
			cr_expect(errno == ENOENT, "cut %zu: %s", cut, strerror(errno));
		unwind_table__free(t);
		free(copy);
	}
	/* Bytes flipped at random: any result, no crash (ASan builds check the reads). */
	copy = malloc(len);
	for (int round = 0; round < 200; round++) {
		memcpy(copy, sec, len);
		for (int k = 0; k < 16; k++)
			copy[rand_r(&seed) % len] ^= (uint8_t)(1 + rand_r(&seed) % 255);
		t = unwind_table__from_eh_frame(copy, len, addr, 0);
		unwind_table__free(t);
	}
	free(copy);
	unwind_table__free(whole);
	/* Not ELF, and ELF without .eh_frame. */
	cr_expect_null(unwind_table__from_elf_memory("hello", 5));
	cr_expect_eq(errno, ENOEXEC);
	cr_expect_null(unwind_table__from_eh_frame("\0\0\0\0", 4, 0, 0));
	cr_expect_eq(errno, ENOENT);
	free(img);
}

static int drop_row(void *ctx, const struct xsprof_unwind_row *r)
{
	(void)ctx, (void)r;
	return 0;
}

/* A file that can have no table says why, in words the daemon's report shows. */
static const char *why_refused(struct unwind_build *b, int want_err)
{
	int err;

	cr_assert(b, "a build was refused outright: %s", strerror(errno));
	while ((err = unwind_build__step(b, 100, drop_row, NULL)) > 0)
		;
	cr_expect_eq(err, want_err, "step: %d", err);
	cr_expect_eq(unwind_build__step(b, 100, drop_row, NULL), want_err, "a refusal is final");
	cr_assert(unwind_build__why(b));
	return unwind_build__why(b);
}

/* One CIE and one FDE at pc 0x2000..0x2100: the CIE says CFA = reg cfa_reg + 8 (sec at 0x1000). */
static void one_fde(uint8_t sec[48], uint8_t cfa_reg)
{
	static const uint8_t tmpl[48] = {20,   0, 0, 0,	   0,  0, 0,	0, 1,	 'z',
					 'R',  0, 1, 0x78, 16, 1, 0x1b, /* CIE "zR" */
					 0x0c, 7, 8, 0x90, 1,  0, 0,	/* def_cfa */
					 16,   0, 0, 0,	   28, 0, 0,	0, 0xe0, 0x0f,
					 0,    0, 0, 1,	   0,  0, 0,	0, 0,	 0, /* FDE */
					 0,    0, 0, 0};
	memcpy(sec, tmpl, sizeof(tmpl));
	sec[18] = cfa_reg;
}

Test(unwind_table, a_file_without_a_table_says_why)
{
	size_t size, off = 0;
	uint8_t *img = slurp("/lib/x86_64-linux-gnu/libc.so.6", &size), sec[48];
	struct unwind_build *b;
	struct unwind_table *t;
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int fd;

	/* Not ELF. */
	fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
	b = unwind_build__new_fd(fd);
	cr_expect_str_eq(why_refused(b, -ENOEXEC), "not an x86-64 ELF file");
	cr_expect_eq(unwind_build__nr_fdes(b), 0);
	cr_expect(unwind_build__collected(b));
	unwind_build__free(b);
	close(fd);
	/* No FDE; then an FDE whose only rule (CFA from rbx) the walker cannot apply, which
	 * frame pointers serve better than a table saying "no rule"; then the same from rsp. */
	b = unwind_build__new_eh_frame("\0\0\0\0", 4, 0x1000, 0);
	cr_expect_str_eq(why_refused(b, -ENOENT), "no FDE in .eh_frame");
	unwind_build__free(b);
	one_fde(sec, 3);
	b = unwind_build__new_eh_frame(sec, sizeof(sec), 0x1000, 0);
	cr_expect_str_eq(why_refused(b, -ENOENT),
			 "no rule the walker can apply (1 FDEs, 0 cut short)");
	unwind_build__free(b);
	one_fde(sec, 7);
	t = unwind_table__from_eh_frame(sec, sizeof(sec), 0x1000, 0);
	cr_assert(t, "%s", strerror(errno));
	cr_expect_eq(unwind_table__count(t), 2);
	cr_expect_eq(unwind_table__find(t, 0x2080)->type, XSPROF_CFA_RSP);
	cr_expect_eq(unwind_table__find(t, 0x2100)->type, XSPROF_CFA_INVALID);
	unwind_table__free(t);
	/* An ELF file whose .eh_frame is renamed away. */
	elf_version(EV_CURRENT);
	elf = elf_memory((char *)img, size);
	cr_assert(elf && !elf_getshdrstrndx(elf, &shstrndx));
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh, strs;

		if (gelf_getshdr(scn, &sh) &&
		    !strcmp(elf_strptr(elf, shstrndx, sh.sh_name) ?: "", ".eh_frame")) {
			cr_assert(gelf_getshdr(elf_getscn(elf, shstrndx), &strs));
			off = strs.sh_offset + sh.sh_name;
		}
	}
	elf_end(elf);
	cr_assert(off && off + 1 < size && img[off + 1] == 'e');
	img[off + 1] = 'x';
	b = unwind_build__new_elf_memory(img, size);
	cr_expect_str_eq(why_refused(b, -ENOENT), "no .eh_frame section");
	unwind_build__free(b);
	free(img);
}

/* ---- pages (daemon/unwind/unwind_pages.c): what the BPF walk looks rows up in ---- */

struct paged {
	struct xsprof_unwind_row *rows;
	size_t nr, cap;
	struct xsprof_unwind_page *pages;
	size_t nr_pages, cap_pages;
	uint64_t page0;
};

static int keep_page(void *ctx, uint64_t page, const struct xsprof_unwind_row *rows, uint32_t n)
{
	struct paged *p = ctx;

	if (!p->nr_pages)
		p->page0 = page;
	cr_assert_eq(page, p->page0 + p->nr_pages, "pages skipped or out of order");
	cr_assert(n >= 1 && n <= XSPROF_UNWIND_PAGE_ROWS);
	/* The first page starts where the first FDE does; every other one at its start. */
	if (p->nr_pages)
		cr_assert_leq(rows[0].pc, page << XSPROF_UNWIND_PAGE_SHIFT, "no row at its start");
	for (uint32_t i = 1; i < n; i++)
		cr_assert_eq(rows[i].pc >> XSPROF_UNWIND_PAGE_SHIFT, page,
			     "a row outside its page");
	if (p->nr + n > p->cap) {
		p->cap = (p->nr + n) * 2;
		p->rows = reallocarray(p->rows, p->cap, sizeof(*p->rows));
	}
	if (p->nr_pages == p->cap_pages) {
		p->cap_pages = p->cap_pages ? p->cap_pages * 2 : 64;
		p->pages = reallocarray(p->pages, p->cap_pages, sizeof(*p->pages));
	}
	cr_assert(p->rows && p->pages);
	p->pages[p->nr_pages++] = (struct xsprof_unwind_page){(uint32_t)p->nr, n};
	memcpy(&p->rows[p->nr], rows, n * sizeof(*rows));
	p->nr += n;
	return 0;
}

/* The row for pc as the BPF walk finds it: its page, then the last row at or below pc. */
static const struct xsprof_unwind_row *paged_find(const struct paged *p, uint64_t pc)
{
	uint64_t page = (pc >> XSPROF_UNWIND_PAGE_SHIFT) - p->page0;
	const struct xsprof_unwind_page *pg;
	uint32_t lo, hi;

	if (pc >> XSPROF_UNWIND_PAGE_SHIFT < p->page0 || page >= p->nr_pages)
		return NULL;
	pg = &p->pages[page];
	for (lo = pg->first, hi = pg->first + pg->count; lo < hi;) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (p->rows[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > pg->first ? &p->rows[lo - 1] : NULL;
}

static bool same_row(const struct xsprof_unwind_row *a, const struct xsprof_unwind_row *b)
{
	return a && b && a->type == b->type && a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off;
}

/* Every row start, the byte before it and the one after, looked up through the pages, gives
 * the row the whole sorted table gives. */
static size_t check_pages(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct unwind_table *t = unwind_table__from_elf_fd(fd);
	struct unwind_build *b;
	struct unwind_pager *pager = malloc(sizeof(*pager));
	struct paged p = {0};
	size_t n, checked = 0;
	int err;

	cr_assert(t && pager, "%s: no table", path);
	b = unwind_build__new_fd(fd);
	cr_assert(b);
	unwind_pager__init(pager, keep_page, &p);
	while ((err = unwind_build__step(b, 100, unwind_pager__row, pager)) > 0)
		;
	cr_assert_eq(err, 0);
	cr_assert_eq(unwind_pager__finish(pager), 0);
	n = unwind_table__count(t);
	for (size_t i = 0; i < n; i++) {
		uint32_t pc = unwind_table__rows(t)[i].pc;
		uint64_t at[3] = {pc, pc + 1, pc ? pc - 1 : pc};

		for (int k = 0; k < 3; k++) {
			const struct xsprof_unwind_row *want = unwind_table__find(t, at[k]);

			if (!want || (k == 2 && !i))
				continue;
			cr_assert(same_row(paged_find(&p, at[k]), want),
				  "%s: %#llx: the page's row differs from the table's", path,
				  (unsigned long long)at[k]);
			checked++;
		}
	}
	cr_log_info("%s: %zu rows in %zu pages (%zu rows there), %zu lookups checked\n", path, n,
		    p.nr_pages, p.nr, checked);
	unwind_build__free(b);
	unwind_table__free(t);
	free(p.rows);
	free(p.pages);
	free(pager);
	close(fd);
	return checked;
}

Test(unwind_table, pages_find_the_same_rows)
{
	const char *more[] = {
		"/lib/x86_64-linux-gnu/libc.so.6",
		"/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
		"/usr/bin/python3.11",
		"/usr/lib/x86_64-linux-gnu/libtorch_python.so.1.13",
	};

	cr_expect_gt(check_pages(XS_NOFP_PATH), 100);
	for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++)
		if (!access(more[i], R_OK))
			cr_expect_gt(check_pages(more[i]), 1000);
}

/* A large .eh_frame is read a few MiB per step (a 200 MiB one must not hold the daemon's loop
 * for half a second before its first step), and the table is the same as built at once. */
Test(unwind_table, large_sections_are_read_a_piece_per_step, .timeout = 120)
{
	const char *path = "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13"; /* 9.5 MiB */
	int fd = open(path, O_RDONLY | O_CLOEXEC), err, pieces = 0;
	struct unwind_build *b;

	cr_assert_geq(fd, 0, "%s: %s (python3-torch, from scripts/deps.sh)", path, strerror(errno));
	b = unwind_build__new_fd(fd);
	cr_assert(b);
	cr_expect_not(unwind_build__collected(b), "the whole section was read at once");
	while (!unwind_build__collected(b)) {
		err = unwind_build__step(b, 100, NULL, NULL);
		cr_assert_eq(err, 1, "a collecting step ended the build: %d", err);
		pieces++;
	}
	/* 4 MiB a step: 2 more; then, when the file's FDEs are out of pc order (libtorch's are),
	 * the sort's 3 passes of counting and placing, a step each at this size. */
	cr_expect(pieces >= 2 && pieces <= 2 + 6, "9.5 MiB read in %d more pieces", pieces);
	cr_expect_gt(unwind_build__nr_fdes(b), 100000);
	unwind_build__free(b);
	close(fd);
	cr_expect_gt(check_pages(path), 100000);
}

/* The address of symbol name in the ELF file at path; 0 when not found. */
static uint64_t symbol_addr(const char *path, const char *name)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf = elf_of(fd, path);
	Elf_Scn *scn = NULL;
	uint64_t addr = 0;

	while (!addr && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *s;

			if (gelf_getsym(d, (int)i, &sym) &&
			    (s = elf_strptr(elf, sh.sh_link, sym.st_name)) && !strcmp(s, name)) {
				addr = sym.st_value;
				break;
			}
		}
	}
	elf_end(elf);
	close(fd);
	return addr;
}

/*
 * A Go binary (tests/workloads/gomix, no .eh_frame): its rows come from .gopclntab. Go's linker
 * also writes each function's CFA rules into .debug_frame from the same stack-pointer deltas;
 * readelf decodes those: every row it prints must say the CFA we say, the caller's rbp at CFA -
 * 16 where the function has a frame, except in the functions Go marks as a stack's top
 * (outermost here) or as writing the stack pointer (no rule here). And known functions: the
 * frameless leaf, its caller, runtime.goexit.
 */
/* path's Go rows against Go's own .debug_frame (readelf), and the frames the walker needs. */
static void check_go_rows(const char *path)
{
	struct unwind_table_stats st;
	unsigned long rows = 0, differ = 0, special = 0;
	unsigned long long fde_end = 0, loc;
	const struct xsprof_unwind_row *r;
	struct unwind_table *t;
	char cmd[512], line[512];
	bool debug_frame = false;
	uint64_t a;
	FILE *p;
	int fd;

	cr_assert(path[0], "built without a go toolchain (apt-get install golang-go)");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	t = unwind_table__from_elf_fd(fd);
	close(fd);
	cr_assert(t, "%s: no table: %s", path, strerror(errno));
	unwind_table__stats(t, &st);
	cr_expect_gt(st.go_funcs, 1000, "only %llu Go functions", (unsigned long long)st.go_funcs);
	cr_expect_eq(st.bad_entries, 0);
	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	cr_assert(p);
	while (fgets(line, sizeof(line), p)) {
		unsigned long long lo, hi;
		char cfa[32], ra[16];
		long off;

		/* Go's frames are in .debug_frame; a cgo file's .eh_frame is its C code's. */
		if (!strncmp(line, "Contents of the ", 16)) {
			debug_frame = !!strstr(line, ".debug_frame");
			continue;
		}
		if (!debug_frame)
			continue;
		if (sscanf(line, "%*x %*x %*x FDE cie=%*x pc=%llx..%llx", &lo, &hi) == 2) {
			fde_end = hi;
			continue;
		}
		if (sscanf(line, "%llx %31s %15s", &loc, cfa, ra) != 3 || strlen(line) < 17 ||
		    loc >= fde_end || sscanf(cfa, "rsp+%ld", &off) != 1)
			continue;
		rows++;
		r = unwind_table__find(t, loc);
		if (r && (r->type == XSPROF_CFA_OUTERMOST || r->type == XSPROF_CFA_INVALID)) {
			special++;
			continue;
		}
		if (!r || r->type != XSPROF_CFA_RSP || r->cfa_off != off || strcmp(ra, "c-8") ||
		    r->rbp_off != (off >= 16 ? -2 : 0)) {
			differ++;
			cr_log_error("%#llx: readelf %s ra %s; ours type %d cfa_off %d rbp_off %d",
				     loc, cfa, ra, r ? r->type : -1, r ? r->cfa_off : 0,
				     r ? r->rbp_off : 0);
		}
	}
	pclose(p);
	cr_log_info("%s: %zu rows; %lu of .debug_frame's compared, %lu differ, %lu in top or "
		    "stack-switching functions\n",
		    path, unwind_table__count(t), rows, differ, special);
	cr_expect_gt(rows, 3000);
	cr_expect_eq(differ, 0, "%lu of %lu rows differ from .debug_frame", differ, rows);
	cr_expect_lt(special * 50, rows, "%lu of %lu rows without a plain rule", special, rows);

	a = symbol_addr(path, "main.mixA");
	cr_assert(a);
	r = unwind_table__find(t, a + 4);
	cr_expect(r && r->type == XSPROF_CFA_RSP && r->cfa_off == 8 && r->rbp_off == 0,
		  "mixA, a leaf without a frame: the return address at rsp");
	a = symbol_addr(path, "main.callerA");
	cr_assert(a);
	r = unwind_table__find(t, a + 24);
	cr_expect(r && r->type == XSPROF_CFA_RSP && r->cfa_off > 8 && r->rbp_off == -2,
		  "callerA's body: its frame, rbp saved at CFA - 16");
	a = symbol_addr(path, "runtime.goexit.abi0");
	cr_assert(a);
	r = unwind_table__find(t, a);
	cr_expect(r && r->type == XSPROF_CFA_OUTERMOST, "runtime.goexit: a goroutine's root");
	unwind_table__free(t);
}

Test(unwind_table, go_rows_match_its_debug_frame, .timeout = 120)
{
	check_go_rows(XS_GOMIX_PATH);
}

/* Rows of a build stepped a piece at a time, against the table built at once. */
struct step_rows {
	const struct unwind_table *t;
	size_t n, differ;
};

static int stepped_row(void *ctx, const struct xsprof_unwind_row *r)
{
	struct step_rows *sr = ctx;
	const struct xsprof_unwind_row *w = unwind_table__rows(sr->t);

	if (sr->n >= unwind_table__count(sr->t) || memcmp(&w[sr->n], r, sizeof(*r)))
		sr->differ++;
	sr->n++;
	return 0;
}

/* cgo: the C code's FDEs and the Go code's .gopclntab rows in one table; before, the Go code
 * of such a file had no rows at all (its .eh_frame was taken as the whole story). */
Test(unwind_table, cgo_files_get_go_rows_beside_their_fdes, .timeout = 120)
{
	const char *path = XS_GOMIX_CGO_PATH;
	struct unwind_table_stats st;
	const struct xsprof_unwind_row *r;
	struct unwind_table *t;
	uint64_t a;
	int fd;

	check_go_rows(path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	t = unwind_table__from_elf_fd(fd);
	close(fd);
	cr_assert(t);
	unwind_table__stats(t, &st);
	cr_expect_gt(st.fdes, 10, "the C code's FDEs are there too");
	a = symbol_addr(path, "x_cgo_init");
	cr_assert(a, "runtime/cgo's C code");
	r = unwind_table__find(t, a);
	cr_expect(r && r->type == XSPROF_CFA_RSP && r->cfa_off == 8,
		  "x_cgo_init's entry, from its FDE: the return address at rsp");
	/* Built a piece at a time, as the daemon does (one FDE, eight Go rows a step): the same
	 * rows, in more steps than FDEs (the Go rows below the first C function wait their turn). */
	{
		struct step_rows sr = {.t = t};
		struct unwind_build *b;
		size_t steps = 0;
		int err;

		fd = open(path, O_RDONLY | O_CLOEXEC);
		cr_assert(fd >= 0);
		b = unwind_build__new_fd(fd);
		close(fd);
		cr_assert(b);
		size_t most = 0, before = 0;

		while ((err = unwind_build__step(b, 1, stepped_row, &sr)) > 0) {
			steps++;
			most = sr.n - before > most ? sr.n - before : most;
			before = sr.n;
		}
		cr_expect_eq(err, 0);
		cr_expect_eq(sr.n, unwind_table__count(t), "%zu rows stepped, %zu at once", sr.n,
			     unwind_table__count(t));
		cr_expect_eq(sr.differ, 0);
		cr_expect_gt(steps, st.fdes, "%zu steps for %llu FDEs", steps,
			     (unsigned long long)st.fdes);
		/* One FDE's rows and eight Go rows a step at most: a step holds the loop briefly. */
		cr_expect_lt(most, 64, "%zu rows in one step", most);
		unwind_build__free(b);
	}
	unwind_table__free(t);
}

/* A .gopclntab in a layout not read here is refused with its reason, never guessed at. */
Test(unwind_table, old_gopclntab_is_refused_with_a_reason)
{
	const char *copy = "/tmp/xs_gomix_oldmagic";
	struct unwind_build *b;
	size_t size, off;
	uint8_t *img;
	FILE *f;
	int fd;

	cr_assert(XS_GOMIX_PATH[0], "built without a go toolchain (apt-get install golang-go)");
	img = slurp(XS_GOMIX_PATH, &size);
	/* The header's magic: Go 1.16's. */
	for (off = 0; off + 8 < size; off++)
		if (!memcmp(img + off, "\xf0\xff\xff\xff\x00\x00\x01\x08", 8) ||
		    !memcmp(img + off, "\xf1\xff\xff\xff\x00\x00\x01\x08", 8))
			break;
	cr_assert_lt(off + 8, size, "no pclntab header found");
	memcpy(img + off, "\xfa\xff\xff\xff", 4);
	f = fopen(copy, "w");
	cr_assert(f && fwrite(img, 1, size, f) == size);
	fclose(f);
	free(img);
	fd = open(copy, O_RDONLY | O_CLOEXEC);
	cr_assert(fd >= 0);
	b = unwind_build__new_fd(fd);
	cr_assert(b);
	cr_expect_str_eq(
		why_refused(b, -ENOENT),
		"no .eh_frame, and a .gopclntab of Go before 1.18 (or not Go's): not read");
	unwind_build__free(b);
	close(fd);
	unlink(copy);
}

/* A .gopclntab with bytes flipped (header, function table, pc-value tables) never crashes the
 * build nor gives rows out of order: the section is the profiled process's. */
Test(unwind_table, malformed_gopclntab_never_crashes, .timeout = 120)
{
	const char *copy = "/tmp/xs_gomix_flipped";
	size_t size, hdr = 0, built = 0;
	uint8_t *img;
	FILE *f;

	cr_assert(XS_GOMIX_PATH[0], "built without a go toolchain (apt-get install golang-go)");
	img = slurp(XS_GOMIX_PATH, &size);
	for (hdr = 0; hdr + 8 < size; hdr++)
		if (!memcmp(img + hdr + 1, "\xff\xff\xff\x00\x00\x01\x08", 7) &&
		    (img[hdr] == 0xf0 || img[hdr] == 0xf1))
			break;
	cr_assert_lt(hdr + 8, size);
	f = fopen(copy, "w");
	cr_assert(f && fwrite(img, 1, size, f) == size);
	fclose(f);
	srand(7);
	for (int i = 0; i < 300; i++) {
		/* Where: the header's words, the start of the function table, anywhere after. */
		size_t at = i < 100   ? hdr + 8 + (size_t)rand() % 64
			    : i < 200 ? hdr + 72 + (size_t)rand() % 4096
				      : hdr + (size_t)rand() % (size - hdr);
		uint8_t v = (uint8_t)rand(), old = img[at];
		struct unwind_table *t;
		int fd;

		fd = open(copy, O_RDWR | O_CLOEXEC);
		cr_assert(fd >= 0 && pwrite(fd, &v, 1, (off_t)at) == 1);
		t = unwind_table__from_elf_fd(fd);
		if (t) {
			built++;
			for (size_t k = 1; k < unwind_table__count(t); k++)
				cr_assert_gt(unwind_table__rows(t)[k].pc,
					     unwind_table__rows(t)[k - 1].pc, "rows out of order");
			unwind_table__free(t);
		}
		cr_assert(pwrite(fd, &old, 1, (off_t)at) == 1);
		close(fd);
	}
	cr_log_info("%zu of 300 flipped files still gave a table\n", built);
	free(img);
	unlink(copy);
}
