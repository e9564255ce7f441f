// SPDX-License-Identifier: Apache-2.0
/*
 * The unwinder (daemon/unwind/unwinder.c, unwind_held.c) on its real BPF maps, without a BPF
 * program: a process's mappings go in without a table being built; a table is built when asked
 * for (as a walk asks), and what the maps then hold finds the same row as the file's whole
 * table; when the memory is short the table used least recently goes, and one that cannot fit
 * says so; a held sample of this very thread is finished into the stack glibc's backtrace()
 * sees. Files are mapped executable here without being run (no constructors). Needs root.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "bpf/xsprof_events.h"
#include "daemon/unwind/unwind_table.h"
#include "daemon/unwind/unwinder.h"

#define LIBC	 "/lib/x86_64-linux-gnu/libc.so.6"
#define DNNL	 "/usr/lib/x86_64-linux-gnu/libdnnl.so.2"
#define TORCH_PY "/usr/lib/x86_64-linux-gnu/libtorch_python.so.1.13"
#define TORCH	 "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13"
#define LLVM	 "/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1"

/* The file's executable segment mapped here, as the loader would (not run). */
struct mapped {
	void *at;
	size_t len;
	uint64_t vaddr, offset; /* the segment's, page-aligned offset */
};

static struct mapped map_exec(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct mapped m = {0};
	size_t n = 0;
	Elf *elf;

	cr_assert(fd >= 0, "%s: %s (scripts/deps.sh installs it)", path, strerror(errno));
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert(elf && !elf_getphdrnum(elf, &n));
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		m.offset = ph.p_offset & ~0xfffull;
		m.vaddr = ph.p_vaddr - (ph.p_offset - m.offset);
		m.len = ph.p_filesz + (ph.p_offset - m.offset);
		break;
	}
	elf_end(elf);
	cr_assert(m.len, "%s: no executable segment", path);
	m.at = mmap(NULL, m.len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, (off_t)m.offset);
	cr_assert(m.at != MAP_FAILED);
	close(fd);
	return m;
}

/* The file id of the mapping holding addr in pid's list. */
static uint32_t file_id_of(const struct unwinder_maps *fds, pid_t pid, uint64_t addr)
{
	struct xsprof_unwind_proc p;
	__u32 key = (__u32)pid;

	cr_assert_eq(bpf_map_lookup_elem(fds->procs, &key, &p), 0, "%d is not loaded", (int)pid);
	for (uint32_t i = 0; i < p.count; i++) {
		struct xsprof_unwind_map m;
		__u32 k = p.first + i;

		cr_assert_eq(bpf_map_lookup_elem(fds->maps, &k, &m), 0);
		if (addr >= m.start && addr < m.end)
			return m.file;
	}
	return 0;
}

/* The file id BPF knows the mapping holding addr by (through unwind_procs and unwind_maps). */
static uint32_t file_id(const struct unwinder_maps *fds, uint64_t addr)
{
	return file_id_of(fds, getpid(), addr);
}

static struct xsprof_unwind_file file_entry(const struct unwinder_maps *fds, uint32_t id)
{
	struct xsprof_unwind_file f;

	cr_assert_eq(bpf_map_lookup_elem(fds->files, &id, &f), 0);
	return f;
}

/* Ask for id's table as a walk would, and build until nothing is left to do (bounded). */
static void want_and_build(struct unwinder *u, uint32_t id, uint64_t start)
{
	struct xsprof_unwind_want w = {.type = XSPROF_REC_UNWIND_WANT,
				       .tgid = (uint32_t)getpid(),
				       .file = id,
				       .start = start};

	cr_assert_eq(unwinder__want(u, &w, sizeof(w)), 0);
	for (int i = 0; i < 100000 && unwinder__busy(u); i++)
		unwinder__work(u, 50 * 1000 * 1000);
	cr_assert(!unwinder__busy(u), "the build did not finish");
}

