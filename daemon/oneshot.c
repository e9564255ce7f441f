// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "daemon/fold.h"
#include "daemon/log.h"
#include "daemon/oneshot.h"
#include "daemon/options.h"
#include "daemon/preflight.h"
#include "daemon/sampler.h"
#include "daemon/stack_table.h"
#include "daemon/symbolize/symbolizer.h"
#include "output/calltree.h"
#include "output/folded.h"
#include "output/output.h"

/* How often queued samples are read when the BPF side did not ask earlier. */
#define DRAIN_INTERVAL_NS (100 * 1000 * 1000)
#define PID_SET_MAX	  (1u << 20)

/* Processes seen so far, so each one's mappings are snapshotted once, when it first appears. */
struct pid_set {
	uint32_t *slots; /* 0 = empty (pid 0 is never stored) */
	size_t cap, len;
};

struct run {
	const struct xsprofd_opts *opts;
	struct sampler *sampler;
	struct symbolizer *sym;
	struct stack_table *stacks;
	struct pid_set seen;
	uint64_t snapshot_failures;
	uint64_t handler_errors;
};

static bool pid_set__insert(struct pid_set *s, uint32_t pid)
{
	size_t i;

	if ((s->len + 1) * 2 > s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 1024;
		uint32_t *ns;

		if (ncap > PID_SET_MAX)
			return false; /* full: treat as seen, the snapshot is only an optimisation */
		ns = calloc(ncap, sizeof(*ns));
		if (!ns)
			return false;
		for (size_t j = 0; j < s->cap; j++) {
			if (!s->slots[j])
				continue;
			for (i = (s->slots[j] * 2654435761u) & (ncap - 1); ns[i];
			     i = (i + 1) & (ncap - 1))
				;
			ns[i] = s->slots[j];
		}
		free(s->slots);
		s->slots = ns;
		s->cap = ncap;
	}
	for (i = (pid * 2654435761u) & (s->cap - 1); s->slots[i]; i = (i + 1) & (s->cap - 1))
		if (s->slots[i] == pid)
			return false;
	s->slots[i] = pid;
	s->len++;
	return true;
}

