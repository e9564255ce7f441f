// SPDX-License-Identifier: Apache-2.0
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/symbolize/kallsyms.h"
#include "daemon/symbolize/symbolizer.h"

static char tmp_path[] = "/tmp/xsprof-kallsyms-XXXXXX";

static const char *write_tmp(const char *text)
{
	int fd;

	strcpy(tmp_path, "/tmp/xsprof-kallsyms-XXXXXX");
	fd = mkostemp(tmp_path, O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return tmp_path;
}

static void remove_tmp(void)
{
	unlink(tmp_path);
}

/* Deliberately out of order, with duplicates, data symbols, modules and an unterminated line. */
static const char fake[] = "ffffffff81000000 T _stext\n"
			   "ffffffff81000000 T _text\n"
			   "ffffffff81000000 T startup_64\n"
			   "ffffffff81000100 t secondary_startup\n"
			   "ffffffff81000200 T do_work\n"
			   "ffffffff81000200 t __pfx_do_work\n"
			   "ffffffff81000300 W weak_fn\n"
			   "ffffffff81000400 T last_text_fn\n"
			   "ffffffff81000500 T _etext\n"
			   "ffffffff81200000 D some_data\n"
			   "ffffffff81200040 b some_bss\n"
			   "ffffffff81000280 r ro_in_text\n"
			   "not a line\n"
			   "ffffffff81000600\n"
			   "ffffffffc0001000 t mod_helper\t[mymod]\n"
			   "ffffffffc0001000 T mod_entry\t[mymod]\n"
			   "ffffffffc0001100 t mod_last\t[mymod]\n"
			   "ffffffffc0400000 t other_fn\t[other]\n"
			   "ffffffffc0800000 t bpf_prog_abc_handler\t[bpf]";

Test(kallsyms, fake_file, .fini = remove_tmp)
{
	struct kallsyms *k = kallsyms__load(write_tmp(fake));
	const struct ksym *s;

	cr_assert_not_null(k, "%s", strerror(errno));
	cr_assert(kallsyms__available(k));
	/* Text only; one per address; the _etext marker names nothing. */
	cr_assert_eq(kallsyms__count(k), 9);

	s = kallsyms__lookup(k, 0xffffffff81000000ULL);
	cr_assert_str_eq(s->name, "startup_64", "the function beats the section markers");
	cr_assert_null(s->module);
	cr_assert_str_eq(kallsyms__lookup(k, 0xffffffff810000ffULL)->name, "startup_64");
	cr_assert_str_eq(kallsyms__lookup(k, 0xffffffff81000100ULL)->name, "secondary_startup");
	s = kallsyms__lookup(k, 0xffffffff81000210ULL);
	cr_assert_str_eq(s->name, "do_work", "global T beats local t at one address");
	cr_assert_eq(s->addr, 0xffffffff81000200ULL);
	cr_assert_eq(s->end, 0xffffffff81000280ULL, "a data symbol ends the text symbol");
	cr_assert_null(kallsyms__lookup(k, 0xffffffff81000290ULL), "inside a data symbol");
	cr_assert_str_eq(kallsyms__lookup(k, 0xffffffff81000300ULL)->name, "weak_fn");
	cr_assert_str_eq(kallsyms__lookup(k, 0xffffffff810004ffULL)->name, "last_text_fn");
	cr_assert_null(kallsyms__lookup(k, 0xffffffff81000500ULL), "past _etext");
	cr_assert_null(kallsyms__lookup(k, 0xffffffff81100000ULL));
	cr_assert_null(kallsyms__lookup(k, 0xffffffff80000000ULL), "before the first symbol");
	cr_assert_null(kallsyms__lookup(k, 0), "address 0");

	s = kallsyms__lookup(k, 0xffffffffc0001010ULL);
	cr_assert_str_eq(s->name, "mod_entry");
	cr_assert_str_eq(s->module, "mymod");
	s = kallsyms__lookup(k, 0xffffffffc0001180ULL);
	cr_assert_str_eq(s->name, "mod_last");
	cr_assert_str_eq(s->module, "mymod");
	/* The last function of a module must not swallow everything up to the next module. */
	cr_assert_null(kallsyms__lookup(k, 0xffffffffc0001100ULL + KALLSYMS_MAX_TAIL));
	cr_assert_null(kallsyms__lookup(k, 0xffffffffc03fffffULL));
	cr_assert_str_eq(kallsyms__lookup(k, 0xffffffffc0400004ULL)->module, "other");
	s = kallsyms__lookup(k, 0xffffffffc0800010ULL);
	cr_assert_str_eq(s->name, "bpf_prog_abc_handler");
	cr_assert_str_eq(s->module, "bpf");
	cr_assert_null(kallsyms__lookup(k, UINT64_MAX));

	cr_assert_eq(kallsyms__find(k, "do_work")->addr, 0xffffffff81000200ULL);
	cr_assert_null(kallsyms__find(k, "some_data"));
	cr_assert_null(kallsyms__find(k, "nope"));
	kallsyms__free(k);
}

Test(kallsyms, restricted_addresses_are_unavailable, .fini = remove_tmp)
{
	struct kallsyms *k = kallsyms__load(write_tmp("0000000000000000 T _text\n"
						      "0000000000000000 T do_work\n"
						      "0000000000000000 t mod_fn\t[mymod]\n"));

	cr_assert_not_null(k);
	cr_assert_not(kallsyms__available(k));
	cr_assert_eq(kallsyms__count(k), 0);
	cr_assert_null(kallsyms__lookup(k, 0));
	cr_assert_null(kallsyms__lookup(k, 0xffffffff81000000ULL));
	kallsyms__free(k);
}

Test(kallsyms, empty_and_missing)
{
	struct kallsyms *k;

	k = kallsyms__load(write_tmp(""));
	cr_assert_not_null(k);
	cr_assert_not(kallsyms__available(k));
	cr_assert_null(kallsyms__lookup(k, 0xffffffff81000000ULL));
	kallsyms__free(k);
	remove_tmp();

	errno = 0;
	cr_assert_null(kallsyms__load("/nonexistent/kallsyms"));
	cr_assert_eq(errno, ENOENT);
	kallsyms__free(NULL);
}

/* Reads /proc/kallsyms itself: name -> address of a few symbols, for the comparisons below. */
static uint64_t proc_addr_of(const char *want, char *ret_type)
{
	char line[512], name[256], type;
	unsigned long long addr;
	uint64_t found = 0;
	FILE *f = fopen("/proc/kallsyms", "re");

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %255s", &addr, &type, name) == 3 && !strcmp(name, want)) {
			found = addr;
			if (ret_type)
				*ret_type = type;
			break;
		}
	}
	fclose(f);
	return found;
}