/* The row BPF's lookup finds at vaddr: the file's page, then a bisection of its rows. */
static bool bpf_row(const struct unwinder_maps *fds, const struct xsprof_unwind_file *f,
		    uint64_t vaddr, struct xsprof_unwind_row *ret)
{
	uint64_t page = (vaddr >> XSPROF_UNWIND_PAGE_SHIFT) - f->page0;
	struct xsprof_unwind_page pg;
	uint32_t lo, hi, at;

	if (page >= f->nr_pages)
		return false;
	at = f->page_first + (uint32_t)page;
	cr_assert_eq(bpf_map_lookup_elem(fds->pages, &at, &pg), 0);
	for (lo = pg.first, hi = pg.first + pg.count; lo < hi;) {
		uint32_t mid = lo + (hi - lo) / 2;
		struct xsprof_unwind_row r;

		cr_assert_eq(bpf_map_lookup_elem(fds->rows, &mid, &r), 0);
		if (r.pc <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == pg.first)
		return false;
	lo--;
	return !bpf_map_lookup_elem(fds->rows, &lo, ret);
}

static struct unwinder *new_unwinder(uint32_t mb, struct unwinder_maps *fds)
{
	struct unwinder_opts o = {.table_mb = mb};
	struct unwinder *u = unwinder__new(&o);

	cr_assert(u, "unwinder__new: %s (needs root)", strerror(errno));
	unwinder__maps(u, fds);
	return u;
}

Test(unwinder, tables_are_built_when_asked_and_match_the_file)
{
	struct mapped m = map_exec(LIBC);
	struct unwinder_maps fds;
	struct unwinder *u = new_unwinder(16, &fds);
	struct unwinder_stats st;
	struct xsprof_unwind_file f;
	struct unwind_table *t;
	uint32_t id, checked = 0;
	int fd;

	cr_assert_eq(unwinder__add_process(u, getpid()), 0);
	unwinder__stats(u, &st);
	cr_expect_eq(st.tables_built, 0, "a table was built before anything asked");
	cr_expect(st.files > 3, "our files are known: %llu", (unsigned long long)st.files);
	id = file_id(&fds, (uint64_t)(uintptr_t)m.at);
	cr_assert(id, "the mapping of libc has no file id");
	f = file_entry(&fds, id);
	cr_expect_eq(f.state, XSPROF_FILE_NONE);
	cr_expect_eq(f.nr_pages, 0);

	want_and_build(u, id, (uint64_t)(uintptr_t)m.at);
	f = file_entry(&fds, id);
	cr_assert_eq(f.state, XSPROF_FILE_READY);
	cr_assert(f.nr_pages > 100);
	unwinder__stats(u, &st);
	cr_expect_eq(st.tables_built, 1);

	/* Every row start of the file's own table, looked up as BPF does, is that row. */
	fd = open(LIBC, O_RDONLY | O_CLOEXEC);
	t = unwind_table__from_elf_fd(fd);
	close(fd);
	cr_assert(t);
	for (size_t i = 0; i < unwind_table__count(t); i += 7) {
		const struct xsprof_unwind_row *want = &unwind_table__rows(t)[i];
		struct xsprof_unwind_row got;

		cr_assert(bpf_row(&fds, &f, want->pc, &got), "no row at %#x", want->pc);
		cr_assert(got.type == want->type && got.cfa_off == want->cfa_off &&
				  got.rbp_off == want->rbp_off,
			  "%#x: the maps give another rule than the file's table", want->pc);
		checked++;
	}
	cr_log_info("libc: %u rows checked through the maps\n", checked);
	unwind_table__free(t);
	unwinder__free(u);
	munmap(m.at, m.len);
}

/* The sampler's row cache holds while a process's generation does: every list written anew
 * (a library loaded, the process read again) gets a generation never seen before. */
Test(unwinder, every_mapping_list_gets_a_new_generation)
{
	struct unwinder_maps fds;
	struct unwinder *u = new_unwinder(16, &fds);
	struct xsprof_unwind_proc a, b, c;
	__u32 key = (__u32)getpid();
	struct mapped m;

	cr_assert_eq(unwinder__add_process(u, getpid()), 0);
	cr_assert_eq(bpf_map_lookup_elem(fds.procs, &key, &a), 0);
	cr_expect_neq(a.gen, 0, "generation 0 would match an empty cache entry");
	cr_assert_eq(unwinder__add_process(u, getpid()), 0);
	cr_assert_eq(bpf_map_lookup_elem(fds.procs, &key, &b), 0);
	m = map_exec(LIBC); /* a new mapping, at an address the cache may know */
	cr_assert_eq(unwinder__add_process(u, getpid()), 0);
	cr_assert_eq(bpf_map_lookup_elem(fds.procs, &key, &c), 0);
	cr_expect(a.gen != b.gen && b.gen != c.gen && a.gen != c.gen, "generations %u %u %u", a.gen,
		  b.gen, c.gen);
	unwinder__free(u);
	munmap(m.at, m.len);
}

/* A child that waits, as uid (its entry in the process table is what counts). */
static pid_t waiting_child(uid_t uid)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (!pid) {
		if (uid && setresuid(uid, uid, uid))
			_exit(1);
		pause();
		_exit(0);
	}
	return pid;
}

