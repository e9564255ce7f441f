// SPDX-License-Identifier: Apache-2.0
#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/symbolize/elf_symtab.h"

static struct elf_symtab *open_ok(const char *path)
{
	struct elf_symtab *t = elf_symtab__open(path);

	cr_assert_not_null(t, "%s: %s", path, strerror(errno));
	return t;
}

static const struct elf_sym *find_ok(const struct elf_symtab *t, const char *name)
{
	const struct elf_sym *s = elf_symtab__find(t, name);

	cr_assert_not_null(s, "no symbol %s", name);
	return s;
}

/* Every address inside a function names it; the first byte after does not. */
static void assert_covers(const struct elf_symtab *t, const struct elf_sym *s)
{
	const struct elf_sym *after;

	cr_assert_gt(s->size, 0);
	cr_assert_eq(elf_symtab__lookup(t, s->addr), s, "%s start", s->name);
	cr_assert_eq(elf_symtab__lookup(t, s->addr + s->size / 2), s, "%s middle", s->name);
	cr_assert_eq(elf_symtab__lookup(t, s->addr + s->size - 1), s, "%s end", s->name);
	after = elf_symtab__lookup(t, s->addr + s->size);
	cr_assert_neq(after, s, "%s reaches past its size", s->name);
}

/* Runs cmd and returns the hex after `key` in its output (e.g. readelf's "Build ID: "). */
static bool popen_find(const char *cmd, const char *key, char *ret, size_t size)
{
	char line[1024], *p;
	bool found = false;
	FILE *f = popen(cmd, "r");

	cr_assert_not_null(f, "%s", cmd);
	while (fgets(line, sizeof(line), f)) {
		p = strstr(line, key);
		if (p && !found) {
			snprintf(ret, size, "%s", p + strlen(key));
			ret[strcspn(ret, " \n")] = '\0';
			found = true;
		}
	}
	pclose(f);
	return found;
}

static void assert_build_id(const struct elf_symtab *t, const char *path)
{
	char cmd[1024], want[256], got[2 * ELF_SYMTAB_MAX_BUILD_ID + 1];
	const uint8_t *id;
	size_t len, i;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s'", path);
	cr_assert(popen_find(cmd, "Build ID: ", want, sizeof(want)), "readelf shows no build-id");
	len = elf_symtab__build_id(t, &id);
	cr_assert_eq(len, 20, "sha1 build-id, got %zu bytes", len);
	for (i = 0; i < len; i++)
		sprintf(got + 2 * i, "%02x", id[i]);
	cr_assert_str_eq(got, want);
}

/*
 * Compares with nm: each of our fixture's functions resolves, at its nm address, to itself.
 * Returns how many were checked.
 */
static int assert_matches_nm(const struct elf_symtab *t, const char *path, bool dynamic)
{
	char cmd[1024], line[1024], name[512], type;
	unsigned long long addr;
	const struct elf_sym *s;
	int checked = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "nm --defined-only %s '%s'", dynamic ? "-D" : "", path);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %511s", &addr, &type, name) != 3)
			continue;
		if (strncmp(name, "symfix_", 7) && strcmp(name, "main"))
			continue;
		if (type != 'T' && type != 't' && type != 'W' && type != 'w')
			continue;
		s = elf_symtab__lookup(t, addr);
		cr_assert_not_null(s, "%s at %llx (nm) unresolved", name, addr);
		cr_assert_eq(s->addr, addr);
		cr_assert_str_eq(s->name, name);
		cr_assert_eq(elf_symtab__find(t, name), s);
		checked++;
	}
	cr_assert_eq(pclose(f), 0, "%s failed", cmd);
	return checked;
}

static void assert_sorted_unique(const struct elf_symtab *t)
{
	size_t i;

	for (i = 1; i < elf_symtab__count(t); i++)
		cr_assert_lt(elf_symtab__at(t, i - 1)->addr, elf_symtab__at(t, i)->addr);
	cr_assert_null(elf_symtab__at(t, elf_symtab__count(t)));
}

