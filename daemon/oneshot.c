// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <systemd/sd-event.h>

#include "daemon/fold.h"
#include "daemon/log.h"
#include "daemon/oneshot.h"
#include "daemon/options.h"
#include "daemon/preflight.h"
#include "daemon/recording.h"
#include "daemon/stack_table.h"
#include "daemon/symbolize/symbolizer.h"
#include "output/calltree.h"
#include "output/folded.h"
#include "output/output.h"

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

int xsprof_libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && log_max_level < LOG_DEBUG)
		return 0;
	if (level == LIBBPF_INFO && log_max_level < LOG_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int on_signal(sd_event_source *src, const struct signalfd_siginfo *si, void *ctx)
{
	log_info("%s: stopping early, writing what was collected", strsignal(si->ssi_signo));
	return sd_event_exit(sd_event_source_get_event(src), 0);
}

static int on_end(sd_event_source *src, uint64_t usec, void *ctx)
{
	return sd_event_exit(sd_event_source_get_event(src), 0);
}

void recording_report(struct recording *rec, const struct xsprofd_opts *o, double name_cpu_s,
		      const struct fold_stats *fs, struct symbolizer *sym)
{
	struct recording_stats rs;
	struct stack_table_stats ts;
	struct symbolizer_stats ys;
	const struct xsprof_cpu_stats *total = &rs.bpf;
	struct xsprof_cpu_stats *per_cpu;
	int ncpu = recording__nr_cpus(rec);
	uint64_t lost;

	recording__stats(rec, &rs);
	stack_table__stats(recording__stacks(rec), &ts);
	symbolizer__stats(sym, &ys);
	lost = total->drop_ringbuf + rs.bad_records;

	log_info("%.1f s on %d CPUs at %u Hz: %llu samples, %llu idle%s, %llu of other processes, "
		 "%llu kept",
		 rs.wall_s, recording__nr_attached(rec) ? recording__nr_attached(rec) : ncpu,
		 o->freq_hz, (unsigned long long)total->samples, (unsigned long long)total->idle,
		 o->include_idle ? " (kept)" : " (left out; --include-idle keeps them)",
		 (unsigned long long)total->filtered, (unsigned long long)ts.samples);
	log_info("lost: %llu (ring buffer full %llu, malformed %llu); stacks unreadable: kernel "
		 "%llu, user %llu",
		 (unsigned long long)lost, (unsigned long long)total->drop_ringbuf,
		 (unsigned long long)rs.bad_records, (unsigned long long)total->kstack_err,
		 (unsigned long long)total->ustack_err);
	per_cpu = calloc(ncpu, sizeof(*per_cpu));
	if ((lost || o->verbose) && per_cpu && !recording__cpu_stats(rec, per_cpu)) {
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
	}
	free(per_cpu);
	if (total->drop_ringbuf)
		log_warn("samples were lost because the ring buffer (%u KiB) filled; raise "
			 "--ring-buffer-size",
			 recording__ring_bytes(rec) >> 10);
	log_info("%llu distinct stacks from %zu processes; %llu of %llu frames unnamed",
		 (unsigned long long)ts.distinct, rs.processes,
		 (unsigned long long)fs->unnamed_frames, (unsigned long long)fs->frames);
	if (ts.overflowed)
		log_warn("%llu samples past --max-stacks %u were counted without their stacks",
			 (unsigned long long)ts.overflowed, o->max_stacks);
	if (rs.store_failures)
		log_warn("%llu samples could not be stored (out of memory)",
			 (unsigned long long)rs.store_failures);
	log_debug("symbolizer: %llu ELF files read, %llu failed; %llu mapping snapshots failed "
		  "(process gone)",
		  (unsigned long long)ys.files_loaded, (unsigned long long)ys.files_failed,
		  (unsigned long long)rs.snapshot_failed);
	log_info("xsprofd's own CPU: %.3f s while sampling (%.2f us per sample received), %.3f s "
		 "naming stacks",
		 rs.cpu_s, rs.records ? rs.cpu_s * 1e6 / rs.records : 0.0, name_cpu_s);
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
	struct recording_opts ropts = {
		.freq_hz = o->freq_hz,
		.include_idle = o->include_idle,
		.ring_bytes = o->ring_buffer_bytes,
		.max_stacks = o->max_stacks,
		.pids = o->pids,
		.nr_pids = o->nr_pids,
	};
	struct symbolizer_opts yopts = {.no_demangle = o->no_demangle};
	struct symbolizer *sym = NULL;
	struct recording *rec = NULL;
	struct calltree *tree = NULL;
	struct fold_stats fs = {};
	struct recording_stats rs;
	struct output_meta meta = {.unit = "samples"};
	char title[256], subtitle[256], host[64] = "";
	const char *what;
	sd_event *ev = NULL;
	double cpu1;
	sigset_t mask;
	int err, status = 1;
	time_t now;

	libbpf_set_print(xsprof_libbpf_log);
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

	err = sd_event_new(&ev);
	if (err >= 0)
		err = sd_event_add_signal(ev, NULL, SIGINT, on_signal, NULL);
	if (err >= 0)
		err = sd_event_add_signal(ev, NULL, SIGTERM, on_signal, NULL);
	if (err >= 0)
		err = sd_event_add_signal(ev, NULL, SIGHUP, on_signal, NULL);
	if (err >= 0 && o->duration_s > 0)
		err = sd_event_add_time_relative(ev, NULL, CLOCK_MONOTONIC,
						 (uint64_t)llround(o->duration_s * 1e6), 0, on_end,
						 NULL);
	if (err < 0) {
		log_err("setting up the event loop: %s", strerror(-err));
		goto out;
	}

	sym = symbolizer__new(&yopts);
	if (!sym) {
		log_err("out of memory setting up");
		goto out;
	}
	rec = recording__new(ev, &ropts, sym, &what);
	if (!rec) {
		preflight__explain_bpf_error(what, -errno);
		goto out;
	}
	err = recording__start(rec);
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

	err = sd_event_loop(ev);
	recording__stop(rec);
	if (err < 0)
		log_err("sampling stopped on an error: %s; writing what was collected",
			strerror(-err));

	cpu1 = cpu_seconds();
	tree = calltree__new();
	if (!tree) {
		log_err("out of memory building the profile");
		goto out;
	}
	err = recording__fold(rec, tree, &fs);
	if (err) {
		log_err("naming the stacks failed: %s", strerror(-err));
		goto out;
	}
	recording_report(rec, o, cpu_seconds() - cpu1, &fs, sym);
	recording__stats(rec, &rs);

	now = time(NULL);
	gethostname(host, sizeof(host) - 1);
	snprintf(title, sizeof(title), "xsprof: %s, %.1f s at %u Hz",
		 o->nr_pids ? "selected processes" : "all CPUs", rs.wall_s, o->freq_hz);
	strftime(subtitle, sizeof(subtitle), "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
	snprintf(subtitle + strlen(subtitle), sizeof(subtitle) - strlen(subtitle), " on %s", host);
	meta.title = title;
	meta.subtitle = subtitle;
	status = write_outputs(o, tree, &meta) ? 1 : 0;
out:
	calltree__free(tree);
	recording__free(rec);
	symbolizer__free(sym);
	sd_event_unref(ev);
	return status;
}