Test(kallsyms, real_proc_kallsyms)
{
	struct kallsyms *k = kallsyms__load(NULL);
	uint64_t text, vfs_read;
	const struct ksym *s;
	char type = 0;

	cr_assert_not_null(k, "/proc/kallsyms: %s", strerror(errno));
	/* CI runs as root with kptr_restrict allowing it; anything else must fail loudly. */
	cr_assert(kallsyms__available(k),
		  "kallsyms addresses are hidden: run as root, kptr_restrict<2");
	cr_assert_gt(kallsyms__count(k), 1000);

	text = proc_addr_of("_text", NULL);
	cr_assert_neq(text, 0);
	s = kallsyms__lookup(k, text);
	cr_assert_not_null(s, "_text %" PRIx64 " unresolved", text);
	cr_assert_eq(s->addr, text);
	cr_assert_null(s->module);

	vfs_read = proc_addr_of("vfs_read", &type);
	cr_assert_neq(vfs_read, 0);
	cr_assert(type == 'T' || type == 't');
	s = kallsyms__lookup(k, vfs_read + 1);
	cr_assert_not_null(s);
	cr_assert_str_eq(s->name, "vfs_read");
	cr_assert_eq(kallsyms__find(k, "vfs_read")->addr, vfs_read);
	kallsyms__free(k);
}

/* The cache of the static symbols: written on a miss, read on a hit, the same lookups either way;
 * a stale key (another boot or module list) or a file others may write is not trusted. */
