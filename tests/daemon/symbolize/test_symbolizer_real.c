// SPDX-License-Identifier: Apache-2.0
/*
 * The symbolizer on the cases real machines have: stripped binaries with separate debug files
 * (debuglink with its CRC, build-id directories, debuginfod), exited and exec'd processes and
 * reused pids, deleted binaries, another mount namespace's files, perf maps for JIT code, the
 * vDSO, DWARF lines and inlined frames, and a cache bounded in bytes.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon/symbolize/elf_symtab.h"
#include "daemon/symbolize/proc_maps.h"
#include "daemon/symbolize/symbolizer.h"

static char tmp[] = "/tmp/xsprof-symreal-XXXXXX";

static void tmp_init(void)
{
	strcpy(tmp, "/tmp/xsprof-symreal-XXXXXX");
	cr_assert_not_null(mkdtemp(tmp));
}

static void tmp_fini(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	cr_assert_eq(system(cmd), 0);
}

static void sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

static struct symbolizer *new_ok(const struct symbolizer_opts *opts)
{
	struct symbolizer *s = symbolizer__new(opts);

	cr_assert_not_null(s, "%s", strerror(errno));
	return s;
}

struct child {
	pid_t pid;
	int to_child;
	uint64_t alpha;
};

/* Runs a fixture main in "wait" mode: it prints symfix_main_alpha's address and blocks. */
static struct child spawn_wait(const char *path)
{
	int in[2], out[2];
	char line[64] = "";
	struct child c;
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
	cr_assert_gt(n, 0, "%s printed nothing", path);
	c.alpha = strtoull(line, NULL, 16);
	c.to_child = in[1];
	return c;
}

static void finish(struct child *c)
{
	int status;

	close(c->to_child);
	cr_assert_eq(waitpid(c->pid, &status, 0), c->pid);
}

/* Snapshot, let it exit, then name its alpha: everything must come from what was kept. */
static const char *name_after_exit(struct symbolizer *s, const char *path)
{
	struct child c = spawn_wait(path);
	const char *name;

	cr_assert_eq(symbolizer__add_process(s, c.pid), 0);
	finish(&c);
	symbolizer__exit(s, c.pid);
	name = symbolizer__user(s, c.pid, c.alpha);
	return name;
}

Test(symbolizer_real, stripped_with_debuglink_next_to_it)
{
	struct symbolizer *s = new_ok(NULL);
	struct symbolizer_stats st;

	/* The debug file sits in .debug/ next to the binary, as the link's second place. */
	cr_assert_str_eq(name_after_exit(s, SYMFIX_DIR "/symfix_dbglink"), "symfix_main_alpha");
	symbolizer__stats(s, &st);
	cr_assert_eq(st.debug_files, 1);
	symbolizer__free(s);
}

Test(symbolizer_real, debuglink_crc_decides_without_build_ids, .init = tmp_init, .fini = tmp_fini)
{
	struct symbolizer *s;
	char good[PATH_MAX], bad[PATH_MAX];
	const char *name;

	/* Binary and debug file side by side (the link's first place); no build-ids to compare. */
	sh("cp %s/symfix_crc %s/crcdbg/symfix_crc.debug %s/", SYMFIX_DIR, SYMFIX_DIR, tmp);
	sh("cp %s/symfix_crc_bad %s/crcdbg/symfix_crc_bad.debug %s/", SYMFIX_DIR, SYMFIX_DIR, tmp);
	snprintf(good, sizeof(good), "%s/symfix_crc", tmp);
	snprintf(bad, sizeof(bad), "%s/symfix_crc_bad", tmp);
	s = new_ok(NULL);
	cr_assert_str_eq(name_after_exit(s, good), "symfix_main_alpha");
	symbolizer__free(s);
	/* The debug file changed after linking: its CRC differs, it is not used. */
	s = new_ok(NULL);
	name = name_after_exit(s, bad);
	cr_assert(strstr(name, "symfix_crc_bad+0x"), "a mismatched debug file named it %s", name);
	symbolizer__free(s);
}