/* Whether pid's mappings are in the BPF process table; used: mark it walked, as BPF does. */
static bool proc_loaded(const struct unwinder_maps *fds, pid_t pid, bool used)
{
	struct xsprof_unwind_proc e;
	__u32 key = (__u32)pid;

	if (bpf_map_lookup_elem(fds->procs, &key, &e))
		return false;
	if (used) {
		e.used = 1;
		cr_assert_eq(bpf_map_update_elem(fds->procs, &key, &e, BPF_EXIST), 0);
	}
	return true;
}

/* One user's processes cannot take the process table: past its share (a quarter), its own
 * process not walked for longest goes; one walked since gets another round; another user's
 * processes still load, and evicted ones load again. */
Test(unwinder, one_users_processes_keep_to_their_share)
{
	struct unwinder_opts o = {.table_mb = UNWINDER_MIN_MB, .max_procs = 8};
	struct unwinder *u = unwinder__new(&o);
	struct unwinder_maps fds;
	struct unwinder_stats st;
	pid_t nobody[4], root[3];

	cr_assert(u, "unwinder__new: %s (needs root)", strerror(errno));
	unwinder__maps(u, &fds);
	for (int i = 0; i < 4; i++)
		nobody[i] = waiting_child(65534);
	for (int i = 0; i < 3; i++)
		root[i] = waiting_child(0);
	usleep(100 * 1000); /* the children's setresuid */
	unwinder__stats(u, &st);
	cr_assert_eq(st.share_procs, 2, "a quarter of 8");
	cr_assert_eq(unwinder__add_process(u, nobody[0]), 0);
	cr_assert_eq(unwinder__add_process(u, nobody[1]), 0);
	cr_assert(proc_loaded(&fds, nobody[1], true), "walked since");
	/* Full share: the oldest not walked (nobody[0]) goes. */
	cr_assert_eq(unwinder__add_process(u, nobody[2]), 0);
	cr_expect_not(proc_loaded(&fds, nobody[0], false), "the oldest unwalked stayed");
	cr_expect(proc_loaded(&fds, nobody[1], false), "the walked one was evicted");
	cr_expect(proc_loaded(&fds, nobody[2], false));
	/* Again: nobody[1] had its round (its mark cleared), nobody[2] was not walked. */
	cr_assert_eq(unwinder__add_process(u, nobody[3]), 0);
	cr_expect_not(proc_loaded(&fds, nobody[2], false));
	cr_expect(proc_loaded(&fds, nobody[1], false));
	/* Root's are not in that user's share. */
	for (int i = 0; i < 2; i++)
		cr_expect_eq(unwinder__add_process(u, root[i]), 0);
	cr_expect(proc_loaded(&fds, root[0], false) && proc_loaded(&fds, root[1], false));
	/* An evicted process is loaded again when a walk needs it (its user's oldest goes). */
	cr_assert_eq(unwinder__add_process(u, nobody[0]), 0);
	cr_expect(proc_loaded(&fds, nobody[0], false));
	unwinder__stats(u, &st);
	cr_expect_eq(st.procs_evicted, 3, "evicted %llu", (unsigned long long)st.procs_evicted);
	cr_expect_eq(st.processes, 4, "loaded %llu", (unsigned long long)st.processes);
	for (int i = 0; i < 4; i++)
		kill(nobody[i], SIGKILL);
	for (int i = 0; i < 3; i++)
		kill(root[i], SIGKILL);
	while (wait(NULL) > 0)
		;
	unwinder__free(u);
}

