// SPDX-License-Identifier: Apache-2.0
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/symbolize/elf_symtab.h"
#include "daemon/symbolize/proc_maps.h"
#include "daemon/symbolize/symbolizer.h"
#include "fixture_cxx.h"

__attribute__((noinline, used)) int symtest_global_function(int x)
{
	return x * 31 + 7;
}

static __attribute__((noinline, used)) int symtest_static_function(int x)
{
	return x * 37 - 5;
}

static uint64_t addr_of(const void *p)
{
	return (uint64_t)(uintptr_t)p;
}

static struct symbolizer *new_ok(const struct symbolizer_opts *opts)
{
	struct symbolizer *s = symbolizer__new(opts);

	cr_assert_not_null(s, "%s", strerror(errno));
	return s;
}

static void *dlopen_ok(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	cr_assert_not_null(h, "%s", dlerror());
	return h;
}

static void *dlsym_ok(void *h, const char *name)
{
	void *p = dlsym(h, name);

	cr_assert_not_null(p, "%s", dlerror());
	return p;
}

Test(symbolizer, own_functions)
{
	struct symbolizer *s = new_ok(NULL);
	struct symbolizer_stats st;
	pid_t me = getpid();
	const char *name;

	cr_assert_eq(symbolizer__add_process(s, me), 0);
	cr_assert_str_eq(symbolizer__user(s, me, addr_of(symtest_global_function)),
			 "symtest_global_function");
	cr_assert_str_eq(symbolizer__user(s, me, addr_of(symtest_global_function) + 3),
			 "symtest_global_function", "an address inside names the function");
	cr_assert_str_eq(symbolizer__user(s, me, addr_of(symtest_static_function)),
			 "symtest_static_function");
	/* A libc function, through whatever symbols Debian's stripped libc keeps. */
	name = symbolizer__user(s, me, addr_of(dlsym(RTLD_DEFAULT, "getpid")));
	cr_assert(strstr(name, "getpid"), "getpid named %s", name);

	symbolizer__stats(s, &st);
	cr_assert_eq(st.processes, 1);
	cr_assert_eq(st.files_loaded, 2);
	cr_assert_eq(st.files_failed, 0);
	cr_assert_eq(st.user_lookups, 4);
	cr_assert_eq(st.user_unresolved, 0);
	/* Warm lookups read nothing more and return the very same string. */
	cr_assert_eq(symbolizer__user(s, me, addr_of(symtest_global_function)),
		     symbolizer__user(s, me, addr_of(symtest_global_function) + 1));
	symbolizer__stats(s, &st);
	cr_assert_eq(st.files_loaded, 2);
	symbolizer__free(s);
}

Test(symbolizer, dlopened_libraries)
{
	void *lib = dlopen_ok(SYMFIX_LIB), *stripped = dlopen_ok(SYMFIX_LIB_STRIPPED);
	void *cxx = dlopen_ok(SYMFIX_CXX_LIB);
	int (*(*local_ptr)(void))(int) = dlsym_ok(lib, "symfix_lib_local_ptr");
	void *(*frob_addr)(void) = dlsym_ok(cxx, "symfix_cxx_frob_addr");
	void *(*twice_addr)(void) = dlsym_ok(cxx, "symfix_cxx_twice_int_addr");
	struct symbolizer_opts raw = {.no_demangle = true};
	struct symbolizer *s = new_ok(NULL), *r = new_ok(&raw);
	struct symbolizer_stats st;
	pid_t me = getpid();

	cr_assert_eq(symbolizer__add_process(s, me), 0);
	cr_assert_str_eq(symbolizer__user(s, me, addr_of(dlsym_ok(lib, "symfix_lib_alpha"))),
			 "symfix_lib_alpha");
	cr_assert_str_eq(symbolizer__user(s, me, addr_of(dlsym_ok(lib, "symfix_lib_beta")) + 1),
			 "symfix_lib_beta");
	cr_assert_str_eq(symbolizer__user(s, me, addr_of(local_ptr())), "symfix_lib_local");
	/* The stripped copy is another file: only .dynsym names it. */
	cr_assert_neq(dlsym_ok(stripped, "symfix_lib_alpha"), dlsym_ok(lib, "symfix_lib_alpha"));
	cr_assert_str_eq(
		symbolizer__user(s, me, addr_of(dlsym_ok(stripped, "symfix_lib_alpha")) + 2),
		"symfix_lib_alpha");
	cr_assert_str_eq(symbolizer__user(s, me, addr_of(frob_addr())),
			 "symfix::outer::Widget::frob(int)");
	cr_assert_str_eq(symbolizer__user(s, me, addr_of(twice_addr())),
			 "int symfix::twice<int>(int)");
	cr_assert_str_eq(symbolizer__user(r, me, addr_of(frob_addr())),
			 "_ZN6symfix5outer6Widget4frobEi");

	symbolizer__stats(s, &st);
	cr_assert_eq(st.files_loaded, 3, "each library read once");
	cr_assert_eq(st.user_unresolved, 0);
	symbolizer__free(s);
	symbolizer__free(r);
	dlclose(cxx);
	dlclose(stripped);
	dlclose(lib);
}

