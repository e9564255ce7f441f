// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "daemon/cuda/cuda_api.h"
#include "daemon/cuda/cuda_elf.h"
#include "daemon/cuda/cuda_probes.h"
#include "daemon/probes/stop_ledger.h"
#include "daemon/symbolize/proc_maps.h"
#include "daemon/cuda/cuda_waits.h"
#include "daemon/cuda/uprobe_multi.h"
#include "daemon/cuda/launch_store.h"
#include "daemon/probes/sampler.h"
#include "daemon/cuda/cuda_scopes.h"
#include "daemon/cuda/usdt_site.h"
#include "daemon/log.h"
#include "xsprof.skel.h"

#define DEFAULT_MAX_LINKS 16384
/* Processes (and system-wide paths) with probes at once, and ELF files whose offsets we keep. */
#define MAX_TARGETS 4096
#define MAX_FILES   256
/* A process mapping more distinct CUDA files than this is up to something: the rest are left. */
#define MAX_FILES_PER_PID 16
/* Processes whose xsprof:launch firings are followed (site mode, trimming), round robin. */
#define MAX_USDT_PIDS 256

/* Probes on one file, for one process or (pid -1) for all. */
struct target {
	pid_t pid;
	int pidfd; /* readable once the process has exited; -1 for system-wide */
	dev_t dev;
	ino_t ino;
	/* One uprobe_multi link for the APIs xsprof:launch does not report, one for those it
	 * does (removed where it fires), or -1. */
	int multi_fd, multi_fd_covered;
	int nr_covered;		       /* probes on APIs xsprof:launch reports (multi or links) */
	struct bpf_link **links;       /* else one perf-event uprobe each; and the USDT */
	bool *covered;		       /* parallel to links */
	struct cuda_wait_links *waits; /* return probes timing the waiting APIs */
	int nr_waits;
	int nr_links;
	int nr_probes;
	bool trimmed;
};

/* A process whose xsprof:launch fired. */
struct usdt_pid {
	pid_t pid;
	uint64_t firings;
	enum usdt_site_mode mode;
	bool nop5;
};

/* Where a process has the CUDA and injection libraries, to trim USDT stacks to the caller. */
#define MAX_RANGE_PIDS 256
#define MAX_RANGES     8

struct lib_ranges {
	pid_t pid;
	int n;
	struct {
		uint64_t start, end;
	} r[MAX_RANGES];
};

struct cuda_probes {
	struct sampler *sampler;
	struct xsprof_bpf *skel;
	struct cuda_probes_opts opts;
	struct launch_store *store;
	struct target *targets;
	int nr_targets;
	struct cuda_file *files;
	int nr_files, next_file;
	uint64_t nr_links;
	/*
	 * The CUDA programs, in instances of the skeleton of their own that share every map of
	 * the sampler's, loaded at the first attach: their verification (~0.1 s) is not paid on
	 * a machine without CUDA. The first instance has xsprof_cuda_call and xsprof_cuda_ret
	 * typed for uprobe_multi links (a perf-event uprobe takes ~0.1 s to detach, the kernel
	 * waiting a grace period per probe, so 47 probes on libcudart kept xsprofd ~5 s from
	 * exiting; a multi link waits once) and xsprof_usdt_launch. The two are loaded again for
	 * perf-event uprobes only where a multi link is refused (before Linux 6.6). A program
	 * the kernel refuses is said once and left out. NULL: not loaded.
	 */
	struct xsprof_bpf *inst[5];
	int nr_inst;
	bool progs_tried, plain_tried;
	struct bpf_program *call_multi, *ret_multi, *call_plain, *ret_plain, *usdt, *scope;
	struct cuda_scopes *scopes; /* xsprof scopes open, their names */
	bool timing_waits;	    /* while attaching: the file's waits have their return probes */
	struct bpf_link *watch_links[4];
	struct lib_ranges *ranges; /* MAX_RANGE_PIDS, reused round robin */
	int next_range;
	struct usdt_pid *usdt_pids; /* MAX_USDT_PIDS, reused round robin */
	int next_usdt_pid;
	struct cuda_probes_stats st;
	uint32_t stack_every; /* launch stacks walked 1 in this many (--max-cpu); 0 or 1: all */
	char last_error[512];
};