static void work_a_while(struct unwinder *u)
{
	for (int i = 0; i < 100000 && unwinder__busy(u); i++)
		unwinder__work(u, 50 * 1000 * 1000);
}

/* Building costs the user whose process asked: once its budget is spent, its builds wait
 * (another user's go first) until the budget refills. */
Test(unwinder, a_user_whose_build_budget_is_spent_waits)
{
	struct mapped big = map_exec(TORCH_PY), other = map_exec(DNNL), mine = map_exec(LIBC);
	struct unwinder_opts o = {.table_mb = 64, .build_burst_ms = 1};
	struct unwinder *u = unwinder__new(&o);
	struct unwinder_maps fds;
	struct unwinder_stats st;
	pid_t child = waiting_child(65534);
	struct xsprof_unwind_want w = {.type = XSPROF_REC_UNWIND_WANT, .tgid = (uint32_t)child};
	uint32_t big_id, other_id, mine_id;

	cr_assert(u, "unwinder__new: %s (needs root)", strerror(errno));
	unwinder__maps(u, &fds);
	usleep(100 * 1000); /* the child's setresuid */
	cr_assert_eq(unwinder__add_process(u, child), 0);
	cr_assert_eq(unwinder__add_process(u, getpid()), 0);
	big_id = file_id_of(&fds, child, (uint64_t)(uintptr_t)big.at);
	other_id = file_id_of(&fds, child, (uint64_t)(uintptr_t)other.at);
	mine_id = file_id_of(&fds, getpid(), (uint64_t)(uintptr_t)mine.at);
	cr_assert(big_id && other_id && mine_id);
	/* The first build goes (the budget was not spent) and spends it, many times over. */
	w.file = big_id;
	w.start = (uint64_t)(uintptr_t)big.at;
	cr_assert_eq(unwinder__want(u, &w, sizeof(w)), 0);
	work_a_while(u);
	cr_assert_eq(file_entry(&fds, big_id).state, XSPROF_FILE_READY);
	/* The same user's next one waits; root's, asked after it, is built. */
	w.file = other_id;
	w.start = (uint64_t)(uintptr_t)other.at;
	cr_assert_eq(unwinder__want(u, &w, sizeof(w)), 0);
	want_and_build(u, mine_id, (uint64_t)(uintptr_t)mine.at);
	cr_expect_eq(file_entry(&fds, mine_id).state, XSPROF_FILE_READY, "root's build waited");
	cr_expect_neq(file_entry(&fds, other_id).state, XSPROF_FILE_READY,
		      "a user past its budget had its build");
	unwinder__stats(u, &st);
	cr_expect_gt(st.builds_deferred, 0);
	/* Refilled at a fifth of the time passed: built later. */
	for (int i = 0; i < 100 && file_entry(&fds, other_id).state != XSPROF_FILE_READY; i++) {
		usleep(100 * 1000);
		unwinder__work(u, 50 * 1000 * 1000);
		work_a_while(u);
	}
	cr_expect_eq(file_entry(&fds, other_id).state, XSPROF_FILE_READY,
		     "the build never came once the budget refilled");
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	unwinder__free(u);
	munmap(big.at, big.len);
	munmap(other.at, other.len);
	munmap(mine.at, mine.len);
}