Test(symbolizer, dlopen_after_snapshot_is_found_after_refresh)
{
	struct symbolizer *s = new_ok(NULL);
	pid_t me = getpid();
	uint64_t alpha;
	void *lib;

	cr_assert_eq(symbolizer__add_process(s, me), 0);
	lib = dlopen_ok(SYMFIX_LIB);
	alpha = addr_of(dlsym_ok(lib, "symfix_lib_alpha"));
	/* Maps were read a moment ago: not again yet. */
	cr_assert_str_eq(symbolizer__user(s, me, alpha), "[unknown]");
	usleep(1100 * 1000);
	cr_assert_str_eq(symbolizer__user(s, me, alpha), "symfix_lib_alpha");
	symbolizer__free(s);
	dlclose(lib);
}

Test(symbolizer, unknown_pid_and_address)
{
	struct symbolizer *s = new_ok(NULL);
	struct symbolizer_stats st;

	cr_assert_eq(symbolizer__add_process(s, INT_MAX), -ESRCH);
	cr_assert_eq(symbolizer__add_process(s, 0), -EINVAL);
	cr_assert_eq(symbolizer__add_process(s, -1), -EINVAL);
	cr_assert_str_eq(symbolizer__user(s, INT_MAX, addr_of(symtest_global_function)),
			 "[unknown]");
	cr_assert_str_eq(symbolizer__user(s, 0, 0x1000), "[unknown]");
	symbolizer__forget_process(s, INT_MAX);
	symbolizer__forget_process(s, 12345678);

	cr_assert_eq(symbolizer__add_process(s, getpid()), 0);
	/* The first page is never mapped. */
	cr_assert_str_eq(symbolizer__user(s, getpid(), 0x10), "[unknown]");
	cr_assert_str_eq(symbolizer__user(s, getpid(), UINT64_MAX), "[unknown]");
	symbolizer__stats(s, &st);
	cr_assert_eq(st.user_lookups, 4);
	cr_assert_eq(st.user_unresolved, 4);
	cr_assert_eq(st.processes, 1);
	symbolizer__free(s);
	symbolizer__free(NULL);
}

Test(symbolizer, pid_seen_without_add_is_snapshotted)
{
	struct symbolizer *s = new_ok(NULL);
	struct symbolizer_stats st;

	cr_assert_str_eq(symbolizer__user(s, getpid(), addr_of(symtest_global_function)),
			 "symtest_global_function");
	symbolizer__stats(s, &st);
	cr_assert_eq(st.processes, 1);
	symbolizer__free(s);
}