Test(symbolizer_real, build_id_directory_in_configured_debug_dirs)
{
	const char *dirs[] = {"/nonexistent/debug", SYMFIX_DIR "/debugroot"};
	struct symbolizer_opts opts = {.debug_dirs = dirs, .nr_debug_dirs = 2};
	struct symbolizer *s = new_ok(&opts);
	const char *name;

	cr_assert_str_eq(name_after_exit(s, SYMFIX_DIR "/symfix_bidonly"), "symfix_main_alpha");
	symbolizer__free(s);
	/* Without the directory, only the stripped file's (empty) .dynsym is there. */
	s = new_ok(NULL);
	name = name_after_exit(s, SYMFIX_DIR "/symfix_bidonly");
	cr_assert(strstr(name, "symfix_bidonly+0x"), "named %s", name);
	symbolizer__free(s);
}

/* A one-file HTTP server for debuginfod: GET /buildid/<hex>/debuginfo -> the file. */
struct http_server {
	int fd;
	int port;
	const char *file;
	bool stall; /* accept and never answer: for the timeout */
	pthread_t thread;
};

static void *http_serve(void *arg)
{
	struct http_server *h = arg;
	char req[4096], hdr[256], buf[8192];
	int c, f;
	ssize_t n;

	while ((c = accept(h->fd, NULL, NULL)) >= 0) {
		n = read(c, req, sizeof(req) - 1);
		if (h->stall) {
			sleep(30);
			close(c);
			continue;
		}
		req[n > 0 ? n : 0] = '\0';
		f = strstr(req, "/debuginfo") ? open(h->file, O_RDONLY | O_CLOEXEC) : -1;
		if (f < 0) {
			dprintf(c, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
		} else {
			struct stat st;

			fstat(f, &st);
			snprintf(
				hdr, sizeof(hdr),
				"HTTP/1.1 200 OK\r\nContent-Length: %lld\r\nConnection: close\r\n\r\n",
				(long long)st.st_size);
			/* A client that hung up just ends this reply. */
			if (write(c, hdr, strlen(hdr)) == (ssize_t)strlen(hdr))
				while ((n = read(f, buf, sizeof(buf))) > 0)
					if (write(c, buf, (size_t)n) != n)
						break;
			close(f);
		}
		close(c);
	}
	return NULL;
}

static void http_start(struct http_server *h)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);

	h->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(h->fd, 0);
	cr_assert_eq(bind(h->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(h->fd, 8), 0);
	cr_assert_eq(getsockname(h->fd, (struct sockaddr *)&a, &len), 0);
	h->port = ntohs(a.sin_port);
	cr_assert_eq(pthread_create(&h->thread, NULL, http_serve, h), 0);
}

static void http_env(const struct http_server *h)
{
	char url[64], cache[PATH_MAX];

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", h->port);
	snprintf(cache, sizeof(cache), "%s/cache", tmp);
	setenv("DEBUGINFOD_URLS", url, 1);
	setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
	setenv("DEBUGINFOD_PROGRESS", "0", 1);
}

Test(symbolizer_real, debuginfod_when_asked, .init = tmp_init, .fini = tmp_fini, .timeout = 60)
{
	struct http_server h = {.file = SYMFIX_DIR "/.debug/symfix_dbglink.debug"};
	struct symbolizer_opts opts = {.debuginfod = true};
	const char *dirs[] = {"/nonexistent"};
	struct symbolizer_stats st;
	struct symbolizer *s;
	char bin[PATH_MAX];

	/* Same build-id as symfix_dbglink's debug file; no link, no debug directory to find it. */
	snprintf(bin, sizeof(bin), "%s/bidonly", tmp);
	sh("cp %s/symfix_bidonly %s", SYMFIX_DIR, bin);
	http_start(&h);
	http_env(&h);
	opts.debug_dirs = dirs;
	opts.nr_debug_dirs = 1;
	/* Off by default: nothing is asked. */
	s = new_ok(&(struct symbolizer_opts){.debug_dirs = dirs, .nr_debug_dirs = 1});
	cr_assert(strstr(name_after_exit(s, bin), "bidonly+0x"));
	symbolizer__free(s);
	s = new_ok(&opts);
	cr_assert_str_eq(name_after_exit(s, bin), "symfix_main_alpha");
	symbolizer__stats(s, &st);
	cr_assert_eq(st.debug_files, 1);
	symbolizer__free(s);
	unsetenv("DEBUGINFOD_URLS");
}