/* A file touched (its mtime changed, its build id not) keeps its table: an outsider who
 * touches a large file and runs it again does not make the daemon build it again. */
Test(unwinder, a_touched_file_keeps_its_table)
{
	char path[] = "/tmp/xsprof-touch-XXXXXX", cmd[160];
	int fd = mkstemp(path);
	struct unwinder_maps fds;
	struct unwinder *u = new_unwinder(16, &fds);
	struct unwinder_stats st;
	struct timespec later[2] = {{0, UTIME_OMIT}, {0, 0}};
	struct mapped a, b;
	uint32_t id_a, id_b;

	cr_assert_geq(fd, 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "cp %s %s", LIBC, path);
	cr_assert_eq(system(cmd), 0);
	a = map_exec(path);
	cr_assert_eq(unwinder__add_process(u, getpid()), 0);
	id_a = file_id(&fds, (uint64_t)(uintptr_t)a.at);
	want_and_build(u, id_a, (uint64_t)(uintptr_t)a.at);
	cr_assert_eq(file_entry(&fds, id_a).state, XSPROF_FILE_READY);
	later[1].tv_sec = time(NULL) + 3600;
	cr_assert_eq(utimensat(AT_FDCWD, path, later, 0), 0);
	b = map_exec(path);
	cr_assert_eq(unwinder__add_process(u, getpid()), 0);
	id_b = file_id(&fds, (uint64_t)(uintptr_t)b.at);
	cr_expect_eq(id_b, id_a, "the touched file got another entry");
	cr_expect_eq(file_entry(&fds, id_b).state, XSPROF_FILE_READY, "its table was dropped");
	unwinder__stats(u, &st);
	cr_expect_eq(st.tables_kept_touched, 1);
	cr_expect_eq(st.tables_built, 1, "built again: %llu", (unsigned long long)st.tables_built);
	unwinder__free(u);
	munmap(a.at, a.len);
	munmap(b.at, b.len);
	unlink(path);
}

Test(unwinder, short_memory_evicts_the_least_recent_and_refuses_what_cannot_fit)
{
	struct mapped dnnl = map_exec(DNNL), tpy = map_exec(TORCH_PY), torch = map_exec(TORCH);
	struct unwinder_maps fds;
	/* 4 MiB: about 458 K rows. libdnnl (~404 K rows) and libtorch_python (~160 K) do not fit
	 * together; libtorch_cpu (~1.4 M) never does. */
	struct unwinder *u = new_unwinder(4, &fds);
	struct unwinder_stats st;
	uint32_t id_dnnl, id_tpy, id_torch;

	cr_assert_eq(unwinder__add_process(u, getpid()), 0);
	id_dnnl = file_id(&fds, (uint64_t)(uintptr_t)dnnl.at);
	id_tpy = file_id(&fds, (uint64_t)(uintptr_t)tpy.at);
	id_torch = file_id(&fds, (uint64_t)(uintptr_t)torch.at);
	cr_assert(id_dnnl && id_tpy && id_torch);

	want_and_build(u, id_dnnl, (uint64_t)(uintptr_t)dnnl.at);
	cr_assert_eq(file_entry(&fds, id_dnnl).state, XSPROF_FILE_READY);
	want_and_build(u, id_tpy, (uint64_t)(uintptr_t)tpy.at);
	cr_expect_eq(file_entry(&fds, id_tpy).state, XSPROF_FILE_READY);
	cr_expect_eq(file_entry(&fds, id_dnnl).state, XSPROF_FILE_NONE,
		     "libdnnl's table should have made room");
	cr_expect_eq(file_entry(&fds, id_dnnl).nr_pages, 0);

	want_and_build(u, id_torch, (uint64_t)(uintptr_t)torch.at);
	cr_expect_eq(file_entry(&fds, id_torch).state, XSPROF_FILE_UNAVAILABLE,
		     "libtorch_cpu cannot fit in 4 MiB");
	cr_expect_eq(file_entry(&fds, id_tpy).state, XSPROF_FILE_READY,
		     "what could never fit took another table with it");
	unwinder__stats(u, &st);
	cr_expect_eq(st.tables_evicted, 1);
	cr_expect_eq(st.tables_no_room, 1);
	cr_expect_leq(st.rows, st.max_rows);
	cr_log_info("4 MiB: %llu rows of %llu, %llu evicted, %llu without room\n",
		    (unsigned long long)st.rows, (unsigned long long)st.max_rows,
		    (unsigned long long)st.tables_evicted, (unsigned long long)st.tables_no_room);
	/* Asked again, it is built again (and counted), and the other one makes room. */
	want_and_build(u, id_dnnl, (uint64_t)(uintptr_t)dnnl.at);
	cr_expect_eq(file_entry(&fds, id_dnnl).state, XSPROF_FILE_READY);
	cr_expect_eq(file_entry(&fds, id_tpy).state, XSPROF_FILE_NONE);
	unwinder__stats(u, &st);
	cr_expect_eq(st.tables_rebuilt, 1);
	cr_expect_eq(st.tables_evicted, 2);
	unwinder__free(u);
	munmap(dnnl.at, dnnl.len);
	munmap(tpy.at, tpy.len);
	munmap(torch.at, torch.len);
}