/* A mapping of its own (PROT_NONE neighbours stop the kernel merging it with others). */
static char *isolated_mapping(int prot, int flags, int fd, size_t page)
{
	char *base = mmap(NULL, 3 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *mid;

	cr_assert_neq(base, MAP_FAILED);
	mid = mmap(base + page, page, prot, flags | MAP_FIXED, fd, 0);
	cr_assert_eq(mid, base + page);
	return mid;
}

Test(symbolizer, special_and_anonymous_mappings)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct symbolizer *s = new_ok(NULL);
	const struct proc_map *heap = NULL;
	struct proc_maps *maps;
	pid_t me = getpid();
	char *anon, *memfd_map, want[64];
	const char *name;
	uint64_t vdso = getauxval(AT_SYSINFO_EHDR);
	int local = 1, memfd;
	size_t i;

	anon = isolated_mapping(PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, page);
	memfd = memfd_create("jitcode", MFD_CLOEXEC);
	cr_assert_geq(memfd, 0);
	cr_assert_eq(ftruncate(memfd, (off_t)page), 0);
	memfd_map = isolated_mapping(PROT_READ, MAP_SHARED, memfd, page);
	cr_assert_eq(symbolizer__add_process(s, me), 0);

	/* JIT code lives in anonymous memory: kept as a frame, not dropped. */
	cr_assert_str_eq(symbolizer__user(s, me, addr_of(anon) + 0x10), "[anon]+0x10");
	cr_assert_eq(symbolizer__user(s, me, addr_of(anon) + 0x10),
		     symbolizer__user(s, me, addr_of(anon) + 0x10), "interned");
	name = symbolizer__user(s, me, addr_of(&local));
	cr_assert(!strncmp(name, "[stack]+0x", 10), "stack named %s", name);
	cr_assert_neq(vdso, 0);
	cr_assert_str_eq(symbolizer__user(s, me, vdso + 0x20), "[vdso]+0x20");
	/* A memfd is a deleted file; its name is kept even though it is not an ELF. */
	name = symbolizer__user(s, me, addr_of(memfd_map) + 0x30);
	cr_assert_str_eq(name, "memfd:jitcode+0x30");

	maps = proc_maps__read(NULL, me);
	cr_assert_not_null(maps);
	for (i = 0; i < proc_maps__count(maps); i++) {
		const struct proc_map *m = proc_maps__at(maps, i);

		if (m->path && !strcmp(m->path, "[heap]"))
			heap = m;
	}
	if (heap) {
		snprintf(want, sizeof(want), "[heap]+0x%x", 0x28);
		cr_assert_str_eq(symbolizer__user(s, me, heap->start + 0x28), want);
	}
	proc_maps__free(maps);
	symbolizer__free(s);
	close(memfd);
}

struct child {
	pid_t pid;
	int to_child;
	uint64_t alpha; /* runtime address of symfix_main_alpha in the child */
};