Test(symbolizer_real, debuginfod_timeout, .init = tmp_init, .fini = tmp_fini, .timeout = 60)
{
	struct http_server h = {.file = "/nonexistent", .stall = true};
	struct symbolizer_opts opts = {.debuginfod = true, .debuginfod_timeout_ms = 1500};
	const char *dirs[] = {"/nonexistent"};
	struct symbolizer *s;
	struct timespec t0, t1;
	char bin[PATH_MAX];

	snprintf(bin, sizeof(bin), "%s/bidonly", tmp);
	sh("cp %s/symfix_bidonly %s", SYMFIX_DIR, bin);
	http_start(&h);
	http_env(&h);
	opts.debug_dirs = dirs;
	opts.nr_debug_dirs = 1;
	s = new_ok(&opts);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert(strstr(name_after_exit(s, bin), "bidonly+0x"));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_log_info("a stalled debuginfod server cost %.2f s\n",
		    (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	cr_assert_lt(t1.tv_sec - t0.tv_sec, 10, "the timeout was not kept");
	symbolizer__free(s);
	unsetenv("DEBUGINFOD_URLS");
}

Test(symbolizer_real, deleted_binary, .init = tmp_init, .fini = tmp_fini)
{
	struct symbolizer *s = new_ok(NULL);
	char bin[PATH_MAX];
	struct child c;

	snprintf(bin, sizeof(bin), "%s/todelete", tmp);
	sh("cp %s %s", SYMFIX_PIE, bin);
	c = spawn_wait(bin);
	/* Deleted before anything looked at it: only map_files still reaches it. */
	cr_assert_eq(unlink(bin), 0);
	cr_assert_eq(symbolizer__add_process(s, c.pid), 0);
	finish(&c);
	symbolizer__exit(s, c.pid);
	cr_assert_str_eq(symbolizer__user(s, c.pid, c.alpha), "symfix_main_alpha");
	symbolizer__free(s);
}

Test(symbolizer_real, replaced_binary_is_not_read_by_path, .init = tmp_init, .fini = tmp_fini)
{
	struct symbolizer *s = new_ok(NULL);
	char bin[PATH_MAX];
	struct child c;

	snprintf(bin, sizeof(bin), "%s/replaced", tmp);
	sh("cp %s %s", SYMFIX_PIE, bin);
	c = spawn_wait(bin);
	cr_assert_eq(symbolizer__add_process(s, c.pid), 0);
	/* A new file at the same path (rename over it, as package upgrades do). */
	sh("cp %s %s.new && mv %s.new %s", SYMFIX_LIB, bin, bin, bin);
	finish(&c);
	symbolizer__exit(s, c.pid);
	cr_assert_str_eq(symbolizer__user(s, c.pid, c.alpha), "symfix_main_alpha");
	symbolizer__free(s);
}

/*
 * A process in its own mount namespace, where another library is bind-mounted over the path
 * it dlopens: its names must come from what it mapped, not from our file at that path.
 */
Test(symbolizer_real, private_mount_namespace, .init = tmp_init, .fini = tmp_fini)
{
	struct symbolizer *s = new_ok(NULL);
	char lib[PATH_MAX];
	int out[2], in[2];
	uint64_t addr = 0;
	pid_t pid;

	snprintf(lib, sizeof(lib), "%s/libsame.so", tmp);
	sh("cp %s %s", SYMFIX_LIB, lib);
	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		void *h, *f;
		char c;

		close(in[1]);
		close(out[0]);
		if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount(SYMFIX_BURN_LIB, lib, NULL, MS_BIND, NULL))
			_exit(3);
		h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		f = h ? dlsym(h, "symfix_burn_spin") : NULL;
		if (!f)
			_exit(4);
		if (write(out[1], &f, sizeof(f)) != (ssize_t)sizeof(f))
			_exit(5);
		_exit(read(in[0], &c, 1) == 1 ? 0 : 5);
	}
	close(out[1]);
	close(in[0]);
	cr_assert_eq(read(out[0], &addr, sizeof(addr)), (ssize_t)sizeof(addr),
		     "the child could not set up its namespace");
	cr_assert_eq(symbolizer__add_process(s, pid), 0);
	close(in[1]);
	waitpid(pid, NULL, 0);
	symbolizer__exit(s, pid);
	/* Our libsame.so is libsymfix_lib.so: reading it by path would name symfix_lib_*. */
	cr_assert_str_eq(symbolizer__user(s, pid, addr), "symfix_burn_spin");
	symbolizer__free(s);
	close(out[0]);
}