static void on_sample(void *ctx, const struct xsprof_sample *s)
{
	struct run *r = ctx;

	/* Snapshot mappings the first time a process shows up: it may be gone at the end. */
	if (s->tgid && !(s->flags & XSPROF_SAMPLE_F_KTHREAD) &&
	    pid_set__insert(&r->seen, s->tgid) && symbolizer__add_process(r->sym, s->tgid))
		r->snapshot_failures++;
	if (stack_table__add(r->stacks, s))
		r->handler_errors++;
}

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && log_max_level < LOG_DEBUG)
		return 0;
	if (level == LIBBPF_INFO && log_max_level < LOG_INFO + 1)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int arm_timer(int fd, uint64_t first_ns, uint64_t interval_ns)
{
	struct itimerspec its = {
		.it_value = {first_ns / 1000000000, first_ns % 1000000000},
		.it_interval = {interval_ns / 1000000000, interval_ns % 1000000000},
	};

	return timerfd_settime(fd, 0, &its, NULL) ? -errno : 0;
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static double mono_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

enum { EV_RING = 1, EV_SIGNAL, EV_DRAIN, EV_END };

/* Sample until the duration ends or a signal arrives. 0 or -errno. */
static int sample_loop(struct run *r, int sfd)
{
	int ep = -1, drain_fd = -1, end_fd = -1, err = 0;
	struct epoll_event ev;
	bool done = false;

	ep = epoll_create1(EPOLL_CLOEXEC);
	drain_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (ep < 0 || drain_fd < 0) {
		err = -errno;
		goto out;
	}
	err = arm_timer(drain_fd, DRAIN_INTERVAL_NS, DRAIN_INTERVAL_NS);
	if (err)
		goto out;
	if (r->opts->duration_s > 0) {
		end_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (end_fd < 0) {
			err = -errno;
			goto out;
		}
		err = arm_timer(end_fd, (uint64_t)llround(r->opts->duration_s * 1e9), 0);
		if (err)
			goto out;
	}
	struct {
		int fd, tag;
	} fds[] = {{sampler__fd(r->sampler), EV_RING},
		   {sfd, EV_SIGNAL},
		   {drain_fd, EV_DRAIN},
		   {end_fd, EV_END}};
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (fds[i].fd < 0)
			continue;
		ev = (struct epoll_event){.events = EPOLLIN, .data.u32 = fds[i].tag};
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fds[i].fd, &ev)) {
			err = -errno;
			goto out;
		}
	}

	while (!done) {
		struct epoll_event evs[4];
		int n = epoll_wait(ep, evs, 4, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		for (int i = 0; i < n; i++) {
			uint64_t ticks;
			struct signalfd_siginfo si;
			int drained;

			switch (evs[i].data.u32) {
			case EV_RING:
			case EV_DRAIN:
				/* Reset the timer's expiry count; its value is not needed. */
				if (evs[i].data.u32 == EV_DRAIN &&
				    read(drain_fd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
					log_debug("drain timer: %s", strerror(errno));
				drained = sampler__drain(r->sampler);
				if (drained < 0) {
					err = drained;
					done = true;
				}
				break;
			case EV_SIGNAL:
				if (read(sfd, &si, sizeof(si)) == sizeof(si))
					log_info("%s: stopping early, writing what was collected",
						 strsignal(si.ssi_signo));
				done = true;
				break;
			case EV_END:
				done = true;
				break;
			}
		}
	}
out:
	if (ep >= 0)
		close(ep);
	if (drain_fd >= 0)
		close(drain_fd);
	if (end_fd >= 0)
		close(end_fd);
	return err;
}

static void report(struct run *r, double wall_s, double sample_cpu_s, double name_cpu_s,
		   const struct fold_stats *fs)
{
	struct xsprof_cpu_stats total, *per_cpu;
	struct sampler_stats us;
	struct stack_table_stats ts;
	struct symbolizer_stats ys;
	int ncpu = sampler__nr_cpus(r->sampler);
	uint64_t lost;

	per_cpu = calloc(ncpu, sizeof(*per_cpu));
	if (!per_cpu || sampler__read_stats(r->sampler, per_cpu, &total)) {
		log_warn("could not read the BPF counters");
		free(per_cpu);
		return;
	}
	sampler__user_stats(r->sampler, &us);
	stack_table__stats(r->stacks, &ts);
	symbolizer__stats(r->sym, &ys);
	lost = total.drop_ringbuf + us.bad_records;

	log_info("%.1f s on %d CPUs at %u Hz: %llu samples, %llu idle%s, %llu of other processes, "
		 "%llu kept",
		 wall_s, sampler__nr_attached(r->sampler) ? sampler__nr_attached(r->sampler) : ncpu,
		 r->opts->freq_hz, (unsigned long long)total.samples,
		 (unsigned long long)total.idle,
		 r->opts->include_idle ? " (kept)" : " (left out; --include-idle keeps them)",
		 (unsigned long long)total.filtered, (unsigned long long)ts.samples);
	log_info("lost: %llu (ring buffer full %llu, malformed %llu); stacks unreadable: kernel "
		 "%llu, user %llu",
		 (unsigned long long)lost, (unsigned long long)total.drop_ringbuf,
		 (unsigned long long)us.bad_records, (unsigned long long)total.kstack_err,
		 (unsigned long long)total.ustack_err);
	if (lost || r->opts->verbose) {
		for (int i = 0; i < ncpu; i++) {
			if (!per_cpu[i].samples)
				continue;
			log_info("  cpu %d: %llu samples, %llu sent, %llu lost (ring buffer full), "
				 "%llu/%llu stacks unreadable (kernel/user)",
				 i, (unsigned long long)per_cpu[i].samples,
				 (unsigned long long)per_cpu[i].emitted,
				 (unsigned long long)per_cpu[i].drop_ringbuf,
				 (unsigned long long)per_cpu[i].kstack_err,
				 (unsigned long long)per_cpu[i].ustack_err);
		}
		if (total.drop_ringbuf)
			log_warn("samples were lost because the ring buffer (%u MiB) filled; raise "
				 "--ring-buffer-size",
				 sampler__ring_bytes(r->sampler) >> 20);
	}
	log_info("%llu distinct stacks from %zu processes; %llu of %llu frames unnamed",
		 (unsigned long long)ts.distinct, r->seen.len,
		 (unsigned long long)fs->unnamed_frames, (unsigned long long)fs->frames);
	if (ts.overflowed)
		log_warn("%llu samples past --max-stacks %u were counted without their stacks",
			 (unsigned long long)ts.overflowed, r->opts->max_stacks);
	if (r->handler_errors)
		log_warn("%llu samples could not be stored (out of memory)",
			 (unsigned long long)r->handler_errors);
	log_debug("symbolizer: %llu ELF files read, %llu failed; %llu mapping snapshots failed "
		  "(process gone)",
		  (unsigned long long)ys.files_loaded, (unsigned long long)ys.files_failed,
		  (unsigned long long)r->snapshot_failures);
	log_info("xsprofd's own CPU: %.3f s while sampling (%.2f us per sample received), %.3f s "
		 "naming stacks",
		 sample_cpu_s, us.records ? sample_cpu_s * 1e6 / us.records : 0.0, name_cpu_s);
	free(per_cpu);
}

static int write_outputs(const struct xsprofd_opts *o, const struct calltree *tree,
			 const struct output_meta *meta)
{
	int failed = 0;

	for (int i = 0; i < o->nr_outputs; i++) {
		const struct xsprofd_output *out = &o->outputs[i];
		int err;

		if (!strcmp(out->path, "-")) {
			err = folded__write(tree, stdout);
			if (!err && fflush(stdout))
				err = -errno;
		} else {
			err = output__write_file(tree, out->format, out->path, meta);
		}
		if (err) {
			log_err("writing %s failed: %s%s", out->path, strerror(-err),
				err == -ENOSPC ? " (disk full: free space or choose another path; "
						 "the other outputs are still written)"
					       : "");
			failed++;
			continue;
		}
		if (strcmp(out->path, "-"))
			log_info("wrote %s (%s)", out->path, output__format_name(out->format));
	}
	return failed ? -EIO : 0;
}

int oneshot__run(const struct xsprofd_opts *o)
{
	struct run r = {.opts = o};
	struct symbolizer_opts yopts = {.no_demangle = o->no_demangle};
	struct sampler_opts sopts = {
		.freq_hz = o->freq_hz,
		.include_idle = o->include_idle,
		.ring_bytes = o->ring_buffer_bytes,
		.max_pids = o->nr_pids > 4096 ? o->nr_pids : 0,
	};
	struct calltree *tree = NULL;
	struct fold_stats fs = {};
	struct output_meta meta = {.unit = "samples"};
	char title[256], subtitle[256], host[64] = "";
	double t0, cpu0, cpu1, wall;
	sigset_t mask;
	int sfd = -1, err, status = 1;
	time_t now;

	libbpf_set_print(libbpf_log);
	if (preflight__kernel())
		return 1;
	for (int i = 0; i < o->nr_pids; i++)
		if (preflight__pid(o->pids[i]))
			return 1;
	for (int i = 0; i < o->nr_outputs; i++)
		if (preflight__output(o->outputs[i].path))
			return 1;

	/* Signals become events on the loop; nothing is done in a handler. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		log_err("signalfd: %s", strerror(errno));
		return 1;
	}

	r.sym = symbolizer__new(&yopts);
	r.stacks = stack_table__new(o->max_stacks);
	if (!r.sym || !r.stacks) {
		log_err("out of memory setting up");
		goto out;
	}
	r.sampler = sampler__new(&sopts, on_sample, &r);
	if (!r.sampler) {
		preflight__explain_bpf_error("loading the BPF sampler", -errno);
		goto out;
	}
	for (int i = 0; i < o->nr_pids; i++) {
		err = sampler__add_pid(r.sampler, o->pids[i]);
		if (err) {
			log_err("--pid %d: cannot add it to the filter: %s", (int)o->pids[i],
				strerror(-err));
			goto out;
		}
		/* Snapshot now: a process that exits before its first sample still gets names. */
		if (pid_set__insert(&r.seen, o->pids[i]))
			symbolizer__add_process(r.sym, o->pids[i]);
	}

	t0 = mono_seconds();
	cpu0 = cpu_seconds();
	err = sampler__start(r.sampler);
	if (err) {
		preflight__explain_bpf_error("attaching the sampler to perf events", err);
		goto out;
	}
	if (o->duration_s > 0)
		log_info("sampling %s at %u Hz for %g s (Ctrl-C ends early)",
			 o->nr_pids ? "the given processes" : "all CPUs", o->freq_hz,
			 o->duration_s);
	else
		log_info("sampling %s at %u Hz until Ctrl-C",
			 o->nr_pids ? "the given processes" : "all CPUs", o->freq_hz);

	err = sample_loop(&r, sfd);
	sampler__stop(r.sampler);
	wall = mono_seconds() - t0;
	/* Samples still queued after the perf events closed. */
	if (sampler__drain(r.sampler) < 0 && !err)
		err = -EIO;
	cpu1 = cpu_seconds();
	if (err)
		log_err("sampling stopped on an error: %s; writing what was collected",
			strerror(-err));

	tree = calltree__new();
	if (!tree) {
		log_err("out of memory building the profile");
		goto out;
	}
	err = fold_stacks(r.stacks, r.sym, tree, &fs);
	if (err) {
		log_err("naming the stacks failed: %s", strerror(-err));
		goto out;
	}
	report(&r, wall, cpu1 - cpu0, cpu_seconds() - cpu1, &fs);

	now = time(NULL);
	gethostname(host, sizeof(host) - 1);
	snprintf(title, sizeof(title), "xsprof: %s, %.1f s at %u Hz",
		 o->nr_pids ? "selected processes" : "all CPUs", wall, o->freq_hz);
	strftime(subtitle, sizeof(subtitle), "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
	snprintf(subtitle + strlen(subtitle), sizeof(subtitle) - strlen(subtitle), " on %s", host);
	meta.title = title;
	meta.subtitle = subtitle;
	status = write_outputs(o, tree, &meta) ? 1 : 0;
out:
	calltree__free(tree);
	sampler__free(r.sampler);
	stack_table__free(r.stacks);
	symbolizer__free(r.sym);
	free(r.seen.slots);
	if (sfd >= 0)
		close(sfd);
	return status;
}