/* Starts the fixture executable in "wait" mode and reads the address it prints. */
static struct child spawn_fixture(const char *path)
{
	int in[2], out[2];
	struct child c;
	char line[64] = "";
	ssize_t n;

	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	c.pid = fork();
	cr_assert_geq(c.pid, 0);
	if (c.pid == 0) {
		dup2(in[0], STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		execl(path, path, "wait", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	n = read(out[0], line, sizeof(line) - 1);
	close(out[0]);
	cr_assert_gt(n, 0, "fixture %s printed nothing", path);
	c.alpha = strtoull(line, NULL, 16);
	cr_assert_neq(c.alpha, 0);
	c.to_child = in[1];
	return c;
}

static void finish_child(struct child *c)
{
	int status;

	close(c->to_child);
	cr_assert_eq(waitpid(c->pid, &status, 0), c->pid);
	cr_assert(WIFEXITED(status));
}

Test(symbolizer, child_that_exited_still_resolves)
{
	struct child pie = spawn_fixture(SYMFIX_PIE), nopie = spawn_fixture(SYMFIX_NOPIE);
	struct symbolizer *s = new_ok(NULL);
	struct symbolizer_stats st;

	cr_assert_eq(symbolizer__add_process(s, pie.pid), 0);
	cr_assert_eq(symbolizer__add_process(s, nopie.pid), 0);
	finish_child(&pie);
	finish_child(&nopie);
	/* Gone now, and their files were never opened while they ran. */
	cr_assert_eq(kill(pie.pid, 0), -1);
	cr_assert_str_eq(symbolizer__user(s, pie.pid, pie.alpha), "symfix_main_alpha");
	cr_assert_str_eq(symbolizer__user(s, pie.pid, pie.alpha + 4), "symfix_main_alpha");
	cr_assert_str_eq(symbolizer__user(s, nopie.pid, nopie.alpha), "symfix_main_alpha");
	cr_assert_lt(nopie.alpha, 0x1000000, "non-PIE runs at its link address");

	/* A second snapshot of a dead pid fails but keeps the one taken while it lived. */
	cr_assert_eq(symbolizer__add_process(s, pie.pid), -ESRCH);
	cr_assert_str_eq(symbolizer__user(s, pie.pid, pie.alpha), "symfix_main_alpha");
	symbolizer__forget_process(s, pie.pid);
	cr_assert_str_eq(symbolizer__user(s, pie.pid, pie.alpha), "[unknown]");
	symbolizer__stats(s, &st);
	cr_assert_eq(st.processes, 2);
	symbolizer__free(s);
}

/* A fake proc root whose maps place a fixture at made-up addresses. */
static char fake_root[] = "/tmp/xsprof-proc-XXXXXX";

static void fake_init(void)
{
	strcpy(fake_root, "/tmp/xsprof-proc-XXXXXX");
	cr_assert_not_null(mkdtemp(fake_root));
}

static void fake_fini(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fake_root);
	cr_assert_eq(system(cmd), 0);
}

static void fake_maps(int pid, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d", fake_root, pid);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/%d/maps", fake_root, pid);
	f = fopen(path, "we");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

Test(symbolizer, fake_proc_root, .init = fake_init, .fini = fake_fini)
{
	struct symbolizer_opts opts = {.proc_root = fake_root};
	struct elf_symtab *t = elf_symtab__open(SYMFIX_LIB);
	const uint64_t base = 0x7f0000000000ULL;
	struct symbolizer_stats st;
	const struct elf_sym *alpha;
	struct symbolizer *s;
	char text[4 * PATH_MAX], want[128];
	uint64_t off;
	struct stat sb;

	cr_assert_not_null(t);
	alpha = elf_symtab__find(t, "symfix_lib_alpha");
	cr_assert_not_null(alpha);
	cr_assert_eq(elf_symtab__vaddr_to_offset(t, alpha->addr, &off), 0);
	cr_assert_eq(stat(SYMFIX_LIB, &sb), 0);
	/* Whole file in one mapping; then the same inode deleted; then a wrong inode. */
	snprintf(text, sizeof(text),
		 "%" PRIx64 "-%" PRIx64 " r-xp 00000000 %02x:%02x %lu %s\n"
		 "7f1000000000-7f1000100000 r-xp 00000000 %02x:%02x %lu /x/libgone.so (deleted)\n"
		 "7f2000000000-7f2000100000 r-xp 00000000 %02x:%02x %lu %s\n"
		 "7f3000000000-7f3000001000 rw-p 00000000 00:00 0 [heap]\n",
		 base, base + 0x100000, major(sb.st_dev), minor(sb.st_dev),
		 (unsigned long)sb.st_ino, SYMFIX_LIB, major(sb.st_dev) + 1, minor(sb.st_dev),
		 (unsigned long)sb.st_ino, major(sb.st_dev) + 2, minor(sb.st_dev),
		 (unsigned long)sb.st_ino + 1, SYMFIX_LIB);
	fake_maps(4242, text);
	fake_maps(4243, text);

	s = new_ok(&opts);
	cr_assert_eq(symbolizer__add_process(s, 4242), 0);
	cr_assert_eq(symbolizer__add_process(s, 4243), 0);
	cr_assert_str_eq(symbolizer__user(s, 4242, base + off), "symfix_lib_alpha");
	cr_assert_str_eq(symbolizer__user(s, 4243, base + off + 1), "symfix_lib_alpha");
	/* In the file but in no function: module+ELF virtual address, as addr2line -e takes it. */
	cr_assert_str_eq(symbolizer__user(s, 4242, base + 0x10), "libsymfix_lib.so+0x10");
	/* Deleted and not reachable through map_files here: named, not read. */
	cr_assert_str_eq(symbolizer__user(s, 4242, 0x7f1000000000ULL + 0x123), "libgone.so+0x123");
	/* The path now holds another inode than the one mapped: not trusted. */
	snprintf(want, sizeof(want), "libsymfix_lib.so+0x%" PRIx64, off);
	cr_assert_str_eq(symbolizer__user(s, 4242, 0x7f2000000000ULL + off), want);
	cr_assert_str_eq(symbolizer__user(s, 4243, 0x7f3000000008ULL), "[heap]+0x8");
	cr_assert_str_eq(symbolizer__user(s, 4242, 0x1000), "[unknown]");

	symbolizer__stats(s, &st);
	cr_assert_eq(st.processes, 2);
	cr_assert_eq(st.files_loaded, 1, "two processes, one file read");
	cr_assert_eq(st.files_failed, 2);
	cr_assert_eq(st.user_lookups, 7);
	cr_assert_eq(st.user_unresolved, 5);
	/* Failed files are remembered, not retried. */
	symbolizer__user(s, 4243, 0x7f1000000000ULL + 0x123);
	symbolizer__stats(s, &st);
	cr_assert_eq(st.files_failed, 2);

	/* A pid whose maps vanish keeps its snapshot. */
	fake_maps(4242, "");
	cr_assert_eq(symbolizer__add_process(s, 4242), 0);
	cr_assert_str_eq(symbolizer__user(s, 4242, base + off), "symfix_lib_alpha");
	symbolizer__free(s);
	elf_symtab__free(t);
}

/* One user's processes that no sample has used are snapshotted at exec up to a cap: past it
 * they are read at their first sample, and another user's still are at exec. */
Test(symbolizer, idle_processes_of_one_user_are_snapshotted_up_to_a_cap, .init = fake_init,
     .fini = fake_fini)
{
	struct symbolizer_opts opts = {.proc_root = fake_root};
	const int n = SYMBOLIZER_IDLE_PER_USER + 10;
	struct symbolizer_stats st;
	struct symbolizer *s;
	char path[PATH_MAX];

	for (int i = 0; i < n + 2; i++) {
		fake_maps(10000 + i, "7f0000000000-7f0000001000 r-xp 00000000 00:00 0 [vdso]\n");
		snprintf(path, sizeof(path), "%s/%d", fake_root, 10000 + i);
		cr_assert_eq(chown(path, i < n ? 65534 : 0, 0), 0);
	}
	s = new_ok(&opts);
	for (int i = 0; i < n; i++)
		cr_assert_eq(symbolizer__exec(s, 10000 + i), 0);
	symbolizer__stats(s, &st);
	cr_expect_eq(st.exec_deferred, 10, "deferred %llu", (unsigned long long)st.exec_deferred);
	/* Another user's: snapshotted. */
	cr_assert_eq(symbolizer__exec(s, 10000 + n), 0);
	symbolizer__stats(s, &st);
	cr_expect_eq(st.exec_deferred, 10);
	/* A deferred one is read at its first sample. */
	cr_expect_neq(symbolizer__gen(s, 10000 + n - 1), 0);
	cr_expect_str_eq(symbolizer__user(s, 10000 + n - 1, 0x7f0000000010ULL), "[vdso]+0x10");
	/* A sampled one leaves the idle count: the next exec of that user is snapshotted. */
	cr_expect_neq(symbolizer__gen(s, 10000), 0);
	cr_assert_eq(symbolizer__exec(s, 10000 + n + 1), 0); /* root's dir: chown'd to 0 */
	symbolizer__exit(s, 10001); /* never sampled: freed, its slot too */
	fake_maps(20000, "7f0000000000-7f0000001000 r-xp 00000000 00:00 0 [vdso]\n");
	snprintf(path, sizeof(path), "%s/%d", fake_root, 20000);
	cr_assert_eq(chown(path, 65534, 0), 0);
	cr_assert_eq(symbolizer__exec(s, 20000), 0);
	symbolizer__stats(s, &st);
	cr_expect_eq(st.exec_deferred, 10, "a freed slot was not given back");
	cr_expect_eq(st.ended_unused, 1);
	symbolizer__free(s);
}

static void fake_stat(int pid, unsigned long long start)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d/stat", fake_root, pid);
	f = fopen(path, "we");
	cr_assert_not_null(f);
	/* Fields 1-21, then the start time (22): a name with a space and a parenthesis. */
	fprintf(f, "%d (a b) c) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %llu 0 0\n", pid, start);
	fclose(f);
}

/* A pid reused while its exit and the new exec went unseen: the snapshot's start time tells
 * the new process from the old, and the old image ends. */
Test(symbolizer, a_reused_pid_is_told_by_its_start_time, .init = fake_init, .fini = fake_fini)
{
	struct symbolizer_opts opts = {.proc_root = fake_root};
	struct symbolizer_stats st;
	struct symbolizer *s;
	uint32_t gen;

	fake_maps(30000, "7f0000000000-7f0000001000 r-xp 00000000 00:00 0 [vdso]\n");
	fake_stat(30000, 1000);
	s = new_ok(&opts);
	gen = symbolizer__gen(s, 30000);
	cr_assert_neq(gen, 0);
	cr_expect_eq(symbolizer__verify(s, 30000), 0, "the same process");
	/* Another process now has the pid: other mappings, another start time. */
	fake_maps(30000, "7f1000000000-7f1000001000 r-xp 00000000 00:00 0 [vdso]\n");
	fake_stat(30000, 2000);
	cr_expect_eq(symbolizer__verify(s, 30000), 1, "the reused pid was not seen");
	cr_expect_neq(symbolizer__gen(s, 30000), gen, "still the old image");
	cr_expect_str_eq(symbolizer__user(s, 30000, 0x7f1000000010ULL), "[vdso]+0x10");
	/* The old image still names what was sampled in it. */
	cr_expect_str_eq(symbolizer__user_gen(s, 30000, gen, 0x7f0000000010ULL), "[vdso]+0x10");
	symbolizer__stats(s, &st);
	cr_expect_eq(st.pid_reused, 1);
	symbolizer__free(s);
}

/*
 * One user's idle processes fill the cache while a sampled process of another has exited with
 * its samples not named yet: trim drops the idle snapshots (read again at a sample), not the
 * ended image (the exec flood: the victim's frames were all [unknown]).
 */
Test(symbolizer, trim_drops_idle_snapshots_before_images_still_to_be_named, .init = fake_init,
     .fini = fake_fini)
{
	struct symbolizer_opts opts = {.proc_root = fake_root, .cache_bytes = 64 << 10};
	const int n = 1000;
	struct symbolizer_stats st;
	struct symbolizer *s;
	char path[PATH_MAX];
	uint32_t gen;

	fake_maps(30000, "7f0000000000-7f0000001000 r-xp 00000000 00:00 0 [vdso]\n");
	for (int i = 0; i < n; i++) {
		fake_maps(10000 + i, "7f0000000000-7f0000001000 r-xp 00000000 00:00 0 [vdso]\n");
		snprintf(path, sizeof(path), "%s/%d", fake_root, 10000 + i);
		cr_assert_eq(chown(path, 65534, 0), 0);
	}
	s = new_ok(&opts);
	gen = symbolizer__gen(s, 30000); /* a sample, named later */
	cr_assert_neq(gen, 0);
	symbolizer__exit(s, 30000);
	for (int i = 0; i < n; i++)
		cr_assert_eq(symbolizer__exec(s, 10000 + i), 0);
	symbolizer__stats(s, &st);
	cr_assert_gt(st.bytes, 64 << 10, "the flood does not fill the cache: %llu bytes",
		     (unsigned long long)st.bytes);
	symbolizer__trim(s);
	symbolizer__stats(s, &st);
	/* The cache, and the image still to be named beside it. */
	cr_expect_leq(st.bytes, (64 << 10) + 4096, "%llu bytes after trim",
		      (unsigned long long)st.bytes);
	cr_expect_gt(st.idle_dropped, 0);
	cr_expect_eq(st.pinned_dropped, 0);
	cr_expect_str_eq(symbolizer__user_gen(s, 30000, gen, 0x7f0000000010ULL), "[vdso]+0x10");
	/* A dropped idle process is read again at its first sample. */
	cr_expect_str_eq(symbolizer__user(s, 10000, 0x7f0000000010ULL), "[vdso]+0x10");
	/* Once its samples are named (keep_since past its use) the ended image may go. */
	symbolizer__keep_since(s, UINT64_MAX);
	for (int i = 1; i < n; i++)
		symbolizer__gen(s, 10000 + i); /* used and live: not trimmed, so over the cache */
	symbolizer__trim(s);
	symbolizer__stats(s, &st);
	cr_expect_eq(st.pinned_dropped, 0, "an image past keep_since is not pinned");
	cr_expect_str_eq(symbolizer__user_gen(s, 30000, gen, 0x7f0000000010ULL), "[unknown]");
	symbolizer__free(s);
}