/* A copy of /bin/true whose .eh_frame is renamed away, in a file of its own: its path. */
static void write_without_eh_frame(char *path)
{
	int fd = open("/bin/true", O_RDONLY | O_CLOEXEC), out;
	struct stat st;
	size_t shstrndx, name_at = 0;
	Elf_Scn *scn = NULL;
	uint8_t *img;
	Elf *elf;

	cr_assert(fd >= 0 && !fstat(fd, &st));
	img = malloc(st.st_size);
	cr_assert(img && read(fd, img, st.st_size) == st.st_size);
	close(fd);
	elf_version(EV_CURRENT);
	elf = elf_memory((char *)img, st.st_size);
	cr_assert(elf && !elf_getshdrstrndx(elf, &shstrndx));
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh, strs;

		if (gelf_getshdr(scn, &sh) &&
		    !strcmp(elf_strptr(elf, shstrndx, sh.sh_name) ?: "", ".eh_frame") &&
		    gelf_getshdr(elf_getscn(elf, shstrndx), &strs))
			name_at = strs.sh_offset + sh.sh_name;
	}
	elf_end(elf);
	cr_assert(name_at && img[name_at + 1] == 'e', "/bin/true has no .eh_frame");
	img[name_at + 1] = 'x';
	out = mkstemp(path);
	cr_assert(out >= 0 && write(out, img, st.st_size) == st.st_size);
	close(out);
	free(img);
}

/* A clang-built library (its .eh_frame typed SHT_X86_64_UNWIND) gets its table; a file with
 * none is named, with why, in the stats the daemon's report prints. */