static void write_file(const char *path, const char *text, const char *mode)
{
	FILE *f = fopen(path, mode);

	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

Test(symbolizer_real, perf_map_jit_code_and_growth)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *code = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE | PROT_EXEC,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t base = (uint64_t)(uintptr_t)code;
	struct symbolizer *s = new_ok(NULL);
	struct symbolizer_stats st;
	char path[64], line[256];

	cr_assert_neq(code, MAP_FAILED);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	snprintf(line, sizeof(line),
		 "%" PRIx64 " 40 py::hot:/app/x.py\n0x%" PRIx64 " 0x20 [jit] two\n", base,
		 base + 0x40);
	write_file(path, line, "we");
	cr_assert_eq(symbolizer__add_process(s, getpid()), 0);
	cr_assert_str_eq(symbolizer__user(s, getpid(), base + 0x10), "py::hot:/app/x.py");
	cr_assert_str_eq(symbolizer__user(s, getpid(), base + 0x5f), "[jit] two");
	/* Compiled later: the map grows and is read again on a miss. */
	snprintf(line, sizeof(line), "%" PRIx64 " 100 py::later:/app/y.py\n", base + 0x1000);
	write_file(path, line, "ae");
	usleep(150 * 1000);
	cr_assert_str_eq(symbolizer__user(s, getpid(), base + 0x1010), "py::later:/app/y.py");
	symbolizer__stats(s, &st);
	cr_assert_eq(st.perf_map_hits, 3);
	unlink(path);
	symbolizer__free(s);
	munmap(code, 4 * page);
}

Test(symbolizer_real, vdso_functions)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	struct symbolizer *s = new_ok(NULL);
	struct proc_maps *maps = proc_maps__read(NULL, getpid());
	const struct proc_map *m;
	const struct elf_sym *sym;
	struct elf_symtab *t;
	uint64_t off;

	cr_assert_neq(base, 0);
	m = proc_maps__find(maps, base);
	cr_assert_not_null(m);
	/* The vDSO image is in our memory; find clock_gettime's offset in it the slow way. */
	t = elf_symtab__open_memory((const void *)(uintptr_t)base, m->end - m->start);
	proc_maps__free(maps);
	cr_assert_not_null(t, "%s", strerror(errno));
	sym = elf_symtab__find(t, "__vdso_clock_gettime");
	cr_assert_not_null(sym);
	cr_assert_eq(elf_symtab__vaddr_to_offset(t, sym->addr, &off), 0);
	cr_assert_eq(symbolizer__add_process(s, getpid()), 0);
	cr_assert_str_eq(symbolizer__user(s, getpid(), base + off + 2), "__vdso_clock_gettime");
	elf_symtab__free(t);
	symbolizer__free(s);
}

Test(symbolizer_real, dwarf_lines_and_inlined_frames)
{
	struct symbolizer_opts opts = {.debug_info = true};
	struct symbolizer *s = new_ok(&opts), *plain = new_ok(NULL);
	struct symbolizer_frame fr[8];
	struct elf_symtab *t = elf_symtab__open(SYMFIX_INLINE);
	const struct elf_sym *outer;
	uint64_t base = 0, off;
	int n, inlined = 0;
	void *h;

	/* A PIE executable can be dlopen'ed for its code, which is all this test needs mapped. */
	cr_assert_not_null(t);
	outer = elf_symtab__find(t, "symfix_inl_outer");
	cr_assert_not_null(outer);
	h = dlopen(SYMFIX_INLINE, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(h, "%s", dlerror());
	base = (uint64_t)(uintptr_t)dlsym(h, "symfix_inl_outer");
	cr_assert_neq(base, 0);
	cr_assert_eq(symbolizer__add_process(s, getpid()), 0);
	for (off = 0; off < outer->size; off++) {
		n = symbolizer__user_frames(s, getpid(), 0, base + off, fr, 8);
		cr_assert_geq(n, 1);
		cr_assert_str_eq(fr[n - 1].name, "symfix_inl_outer");
		cr_assert_not_null(fr[n - 1].file, "no line for +%" PRIu64, off);
		cr_assert(strstr(fr[n - 1].file, "fixture_inline.c"), "%s", fr[n - 1].file);
		cr_assert_gt(fr[n - 1].line, 0);
		if (n == 2) {
			cr_assert_str_eq(fr[0].name, "symfix_inl_inner");
			cr_assert(fr[0].inlined);
			inlined++;
		}
	}
	cr_assert_gt(inlined, 0, "no address inside the inlined function");
	/* Off by default: one frame, no line. */
	n = symbolizer__user_frames(plain, getpid(), 0, base + outer->size / 2, fr, 8);
	cr_assert_eq(n, 1);
	cr_assert_null(fr[0].file);
	cr_assert_eq(symbolizer__user_frames(plain, getpid(), 0, base, fr, 0), -EINVAL);
	symbolizer__free(s);
	symbolizer__free(plain);
	elf_symtab__free(t);
	dlclose(h);
}

/* Generations, through a fake /proc whose maps the test rewrites between "processes". */
static char fake[] = "/tmp/xsprof-gen-XXXXXX";

static void fake_init(void)
{
	strcpy(fake, "/tmp/xsprof-gen-XXXXXX");
	cr_assert_not_null(mkdtemp(fake));
}

static void fake_fini(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fake);
	cr_assert_eq(system(cmd), 0);
}