Test(elf_symtab, pie_executable)
{
	struct elf_symtab *t = open_ok(SYMFIX_PIE);
	const struct elf_sym *a, *b;
	uint64_t off, vaddr;

	cr_assert_eq(elf_symtab__type(t), ET_DYN);
	a = find_ok(t, "symfix_main_alpha");
	b = find_ok(t, "symfix_main_beta");
	assert_covers(t, a);
	assert_covers(t, b);
	assert_covers(t, find_ok(t, "main"));
	cr_assert_eq(assert_matches_nm(t, SYMFIX_PIE, false), 3);
	assert_sorted_unique(t);
	assert_build_id(t, SYMFIX_PIE);

	cr_assert_eq(elf_symtab__vaddr_to_offset(t, a->addr + 2, &off), 0);
	cr_assert_eq(elf_symtab__offset_to_vaddr(t, off, &vaddr), 0);
	cr_assert_eq(vaddr, a->addr + 2);
	cr_assert_eq(elf_symtab__vaddr_to_offset(t, UINT64_MAX - 4, &off), -ENOENT);
	cr_assert_eq(elf_symtab__offset_to_vaddr(t, UINT64_MAX - 4, &vaddr), -ENOENT);
	cr_assert_null(elf_symtab__lookup(t, 0));
	cr_assert_null(elf_symtab__lookup(t, UINT64_MAX));
	elf_symtab__free(t);
}

Test(elf_symtab, non_pie_executable)
{
	struct elf_symtab *t = open_ok(SYMFIX_NOPIE);
	const struct elf_sym *a;
	uint64_t off, vaddr;

	cr_assert_eq(elf_symtab__type(t), ET_EXEC);
	a = find_ok(t, "symfix_main_alpha");
	cr_assert_geq(a->addr, 0x400000, "linked at its fixed address");
	assert_covers(t, a);
	cr_assert_eq(assert_matches_nm(t, SYMFIX_NOPIE, false), 3);
	assert_build_id(t, SYMFIX_NOPIE);
	/* Offsets and addresses differ by the segment's base. */
	cr_assert_eq(elf_symtab__vaddr_to_offset(t, a->addr, &off), 0);
	cr_assert_lt(off, a->addr);
	cr_assert_eq(elf_symtab__offset_to_vaddr(t, off, &vaddr), 0);
	cr_assert_eq(vaddr, a->addr);
	elf_symtab__free(t);
}

Test(elf_symtab, shared_library)
{
	struct elf_symtab *t = open_ok(SYMFIX_LIB);
	const struct elf_sym *beta, *nosize, *after;

	cr_assert_eq(elf_symtab__type(t), ET_DYN);
	assert_covers(t, find_ok(t, "symfix_lib_alpha"));
	assert_covers(t, find_ok(t, "symfix_lib_weak"));
	assert_covers(t, find_ok(t, "symfix_lib_local"));
	cr_assert_geq(assert_matches_nm(t, SYMFIX_LIB, false), 6);
	assert_sorted_unique(t);
	assert_build_id(t, SYMFIX_LIB);

	/* Aliases at one address collapse to the global name, whatever the alphabet says. */
	beta = elf_symtab__lookup(t, find_ok(t, "symfix_lib_beta")->addr);
	cr_assert_str_eq(beta->name, "symfix_lib_beta");
	cr_assert_null(elf_symtab__find(t, "aaa_weak_alias_of_beta"));
	cr_assert_null(elf_symtab__find(t, "aaa_local_alias_of_beta"));

	/* A symbol without a size reaches to the next one. */
	nosize = find_ok(t, "symfix_asm_nosize");
	after = find_ok(t, "symfix_asm_after");
	cr_assert_gt(after->addr, nosize->addr);
	cr_assert_eq(nosize->size, after->addr - nosize->addr);
	cr_assert_eq(elf_symtab__lookup(t, nosize->addr + 1), nosize);
	cr_assert_eq(elf_symtab__lookup(t, after->addr), after);
	elf_symtab__free(t);
}

Test(elf_symtab, stripped_library_falls_back_to_dynsym)
{
	struct elf_symtab *full = open_ok(SYMFIX_LIB), *t = open_ok(SYMFIX_LIB_STRIPPED);
	const struct elf_sym *a, *fa;

	cr_assert_null(elf_symtab__find(t, "symfix_lib_local"), ".symtab is gone");
	a = find_ok(t, "symfix_lib_alpha");
	fa = find_ok(full, "symfix_lib_alpha");
	cr_assert_eq(a->addr, fa->addr);
	cr_assert_eq(a->size, fa->size);
	assert_covers(t, a);
	assert_covers(t, find_ok(t, "symfix_lib_weak"));
	cr_assert_str_eq(elf_symtab__lookup(t, find_ok(full, "symfix_lib_beta")->addr)->name,
			 "symfix_lib_beta");
	cr_assert_geq(assert_matches_nm(t, SYMFIX_LIB_STRIPPED, true), 4);
	/* The static function is not named after a neighbour. */
	a = elf_symtab__lookup(t, find_ok(full, "symfix_lib_local")->addr);
	cr_assert(!a || strcmp(a->name, "symfix_lib_local_ptr"), "local named as its neighbour");
	assert_build_id(t, SYMFIX_LIB_STRIPPED);
	cr_assert_lt(elf_symtab__count(t), elf_symtab__count(full));
	elf_symtab__free(t);
	elf_symtab__free(full);
}