static void set_error(struct cuda_probes *cp, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_error(struct cuda_probes *cp, int err, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(cp->last_error, sizeof(cp->last_error), fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof(cp->last_error))
		snprintf(cp->last_error + n, sizeof(cp->last_error) - n, ": %s", strerror(-err));
}

/* The offsets for the file open at fd, read once per file (dev, inode). */
static const struct cuda_file *file_info(struct cuda_probes *cp, int fd, const struct stat *st,
					 int *ret_err)
{
	struct cuda_file *fi;
	int err;

	for (int i = 0; i < cp->nr_files; i++)
		if (cp->files[i].dev == st->st_dev && cp->files[i].ino == st->st_ino)
			return &cp->files[i];
	/* Full: the oldest entry makes room (re-reading a file is only slower). */
	if (cp->nr_files < MAX_FILES) {
		fi = &cp->files[cp->nr_files++];
	} else {
		fi = &cp->files[cp->next_file];
		cp->next_file = (cp->next_file + 1) % MAX_FILES;
	}
	memset(fi, 0, sizeof(*fi));
	err = cuda_file__read(fd, fi);
	if (err) {
		memset(fi, 0, sizeof(*fi));
		*ret_err = err;
		return NULL;
	}
	fi->dev = st->st_dev;
	fi->ino = st->st_ino;
	return fi;
}

/* ---- Attaching ---- */

static void target__detach(struct target *t)
{
	if (t->multi_fd >= 0)
		close(t->multi_fd);
	if (t->multi_fd_covered >= 0)
		close(t->multi_fd_covered);
	for (int i = 0; i < t->nr_links; i++)
		bpf_link__destroy(t->links[i]);
	free(t->links);
	free(t->covered);
	cuda_wait_links__free(t->waits);
	if (t->pidfd >= 0)
		close(t->pidfd);
}

static void remove_target(struct cuda_probes *cp, int i)
{
	cp->nr_links -= cp->targets[i].nr_probes;
	target__detach(&cp->targets[i]);
	cp->targets[i] = cp->targets[--cp->nr_targets];
}

/* Let go of the probes of processes that have exited: their pidfd is readable. */
static void collect_exited(struct cuda_probes *cp)
{
	for (int i = 0; i < cp->nr_targets;) {
		struct pollfd p = {.fd = cp->targets[i].pidfd, .events = POLLIN};

		if (p.fd >= 0 && poll(&p, 1, 0) == 1)
			remove_target(cp, i);
		else
			i++;
	}
}

static int find_target(const struct cuda_probes *cp, pid_t pid, dev_t dev, ino_t ino)
{
	for (int i = 0; i < cp->nr_targets; i++)
		if ((cp->targets[i].pid == pid || cp->targets[i].pid == -1) &&
		    cp->targets[i].dev == dev && cp->targets[i].ino == ino)
			return i;
	return -1;
}

static int pid_targets(const struct cuda_probes *cp, pid_t pid)
{
	int n = 0;

	for (int i = 0; i < cp->nr_targets; i++)
		n += cp->targets[i].pid == pid;
	return n;
}

/* waits: the waiting APIs have their return probe (cuda_waits), so their entry marks them. */
static __u64 api_cookie(const struct cuda_api *a, pid_t pid, bool waits)
{
	return XSPROF_CUDA_COOKIE(a->id, a->loc, a->idx, a->off) |
	       (a->wrapper ? XSPROF_CUDA_COOKIE_WRAPPER : 0) |
	       (pid > 0 ? XSPROF_CUDA_COOKIE_ONE_PROCESS : 0) |
	       (waits && cuda_api__waits(a->id) ? XSPROF_CUDA_COOKIE_WAIT : 0) |
	       (waits && cuda_api__allocates(a->id) ? XSPROF_CUDA_COOKIE_ALLOC : 0) |
	       (a->id == XSPROF_CUDA_cudaSetDevice ? XSPROF_CUDA_COOKIE_SET_DEVICE : 0);
}

/* Two names for one entry (an alias): one probe, or each call would count twice. */
static bool is_alias(const struct cuda_file *fi, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (fi->off[cuda_apis[j].id] == fi->off[cuda_apis[i].id])
			return true;
	return false;
}

static bool load_plain(struct cuda_probes *cp);

/* Keep instance m (multi: its call and ret programs typed for uprobe_multi links). */
static void keep_inst(struct cuda_probes *cp, struct xsprof_bpf *m, bool multi)
{
	struct bpf_program *call = m->progs.xsprof_cuda_call, *ret = m->progs.xsprof_cuda_ret;

	cp->inst[cp->nr_inst++] = m;
	if (bpf_program__fd(call) >= 0)
		*(multi ? &cp->call_multi : &cp->call_plain) = call;
	if (bpf_program__fd(ret) >= 0)
		*(multi ? &cp->ret_multi : &cp->ret_plain) = ret;
	if (bpf_program__fd(m->progs.xsprof_usdt_launch) >= 0)
		cp->usdt = m->progs.xsprof_usdt_launch;
	if (bpf_program__fd(m->progs.xsprof_usdt_scope) >= 0)
		cp->scope = m->progs.xsprof_usdt_scope;
}

/* The CUDA programs, at the first attach (see struct cuda_probes). */
static void load_progs(struct cuda_probes *cp)
{
	static const enum sampler_prog each[] = {SAMPLER_PROG_CUDA_CALL, SAMPLER_PROG_CUDA_RET,
						 SAMPLER_PROG_USDT_LAUNCH, SAMPLER_PROG_USDT_SCOPE};
	struct xsprof_bpf *m;

	if (cp->progs_tried)
		return;
	cp->progs_tried = true;
	m = cuda_progs__open(cp->skel, SAMPLER_PROGS_CUDA, true);
	if (m) {
		keep_inst(cp, m, true);
		return;
	}
	/* Refused together: each alone (for multi links first), so that one refusal costs its
	 * own feature only. Only a kernel that refuses one pays these loads. */
	for (size_t i = 0; i < sizeof(each) / sizeof(each[0]); i++) {
		bool multi = true;

		m = cuda_progs__open(cp->skel, SAMPLER_PROG_BIT(each[i]), true);
		if (!m && each[i] != SAMPLER_PROG_USDT_LAUNCH &&
		    each[i] != SAMPLER_PROG_USDT_SCOPE) {
			multi = false;
			m = cuda_progs__open(cp->skel, SAMPLER_PROG_BIT(each[i]), false);
		}
		if (m) {
			keep_inst(cp, m, multi);
			continue;
		}
		cp->st.programs_refused |= SAMPLER_PROG_BIT(each[i]);
		log_warn("this kernel refused a BPF program: sampling goes on without %s",
			 sampler__program_feature(each[i]));
	}
	cp->plain_tried = cp->call_plain || cp->ret_plain;
}

/* The call and ret programs for perf-event uprobes, where a multi link was refused: true when
 * they were loaded now. */
static bool load_plain(struct cuda_probes *cp)
{
	struct xsprof_bpf *m;

	if (cp->plain_tried)
		return false;
	cp->plain_tried = true;
	m = cuda_progs__open(cp->skel,
			     SAMPLER_PROG_BIT(SAMPLER_PROG_CUDA_CALL) |
				     SAMPLER_PROG_BIT(SAMPLER_PROG_CUDA_RET),
			     false);
	if (!m)
		return false;
	keep_inst(cp, m, false);
	return true;
}

/*
 * One uprobe_multi link on the file's APIs that xsprof:launch reports (covered) or on the
 * others: its fd; -1 and *ret_probes 0 when there are none; -1 when the kernel refused it.
 */
static int attach_multi(struct cuda_probes *cp, pid_t pid, const char *path,
			const struct cuda_file *fi, bool covered, int *ret_probes)
{
	unsigned long offs[XSPROF_CUDA_API_MAX];
	__u64 cookies[XSPROF_CUDA_API_MAX];
	__u32 n = 0;
	int fd;

	*ret_probes = 0;
	for (size_t i = 0; i < cuda_nr_apis && n < XSPROF_CUDA_API_MAX; i++) {
		if (!fi->off[cuda_apis[i].id] || is_alias(fi, i) ||
		    cuda_api__usdt_covers(cuda_apis[i].id) != covered)
			continue;
		offs[n] = fi->off[cuda_apis[i].id];
		cookies[n++] = api_cookie(&cuda_apis[i], pid, cp->timing_waits);
	}
	if (!n)
		return -1;
	fd = uprobe_multi__attach(bpf_program__fd(cp->call_multi), pid, path, offs, cookies, n,
				  false);
	if (fd < 0)
		return -1;
	*ret_probes = n;
	return fd;
}

/*
 * Attach to the file open at fd for pid (-1: every process). 1 when attached, 0 when it was
 * already or has nothing to attach, -errno. what names it in errors.
 */
/* Both uprobe_multi links of a target; neither when the kernel refuses one (perf-event uprobes
 * then). */
static void attach_multi_pair(struct cuda_probes *cp, struct target *t, pid_t pid, const char *path,
			      const struct cuda_file *fi)
{
	int n_other, n_covered, fd_other, fd_covered;

	fd_other = attach_multi(cp, pid, path, fi, false, &n_other);
	fd_covered = attach_multi(cp, pid, path, fi, true, &n_covered);
	if ((fd_other < 0 && n_other) || (fd_covered < 0 && n_covered) ||
	    (fd_other < 0 && fd_covered < 0)) {
		if (fd_other >= 0)
			close(fd_other);
		if (fd_covered >= 0)
			close(fd_covered);
		return;
	}
	t->multi_fd = fd_other;
	t->multi_fd_covered = fd_covered;
	t->nr_covered = n_covered;
	t->nr_probes = n_other + n_covered;
}

/* The return probes of the file's waiting APIs, first: their entries are marked only then. A
 * failure is counted; the calls are still recorded, untimed. */
static void attach_waits(struct cuda_probes *cp, struct target *t, pid_t pid, const char *path,
			 const struct cuda_file *fi, const char *what)
{
	int n;

	if (!cp->ret_multi && !cp->ret_plain)
		return; /* refused: calls are recorded untimed */
	n = cuda_wait_links__attach(cp->ret_multi, cp->ret_plain, pid, path, fi->off, &t->waits);
	if (n < 0 && cp->ret_multi && !cp->ret_plain && load_plain(cp) && cp->ret_plain)
		n = cuda_wait_links__attach(NULL, cp->ret_plain, pid, path, fi->off, &t->waits);

	cp->timing_waits = n > 0;
	if (n > 0) {
		t->nr_waits = n;
	} else if (n < 0) {
		cp->st.attach_failed++;
		set_error(cp, n, "return probes on %s for pid %d", what, (int)pid);
	}
}

/*
 * xsprof:launch fired in pid: the entry uprobes on the APIs it reports are paid for nothing
 * there. Remove them from pid's targets, and from the file-wide ones (command mode: the
 * injection library is preset for the whole command), unless the strategy needs them.
 */
static void trim_launch_uprobes(struct cuda_probes *cp, pid_t pid)
{
	if (cp->opts.keep_launch_uprobes)
		return;
	for (int i = 0; i < cp->nr_targets; i++) {
		struct target *t = &cp->targets[i];

		if ((t->pid != pid && t->pid != -1) || t->trimmed || !t->nr_covered)
			continue;
		t->trimmed = true;
		if (t->multi_fd_covered >= 0) {
			close(t->multi_fd_covered);
			t->multi_fd_covered = -1;
		}
		for (int j = 0; j < t->nr_links; j++) {
			if (!t->covered[j] || !t->links[j])
				continue;
			bpf_link__destroy(t->links[j]);
			t->links[j] = NULL;
		}
		t->nr_probes -= t->nr_covered;
		cp->nr_links -= t->nr_covered;
		cp->st.uprobes_trimmed += t->nr_covered;
		t->nr_covered = 0;
	}
}

static int attach_fd(struct cuda_probes *cp, pid_t pid, int fd, const char *what)
{
	const struct cuda_file *fi;
	struct target *t;
	char path[64];
	struct stat st;
	int err = 0, need;
	bool plain;

	if (fstat(fd, &st))
		return -errno;
	if (find_target(cp, pid, st.st_dev, st.st_ino) >= 0)
		return 0;
	fi = file_info(cp, fd, &st, &err);
	if (!fi) {
		/* Not an x86-64 ELF file: nothing of ours in it. */
		return err == -ENOEXEC ? 0 : err;
	}
	if (!fi->nr_apis && !fi->usdt && !fi->scopes)
		return 0;
	collect_exited(cp);
	need = fi->nr_apis + fi->usdt + 2 * fi->scopes;
	if (cp->nr_targets == MAX_TARGETS ||
	    cp->nr_links + need + cuda_waits__count(fi->off) > cp->opts.max_links ||
	    (pid > 0 && pid_targets(cp, pid) >= MAX_FILES_PER_PID)) {
		cp->st.links_capped++;
		set_error(cp, -ENOSPC, "attaching %s (%d probes) for pid %d: %llu probes already",
			  what, need, (int)pid, (unsigned long long)cp->nr_links);
		return -ENOSPC;
	}
	t = &cp->targets[cp->nr_targets];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->pidfd = -1;
	t->multi_fd = -1;
	t->multi_fd_covered = -1;
	t->dev = st.st_dev;
	t->ino = st.st_ino;
	t->links = calloc(need, sizeof(*t->links));
	t->covered = calloc(need, sizeof(*t->covered));
	if (!t->links || !t->covered) {
		free(t->links);
		free(t->covered);
		return -ENOMEM;
	}
	load_progs(cp);
	/* Our own fd names the very file, whatever the process's root or the name's fate. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	attach_waits(cp, t, pid, path, fi, what);
	if (cp->call_multi)
		attach_multi_pair(cp, t, pid, path, fi);
	/* Perf-event uprobes where the multi links were refused. */
	if (!t->nr_probes && t->multi_fd < 0 && fi->nr_apis && !cp->call_plain)
		load_plain(cp);
	/* A program this kernel refused is left out (that was said): the others still go. Whether
	 * the file takes perf-event uprobes is decided once, before the first is counted in
	 * nr_probes (tested in the loop, it stopped after one: a kernel before 6.6 saw the first
	 * API of each file only). */
	plain = cp->call_plain && !t->nr_probes && t->multi_fd < 0;
	for (size_t i = 0; plain && i < cuda_nr_apis && !err; i++) {
		const struct cuda_api *a = &cuda_apis[i];
		LIBBPF_OPTS(bpf_uprobe_opts, uo);

		if (!fi->off[a->id] || is_alias(fi, i))
			continue;
		uo.bpf_cookie = api_cookie(a, pid, cp->timing_waits);
		t->links[t->nr_links] = bpf_program__attach_uprobe_opts(cp->call_plain, pid, path,
									fi->off[a->id], &uo);
		if (!t->links[t->nr_links]) {
			err = -errno;
		} else {
			t->covered[t->nr_links] = cuda_api__usdt_covers(a->id);
			t->nr_covered += t->covered[t->nr_links];
			t->nr_links++, t->nr_probes++;
		}
	}
	if (!err && fi->usdt && cp->usdt) {
		t->links[t->nr_links] =
			bpf_program__attach_usdt(cp->usdt, pid, path, "xsprof", "launch", NULL);
		if (!t->links[t->nr_links])
			err = -errno;
		else
			t->nr_links++, t->nr_probes++;
	}
	/* xsprof scopes: one program on both probes, the cookie telling an end from a begin. */
	for (int end = 0; !err && fi->scopes && cp->scope && end < 2; end++) {
		LIBBPF_OPTS(bpf_usdt_opts, so, .usdt_cookie = (__u64)end);

		t->links[t->nr_links] = bpf_program__attach_usdt(
			cp->scope, pid, path, "xsprof", end ? "scope_end" : "scope_begin", &so);
		if (!t->links[t->nr_links])
			err = -errno;
		else
			t->nr_links++, t->nr_probes++;
	}
	if (!err && pid > 0) {
		t->pidfd = syscall(SYS_pidfd_open, pid, 0);
		if (t->pidfd < 0)
			err = -errno;
	}
	if (err) {
		target__detach(t);
		cp->st.attach_failed++;
		set_error(cp, err, "attaching to %s for %s %d", what,
			  pid > 0 ? "pid" : "every process, pid filter", pid > 0 ? (int)pid : 0);
		return err;
	}
	t->nr_probes += t->nr_waits;
	cp->nr_targets++;
	cp->nr_links += t->nr_probes;
	return 1;
}

/* Who the probes on a file found for pid are for: pid, or everyone in by_file mode. */
static pid_t probe_pid(const struct cuda_probes *cp, pid_t pid)
{
	return cp->opts.by_file ? -1 : pid;
}

int cuda_probes__attach_path(struct cuda_probes *cp, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	int err;

	if (fd < 0)
		return -errno;
	err = attach_fd(cp, -1, fd, path);
	/* Nothing attached and not because it already was: a file without CUDA APIs. */
	if (!err && !fstat(fd, &st) && find_target(cp, -1, st.st_dev, st.st_ino) < 0)
		err = -ENOENT;
	close(fd);
	return err < 0 ? err : 0;
}

int cuda_probes__attach_exe(struct cuda_probes *cp, pid_t pid, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err;

	if (fd < 0)
		return -errno;
	err = attach_fd(cp, probe_pid(cp, pid), fd, path);
	close(fd);
	return err;
}

static const char *base_name(const char *path)
{
	const char *base = strrchr(path, '/');

	return base ? base + 1 : path;
}

static bool is_gpu_library(const char *path)
{
	const char *base = base_name(path);

	return !strncmp(base, "libcuda", 7) || !strncmp(base, "libxsprof_cupti", 15);
}

/*
 * Open a file pid maps, as pid sees it: through its root, checked against the device and
 * inode of the mapping; else through map_files (a deleted or replaced file).
 */
static int open_mapped(pid_t pid, unsigned long start, unsigned long end, unsigned int maj,
		       unsigned int mnr, unsigned long ino, const char *path)
{
	char buf[PATH_MAX + 64];
	struct stat st;
	int fd;

	if (path[0] == '/' &&
	    (size_t)snprintf(buf, sizeof(buf), "/proc/%d/root%s", (int)pid, path) < sizeof(buf)) {
		fd = open(buf, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && !fstat(fd, &st) && st.st_ino == ino && major(st.st_dev) == maj &&
		    minor(st.st_dev) == mnr)
			return fd;
		if (fd >= 0)
			close(fd);
	}
	snprintf(buf, sizeof(buf), "/proc/%d/map_files/%lx-%lx", (int)pid, start, end);
	fd = open(buf, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int cuda_probes__attach_pid(struct cuda_probes *cp, pid_t pid)
{
	struct proc_maps *maps;
	struct stat exe;
	char buf[64];
	int n = 0, err = 0;
	bool have_exe;

	snprintf(buf, sizeof(buf), "/proc/%d/exe", (int)pid);
	have_exe = !stat(buf, &exe);
	maps = proc_maps__read(NULL, pid);
	if (!maps)
		return -errno;
	for (size_t i = 0; i < proc_maps__count(maps); i++) {
		const struct proc_map *m = proc_maps__at(maps, i);
		struct cuda_file notes = {0};
		bool cuda;
		int fd, ret;

		if (!(m->perms & PROC_MAP_EXEC) || !m->inode || !m->path)
			continue;
		/* The executable, for a runtime linked in statically. */
		cuda = is_gpu_library(m->path) ||
		       (have_exe && exe.st_ino == m->inode && major(exe.st_dev) == m->dev_major &&
			minor(exe.st_dev) == m->dev_minor);
		fd = open_mapped(pid, m->start, m->end, m->dev_major, m->dev_minor, m->inode,
				 m->path);
		if (fd < 0) {
			if (cuda) {
				err = fd;
				set_error(cp, err, "opening %s of pid %d", m->path, (int)pid);
			}
			continue;
		}
		/* Any other library only for its xsprof scopes, looked for in its notes alone. */
		if (!cuda && (cuda_file__read_notes(fd, &notes) || !notes.scopes)) {
			close(fd);
			continue;
		}
		ret = attach_fd(cp, probe_pid(cp, pid), fd, m->path);
		close(fd);
		if (ret < 0)
			err = ret;
		else if (cuda)
			n += ret;
	}
	proc_maps__free(maps);
	return n ? n : err;
}

/* ---- Records ---- */

/* A launch walked while stacks were walked 1 in N stands for N (--max-cpu). */
static uint64_t weight_of(const struct cuda_probes *cp, uint16_t flags)
{
	return (flags & XSPROF_CUDA_F_SAMPLED) && cp->stack_every > 1 ? cp->stack_every : 1;
}

/* A process the BPF side stopped for us: on its way again, whatever happened here. */
static void continue_held(struct cuda_probes *cp, pid_t pid, uint32_t flags)
{
	if (flags & XSPROF_CUDA_F_STOPPED) {
		if ((flags & XSPROF_CUDA_F_TABLES) && cp->opts.on_tables) {
			cp->opts.on_tables(cp->opts.ctx, pid);
			cp->st.table_waits++;
		}
		/* Another user's process needs CAP_KILL: without it, it would wait for ever. */
		if (!kill(pid, SIGCONT) || errno == ESRCH) {
			stop_ledger__done(bpf_map__fd(cp->skel->maps.stopped), pid);
		} else {
			cp->st.attach_failed++;
			set_error(cp, -errno,
				  "continuing pid %d, stopped for its probes (another user's "
				  "process needs CAP_KILL)",
				  (int)pid);
		}
		cp->st.stopped++;
	}
}

/* A thread's first record, or the process's first (stopped for it; a stop for a table only
 * is not): the process's mappings are worth reading. */
static bool wants_mappings(uint32_t flags)
{
	return (flags & XSPROF_CUDA_F_FIRST) ||
	       (flags & (XSPROF_CUDA_F_STOPPED | XSPROF_CUDA_F_TABLES)) == XSPROF_CUDA_F_STOPPED;
}

static void on_lib_event(struct cuda_probes *cp, const struct xsprof_cuda_lib_event *e)
{
	char path[64], name[sizeof(e->name) + 1];
	int fd;

	memcpy(name, e->name, sizeof(e->name));
	name[sizeof(e->name)] = '\0';
	if (e->flags & XSPROF_CUDA_F_EXEC) {
		cp->st.execs++;
		snprintf(path, sizeof(path), "/proc/%u/exe", e->tgid);
	} else {
		cp->st.lib_events++;
		snprintf(path, sizeof(path), "/proc/%u/fd/%d", e->tgid, e->fd);
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		/* A failure is counted and kept in last_error; the process runs on regardless. */
		attach_fd(cp, probe_pid(cp, (pid_t)e->tgid), fd, name);
		close(fd);
	} else if (errno != ENOENT && errno != ESRCH) {
		/* ENOENT: the process is gone (or closed the fd), nothing to attach. */
		cp->st.attach_failed++;
		set_error(cp, -errno, "opening %s (%s) of pid %u", path, name, e->tgid);
	}
	/* Read its mappings while it waits: they hold the library now (a new image's are read
	 * at its exec event and as its loader maps them). */
	if (cp->opts.on_process && !(e->flags & XSPROF_CUDA_F_EXEC))
		cp->opts.on_process(cp->opts.ctx, (pid_t)e->tgid);
	continue_held(cp, (pid_t)e->tgid, e->flags);
}

static int on_cuda_record(void *ctx, const void *data, size_t size)
{
	struct cuda_probes *cp = ctx;
	const struct xsprof_cuda_call *r = data;

	if (size < 16)
		return -EBADMSG;
	if (r->api == XSPROF_CUDA_LIB_MAPPED) {
		if (size < sizeof(struct xsprof_cuda_lib_event))
			return -EBADMSG;
		on_lib_event(cp, data);
		return 0;
	}
	if (size < XSPROF_CUDA_CALL_HDR_SIZE || r->nr_user > XSPROF_MAX_STACK_DEPTH ||
	    size < XSPROF_CUDA_CALL_HDR_SIZE + 8u * r->nr_user || r->api >= XSPROF_CUDA_API_MAX) {
		cp->st.bad_records++;
		return -EBADMSG;
	}
	if (wants_mappings(r->flags) && cp->opts.on_process)
		cp->opts.on_process(cp->opts.ctx, (pid_t)r->tgid);
	launch_store__set_weight(cp->store, weight_of(cp, r->flags));
	if (launch_store__add_call(cp->store, r))
		cp->st.store_failures++;
	if (cp->opts.on_wait && cuda_api__waits(r->api))
		cp->opts.on_wait(cp->opts.ctx, r->tgid, r->tid, r->api, r->time_ns, 0);
	continue_held(cp, (pid_t)r->tgid, r->flags);
	return 0;
}

/* The code ranges of pid's CUDA, CUPTI and injection libraries (read once per process). */
static const struct lib_ranges *ranges_of(struct cuda_probes *cp, pid_t pid)
{
	struct lib_ranges *lr;
	struct proc_maps *maps;

	for (int i = 0; i < MAX_RANGE_PIDS; i++)
		if (cp->ranges[i].pid == pid)
			return &cp->ranges[i];
	lr = &cp->ranges[cp->next_range];
	cp->next_range = (cp->next_range + 1) % MAX_RANGE_PIDS;
	memset(lr, 0, sizeof(*lr));
	lr->pid = pid;
	maps = proc_maps__read(NULL, pid);
	if (!maps)
		return lr; /* gone: nothing trimmed */
	for (size_t i = 0; i < proc_maps__count(maps) && lr->n < MAX_RANGES; i++) {
		const struct proc_map *m = proc_maps__at(maps, i);

		if (!(m->perms & PROC_MAP_EXEC) || !m->path)
			continue;
		if (is_gpu_library(m->path) || !strncmp(base_name(m->path), "libcupti", 8)) {
			lr->r[lr->n].start = m->start;
			lr->r[lr->n].end = m->end;
			lr->n++;
		}
	}
	proc_maps__free(maps);
	return lr;
}

/* How many innermost frames of a USDT stack are inside those libraries: CUPTI calls
 * libxsprof_cupti from inside the API call, and the user's caller is what the stack is for. */
static unsigned int frames_inside(struct cuda_probes *cp, const struct xsprof_usdt_launch *r)
{
	const struct lib_ranges *lr = ranges_of(cp, (pid_t)r->tgid);
	unsigned int n = 0;

	for (; n < r->nr_user; n++) {
		bool in = false;

		for (int i = 0; i < lr->n && !in; i++)
			in = r->ips[n] >= lr->r[i].start && r->ips[n] < lr->r[i].end;
		if (!in)
			break;
	}
	return n;
}

/* The file holding pid's xsprof:launch site, among the attached targets. */
static const struct cuda_file *usdt_file_of(const struct cuda_probes *cp, pid_t pid)
{
	for (int i = 0; i < cp->nr_targets; i++) {
		const struct target *t = &cp->targets[i];

		if (t->pid != pid && t->pid != -1)
			continue;
		for (int j = 0; j < cp->nr_files; j++)
			if (cp->files[j].usdt && cp->files[j].dev == t->dev &&
			    cp->files[j].ino == t->ino)
				return &cp->files[j];
	}
	return NULL;
}

/* At pid's 1st, 64th and 4096th firing: trim its launch uprobes (1st), read how its site is
 * probed (the kernel optimises a site after its first hit). */
static void on_usdt_firing(struct cuda_probes *cp, pid_t pid)
{
	struct usdt_pid *u = NULL;
	const struct cuda_file *fi;

	for (int i = 0; i < MAX_USDT_PIDS && !u; i++)
		if (cp->usdt_pids[i].pid == pid)
			u = &cp->usdt_pids[i];
	if (!u) {
		u = &cp->usdt_pids[cp->next_usdt_pid];
		cp->next_usdt_pid = (cp->next_usdt_pid + 1) % MAX_USDT_PIDS;
		*u = (struct usdt_pid){.pid = pid};
		trim_launch_uprobes(cp, pid);
	}
	u->firings++;
	if (u->firings != 1 && u->firings != 64 && u->firings != 4096)
		return;
	fi = usdt_file_of(cp, pid);
	if (fi && fi->usdt_off) {
		usdt_site__read(pid, fi->dev, fi->ino, fi->usdt_off, &u->mode);
		u->nop5 = fi->usdt_nop5;
	}
}

static int on_usdt_record(void *ctx, const void *data, size_t size)
{
	struct cuda_probes *cp = ctx;
	const struct xsprof_usdt_launch *r = data;
	unsigned int inner;

	if (size < XSPROF_USDT_LAUNCH_HDR_SIZE || r->nr_user > XSPROF_MAX_STACK_DEPTH ||
	    size < XSPROF_USDT_LAUNCH_HDR_SIZE + 8u * r->nr_user) {
		cp->st.bad_records++;
		return -EBADMSG;
	}
	if (wants_mappings(r->flags) && cp->opts.on_process)
		cp->opts.on_process(cp->opts.ctx, (pid_t)r->tgid);
	inner = frames_inside(cp, r);
	if (inner > cp->st.usdt_inner_max)
		cp->st.usdt_inner_max = inner;
	cp->st.usdt_inner_deep += inner >= XSPROF_LAUNCH_SLOTS_USDT;
	launch_store__set_weight(cp->store, weight_of(cp, r->flags));
	if (launch_store__add_usdt(cp->store, r, inner))
		cp->st.store_failures++;
	on_usdt_firing(cp, (pid_t)r->tgid);
	continue_held(cp, (pid_t)r->tgid, r->flags);
	return 0;
}

/* A call whose stack is its thread's last (bpf/launch_reuse.bpf.h). */
static int on_reuse_record(void *ctx, const void *data, size_t size)
{
	struct cuda_probes *cp = ctx;
	const struct xsprof_launch_reuse *r = data;

	if (size < sizeof(*r) || (r->kind != XSPROF_LAUNCH_CALL && r->kind != XSPROF_LAUNCH_USDT) ||
	    (r->kind == XSPROF_LAUNCH_CALL && r->api >= XSPROF_CUDA_API_MAX)) {
		cp->st.bad_records++;
		return -EBADMSG;
	}
	launch_store__set_weight(cp->store, weight_of(cp, r->flags));
	if (launch_store__add_reuse(cp->store, r))
		cp->st.store_failures++;
	if (r->kind == XSPROF_LAUNCH_USDT)
		on_usdt_firing(cp, (pid_t)r->tgid);
	return 0;
}

/* A waiting call returned: kept beside the calls, in the store of the moment. */
static int on_wait_record(void *ctx, const void *data, size_t size)
{
	struct cuda_probes *cp = ctx;
	int err = cuda_waits__add_record(cp->store, data, size);
	const struct xsprof_cuda_wait *w = data;

	cp->st.bad_records += err == -EBADMSG;
	if (!err && cp->opts.on_wait)
		cp->opts.on_wait(cp->opts.ctx, w->tgid, w->tid, w->api, w->entry_ns,
				 w->return_ns ? w->return_ns : 1);
	return err;
}

static int on_alloc_record(void *ctx, const void *data, size_t size)
{
	struct cuda_probes *cp = ctx;
	int err = cuda_waits__add_alloc_record(cp->store, data, size);

	cp->st.bad_records += err == -EBADMSG;
	return err;
}

/* An xsprof scope began or ended: an end's range goes to the store of the moment. */
static int on_scope_record(void *ctx, const void *data, size_t size)
{
	struct cuda_probes *cp = ctx;
	size_t before = cp->opts.on_scope ? launch_store__nr_ranges(cp->store) : 0;
	int err = cuda_scopes__add(cp->scopes, cp->store, data, size);

	cp->st.bad_records += err == -EBADMSG;
	if (cp->opts.on_scope) {
		const struct launch_range *r = launch_store__ranges(cp->store);

		for (size_t i = before; i < launch_store__nr_ranges(cp->store); i++)
			cp->opts.on_scope(cp->opts.ctx, &r[i]);
	}
	return err == -EBADMSG ? err : 0;
}

/* ---- Lifecycle ---- */

struct cuda_probes *cuda_probes__new(struct sampler *s, const struct cuda_probes_opts *opts)
{
	struct cuda_probes *cp = calloc(1, sizeof(*cp));
	int err = -ENOMEM;

	if (!cp)
		return NULL;
	cp->sampler = s;
	cp->skel = sampler__skel(s);
	cp->opts = *opts;
	if (!cp->opts.max_links)
		cp->opts.max_links = DEFAULT_MAX_LINKS;
	cp->store = launch_store__new(opts->max_stacks, opts->max_launches);
	cp->targets = calloc(MAX_TARGETS, sizeof(*cp->targets));
	cp->files = calloc(MAX_FILES, sizeof(*cp->files));
	cp->ranges = calloc(MAX_RANGE_PIDS, sizeof(*cp->ranges));
	cp->usdt_pids = calloc(MAX_USDT_PIDS, sizeof(*cp->usdt_pids));
	cp->scopes = cuda_scopes__new();
	if (!cp->store || !cp->targets || !cp->files || !cp->ranges || !cp->usdt_pids ||
	    !cp->scopes)
		goto fail;
	err = sampler__set_handler(s, XSPROF_REC_CUDA_CALL, on_cuda_record, cp);
	if (!err)
		err = sampler__set_handler(s, XSPROF_REC_USDT_LAUNCH, on_usdt_record, cp);
	if (!err)
		err = sampler__set_handler(s, XSPROF_REC_CUDA_WAIT, on_wait_record, cp);
	if (!err)
		err = sampler__set_handler(s, XSPROF_REC_CUDA_ALLOC, on_alloc_record, cp);
	if (!err)
		err = sampler__set_handler(s, XSPROF_REC_LAUNCH_REUSE, on_reuse_record, cp);
	if (!err)
		err = sampler__set_handler(s, XSPROF_REC_SCOPE, on_scope_record, cp);
	if (err)
		goto fail;
	return cp;
fail:
	cuda_probes__free(cp);
	errno = -err;
	return NULL;
}

int cuda_probes__start(struct cuda_probes *cp)
{
	struct xsprof_bpf *skel = cp->skel;
	int err = 0;

	if (cp->opts.follow_forks && bpf_program__fd(skel->progs.xsprof_follow_fork) >= 0 &&
	    bpf_program__fd(skel->progs.xsprof_unfollow_exit) >= 0) {
		cp->watch_links[0] = bpf_program__attach_trace(skel->progs.xsprof_follow_fork);
		if (!cp->watch_links[0])
			err = -errno;
		if (!err) {
			cp->watch_links[1] =
				bpf_program__attach_trace(skel->progs.xsprof_unfollow_exit);
			if (!cp->watch_links[1])
				err = -errno;
		}
	}
	if (!err && cp->opts.watch_maps && bpf_program__fd(skel->progs.xsprof_watch_mmap) >= 0) {
		cp->watch_links[2] = bpf_program__attach_trace(skel->progs.xsprof_watch_mmap);
		if (!cp->watch_links[2])
			err = -errno;
		else
			skel->bss->cuda_stop_processes = true;
	}
	/* An exec'd executable's scopes and launches, probed before it runs (as a library). */
	if (!err && cp->opts.watch_maps && bpf_program__fd(skel->progs.xsprof_watch_exec) >= 0) {
		cp->watch_links[3] = bpf_program__attach_trace(skel->progs.xsprof_watch_exec);
		if (!cp->watch_links[3])
			err = -errno;
	}
	if (err)
		cuda_probes__stop(cp);
	return err;
}

void cuda_probes__stop(struct cuda_probes *cp)
{
	if (!cp)
		return;
	/* No new stops from here; those already queued are continued as they are read. */
	if (cp->skel && cp->skel->bss)
		cp->skel->bss->cuda_stop_processes = false;
	for (int i = 0; i < 4; i++) {
		bpf_link__destroy(cp->watch_links[i]);
		cp->watch_links[i] = NULL;
	}
}

void cuda_probes__process_exited(struct cuda_probes *cp, uint32_t tgid, uint64_t time_ns)
{
	if (cp && tgid)
		cuda_scopes__end_open(cp->scopes, cp->store, tgid, time_ns);
}

void cuda_probes__end_scopes(struct cuda_probes *cp, uint64_t time_ns)
{
	if (cp)
		cuda_scopes__end_open(cp->scopes, cp->store, 0, time_ns);
}

int cuda_probes__rotate_store(struct cuda_probes *cp, struct launch_store **ret_old)
{
	struct launch_store *fresh = launch_store__new(cp->opts.max_stacks, cp->opts.max_launches);

	if (!fresh)
		return -ENOMEM;
	/* Reuse records still on the ring count under stacks the old store received. */
	if (launch_store__carry_last(fresh, cp->store))
		cp->st.carry_failures++;
	*ret_old = cp->store;
	cp->store = fresh;
	return 0;
}

const struct launch_store *cuda_probes__store(const struct cuda_probes *cp)
{
	return cp->store;
}

const struct bpf_object *cuda_probes__obj(const struct cuda_probes *cp, int i)
{
	return i >= 0 && i < cp->nr_inst ? cp->inst[i]->obj : NULL;
}

/* The launch stack reuse's per-CPU counters, summed. */
static int reuse_stats(const struct cuda_probes *cp, int ncpu,
		       struct xsprof_launch_reuse_stats *ret)
{
	struct xsprof_launch_reuse_stats *vals = calloc(ncpu, sizeof(*vals));
	__u32 zero = 0;

	memset(ret, 0, sizeof(*ret));
	if (!vals)
		return -ENOMEM;
	if (bpf_map__lookup_elem(cp->skel->maps.launch_reuse_stats, &zero, sizeof(zero), vals,
				 sizeof(*vals) * ncpu, 0)) {
		free(vals);
		return -errno;
	}
	for (int i = 0; i < ncpu; i++) {
		ret->walked += vals[i].walked;
		ret->reused += vals[i].reused;
		ret->miss_key += vals[i].miss_key;
		ret->miss_slots += vals[i].miss_slots;
		ret->miss_age += vals[i].miss_age;
		ret->reuse_drops += vals[i].reuse_drops;
		ret->timed += vals[i].timed;
		ret->timed_ns += vals[i].timed_ns;
	}
	free(vals);
	return 0;
}

void cuda_probes__set_stack_every(struct cuda_probes *cp, uint32_t every)
{
	cp->stack_every = every;
}

int cuda_probes__stats(const struct cuda_probes *cp, struct cuda_probes_stats *ret)
{
	int ncpu = sampler__nr_cpus(cp->sampler);
	struct xsprof_cuda_stats *vals;
	__u32 zero = 0;
	int err;

	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	if (bpf_map__lookup_elem(cp->skel->maps.cuda_stats, &zero, sizeof(zero), vals,
				 sizeof(*vals) * ncpu, 0)) {
		free(vals);
		return -errno;
	}
	*ret = cp->st;
	cuda_scopes__stats(cp->scopes, &ret->scopes);
	ret->targets = cp->nr_targets;
	ret->links = cp->nr_links;
	for (int i = 0; i < MAX_USDT_PIDS; i++) {
		ret->usdt_site_call += cp->usdt_pids[i].mode == USDT_SITE_CALL;
		ret->usdt_site_trap += cp->usdt_pids[i].mode == USDT_SITE_TRAP;
		ret->usdt_site_trap_nop5 +=
			cp->usdt_pids[i].mode == USDT_SITE_TRAP && cp->usdt_pids[i].nop5;
		ret->usdt_site_nop += cp->usdt_pids[i].mode == USDT_SITE_NOP;
		ret->usdt_site_unread +=
			cp->usdt_pids[i].pid && cp->usdt_pids[i].mode == USDT_SITE_UNKNOWN;
	}
	memset(&ret->bpf, 0, sizeof(ret->bpf));
	for (int i = 0; i < ncpu; i++) {
		const __u64 *src = (const __u64 *)&vals[i];
		__u64 *dst = (__u64 *)&ret->bpf;

		for (size_t j = 0; j < sizeof(ret->bpf) / sizeof(__u64); j++)
			dst[j] += src[j];
	}
	free(vals);
	err = reuse_stats(cp, ncpu, &ret->reuse);
	if (err)
		return err;
	return cuda_waits__bpf_stats(cp->skel->maps.wait_stats, ncpu, &ret->waits);
}

const char *cuda_probes__last_error(const struct cuda_probes *cp)
{
	return cp->last_error[0] ? cp->last_error : NULL;
}

void cuda_probes__free(struct cuda_probes *cp)
{
	if (!cp)
		return;
	cuda_probes__stop(cp);
	if (cp->sampler) {
		sampler__set_handler(cp->sampler, XSPROF_REC_CUDA_CALL, NULL, NULL);
		sampler__set_handler(cp->sampler, XSPROF_REC_USDT_LAUNCH, NULL, NULL);
		sampler__set_handler(cp->sampler, XSPROF_REC_CUDA_WAIT, NULL, NULL);
		sampler__set_handler(cp->sampler, XSPROF_REC_CUDA_ALLOC, NULL, NULL);
		sampler__set_handler(cp->sampler, XSPROF_REC_LAUNCH_REUSE, NULL, NULL);
		sampler__set_handler(cp->sampler, XSPROF_REC_SCOPE, NULL, NULL);
	}
	while (cp->targets && cp->nr_targets)
		remove_target(cp, cp->nr_targets - 1);
	free(cp->targets);
	for (int i = 0; i < cp->nr_inst; i++)
		xsprof_bpf__destroy(cp->inst[i]);
	free(cp->files);
	free(cp->ranges);
	free(cp->usdt_pids);
	launch_store__free(cp->store);
	cuda_scopes__free(cp->scopes);
	free(cp);
}