static const char *fake_path(int pid)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%d/maps", fake, pid);
	return path;
}

/* pid maps `lib` whole at base. */
static void fake_maps(int pid, const char *lib, uint64_t base)
{
	char path[PATH_MAX], text[PATH_MAX + 128];
	struct stat st;

	cr_assert_eq(stat(lib, &st), 0);
	snprintf(path, sizeof(path), "%s/%d", fake, pid);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/%d/maps", fake, pid);
	snprintf(text, sizeof(text), "%" PRIx64 "-%" PRIx64 " r-xp 00000000 %02x:%02x %lu %s\n",
		 base, base + 0x100000, major(st.st_dev), minor(st.st_dev),
		 (unsigned long)st.st_ino, lib);
	write_file(path, text, "we");
}

static uint64_t file_offset_of(const char *lib, const char *fn)
{
	struct elf_symtab *t = elf_symtab__open(lib);
	uint64_t off;

	cr_assert_not_null(t);
	cr_assert_not_null(elf_symtab__find(t, fn), "%s", fn);
	cr_assert_eq(elf_symtab__vaddr_to_offset(t, elf_symtab__find(t, fn)->addr, &off), 0);
	elf_symtab__free(t);
	return off;
}

Test(symbolizer_real, generations_exec_exit_and_pid_reuse, .init = fake_init, .fini = fake_fini)
{
	struct symbolizer_opts opts = {.proc_root = fake};
	const uint64_t base = 0x7f0000000000ULL;
	uint64_t alpha = file_offset_of(SYMFIX_LIB, "symfix_lib_alpha");
	uint64_t spin = file_offset_of(SYMFIX_BURN_LIB, "symfix_burn_spin");
	struct symbolizer *s;
	struct symbolizer_stats st;
	uint32_t g1, g2, g3;

	fake_maps(500, SYMFIX_LIB, base);
	s = new_ok(&opts);
	g1 = symbolizer__gen(s, 500);
	cr_assert_neq(g1, 0);
	cr_assert_eq(symbolizer__gen(s, 500), g1, "same image, same generation");
	/* exec: another image at the same address. */
	fake_maps(500, SYMFIX_BURN_LIB, base);
	cr_assert_eq(symbolizer__exec(s, 500), 0);
	g2 = symbolizer__gen(s, 500);
	cr_assert_neq(g2, g1);
	/* exit, then a new process gets pid 500 with yet another image. */
	symbolizer__exit(s, 500);
	write_file(fake_path(500), "", "we");
	cr_assert_eq(symbolizer__gen(s, 500), g2, "its maps unreadable: still the old process");
	fake_maps(500, SYMFIX_LIB, base + 0x200000);
	g3 = symbolizer__gen(s, 500);
	cr_assert_neq(g3, g2);
	cr_assert_neq(g3, g1);
	/* Each generation names its own samples, whatever came after. */
	cr_assert_str_eq(symbolizer__user_gen(s, 500, g1, base + alpha), "symfix_lib_alpha");
	cr_assert_str_eq(symbolizer__user_gen(s, 500, g2, base + spin), "symfix_burn_spin");
	cr_assert_str_eq(symbolizer__user_gen(s, 500, g3, base + 0x200000 + alpha),
			 "symfix_lib_alpha");
	/* The new process does not inherit the old mapping at base. */
	cr_assert_str_eq(symbolizer__user_gen(s, 500, g3, base + spin), "[unknown]");
	cr_assert_str_eq(symbolizer__user(s, 500, base + 0x200000 + alpha), "symfix_lib_alpha");
	cr_assert_str_eq(symbolizer__user_gen(s, 500, 999999, base + alpha), "[unknown]");
	symbolizer__stats(s, &st);
	cr_assert_eq(st.execs, 1);
	cr_assert_eq(st.exits, 1);
	cr_assert_eq(st.processes, 3);
	symbolizer__forget_process(s, 500);
	cr_assert_str_eq(symbolizer__user_gen(s, 500, g1, base + alpha), "[unknown]");
	symbolizer__free(s);
}