Test(elf_symtab, stripped_executable_keeps_segments)
{
	struct elf_symtab *full = open_ok(SYMFIX_PIE), *t = open_ok(SYMFIX_PIE_STRIPPED);
	const struct elf_sym *a = find_ok(full, "symfix_main_alpha");
	uint64_t off, vaddr;

	/* A PIE exports nothing: no function symbols, but addresses still convert. */
	cr_assert_null(elf_symtab__find(t, "symfix_main_alpha"));
	cr_assert_null(elf_symtab__lookup(t, a->addr));
	cr_assert_eq(elf_symtab__vaddr_to_offset(full, a->addr, &off), 0);
	cr_assert_eq(elf_symtab__offset_to_vaddr(t, off, &vaddr), 0);
	cr_assert_eq(vaddr, a->addr);
	assert_build_id(t, SYMFIX_PIE_STRIPPED);
	elf_symtab__free(t);
	elf_symtab__free(full);
}

Test(elf_symtab, cxx_names_demangle)
{
	struct elf_symtab *t = open_ok(SYMFIX_CXX);
	const struct elf_sym *frob, *twice, *m;

	frob = find_ok(t, "_ZN6symfix5outer6Widget4frobEi");
	cr_assert_str_eq(elf_symtab__demangled(t, frob), "symfix::outer::Widget::frob(int)");
	/* Cached: the same string the second time. */
	cr_assert_eq(elf_symtab__demangled(t, frob), elf_symtab__demangled(t, frob));
	twice = find_ok(t, "_ZN6symfix5twiceIiEET_S1_");
	cr_assert_str_eq(elf_symtab__demangled(t, twice), "int symfix::twice<int>(int)");
	twice = find_ok(t, "_ZN6symfix5twiceIlEET_S1_");
	cr_assert_str_eq(elf_symtab__demangled(t, twice), "long symfix::twice<long>(long)");
	/* C names are returned as they are. */
	m = find_ok(t, "main");
	cr_assert_eq(elf_symtab__demangled(t, m), m->name);
	assert_covers(t, frob);
	elf_symtab__free(t);
}

/* Scratch files for the error cases. */
static char scratch_dir[] = "/tmp/xsprof-elf-XXXXXX";
static char scratch[256];

static void scratch_init(void)
{
	strcpy(scratch_dir, "/tmp/xsprof-elf-XXXXXX");
	cr_assert_not_null(mkdtemp(scratch_dir));
	snprintf(scratch, sizeof(scratch), "%s/f", scratch_dir);
}

static void scratch_fini(void)
{
	unlink(scratch);
	rmdir(scratch_dir);
}