Test(unwinder, clang_built_library_is_built_and_a_file_without_a_table_is_named, .timeout = 60)
{
	char path[] = "/tmp/xs_no_eh_frame.XXXXXX";
	struct mapped llvm = map_exec(LLVM), bare;
	struct unwinder_maps fds;
	struct unwinder *u = new_unwinder(64, &fds);
	struct unwinder_stats st;
	uint32_t id_llvm, id_bare;

	write_without_eh_frame(path);
	bare = map_exec(path);
	cr_assert_eq(unwinder__add_process(u, getpid()), 0);
	id_llvm = file_id(&fds, (uint64_t)(uintptr_t)llvm.at);
	id_bare = file_id(&fds, (uint64_t)(uintptr_t)bare.at);
	cr_assert(id_llvm && id_bare);

	want_and_build(u, id_llvm, (uint64_t)(uintptr_t)llvm.at);
	cr_expect_eq(file_entry(&fds, id_llvm).state, XSPROF_FILE_READY, "libLLVM: no table");
	want_and_build(u, id_bare, (uint64_t)(uintptr_t)bare.at);
	cr_expect_eq(file_entry(&fds, id_bare).state, XSPROF_FILE_UNAVAILABLE);
	unwinder__stats(u, &st);
	cr_expect_eq(st.tables_built, 1);
	cr_expect_gt(st.rows, 900000, "libLLVM's rows: %llu", (unsigned long long)st.rows);
	cr_expect_eq(st.tables_failed, 1);
	cr_expect_eq(st.refused_files, 1);
	cr_assert_eq(st.nr_refused, 1);
	cr_expect_str_eq(st.refused[0].path ?: "(none)", path);
	cr_expect_str_eq(st.refused[0].why, "no .eh_frame section");
	unwinder__free(u);
	munmap(llvm.at, llvm.len);
	munmap(bare.at, bare.len);
	unlink(path);
}

/* ---- a held sample of this thread, finished as backtrace() sees the stack ---- */

struct done {
	int calls;
	uint64_t cookie;
	uint16_t nr_user;
	uint64_t ips[XSPROF_MAX_STACK_DEPTH];
};

static void on_done(void *ctx, const struct xsprof_sample *s, size_t size, uint64_t cookie)
{
	struct done *d = ctx;

	cr_assert_geq(size, XSPROF_SAMPLE_HDR_SIZE + 8u * (s->nr_kernel + s->nr_user));
	d->calls++;
	d->cookie = cookie;
	d->nr_user = s->nr_user;
	memcpy(d->ips, &s->ips[s->nr_kernel], s->nr_user * 8);
}

static struct xsprof_sample_held *rec;
static void *bt[64];
static int nbt;

/* As the BPF side copies: page by page while the stack's mapping lasts. */
static uint32_t copy_stack(uint8_t *dst, uint64_t sp, size_t max)
{
	size_t len = 0;

	while (len < max) {
		size_t n = 4096 - ((sp + len) & 4095);
		struct iovec local = {dst + len, n < max - len ? n : max - len};
		struct iovec remote = {(void *)(uintptr_t)(sp + len), local.iov_len};

		if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)local.iov_len)
			break;
		len += local.iov_len;
	}
	return (uint32_t)len;
}

/* The held record of this point (its registers, a copy of the stack above), and backtrace(). */
__attribute__((noinline)) static void capture(void)
{
	uint64_t sp, bp;

	__asm__ volatile("mov %%rsp, %0; mov %%rbp, %1" : "=r"(sp), "=r"(bp));
	rec->pc = (uint64_t)(uintptr_t) && here;
here:
	rec->sp = sp;
	rec->bp = bp;
	rec->copy_len = copy_stack(rec->stack, sp, sizeof(rec->stack));
	nbt = backtrace(bt, 64);
}

/* A few frames of our own between main and capture, without frame pointers. */
__attribute__((noinline, optimize("omit-frame-pointer"))) static int level(int n)
{
	volatile int keep = n;

	if (n)
		keep += level(n - 1);
	else
		capture();
	return keep;
}