Test(kallsyms, cache_of_the_static_symbols)
{
	char dir[] = "/tmp/xs_ksyms.XXXXXX", path[64], line[256];
	struct kallsyms *fresh, *cached, *again;
	uint64_t vfs_read = proc_addr_of("vfs_read", NULL);
	bool hit = true;
	FILE *f;

	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/kallsyms", dir);
	fresh = kallsyms__load_cached(path, &hit);
	cr_assert_not_null(fresh);
	cr_expect(!hit, "no cache yet, but it said it read one");
	cr_assert_eq(access(path, R_OK), 0, "the cache was not written");
	cached = kallsyms__load_cached(path, &hit);
	cr_assert_not_null(cached);
	cr_expect(hit, "the cache was written but not read");
	cr_assert_str_eq(kallsyms__lookup(cached, vfs_read + 1)->name, "vfs_read");
	/* Every static symbol (BPF programs and trampolines are left out) is the same. */
	for (size_t i = 0; i < kallsyms__count(fresh); i += 37) {
		struct ksym a = *kallsyms__at(fresh, i);
		const struct ksym *b;

		if (a.module && (!strcmp(a.module, "bpf") || !strncmp(a.module, "__builtin__", 11)))
			continue;
		b = kallsyms__lookup(cached, a.addr);
		cr_assert(
			b && b->addr == a.addr && !strcmp(a.name, b->name) &&
				(a.module ? b->module && !strcmp(a.module, b->module) : !b->module),
			"%s at %#llx differs in the cache (%s)", a.name, (unsigned long long)a.addr,
			b ? b->name : "missing");
		if (!a.module)
			cr_assert_eq(a.end, b->end, "%s", a.name);
	}
	cr_expect_leq(kallsyms__count(cached), kallsyms__count(fresh));
	/* Another key: read again from /proc (and written anew). */
	f = fopen(path, "r+");
	cr_assert(f && fgets(line, sizeof(line), f));
	rewind(f);
	fputs("xsprof-kallsyms 1 not-this-boot", f);
	fclose(f);
	again = kallsyms__load_cached(path, &hit);
	cr_expect(!hit, "a cache of another boot was trusted");
	kallsyms__free(again);
	/* Writable by others: not trusted. */
	again = kallsyms__load_cached(path, &hit);
	cr_expect(hit);
	kallsyms__free(again);
	chmod(path, 0666);
	again = kallsyms__load_cached(path, &hit);
	cr_expect(!hit, "a cache others may write was trusted");
	kallsyms__free(again);
	kallsyms__free(fresh);
	kallsyms__free(cached);
	unlink(path);
	rmdir(dir);
}

Test(kallsyms, symbolizer_kernel, .fini = remove_tmp)
{
	struct symbolizer_opts opts = {.kallsyms_path = write_tmp(fake)};
	struct symbolizer *s = symbolizer__new(&opts);
	struct symbolizer_stats st;

	cr_assert_not_null(s);
	cr_assert_str_eq(symbolizer__kernel(s, 0xffffffff81000204ULL), "do_work");
	cr_assert_str_eq(symbolizer__kernel(s, 0xffffffffc0001004ULL), "mod_entry");
	cr_assert_str_eq(symbolizer__kernel(s, 0xffffffff81000500ULL), "[unknown kernel]");
	/* A module's symbols keep their plain names; BPF programs get a marker. */
	cr_assert_str_eq(symbolizer__kernel(s, 0xffffffffc0400010ULL), "other_fn");
	cr_assert_str_eq(symbolizer__kernel(s, 0xffffffffc0800010ULL), "[bpf] handler");
	cr_assert_eq(symbolizer__kernel(s, 0xffffffffc0800010ULL),
		     symbolizer__kernel(s, 0xffffffffc0800020ULL));
	/* The same pointer each time: strings are interned. */
	cr_assert_eq(symbolizer__kernel(s, 0xffffffff81000204ULL),
		     symbolizer__kernel(s, 0xffffffff81000208ULL));
	symbolizer__stats(s, &st);
	cr_assert_eq(st.kernel_lookups, 9);
	cr_assert_eq(st.kernel_unresolved, 1);
	symbolizer__free(s);

	opts.kallsyms_path = "/nonexistent/kallsyms";
	s = symbolizer__new(&opts);
	cr_assert_str_eq(symbolizer__kernel(s, 0xffffffff81000204ULL), "[unknown kernel]");
	cr_assert_str_eq(symbolizer__kernel(s, 0xffffffff81000204ULL), "[unknown kernel]");
	symbolizer__stats(s, &st);
	cr_assert_eq(st.kernel_lookups, 2);
	cr_assert_eq(st.kernel_unresolved, 2);
	symbolizer__free(s);
}

Test(kallsyms, symbolizer_kernel_real)
{
	struct symbolizer *s = symbolizer__new(NULL);
	uint64_t vfs_read = proc_addr_of("vfs_read", NULL);

	cr_assert_not_null(s);
	cr_assert_str_eq(symbolizer__kernel(s, vfs_read + 4), "vfs_read");
	symbolizer__free(s);
}