static long rss_kib(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

Test(symbolizer_real, cache_stays_under_its_bound, .init = fake_init, .fini = fake_fini,
     .timeout = 120)
{
	const char *libs[] = {SYMFIX_LIB, SYMFIX_BURN_LIB, SYMFIX_CXX_LIB, SYMFIX_PIE,
			      SYMFIX_NOPIE};
	struct symbolizer_opts opts = {.proc_root = fake, .cache_bytes = 20 << 10};
	uint64_t alpha = file_offset_of(SYMFIX_LIB, "symfix_lib_alpha");
	const uint64_t base = 0x7f0000000000ULL;
	struct symbolizer_stats st;
	struct symbolizer *s;
	long rss_warm = 0;

	s = new_ok(&opts);
	/* Many short processes mapping several files, named and trimmed in batches. */
	for (int round = 0; round < 3000; round++) {
		int pid = 1000 + round % 50;

		fake_maps(pid, libs[round % 5], base);
		symbolizer__exec(s, pid);
		if (round % 5 == 0)
			cr_assert_str_eq(symbolizer__user(s, pid, base + alpha),
					 "symfix_lib_alpha");
		else
			symbolizer__user(s, pid, base + 0x1000);
		symbolizer__exit(s, pid);
		symbolizer__trim(s);
		symbolizer__stats(s, &st);
		cr_assert_leq(st.bytes, opts.cache_bytes, "round %d: %" PRIu64 " bytes", round,
			      st.bytes);
		if (round == 500)
			rss_warm = rss_kib();
	}
	symbolizer__stats(s, &st);
	cr_log_info("evictions %" PRIu64 ", files read %" PRIu64 ", peak %" PRIu64
		    " bytes, max RSS %ld -> %ld KiB\n",
		    st.evictions, st.files_loaded, st.peak_bytes, rss_warm, rss_kib());
	cr_assert_gt(st.evictions, 0);
	cr_assert_gt(st.files_loaded, 5, "evicted files are read again");
	/* 2500 more processes and reloads did not grow the process (ASan's quarantine does). */
#ifndef __SANITIZE_ADDRESS__
	cr_assert_lt(rss_kib() - rss_warm, 2048);
#endif
	symbolizer__free(s);
}

/* rounds lookups of one live process's library, each batch trimmed: how often the library's
 * table was read, with a cache smaller than that table. */
static struct symbolizer_stats hot_rounds(uint64_t hot_bytes, int rounds)
{
	struct symbolizer_opts opts = {
		.proc_root = fake, .cache_bytes = 1 << 10, .hot_bytes = hot_bytes};
	uint64_t alpha = file_offset_of(SYMFIX_LIB, "symfix_lib_alpha");
	const uint64_t base = 0x7f0000000000ULL;
	struct symbolizer_stats st;
	struct symbolizer *s = new_ok(&opts);

	fake_maps(1000, SYMFIX_LIB, base);
	symbolizer__exec(s, 1000);
	for (int round = 0; round < rounds; round++) {
		cr_assert_str_eq(symbolizer__user(s, 1000, base + alpha), "symfix_lib_alpha");
		symbolizer__trim(s);
	}
	symbolizer__stats(s, &st);
	symbolizer__free(s);
	return st;
}

/* A table larger than the whole cache (PyTorch's libraries' are on a service's 8 MiB) was
 * read again at every batch: on an H200 the service re-read them 11 times a second, fell
 * behind and lost GPU records. Read again soon after trim dropped it, it is kept. */
Test(symbolizer_real, a_table_larger_than_the_cache_is_not_read_at_every_batch, .init = fake_init,
     .fini = fake_fini)
{
	struct symbolizer_stats st;

	st = hot_rounds(0, 20); /* without hot files: every batch reads it */
	cr_assert_eq(st.files_loaded, 20);
	cr_assert_eq(st.reread_soon, 19);
	cr_assert_eq(st.hot_files, 0);

	st = hot_rounds(64 << 20, 20); /* read, dropped, read again: then kept */
	cr_assert_eq(st.files_loaded, 2, "%" PRIu64 " reads", st.files_loaded);
	cr_assert_eq(st.reread_soon, 1);
	cr_assert_eq(st.hot_files, 1);
	cr_assert_gt(st.hot_bytes, 1 << 10, "kept past the cache");
	cr_assert_leq(st.bytes, 64 << 20);

	st = hot_rounds(2 << 10, 20); /* hot_bytes below the table: the bound holds */
	cr_assert_eq(st.files_loaded, 20);
	cr_assert_leq(st.bytes, 2 << 10);
}

Test(symbolizer_real, exited_children_and_open_files_cap)
{
	struct symbolizer_opts opts = {.max_open_files = 1};
	struct symbolizer *s = new_ok(&opts);
	struct child a = spawn_wait(SYMFIX_PIE), b = spawn_wait(SYMFIX_NOPIE);
	struct symbolizer_stats st;

	cr_assert_eq(symbolizer__add_process(s, a.pid), 0);
	cr_assert_eq(symbolizer__add_process(s, b.pid), 0);
	symbolizer__stats(s, &st);
	cr_assert_leq(st.open_files, 1);
	finish(&a);
	finish(&b);
	symbolizer__exit(s, a.pid);
	symbolizer__exit(s, b.pid);
	/* Past the cap the file was read at once, so both still name. */
	cr_assert_str_eq(symbolizer__user(s, a.pid, a.alpha), "symfix_main_alpha");
	cr_assert_str_eq(symbolizer__user(s, b.pid, b.alpha), "symfix_main_alpha");
	symbolizer__free(s);
}

/* A perf map is what the profiled process says: it must not make us read another file. */
Test(symbolizer_real, perf_map_symlinks_and_foreign_owners_are_refused)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *code = mmap(NULL, page, PROT_READ | PROT_WRITE | PROT_EXEC,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t base = (uint64_t)(uintptr_t)code;
	char path[64], secret[64], line[128];
	struct symbolizer *s;

	cr_assert_neq(code, MAP_FAILED);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	snprintf(secret, sizeof(secret), "/tmp/xs-secret-%d", (int)getpid());
	snprintf(line, sizeof(line), "%" PRIx64 " 40 root_only_secret\n", base);
	write_file(secret, line, "we");

	/* A symlink to a file the process could not choose to expose. */
	unlink(path);
	cr_assert_eq(symlink(secret, path), 0);
	s = new_ok(NULL);
	cr_assert_eq(symbolizer__add_process(s, getpid()), 0);
	cr_expect_str_neq(symbolizer__user(s, getpid(), base + 0x10), "root_only_secret",
			  "followed a symlinked perf map");
	symbolizer__free(s);

	/* A regular file owned by another user (we run as root: the process's user). */
	unlink(path);
	write_file(path, line, "we");
	cr_assert_eq(chown(path, 65534, 65534), 0);
	s = new_ok(NULL);
	cr_assert_eq(symbolizer__add_process(s, getpid()), 0);
	cr_expect_str_neq(symbolizer__user(s, getpid(), base + 0x10), "root_only_secret",
			  "read a perf map owned by another user");
	symbolizer__free(s);

	/* The process's own file is read. */
	cr_assert_eq(chown(path, getuid(), getgid()), 0);
	s = new_ok(NULL);
	cr_assert_eq(symbolizer__add_process(s, getpid()), 0);
	cr_expect_str_eq(symbolizer__user(s, getpid(), base + 0x10), "root_only_secret");
	symbolizer__free(s);
	unlink(path);
	unlink(secret);
	munmap(code, page);
}

/* Every address of the vDSO's code has a name, static helpers without a symbol included. */
Test(symbolizer_real, vdso_code_is_named_throughout)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR), lo = UINT64_MAX, hi = 0;
	struct symbolizer *s = new_ok(NULL);
	struct proc_maps *maps = proc_maps__read(NULL, getpid());
	const struct proc_map *m = proc_maps__find(maps, base);
	struct elf_symtab *t;
	size_t helpers = 0;

	cr_assert_not_null(m);
	t = elf_symtab__open_memory((const void *)(uintptr_t)base, m->end - m->start);
	cr_assert_not_null(t, "%s", strerror(errno));
	/* The code spans from the first function to the end of the last. */
	for (size_t i = 0; i < elf_symtab__count(t); i++) {
		const struct elf_sym *sym = elf_symtab__at(t, i);

		lo = sym->addr < lo ? sym->addr : lo;
		hi = sym->addr + sym->size > hi ? sym->addr + sym->size : hi;
	}
	cr_assert_lt(lo, hi);
	cr_assert_eq(symbolizer__add_process(s, getpid()), 0);
	for (uint64_t a = lo; a < hi; a++) {
		uint64_t off;
		const char *name;

		cr_assert_eq(elf_symtab__vaddr_to_offset(t, a, &off), 0);
		name = symbolizer__user(s, getpid(), base + off);
		cr_assert(name[0] != '[' && !strstr(name, "+0x"), "vDSO 0x%" PRIx64 ": %s", a,
			  name);
		helpers += !strncmp(name, "vdso_fn@0x", 10);
	}
	cr_log_info("vDSO code 0x%" PRIx64 "-0x%" PRIx64 ": %zu addresses in unnamed helpers\n", lo,
		    hi, helpers);
	elf_symtab__free(t);
	proc_maps__free(maps);
	symbolizer__free(s);
}