static void write_scratch(const void *data, size_t len)
{
	int fd = open(scratch, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static unsigned char *slurp(const char *path, size_t *ret_len)
{
	struct stat st;
	unsigned char *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size);
	cr_assert_not_null(buf);
	cr_assert_eq(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	*ret_len = (size_t)st.st_size;
	return buf;
}

static void assert_fails(int want_errno, const char *what)
{
	errno = 0;
	cr_assert_null(elf_symtab__open(scratch), "%s was accepted", what);
	cr_assert_eq(errno, want_errno, "%s: errno %d (%s), want %d", what, errno, strerror(errno),
		     want_errno);
}

Test(elf_symtab, not_found_not_elf_not_regular, .init = scratch_init, .fini = scratch_fini)
{
	errno = 0;
	cr_assert_null(elf_symtab__open("/nonexistent/file.so"));
	cr_assert_eq(errno, ENOENT);
	cr_assert_null(elf_symtab__open("/tmp"));
	cr_assert_eq(errno, EINVAL, "a directory is not a file to read");
	cr_assert_null(elf_symtab__open("/dev/null"));
	cr_assert_eq(errno, EINVAL, "a device is not a file to read");

	write_scratch("#!/bin/sh\necho not an ELF\n", 26);
	assert_fails(ENOEXEC, "a shell script");
	write_scratch("", 0);
	assert_fails(ENOEXEC, "an empty file");
	write_scratch("\177ELF", 4);
	assert_fails(EBADMSG, "just the magic");
	elf_symtab__free(NULL);
}

Test(elf_symtab, truncated_files_fail, .init = scratch_init, .fini = scratch_fini)
{
	size_t len, cut, cuts[] = {16, 52, 63, 64, 100, 1000};
	unsigned char *buf = slurp(SYMFIX_LIB, &len);
	size_t i;

	for (i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		write_scratch(buf, cuts[i]);
		assert_fails(EBADMSG, "a truncated header");
	}
	/* Cut inside the section header table (which GNU ld puts last), or before it. */
	for (cut = len - 1; cut > len / 4; cut -= len / 16) {
		write_scratch(buf, cut);
		errno = 0;
		cr_assert_null(elf_symtab__open(scratch), "truncated to %zu of %zu accepted", cut,
			       len);
		cr_assert_eq(errno, EBADMSG, "truncated to %zu: %s", cut, strerror(errno));
	}
	free(buf);
}

static Elf64_Shdr *find_section(unsigned char *buf, uint32_t type)
{
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	Elf64_Shdr *sh = (Elf64_Shdr *)(buf + eh->e_shoff);
	int i;

	for (i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type == type)
			return &sh[i];
	}
	cr_assert_fail("no section of type %u", type);
	return NULL;
}

Test(elf_symtab, corrupt_headers_fail, .init = scratch_init, .fini = scratch_fini)
{
	size_t len;
	unsigned char *orig = slurp(SYMFIX_LIB, &len), *buf = malloc(len);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	Elf64_Shdr *sh;

	cr_assert_not_null(buf);
	cr_assert_eq(orig[EI_CLASS], ELFCLASS64, "the test edits 64-bit headers");

	memcpy(buf, orig, len);
	eh->e_shoff = len + 4096;
	write_scratch(buf, len);
	assert_fails(EBADMSG, "section headers past the end");

	memcpy(buf, orig, len);
	eh->e_shnum = 0xfff0;
	write_scratch(buf, len);
	assert_fails(EBADMSG, "too many sections");

	memcpy(buf, orig, len);
	eh->e_phoff = len - 8;
	write_scratch(buf, len);
	assert_fails(EBADMSG, "program headers past the end");

	memcpy(buf, orig, len);
	sh = find_section(buf, SHT_SYMTAB);
	sh->sh_size = (uint64_t)1 << 40;
	write_scratch(buf, len);
	assert_fails(EBADMSG, "symbol table larger than the file");

	memcpy(buf, orig, len);
	sh = find_section(buf, SHT_SYMTAB);
	sh->sh_offset = len - 16;
	write_scratch(buf, len);
	assert_fails(EBADMSG, "symbol table running past the end");

	memcpy(buf, orig, len);
	sh = find_section(buf, SHT_DYNSYM);
	sh->sh_entsize = 7;
	write_scratch(buf, len);
	assert_fails(EBADMSG, "bad symbol entry size");

	memcpy(buf, orig, len);
	buf[EI_CLASS] = 9;
	write_scratch(buf, len);
	errno = 0;
	cr_assert_null(elf_symtab__open(scratch), "bad ELF class accepted");
	cr_assert(errno == EBADMSG || errno == ENOEXEC, "bad class: %s", strerror(errno));

	/* A string table link that points nowhere loses the names, not the process. */
	memcpy(buf, orig, len);
	sh = find_section(buf, SHT_SYMTAB);
	sh->sh_link = 0xfff;
	write_scratch(buf, len);
	elf_symtab__free(elf_symtab__open(scratch));

	free(buf);
	free(orig);
}

/* Random damage anywhere in the headers and tables: any result but a crash is fine. */
Test(elf_symtab, random_corruption_never_crashes, .init = scratch_init, .fini = scratch_fini)
{
	size_t len, i, j, pos;
	unsigned char *orig = slurp(SYMFIX_LIB, &len), *buf = malloc(len);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)orig;
	uint64_t seed = 0x243f6a8885a308d3ULL, shdrs = eh->e_shoff;
	struct elf_symtab *t;
	int opened = 0;

	cr_assert_not_null(buf);
	for (i = 0; i < 400; i++) {
		memcpy(buf, orig, len);
		for (j = 0; j < 1 + i % 8; j++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			/* Aim at the ELF header, the section header table, or anywhere. */
			switch ((seed >> 60) % 3) {
			case 0:
				pos = (seed >> 20) % 64;
				break;
			case 1:
				pos = shdrs + (seed >> 20) % (len - shdrs);
				break;
			default:
				pos = (seed >> 20) % len;
			}
			buf[pos] = (unsigned char)(seed >> 33);
		}
		write_scratch(buf, len);
		t = elf_symtab__open(scratch);
		if (t) {
			opened++;
			for (j = 0; j < elf_symtab__count(t); j++)
				elf_symtab__lookup(t, elf_symtab__at(t, j)->addr + 1);
			elf_symtab__free(t);
		} else {
			cr_assert_neq(errno, 0);
		}
	}
	cr_log_info("%d of 400 damaged copies still opened", opened);
	free(buf);
	free(orig);
}