Test(unwinder, held_sample_is_finished_as_backtrace_sees_it)
{
	struct unwinder_maps fds;
	struct unwinder *u = new_unwinder(16, &fds);
	struct unwinder_stats st;
	struct done d = {0};
	int matched = 0;

	rec = calloc(1, sizeof(*rec));
	cr_assert(rec);
	level(6);
	rec->type = XSPROF_REC_SAMPLE_HELD;
	rec->reason = XSPROF_HOLD_NO_PROCESS;
	rec->exact = 1;
	rec->sample.type = XSPROF_REC_SAMPLE;
	rec->sample.tgid = (uint32_t)getpid();
	rec->sample.tid = (uint32_t)gettid();
	rec->sample.nr_user = 1;
	rec->sample.ips[0] = rec->pc;
	/* Not loaded: the unwinder loads us, then needs libc's and our tables (asked for). */
	cr_assert_eq(unwinder__hold(u, rec, sizeof(*rec), on_done, &d, 42), 0);
	for (int i = 0; i < 100000 && unwinder__busy(u); i++)
		unwinder__work(u, 50 * 1000 * 1000);
	cr_assert_eq(d.calls, 1, "the held sample was not finished");
	cr_expect_eq(d.cookie, 42);
	unwinder__stats(u, &st);
	cr_expect_eq(st.held, 1);
	cr_expect_eq(st.held_whole, 1, "whole: %llu, fp %llu, cut %llu, late %llu",
		     (unsigned long long)st.held_whole, (unsigned long long)st.held_fp,
		     (unsigned long long)st.held_cut, (unsigned long long)st.held_late);
	cr_expect_geq(st.tables_built, 2);
	/* backtrace()'s frames are return addresses from capture's caller outward: ours must be
	 * the same, in order, out to the thread's start. Compared from the outermost inward: the
	 * innermost one or two differ by where each was taken (and a sanitizer's build may put
	 * a frame of its own there). */
	cr_log_info("held walk: %u frames; backtrace(): %d\n", d.nr_user, nbt);
	for (int i = 1; i < nbt - 1 && i < d.nr_user; i++) {
		uint64_t ours = d.ips[d.nr_user - i], theirs = (uint64_t)(uintptr_t)bt[nbt - i];

		if (ours == theirs)
			matched++;
		else
			cr_log_info("frame %d from the outermost: %#llx, backtrace %#llx\n", i,
				    (unsigned long long)ours, (unsigned long long)theirs);
	}
	cr_expect_geq(d.nr_user, nbt - 1, "the walk stopped early: %u of %d", d.nr_user, nbt);
	cr_expect_geq(matched, nbt - 3, "%d of %d frames as backtrace() has them", matched,
		      nbt - 2);
	cr_expect_geq(matched, 10, "the walk did not cross the levels: %d frames", matched);
	free(rec);
	unwinder__free(u);
}

Test(unwinder, bad_records_and_sizes_are_refused)
{
	struct unwinder_opts o = {.table_mb = 1};
	struct unwinder_maps fds;
	struct unwinder *u;
	struct xsprof_unwind_want w = {.type = XSPROF_REC_UNWIND_WANT, .file = 123456789};
	struct xsprof_sample_held *h = calloc(1, sizeof(*h));
	struct done d = {0};

	cr_expect_null(unwinder__new(&o), "1 MiB is below the minimum");
	cr_expect_eq(errno, EINVAL);
	u = new_unwinder(UNWINDER_MIN_MB, &fds);
	cr_expect_eq(unwinder__want(u, &w, sizeof(w) - 1), -EBADMSG);
	cr_expect_eq(unwinder__want(u, &w, sizeof(w)), 0, "an unknown file is counted, not fatal");
	cr_assert(h);
	h->type = XSPROF_REC_SAMPLE_HELD;
	h->sample.type = XSPROF_REC_SAMPLE;
	h->sample.nr_user = XSPROF_MAX_STACK_DEPTH + 1;
	cr_expect_eq(unwinder__hold(u, h, sizeof(*h), on_done, &d, 0), -EBADMSG);
	h->sample.nr_user = 1;
	h->copy_len = XSPROF_HOLD_STACK_BYTES + 1;
	cr_expect_eq(unwinder__hold(u, h, sizeof(*h), on_done, &d, 0), -EBADMSG);
	cr_expect_eq(unwinder__hold(u, h, sizeof(*h) - 1, on_done, &d, 0), -EBADMSG);
	cr_expect_eq(d.calls, 0);
	cr_expect_eq(unwinder__add_process(u, 0), -EINVAL);
	free(h);
	unwinder__free(u);
}