/* A frame-pointer chain that runs into data ends where it leaves code. */
Test(symbolizer_real, user_depth_stops_at_a_frame_outside_code)
{
	struct symbolizer *s = new_ok(NULL);
	struct symbolizer_stats st;
	uint64_t on_stack = 0;
	uint64_t ips[5] = {
		(uint64_t)(uintptr_t)&new_ok,
		(uint64_t)(uintptr_t)&symbolizer__free + 8,
		(uint64_t)(uintptr_t)&on_stack + 1, /* [stack] */
		(uint64_t)(uintptr_t)&symbolizer__new + 8,
		(uint64_t)(uintptr_t)&symbolizer__user + 8,
	};

	cr_assert_eq(symbolizer__add_process(s, getpid()), 0);
	cr_assert_eq(symbolizer__user_depth(s, getpid(), 0, ips, 2), 2);
	cr_assert_eq(symbolizer__user_depth(s, getpid(), 0, ips, 5), 2);
	symbolizer__stats(s, &st);
	cr_assert_eq(st.bogus_frames, 3);
	/* The pc itself is never dropped: a sample in data (JIT code) keeps its pc. */
	ips[0] = (uint64_t)(uintptr_t)&on_stack;
	cr_assert_eq(symbolizer__user_depth(s, getpid(), 0, ips, 2), 2);
	symbolizer__free(s);
}