/* Every named stub of a file: how many, and whether one has this name. */
static size_t plt_names(const struct elf_symtab *t, const char *want, bool *ret_found)
{
	size_t n = 0;

	*ret_found = false;
	for (size_t i = 0; i < elf_symtab__count(t); i++) {
		const char *name = elf_symtab__at(t, i)->name;
		size_t len = strlen(name);

		if (len > 4 && !strcmp(name + len - 4, "@plt")) {
			n++;
			*ret_found = *ret_found || !strcmp(name, want);
		}
	}
	return n;
}

Test(elf_symtab, plt_stubs_are_named_after_their_relocation)
{
	struct elf_symtab *t = open_ok(SYMFIX_BURN_LIB), *libc;
	const struct elf_sym *stub, *fn;
	bool found;

	/* The burn library calls clock_gettime through its PLT. */
	cr_assert_geq(plt_names(t, "clock_gettime@plt", &found), 1);
	cr_assert(found, "no clock_gettime@plt in %s", SYMFIX_BURN_LIB);
	stub = find_ok(t, "clock_gettime@plt");
	cr_assert(stub->size == 16 || stub->size == 8, "stub size %" PRIu64, stub->size);
	cr_assert_eq(elf_symtab__lookup(t, stub->addr + stub->size - 1), stub);
	/* A stub never shadows a real function. */
	fn = find_ok(t, "symfix_burn_spin");
	cr_assert_eq(elf_symtab__lookup(t, fn->addr), fn);
	elf_symtab__free(t);

	/* libc calls its own IFUNCs (memcpy, strlen...) through IRELATIVE slots: named by the
	 * IFUNC whose resolver the relocation names. */
	libc = elf_symtab__open("/lib/x86_64-linux-gnu/libc.so.6");
	cr_assert_not_null(libc, "libc: %s", strerror(errno));
	cr_assert_geq(plt_names(libc, "memcpy@plt", &found), 10);
	cr_assert(found, "no memcpy@plt in libc");
	elf_symtab__free(libc);
}

/*
 * A stripped Go binary (tests/workloads/gomix through strip -s): no .symtab, no .dynsym, but
 * its functions are named from the .gopclntab Go keeps for its own tracebacks, at the same
 * addresses as the unstripped file's symbols, each reaching to the next function.
 */
Test(elf_symtab, stripped_go_binary_named_from_gopclntab)
{
	const char *stripped = "/tmp/xs_gomix_stripped";
	static const char *const names[] = {"main.mixA", "main.callerA", "main.hashB",
					    "runtime.main"};
	struct elf_symtab *full, *t;
	char cmd[512];

	cr_assert(XS_GOMIX_PATH[0], "built without a go toolchain (apt-get install golang-go)");
	snprintf(cmd, sizeof(cmd), "strip -s -o %s %s", stripped, XS_GOMIX_PATH);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	full = elf_symtab__open(XS_GOMIX_PATH);
	t = elf_symtab__open(stripped);
	cr_assert(full && t, "%s", strerror(errno));
	cr_expect(elf_symtab__has_symtab(full) && !elf_symtab__has_symtab(t));
	cr_expect_eq(elf_symtab__go_names(full), 0, "a file with .symtab keeps its own names");
	cr_expect_gt(elf_symtab__go_names(t), 1000);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct elf_sym *want = elf_symtab__find(full, names[i]), *got;

		cr_assert(want, "%s not in the unstripped file", names[i]);
		got = elf_symtab__lookup(t, want->addr + want->size / 2);
		cr_assert(got, "%s: nothing at %#llx", names[i],
			  (unsigned long long)(want->addr + want->size / 2));
		cr_expect_str_eq(got->name, names[i]);
		cr_expect_eq(got->addr, want->addr, "%s", names[i]);
		/* Up to the next function: the alignment padding after it is counted. */
		cr_expect(got->size >= want->size && got->size < want->size + 32, "%s: %llu, %llu",
			  names[i], (unsigned long long)got->size, (unsigned long long)want->size);
	}
	/* Assembly keeps its Go name (the ELF symbol adds an ABI suffix). */
	{
		const struct elf_sym *want = elf_symtab__find(full, "crypto/sha256.block.abi0"),
				     *got;

		cr_assert(want);
		got = elf_symtab__lookup(t, want->addr);
		cr_expect(got && !strcmp(got->name, "crypto/sha256.block"), "%s",
			  got ? got->name : "(none)");
	}
	elf_symtab__free(full);
	elf_symtab__free(t);
	unlink(stripped);
}