/*
 * A user's process whose perf map is a root-owned file (inside a user namespace the user can
 * bind-mount one onto /tmp/perf-PID.map): refused, however it got there. Its own file is read.
 */
Test(symbolizer_real, perf_map_of_a_user_process_owned_by_root_is_refused)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *code = mmap(NULL, page, PROT_READ | PROT_WRITE | PROT_EXEC,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t base = (uint64_t)(uintptr_t)code;
	char path[64], line[128], c;
	struct symbolizer *s;
	int go[2], ready[2], status;
	pid_t child;

	cr_assert_neq(code, MAP_FAILED);
	cr_assert_eq(pipe(go), 0);
	cr_assert_eq(pipe(ready), 0);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		/* A user's process (dumpable, so /proc/PID is the user's) with the same code map. */
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534) ||
		    prctl(PR_SET_DUMPABLE, 1) || write(ready[1], "r", 1) != 1)
			_exit(1);
		_exit(read(go[0], &c, 1) == 1 ? 0 : 2);
	}
	cr_assert_eq(read(ready[0], &c, 1), 1, "the child could not become uid 65534");
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)child);
	snprintf(line, sizeof(line), "%" PRIx64 " 40 root_only_secret\n", base);
	unlink(path);
	write_file(path, line, "we");
	cr_assert_eq(chown(path, 0, 0), 0);

	s = new_ok(NULL);
	cr_assert_eq(symbolizer__add_process(s, child), 0);
	cr_expect_str_neq(symbolizer__user(s, child, base + 0x10), "root_only_secret",
			  "read a root-owned perf map for uid 65534's process");
	symbolizer__free(s);

	cr_assert_eq(chown(path, 65534, 65534), 0);
	s = new_ok(NULL);
	cr_assert_eq(symbolizer__add_process(s, child), 0);
	cr_expect_str_eq(symbolizer__user(s, child, base + 0x10), "root_only_secret",
			 "the process's own map is read");
	symbolizer__free(s);

	cr_assert_eq(write(go[1], "g", 1), 1);
	cr_assert_eq(waitpid(child, &status, 0), child);
	unlink(path);
	munmap(code, page);
}
