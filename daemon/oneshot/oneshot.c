// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
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

#include "daemon/base/clock.h"
#include "daemon/base/proc_stat.h"
#include "daemon/probes/bpf_cost.h"
#include "daemon/probes/cgroup_path.h"
#include "daemon/cuda/cuda_probes.h"
#include "daemon/stacks/fold.h"
#include "daemon/base/command.h"
#include "daemon/base/cupti_lib_path.h"
#include "daemon/cuda/launch_fold.h"
#include "daemon/cuda/launch_store.h"
#include "daemon/gpu/gpu_records.h"
#include "daemon/log.h"
#include "daemon/oneshot/oneshot.h"
#include "daemon/probes/offcpu.h"
#include "daemon/oneshot/oneshot_gpu.h"
#include "daemon/options.h"
#include "daemon/probes/preflight.h"
#include "daemon/session/gpu_waits.h"
#include "daemon/session/group_by.h"
#include "daemon/session/host_labels.h"
#include "daemon/session/job_keep.h"
#include "daemon/session/join_check.h"
#include "daemon/session/profile.h"
#include "daemon/session/source.h"
#include "daemon/session/ranges.h"
#include "daemon/session/ceiling.h"
#include "daemon/session/recording.h"
#include "daemon/probes/sampler.h"
#include "daemon/stacks/stack_table.h"
#include "daemon/symbolize/symbolizer.h"
#include "daemon/unwind/unwinder.h"
#include "output/frame_sites.h"
#include "daemon/session/python_report.h"
#include "xsprof.skel.h"
#include "cupti_inject/xsprof_wire.h"
#include "output/calltree.h"
#include "output/folded.h"
#include "output/analyses.h"
#include "output/output.h"
#include "output/profile.h"
#include "output/gpu_report.h"
#include "output/job_report.h"
#include "output/report.h"

/* Samples kept for a Chrome trace: 24 bytes each, so 240 MiB at most. */
#define MAX_TIMELINE_SAMPLES (10u * 1000 * 1000)

static void forward_to_command(struct command *cmd, int sig);

/* ctx: the command, if any, which is sent the signal too. */
static int on_signal(sd_event_source *src, const struct signalfd_siginfo *si, void *ctx)
{
	log_info("%s: stopping early, writing what was collected", strsignal(si->ssi_signo));
	forward_to_command(ctx, si->ssi_signo);
	return sd_event_exit(sd_event_source_get_event(src), 0);
}

static int on_end(sd_event_source *src, uint64_t usec, void *ctx)
{
	return sd_event_exit(sd_event_source_get_event(src), 0);
}

/* Our peak resident memory so far (VmHWM), in KiB; 0 when unknown. */
static unsigned long peak_rss_kib(void)
{
	char buf[4096], *at;
	unsigned long kib = 0;
	FILE *f = fopen("/proc/self/status", "re");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	at = strstr(buf, "VmHWM:");
	if (at)
		kib = strtoul(at + 6, NULL, 10);
	return kib;
}

/* The stacks whose user walk stopped before the root (each marked "[truncated: reason]"), by
 * reason, as a share of what the profile counts. */
static void truncated_report(const struct fold_stats *fs)
{
	char buf[512];
	uint64_t all = 0;
	size_t n = 0;

	for (unsigned int i = 0; i < XSPROF_END_REASONS; i++)
		all += fs->truncated[i];
	if (!all || !fs->weight)
		return;
	buf[0] = '\0';
	for (unsigned int i = 0; i < XSPROF_END_REASONS && n < sizeof(buf); i++) {
		const char *mark = fold__end_mark(i);

		if (!fs->truncated[i] || !mark)
			continue;
		/* "[truncated: no unwind rule]" -> "no unwind rule" */
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%.2f%% %.*s", n ? ", " : "",
				      100.0 * fs->truncated[i] / fs->weight, (int)strlen(mark) - 13,
				      mark + 12);
	}
	log_info("stacks that stop before their root (marked [truncated: reason]): %.2f%% of the "
		 "profile (%s)",
		 100.0 * all / fs->weight, buf);
	if (fs->truncated[XSPROF_END_FP_BROKEN] * 2 > fs->weight)
		log_info("most walks end where the frame pointers do (code built without them, "
			 "glibc's included); --unwind auto walks on with the unwind tables");
}

/* How user stacks were walked (--unwind): with tables or frame pointers, and why walks ended. */
static void unwind_report(const struct recording *recording)
{
	struct xsprof_unwind_stats b;
	struct unwinder_stats t;

	if (recording__unwind_stats(recording, &b, &t))
		return;
	log_debug("user stack walks: %llu with unwind tables, %llu by frame pointers only (%llu "
		  "of processes without tables yet); %llu frames from tables, %llu from frame "
		  "pointers (%llu in a file whose table was being built)",
		  (unsigned long long)b.walks_cfi, (unsigned long long)b.walks_fp,
		  (unsigned long long)b.no_process, (unsigned long long)b.frames_cfi,
		  (unsigned long long)b.frames_fp, (unsigned long long)b.pending_fp);
	log_debug(
		"user stack walk ends: %llu outermost frame, %llu end of frame-pointer chain, %llu no "
		"table, %llu no rule, %llu unreadable, %llu bad CFA, %llu depth cap; %llu signal "
		"frames crossed; callers of JIT code: %llu by their frame pointer, %llu by a stack "
		"scan, %llu by neither",
		(unsigned long long)b.end_outermost, (unsigned long long)b.end_fp_chain,
		(unsigned long long)b.end_no_table, (unsigned long long)b.end_invalid,
		(unsigned long long)b.end_unreadable, (unsigned long long)b.end_bad_cfa,
		(unsigned long long)b.end_depth, (unsigned long long)b.signal_frames,
		(unsigned long long)b.jit_fp, (unsigned long long)b.scanned,
		(unsigned long long)b.scan_failed);
	log_debug(
		"unwind tables: %llu built when a stack first ran in their file (%llu without a "
		"usable .eh_frame), %llu loaded now, %llu files known; %llu rows of %llu (--unwind-mb "
		"%u: %.1f MiB of BPF maps), %.1f ms to build (%.1f ms per MiB of .eh_frame; at "
		"most %.1f ms from a request to the table in place), %llu evicted, %llu built again",
		(unsigned long long)t.tables_built, (unsigned long long)t.tables_failed,
		(unsigned long long)t.tables, (unsigned long long)t.files,
		(unsigned long long)t.rows, (unsigned long long)t.max_rows,
		recording__unwind_mb(recording), t.map_bytes / 1048576.0, t.build_ns / 1e6,
		t.eh_frame_bytes ? t.build_ns / 1e6 / (t.eh_frame_bytes / 1048576.0) : 0.0,
		t.want_to_ready_max_ns / 1e6, (unsigned long long)t.tables_evicted,
		(unsigned long long)t.tables_rebuilt);
	for (uint32_t i = 0; i < t.nr_refused; i++)
		log_debug("unwind tables: none for %s (%s): frame pointers there",
			  t.refused[i].path ? t.refused[i].path : "a file no longer named",
			  t.refused[i].why);
	if (t.refused_files > t.nr_refused)
		log_debug("unwind tables: and %llu more files without one",
			  (unsigned long long)(t.refused_files - t.nr_refused));
	log_debug("first samples: %llu held until their tables were in (%llu whole, %llu partly by "
		  "frame pointers, %llu past the stack copy, %llu given up waiting; %llu in a file "
		  "mapped since their process's mappings were read, which were read again %llu "
		  "times); %llu walked by frame pointers past the hold budget; %llu processes let "
		  "go before the tables their launches asked for were in (250 ms)",
		  (unsigned long long)t.held, (unsigned long long)t.held_whole,
		  (unsigned long long)t.held_fp, (unsigned long long)t.held_cut,
		  (unsigned long long)t.held_late, (unsigned long long)b.held_stale,
		  (unsigned long long)t.held_rereads, (unsigned long long)b.hold_budget,
		  (unsigned long long)t.table_waits_late);
	if (t.tables_no_room || t.procs_full || t.maps_capped || t.maps_full || t.files_full ||
	    t.procs_over_share)
		log_warn(
			"unwind tables: %llu did not fit in the table memory (raise --unwind-mb), "
			"%llu processes and %llu mappings past the caps, %llu processes past their "
			"user's share (%llu of %llu), %llu mappings without a file slot: frame "
			"pointers there",
			(unsigned long long)t.tables_no_room,
			(unsigned long long)(t.procs_full + t.maps_full),
			(unsigned long long)t.maps_capped, (unsigned long long)t.procs_over_share,
			(unsigned long long)t.share_procs, (unsigned long long)t.max_procs,
			(unsigned long long)t.files_full);
	if (t.jvm_nofp)
		log_warn(
			"%llu JVM processes run without -XX:+PreserveFramePointer: their stacks end "
			"at the first Java frame ([truncated: JIT code without frame pointers]); "
			"start java with -XX:+PreserveFramePointer for whole stacks",
			(unsigned long long)t.jvm_nofp);
	if (t.builds_deferred || t.tables_kept_touched)
		log_debug(
			"unwind tables: %llu builds waited for their user's build budget (%d s at once, "
			"then %.0f%% of a CPU), %llu files touched kept their tables (same build id)",
			(unsigned long long)t.builds_deferred, UW_BUILD_BURST_S,
			UW_BUILD_SHARE * 100, (unsigned long long)t.tables_kept_touched);
	if (t.procs_evicted)
		log_debug("unwind tables: %llu processes not walked lately taken out to make room "
			  "(loaded again at their next sample)",
			  (unsigned long long)t.procs_evicted);
	if (b.hold_drops || b.want_drops)
		log_warn(
			"unwind: %llu held samples and %llu table requests lost (ring buffer full; "
			"raise --ring-buffer-size)",
			(unsigned long long)b.hold_drops, (unsigned long long)b.want_drops);
}

void recording_report(struct recording *recording, const struct xsprofd_opts *o, double name_cpu_s,
		      const struct fold_stats *fs, struct symbolizer *sym)
{
	struct recording_stats rs;
	struct stack_table_stats ts;
	struct symbolizer_stats ys;
	const struct xsprof_cpu_stats *total = &rs.bpf;
	struct xsprof_cpu_stats *per_cpu;
	int ncpu = recording__nr_cpus(recording);
	uint64_t lost;

	recording__stats(recording, &rs);
	stack_table__stats(recording__stacks(recording), &ts);
	symbolizer__stats(sym, &ys);
	lost = total->drop_ringbuf + rs.bad_records;

	log_info("%.1f s on %d CPUs at %u Hz: %llu samples, %llu idle%s, %llu of other processes, "
		 "%llu kept",
		 rs.wall_s,
		 recording__nr_attached(recording) ? recording__nr_attached(recording) : ncpu,
		 o->freq_hz, (unsigned long long)total->samples, (unsigned long long)total->idle,
		 o->include_idle ? " (kept)" : " (left out; --include-idle keeps them)",
		 (unsigned long long)total->filtered, (unsigned long long)ts.samples);
	log_msg(lost || total->kstack_err || total->ustack_err ? LOG_INFO : LOG_DEBUG,
		"lost: %llu (ring buffer full %llu, malformed %llu); stacks unreadable: kernel "
		"%llu, user %llu",
		(unsigned long long)lost, (unsigned long long)total->drop_ringbuf,
		(unsigned long long)rs.bad_records, (unsigned long long)total->kstack_err,
		(unsigned long long)total->ustack_err);
	if (rs.stalls)
		log_warn("xsprofd did not run for %.1f s in %llu stretches (stopped, or starved of "
			 "CPU): what did not fit in the ring buffer meanwhile was lost",
			 rs.stalled_ns / 1e9, (unsigned long long)rs.stalls);
	per_cpu = calloc(ncpu, sizeof(*per_cpu));
	if ((lost || o->verbose) && per_cpu && !recording__cpu_stats(recording, per_cpu)) {
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
			 recording__ring_bytes(recording) >> 10);
	log_info("%llu distinct stacks from %zu processes; %llu of %llu frames unnamed",
		 (unsigned long long)ts.distinct, rs.processes,
		 (unsigned long long)fs->unnamed_frames, (unsigned long long)fs->frames);
	truncated_report(fs);
	if (symbolizer__sites(sym)) {
		struct frame_sites_stats fss;

		frame_sites__stats(symbolizer__sites(sym), &fss);
		log_debug("pprof frame sites: %llu names, %llu KiB; emptied %llu times at the cap, "
			  "%llu refused (those frames are written by name, without an address)",
			  (unsigned long long)fss.names, (unsigned long long)fss.bytes >> 10,
			  (unsigned long long)fss.resets, (unsigned long long)fss.refused);
	}
	log_debug("user stacks: %llu samples inside an exec between two images (no user frames), "
		  "%llu frames past the end of a broken frame-pointer chain dropped",
		  (unsigned long long)total->in_exec, (unsigned long long)ys.bogus_frames);
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
	if (rs.proc.gone)
		log_warn("%llu of %llu new processes had exited before their mappings could be "
			 "read: their frames are [unknown]",
			 (unsigned long long)rs.proc.gone, (unsigned long long)rs.proc.execs);
	if (rs.proc.over_budget || rs.proc.bpf_drop_ringbuf)
		log_info(
			"process events: %llu exec records not sent past a user's budget (%u a "
			"second; read at their first sample instead), %llu lost (ring buffer full)",
			(unsigned long long)rs.proc.over_budget, XSPROF_PROC_RECORDS_PER_USER_S,
			(unsigned long long)rs.proc.bpf_drop_ringbuf);
	if (ys.idle_dropped || ys.pinned_dropped)
		log_info(
			"symbolizer: %llu snapshots of processes not sampled yet dropped at the cache "
			"cap, %llu images whose samples were still to be named dropped past twice "
			"the cap (their frames are [unknown])",
			(unsigned long long)ys.idle_dropped, (unsigned long long)ys.pinned_dropped);
	unwind_report(recording);
	python_report__log(recording);
	log_debug("xsprofd's own CPU: %.3f s while sampling (%.2f%% of one CPU; %.2f us per sample "
		  "received), %.3f s naming stacks; own peak RSS %.1f MiB",
		  rs.cpu_s, rs.wall_s > 0 ? 100.0 * rs.cpu_s / rs.wall_s : 0.0,
		  rs.records ? rs.cpu_s * 1e6 / rs.records : 0.0, name_cpu_s,
		  peak_rss_kib() / 1024.0);
	if (total->timed) {
		double per = (double)total->timed_ns / (double)total->timed;

		log_debug("BPF cost: %.2f us per sample (1 in %d timed), %.3f%% of one CPU in the "
			  "kernel at this rate",
			  per / 1e3, XSPROF_TIMED_EVERY,
			  rs.wall_s > 0 ? 100.0 * per * (double)total->samples / (rs.wall_s * 1e9)
					: 0.0);
	}
}

/* ---- GPU path (cuda_probes): command mode, the launches output, the GPU-path report ---- */

/*
 * Ctrl-C reaches the command from the terminal already (same process group): SIGINT is not
 * sent again. SIGTERM and SIGHUP, which usually come to xsprofd alone, are passed on.
 */
static void forward_to_command(struct command *cmd, int sig)
{
	if (cmd && sig != SIGINT && !command__exited(cmd))
		command__kill(cmd, sig);
}

/* Uprobes hold an fd each: let the CUDA probes use what the hard limit allows. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* The ITT collector for the command, NULL when it is not installed (said once, when the user
 * asked for it by XSPROF_ITT_LIB). */
static const char *itt_lib(void)
{
	const char *lib = xsprof_itt_lib_path(), *asked = getenv(COMMAND_ITT_LIB_ENV);

	if (!access(lib, R_OK))
		return lib;
	if (asked && *asked)
		log_warn("%s=%s: %s; running without it, so no ITT ranges", COMMAND_ITT_LIB_ENV,
			 asked, strerror(errno));
	return NULL;
}

/* Fork the command, held before exec; NULL after logging why (ret_status: 126 or 127). */
static struct command *command_new(const struct xsprofd_opts *o, int *ret_status)
{
	const char *lib = command__cupti_lib(), *user = getenv(COMMAND_INJECTION_ENV);
	struct command *cmd;

	if (user && *user) {
		log_warn("%s is already set (%s): keeping it, so xsprof's CUPTI library is not "
			 "loaded and GPU timing comes only from that one",
			 COMMAND_INJECTION_ENV, user);
		lib = NULL;
	} else if (access(lib, R_OK)) {
		log_warn("%s: %s; running without it, so no GPU timing (install xsprof's CUDA "
			 "library or point %s at libxsprof_cupti.so)",
			 lib, strerror(errno), COMMAND_CUPTI_LIB_ENV);
		lib = NULL;
	}
	cmd = command__new(o->command, lib, itt_lib());
	if (!cmd) {
		log_err("%s: %s", o->command[0],
			errno == ENOENT ? "command not found" : strerror(errno));
		*ret_status = errno == ENOENT ? 127 : 126;
	}
	return cmd;
}

static int on_command_exit(sd_event_source *src, int fd, uint32_t revents, void *ctx)
{
	int status;

	if (command__reap(ctx, false, &status) == 1) {
		log_info("%s exited (status %d): writing the profile", command__path(ctx), status);
		return sd_event_exit(sd_event_source_get_event(src), 0);
	}
	return 0;
}

/* Whose GPU records a run takes: the --pid processes, or the command and its descendants. */
struct gpu_scope {
	const struct xsprofd_opts *o;
	pid_t cmd;
};

static pid_t parent_of(pid_t pid)
{
	struct proc_stat ps;

	return proc_stat__read(NULL, pid, &ps) ? 0 : ps.ppid;
}

static bool gpu_sender_in_scope(void *ctx, pid_t pid)
{
	const struct gpu_scope *sc = ctx;

	/* Descendants are followed (unless --no-children), so their GPU work is their root's. */
	for (int depth = 0; pid > 1 && depth < 64; depth++) {
		if (sc->cmd && pid == sc->cmd)
			return true;
		for (int i = 0; i < sc->o->nr_pids; i++)
			if (sc->o->pids[i] == pid)
				return true;
		if (sc->o->no_children)
			return false;
		pid = parent_of(pid);
	}
	return false;
}

/* Profile the command: in the pid filter, probes on it if the runtime is linked in. */
static int command_add(struct recording *recording, struct command *cmd)
{
	int err = recording__add_pid(recording, command__pid(cmd));

	if (!err && recording__cuda(recording) &&
	    cuda_probes__attach_exe(recording__cuda(recording), command__pid(cmd),
				    command__path(cmd)) < 0)
		log_warn("%s: no CUDA probes on the executable itself: %s", command__path(cmd),
			 cuda_probes__last_error(recording__cuda(recording))
				 ? cuda_probes__last_error(recording__cuda(recording))
				 : "cannot read it");
	return err;
}

static int on_wait_exit(sd_event_source *src, int fd, uint32_t revents, void *ctx)
{
	int status;

	if (command__reap(ctx, false, &status) == 1)
		return sd_event_exit(sd_event_source_get_event(src), 0);
	return 0;
}

/* Forward SIGTERM/SIGHUP while the command runs on after the profile was written. */
static int on_wait_signal(sd_event_source *src, const struct signalfd_siginfo *si, void *ctx)
{
	forward_to_command(ctx, si->ssi_signo);
	return 0;
}

/*
 * The exit status of a command-mode run: the command's, once it exits (waited for when the
 * profile ended first), or 125 when xsprofd itself failed (env(1)'s convention).
 */
static int command_end(struct command *cmd, bool released, int status)
{
	sd_event *ev = NULL;
	int st = 125;

	if (!cmd)
		return status;
	if (!released) {
		command__free(cmd); /* never ran: killed */
		return status ? 125 : 0;
	}
	if (!command__exited(cmd)) {
		log_info("waiting for %s (pid %d) to exit", command__path(cmd),
			 (int)command__pid(cmd));
		if (sd_event_new(&ev) >= 0 &&
		    sd_event_add_signal(ev, NULL, SIGTERM, on_wait_signal, cmd) >= 0 &&
		    sd_event_add_signal(ev, NULL, SIGHUP, on_wait_signal, cmd) >= 0 &&
		    sd_event_add_io(ev, NULL, command__fd(cmd), EPOLLIN, on_wait_exit, cmd) >= 0)
			sd_event_loop(ev);
		sd_event_unref(ev);
	}
	if (command__reap(cmd, true, &st) != 1)
		st = 125;
	command__free(cmd);
	return status ? 125 : st;
}

/* --launches-output: the CUDA calls' stacks (of the processes keep keeps; NULL: all). */
static int write_launches(const struct xsprofd_opts *o, struct recording *recording,
			  struct symbolizer *sym, struct job_keep *keep,
			  const struct output_meta *cpu_meta)
{
	struct output_meta meta = *cpu_meta;
	struct launch_fold_stats ls = {};
	enum output_format fmt = OUTPUT_FOLDED;
	struct calltree *tree;
	int err;

	if (!o->launch_output || !recording__cuda(recording))
		return 0;
	err = session_profile__launches(cuda_probes__store(recording__cuda(recording)), sym,
					keep ? job_keep__accepts : NULL, keep, &tree, &ls);
	if (err) {
		log_err("naming the launch stacks failed: %s", strerror(-err));
		goto out;
	}
	meta.unit = "calls";
	if (!strcmp(o->launch_output, "-")) {
		err = folded__write(tree, stdout);
		if (!err && fflush(stdout))
			err = -errno;
	} else {
		output__format_from_path(o->launch_output, &fmt);
		err = output__write_file(tree, fmt, o->launch_output, &meta);
	}
	if (err)
		log_err("writing %s failed: %s", o->launch_output, strerror(-err));
	else if (strcmp(o->launch_output, "-"))
		log_info("wrote %s (%s): %llu CUDA calls, %llu of %llu frames unnamed",
			 o->launch_output, output__format_name(fmt),
			 (unsigned long long)ls.launches, (unsigned long long)ls.unnamed_frames,
			 (unsigned long long)ls.frames);
out:
	calltree__free(tree);
	return err;
}

/* always: report even when no CUDA was met (command mode: the user asked about a command). */
static void cuda_report(struct recording *recording, bool always)
{
	struct cuda_probes *cp = recording__cuda(recording);
	struct launch_store_stats ls;
	struct cuda_probes_stats cs;
	const char *last;

	if (!cp || cuda_probes__stats(cp, &cs))
		return;
	launch_store__stats(cuda_probes__store(cp), &ls);
	last = cuda_probes__last_error(cp);
	/* Silent on a run that met no CUDA at all (unless -v). */
	log_msg(always || ls.calls || ls.usdt || cs.targets ? LOG_INFO : LOG_DEBUG,
		"CUDA: %llu calls recorded (%llu inside another probed call, counted once), "
		"%llu xsprof:launch firings; probes on %llu files (%llu uprobes)",
		(unsigned long long)ls.calls, (unsigned long long)cs.bpf.nested,
		(unsigned long long)ls.usdt, (unsigned long long)cs.targets,
		(unsigned long long)cs.links);
	if (ls.usdt)
		log_debug(
			"CUDA: xsprof:launch site in %llu processes: %llu on the kernel's optimised "
			"call, %llu trapped (int3; %llu of them on a 5-byte nop%s), %llu not probed "
			"yet, %llu gone before it was read; %llu launch uprobes removed where it "
			"fired (one probe per launch)",
			(unsigned long long)(cs.usdt_site_call + cs.usdt_site_trap +
					     cs.usdt_site_nop + cs.usdt_site_unread),
			(unsigned long long)cs.usdt_site_call,
			(unsigned long long)cs.usdt_site_trap,
			(unsigned long long)cs.usdt_site_trap_nop5,
			cs.usdt_site_trap_nop5 ? ": this kernel does not optimise uprobes" : "",
			(unsigned long long)cs.usdt_site_nop,
			(unsigned long long)cs.usdt_site_unread,
			(unsigned long long)cs.uprobes_trimmed);
	if (cs.scopes.begins || cs.scopes.ends)
		log_msg(cs.scopes.unpaired_ends || cs.scopes.too_deep || cs.scopes.threads_capped ||
					cs.scopes.names_capped || cs.scopes.names_unread ||
					cs.bpf.scope_drop
				? LOG_WARNING
				: LOG_INFO,
			"xsprof scopes: %llu ranges (%llu ended at their process's exit, %llu at the "
			"recording's end); %llu ends without their begin, %llu begins past the caps "
			"(64 deep, 4096 threads), %llu names past 4096, %llu names unreadable, %llu "
			"probe firings lost",
			(unsigned long long)cs.scopes.ranges,
			(unsigned long long)cs.scopes.ended_at_exit,
			(unsigned long long)cs.scopes.ended_at_end,
			(unsigned long long)cs.scopes.unpaired_ends,
			(unsigned long long)(cs.scopes.too_deep + cs.scopes.threads_capped),
			(unsigned long long)cs.scopes.names_capped,
			(unsigned long long)cs.scopes.names_unread,
			(unsigned long long)cs.bpf.scope_drop);
	if (cs.usdt_inner_deep)
		log_warn("CUDA: %llu xsprof:launch stacks had %d or more frames of the CUDA "
			 "libraries above the application's call (at most %llu): a reused stack is "
			 "checked that deep only, so launches of one place may count under another "
			 "called at the same depth",
			 (unsigned long long)cs.usdt_inner_deep, XSPROF_LAUNCH_SLOTS_USDT,
			 (unsigned long long)cs.usdt_inner_max);
	else if (ls.usdt)
		log_debug(
			"CUDA: xsprof:launch fired under %llu frames of the CUDA libraries at most",
			(unsigned long long)cs.usdt_inner_max);
	if (cs.reuse.walked || cs.reuse.reused)
		log_debug("CUDA: launch stacks walked %llu times, reused %llu times (proved "
			  "unchanged); walked again: %llu at another place, %llu with a changed "
			  "caller, %llu after 10 ms",
			  (unsigned long long)cs.reuse.walked, (unsigned long long)cs.reuse.reused,
			  (unsigned long long)cs.reuse.miss_key,
			  (unsigned long long)cs.reuse.miss_slots,
			  (unsigned long long)cs.reuse.miss_age);
	if (cs.reuse.timed)
		log_debug("CUDA: BPF cost %.2f us per launch probe run (1 in %d timed)",
			  (double)cs.reuse.timed_ns / (double)cs.reuse.timed / 1e3,
			  XSPROF_TIMED_EVERY);
	if (ls.reuse_orphans || cs.reuse.reuse_drops)
		log_warn("CUDA: %llu reused launch stacks lost (ring buffer full), %llu found no "
			 "walked stack of their thread",
			 (unsigned long long)cs.reuse.reuse_drops,
			 (unsigned long long)ls.reuse_orphans);
	if (cs.table_waits)
		log_debug(
			"CUDA: %llu launches paused their process until the unwind tables their walk "
			"asked for were built (the launches after them walked whole)",
			(unsigned long long)cs.table_waits);
	log_debug("CUDA: %llu libraries mapped and %llu executables exec'd by profiled processes "
		  "probed, %llu stops of a process for the daemon, %llu children followed, %llu "
		  "calls of other processes",
		  (unsigned long long)cs.lib_events, (unsigned long long)cs.execs,
		  (unsigned long long)cs.stopped, (unsigned long long)cs.bpf.forks_followed,
		  (unsigned long long)cs.bpf.filtered);
	if (cs.bpf.drop_ringbuf || cs.bpf.usdt_drop || cs.bpf.lib_map_drop || cs.bpf.exec_drop)
		log_warn("CUDA: %llu calls, %llu xsprof:launch firings, %llu library loads and "
			 "%llu execs lost (ring buffer full): raise --ring-buffer-size",
			 (unsigned long long)cs.bpf.drop_ringbuf,
			 (unsigned long long)cs.bpf.usdt_drop,
			 (unsigned long long)cs.bpf.lib_map_drop,
			 (unsigned long long)cs.bpf.exec_drop);
	if (cs.bpf.scratch_busy)
		log_warn("CUDA: %llu calls lost: both of a CPU's scratch slots were held by launch "
			 "probes preempted on it",
			 (unsigned long long)cs.bpf.scratch_busy);
	if (cs.bpf.fork_drop)
		log_warn("CUDA: %llu children not followed: the pid filter is full",
			 (unsigned long long)cs.bpf.fork_drop);
	if (cs.attach_failed || cs.links_capped)
		log_warn("CUDA: %llu libraries could not be probed%s%s",
			 (unsigned long long)(cs.attach_failed + cs.links_capped),
			 last ? "; last: " : "", last ? last : "");
	if (cs.bad_records || cs.store_failures)
		log_warn("CUDA: %llu malformed records, %llu not stored (out of memory)",
			 (unsigned long long)cs.bad_records, (unsigned long long)cs.store_failures);
	if (ls.overflowed)
		log_warn("CUDA: %llu calls past the launch stack table's cap were counted without "
			 "their stacks",
			 (unsigned long long)ls.overflowed);
	if (cs.bpf.ustack_err || cs.bpf.stream_err)
		log_debug("CUDA: %llu callers and %llu stream arguments unreadable",
			  (unsigned long long)cs.bpf.ustack_err,
			  (unsigned long long)cs.bpf.stream_err);
}

static void offcpu_report(struct recording *recording)
{
	struct offcpu_stats st;

	if (recording__offcpu_stats(recording, &st))
		return;
	log_info("off-CPU: %.3f s in %llu stretches off the CPU (%llu switches of watched "
		 "threads, %llu shorter than --min-block-us left out), %llu distinct stacks",
		 st.ns / 1e9, (unsigned long long)(st.blocks - st.below_min),
		 (unsigned long long)st.switches, (unsigned long long)st.below_min,
		 (unsigned long long)st.keys);
	if (st.agg_full || st.drop_ringbuf || st.keys_lost || st.pending_full || st.start_full)
		log_warn("off-CPU: lost %llu stretches (stack table full: raise --max-stacks), "
			 "%llu new stacks (ring buffer full: raise --ring-buffer-size), %llu "
			 "switch-outs not timed; %llu stacks counted without frames",
			 (unsigned long long)st.agg_full, (unsigned long long)st.drop_ringbuf,
			 (unsigned long long)st.start_full,
			 (unsigned long long)(st.keys_lost + st.pending_full));
	if (st.ustack_err)
		log_debug("off-CPU: %llu user stacks unreadable",
			  (unsigned long long)st.ustack_err);
}

/* --max-cpu: what sampling cost, and what was shed for how long (daemon/session/ceiling.h). */
static void ceiling_report(const struct ceiling_stats *st, unsigned int freq_hz,
			   struct recording *recording)
{
	struct cuda_probes *cp = recording__cuda(recording);
	struct cuda_probes_stats cs;
	char shed[512], now[256] = "";
	size_t n = 0, m = 0;

	log_info("--max-cpu %g%%: xsprofd cost %.2f%% of the machine's %d CPUs while sampling (own "
		 "CPU %.3f s, BPF programs %s%.3f s, over %.1f s); %llu steps shed, %llu restored",
		 st->max_pct, st->avg_pct, st->cpus, st->own_cpu_s,
		 st->bpf_measured ? "" : "not measured ", st->bpf_s, st->span_s,
		 (unsigned long long)st->steps_up, (unsigned long long)st->steps_down);
	if (st->all_shed && st->cost_pct > st->max_pct)
		log_warn(
			"--max-cpu %g%%: not held with every step shed: what is left (xsprofd's "
			"loop, process exits, the CUDA probes counting calls) cost %.2f%% at the end",
			st->max_pct, st->cost_pct);
	shed[0] = '\0';
	for (int k = 0; k < CEILING_KINDS && n < sizeof(shed); k++)
		if (st->shed_s[k] > 0)
			n += (size_t)snprintf(shed + n, sizeof(shed) - n, "%s%s for %.1f s",
					      n ? ", " : "", ceiling__kind_name(k), st->shed_s[k]);
	for (int k = CEILING_RATE + 1; k < CEILING_KINDS && m < sizeof(now); k++)
		if (st->shed[k])
			m += (size_t)snprintf(now + m, sizeof(now) - m, ", %s shed",
					      ceiling__kind_name(k));
	log_info("--max-cpu: shed %s; at the end: %u Hz (1/%u of %u Hz: a sample counts for %u)%s",
		 n ? shed : "nothing", freq_hz / st->rate_div, st->rate_div, freq_hz, st->rate_div,
		 now);
	if (cp && !cuda_probes__stats(cp, &cs)) {
		struct launch_store_stats ls;
		uint64_t lost = cs.bpf.drop_ringbuf + cs.bpf.scratch_busy + cs.reuse.reuse_drops;

		launch_store__stats(cuda_probes__store(cp), &ls);
		lost += ls.reuse_orphans;
		log_info(
			"--max-cpu: CUDA: %llu calls in all: %llu recorded (%llu of them counting "
			"for %u, walked while launch stacks were shed), %llu counted without their "
			"stack, %llu counted only (their stacks and GPU work are not in the "
			"profile), %llu lost",
			(unsigned long long)(ls.calls + ls.usdt + cs.bpf.stacks_shed +
					     cs.bpf.calls_shed + lost),
			(unsigned long long)(ls.calls + ls.usdt), (unsigned long long)ls.weighted,
			CEILING_LAUNCH_STACK_EVERY, (unsigned long long)cs.bpf.stacks_shed,
			(unsigned long long)cs.bpf.calls_shed, (unsigned long long)lost);
	}
}

/* --report: the flamegraph's top functions, on stdout. */
static int print_report(const struct profile_data *pd)
{
	int err = report__write_profile(pd, 20, stdout);

	if (err)
		log_err("writing the report failed: %s", strerror(-err));
	return err;
}

static int log_cost(void *ctx, const struct bpf_cost *c)
{
	log_debug("BPF cost: %s: %llu runs, %.0f ns each", c->name, (unsigned long long)c->runs,
		  (double)c->run_ns / (double)c->runs);
	return 0;
}

/* With -v, while kernel.bpf_stats_enabled is 1: what each program cost per run. */
/* --report gpu: why the GPU waits, on stdout. */
static int print_gpu_report(const struct output_analyses *an)
{
	int err = an->gpu ? gpu_report__write_text(an->gpu, stdout) : -EINVAL;

	if (!err && fflush(stdout))
		err = -errno;
	if (err)
		log_err("writing the GPU report failed: %s", strerror(-err));
	return err;
}

/* --report job: which rank holds the job back, on stdout. */
static int print_job_report(const struct output_analyses *an)
{
	int err = an->job ? job_report__write_text(an->job, stdout) : -EINVAL;

	if (!err && fflush(stdout))
		err = -errno;
	if (err)
		log_err("writing the job report failed: %s", strerror(-err));
	return err;
}

static void bpf_cost_report(struct recording *recording)
{
	struct cuda_probes *cp = recording__cuda(recording);

	bpf_cost__for_each(sampler__skel(recording__sampler(recording))->obj, log_cost, NULL);
	if (cp)
		for (int i = 0; cuda_probes__obj(cp, i); i++)
			bpf_cost__for_each(cuda_probes__obj(cp, i), log_cost, NULL);
}

/* The program's NVTX ranges and marks, when there are any (what a cap refused is in the
 * sender's drops, which the CUPTI server reports). */
static void nvtx_report(const struct profile_data *pd)
{
	size_t ranges = 0, open = 0, marks = 0, domains = 0;
	const char *seen[8];

	for (size_t i = 0; i < pd->nr_gpu; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];
		size_t k;

		if (g->kind != CORR_GPU_NVTX)
			continue;
		g->end_ns > g->start_ns ? ranges++ : marks++;
		open += !!(g->flags & CORR_GPU_F_OPEN);
		for (k = 0; k < domains && g->domain && strcmp(seen[k], g->domain); k++)
			;
		if (g->domain && k == domains && domains < 8)
			seen[domains++] = g->domain;
	}
	if (ranges || marks)
		log_info(
			"NVTX: %zu ranges (%zu still open at the recording's end, ended there) and "
			"%zu marks%s%s%s%s",
			ranges, open, marks, domains ? " (domains: " : "", domains ? seen[0] : "",
			domains > 1 ? ", ..." : "", domains ? ")" : "");
}

/* What joining the launches to the GPU records received came to. */
static void gpu_report(const struct xsprofd_opts *o, const struct profile_data *pd,
		       const struct correlate_stats *cs)
{
	log_msg(pd->nr_gpu || pd->nr_launches ? LOG_INFO : LOG_DEBUG,
		"GPU: %zu records received, %zu launches; correlation (%s): %llu matched, "
		"unmatched %llu launches and %llu GPU records, late %llu and %llu",
		pd->nr_gpu, pd->nr_launches, o->correlate, (unsigned long long)cs->matched,
		(unsigned long long)cs->unmatched_cpu, (unsigned long long)cs->unmatched_gpu,
		(unsigned long long)cs->late_cpu, (unsigned long long)cs->late_gpu);
	nvtx_report(pd);
}

/* Where a strategy did not join id's work to id's call, by the launching API. */
static void join_check_misses(const char *name, const struct join_check_counts *c)
{
	char line[512];
	size_t len = 0;

	for (size_t k = 0; k <= JOIN_CHECK_APIS && len < sizeof(line); k++)
		if (c->miss[k].n)
			len += (size_t)snprintf(line + len, sizeof(line) - len, "%s%s %llu",
						len ? ", " : "",
						c->miss[k].api ? c->miss[k].api : "other",
						(unsigned long long)c->miss[k].n);
	if (len)
		log_info("correlation check: %s missed id's call for work launched by %s", name,
			 line);
}

/* --correlate-check: the strategies side by side on this run's data. */
static void join_check_report(const struct profile_data *pd)
{
	struct join_check jc;
	int err = join_check__run(pd, &jc);

	if (err) {
		log_err("--correlate-check failed: %s", strerror(-err));
		return;
	}
	log_info("correlation check: %llu pieces of GPU work; id joined %llu; timestamp joined "
		 "%llu (%llu to id's call, %llu elsewhere); stream joined %llu (%llu to id's call, "
		 "%llu elsewhere); %llu of %llu launch uprobes paired with the xsprof:launch of "
		 "their call (%llu xsprof:launch records)",
		 (unsigned long long)jc.work, (unsigned long long)jc.id.joined,
		 (unsigned long long)jc.timestamp.joined, (unsigned long long)jc.timestamp.agree,
		 (unsigned long long)jc.timestamp.differ, (unsigned long long)jc.stream.joined,
		 (unsigned long long)jc.stream.agree, (unsigned long long)jc.stream.differ,
		 (unsigned long long)jc.paired, (unsigned long long)jc.uprobes,
		 (unsigned long long)jc.usdt);
	join_check_misses("timestamp", &jc.timestamp);
	join_check_misses("stream", &jc.stream);
	if (jc.work && !jc.usdt)
		log_warn("correlation check: no xsprof:launch record, so no id join to compare "
			 "with (the command did not load the injection library, or its probe was "
			 "not attached)");
}

/* --group-by range: how many NVTX ranges the samples were matched to. */
static void ranges_report(const struct xsprofd_opts *o, const struct ranges *ranges)
{
	size_t n = ranges__count(ranges);

	if (!n)
		log_warn("--group-by %s: no NVTX range arrived, so every sample is under %s (the "
			 "program calls no NVTX, or it does not load the injection: command mode "
			 "sets NVTX_INJECTION64_PATH; started elsewhere, give it "
			 "NVTX_INJECTION64_PATH=%s)",
			 session_group__name(o->group_by), RANGES_NONE, command__cupti_lib());
	else
		log_info("--group-by range: %zu NVTX ranges", n);
}

/* The wall and merged views: what the time in CUDA calls waiting for the GPU came to. */
static void waits_report(struct recording *recording, const struct gpu_waits_stats *ws)
{
	struct cuda_probes *cp = recording__cuda(recording);
	struct cuda_probes_stats cs = {};

	if (cp)
		cuda_probes__stats(cp, &cs);
	gpu_waits__report(ws, cp ? cuda_probes__store(cp) : NULL, &cs.waits);
}

/* ---- */

static bool wants_timeline(const struct xsprofd_opts *o)
{
	for (int i = 0; i < o->nr_outputs; i++)
		if (output__format_info(o->outputs[i].format)->needs & OUTPUT_NEEDS_SAMPLES)
			return true;
	/* The GPU report blames idle time on what the launching threads were sampled doing. */
	if (o->report_gpu || o->report_job)
		return true;
	/* Each sample is matched to the range its thread was in at its time. */
	return session_group__is_range(o->group_by);
}

static int write_outputs(const struct xsprofd_opts *o, const struct profile_data *pd,
			 const struct output_meta *meta)
{
	int failed = 0;

	for (int i = 0; i < o->nr_outputs; i++) {
		const struct xsprofd_output *out = &o->outputs[i];
		int err;

		if (!strcmp(out->path, "-")) {
			err = output__write_profile(pd, OUTPUT_FOLDED, stdout, meta);
			if (!err && fflush(stdout))
				err = -errno;
		} else {
			err = output__write_profile_file(pd, out->format, out->path, meta);
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

/* One one-shot run: what its steps share. */
struct run {
	const struct xsprofd_opts *o;
	struct recording_opts ropts;
	sd_event *ev;
	struct command *cmd;
	bool released;
	int cgroup_fd;
	char cgroup_dir[PATH_MAX];
	struct symbolizer *sym;
	struct frame_sites *sites; /* with a pprof output: where frames came from */
	struct recording *recording;
	struct oneshot_gpu *gpu;
	struct gpu_scope scope;
	struct group_by *groups;    /* --group-by */
	struct host_labels *labels; /* each process's host-side labels (wants_labels) */
	struct job_keep *keep;	    /* --job, --rank: the processes kept */
	uint64_t start_ns, end_ns;
	int64_t realtime_offset_ns;
	struct session_profile sp;
	struct ceiling_stats ceiling; /* --max-cpu: what it cost and shed while sampling */
};

/* Everything that can be checked before anything starts. 0, or the exit status. */
static int preflight_all(const struct xsprofd_opts *o)
{
	if (preflight__kernel())
		return 1;
	for (int i = 0; i < o->nr_pids; i++)
		if (preflight__pid(o->pids[i]))
			return 1;
	for (int i = 0; i < o->nr_tids; i++)
		if (preflight__tid(o->tids[i]))
			return 1;
	for (int i = 0; i < o->nr_outputs; i++)
		if (preflight__output(o->outputs[i].path))
			return 1;
	if (o->launch_output && strcmp(o->launch_output, "-") &&
	    preflight__output(o->launch_output))
		return 1;
	return 0;
}

/* pprof keeps addresses: the stacks' names then record where they came from. */
static bool wants_format(const struct xsprofd_opts *o, enum output_format fmt)
{
	for (int i = 0; i < o->nr_outputs; i++)
		if (o->outputs[i].format == (int)fmt)
			return true;
	return false;
}

/* Each process's labels, read while it runs: OTLP's attributes, pprof's labels, the trace's
 * process names, the job report's ranks, the job and rank --job and --rank keep. */
static bool wants_labels(const struct xsprofd_opts *o)
{
	if (o->report_job || job_filter__on(&o->job_filter))
		return true;
	for (int i = 0; i < o->nr_outputs; i++)
		if (output__format_info((enum output_format)o->outputs[i].format)->needs &
		    OUTPUT_NEEDS_LABELS)
			return true;
	return false;
}

static bool wants_pprof(const struct xsprofd_opts *o)
{
	return wants_format(o, OUTPUT_PPROF);
}

/* A new process: its group (--group-by) and its host-side labels (OTLP) read while it runs. */
static void note_process(void *ctx, uint32_t tgid)
{
	struct run *r = ctx;

	if (r->groups)
		group_by__note(r->groups, tgid);
	if (r->labels)
		host_labels__of(r->labels, tgid);
}

/* An exec: the process's labels are its new image's (a child sampled between its fork and
 * its exec was read with its parent's environment). */
static void note_exec(void *ctx, uint32_t tgid)
{
	struct run *r = ctx;

	if (r->labels) {
		host_labels__forget(r->labels, tgid);
		host_labels__of(r->labels, tgid);
	}
}

static void recording_opts_for(const struct xsprofd_opts *o, struct recording_opts *ret)
{
	*ret = (struct recording_opts){
		.freq_hz = o->freq_hz,
		.include_idle = o->include_idle,
		.ring_bytes = o->ring_buffer_bytes,
		.max_stacks = o->max_stacks,
		.pids = o->pids,
		.nr_pids = o->nr_pids,
		.cuda = !o->no_cuda,
		/* Descendants join the pid filter in the kernel at fork, so none is missed. */
		.follow_forks = (o->nr_command > 0 || o->nr_pids > 0) && !o->no_children,
		.cuda_libs = o->cuda_libs,
		.nr_cuda_libs = o->nr_cuda_libs,
		.proc_events = true,
		.max_timeline = wants_timeline(o) ? MAX_TIMELINE_SAMPLES : 0,
		.unwind_mode = o->unwind,
		.unwind_mb = o->unwind_mb,
		.python = !o->no_python,
		/* Those two join entry uprobe records; id (and auto's pick of it) the USDT's. */
		.keep_launch_uprobes = o->correlate_check ||
				       (o->correlate && (!strcmp(o->correlate, "timestamp") ||
							 !strcmp(o->correlate, "stream"))),
		.offcpu = o->mode != SESSION_MODE_CPU,
		.offcpu_min_ns = (uint64_t)o->min_block_us * 1000,
		.comm = o->comm,
		.cgroup_fd = -1,
		.tids = o->tids,
		.nr_tids = o->nr_tids,
		.gpu_wait_exclusive = o->mode == SESSION_MODE_WALL,
	};
}

/* Signals and the command's exit as events on the loop (the duration starts with sampling). */
static int setup_loop(struct run *r)
{
	sigset_t mask;
	int err;

	/* Signals become events on the loop; nothing is done in a handler. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	err = sd_event_new(&r->ev);
	if (err >= 0)
		err = sd_event_add_signal(r->ev, NULL, SIGINT, on_signal, r->cmd);
	if (err >= 0)
		err = sd_event_add_signal(r->ev, NULL, SIGTERM, on_signal, r->cmd);
	if (err >= 0)
		err = sd_event_add_signal(r->ev, NULL, SIGHUP, on_signal, r->cmd);
	if (err >= 0 && r->cmd)
		err = sd_event_add_io(r->ev, NULL, command__fd(r->cmd), EPOLLIN, on_command_exit,
				      r->cmd);
	if (err < 0)
		log_err("setting up the event loop: %s", strerror(-err));
	return err < 0 ? err : 0;
}

/* GPU records kept until the end of a one-shot run: about 4 M records (a minute of a small
 * PyTorch model's kernels with their launch calls' API records). */
#define ONESHOT_GPU_STORE_MB 1024

static unsigned int gpu_store_mb(const struct xsprofd_opts *o)
{
	return o->gpu_store_mb ? o->gpu_store_mb : ONESHOT_GPU_STORE_MB;
}

/* The CUPTI socket, when GPU work may come: a failure only costs the GPU timing. */
static void setup_gpu(struct run *r)
{
	const struct xsprofd_opts *o = r->o;

	if (!o->nr_command && o->no_cuda)
		return;
	r->scope = (struct gpu_scope){.o = o, .cmd = r->cmd ? command__pid(r->cmd) : 0};
	r->gpu = oneshot_gpu__new(r->ev, o->cupti_socket, gpu_store_mb(o),
				  o->nr_pids || r->cmd ? gpu_sender_in_scope : NULL, &r->scope);
	if (!r->gpu && o->nr_command)
		log_warn("GPU timing is off: cannot listen on %s: %s (choose another path with "
			 "--cupti-socket)",
			 o->cupti_socket, strerror(errno));
	else if (!r->gpu)
		log_info("no GPU timing: cannot listen on %s: %s", o->cupti_socket,
			 strerror(errno));
}

/* --cgroup / --unit into the recording's filter. 0, or the exit status (2: a bad name). */
static int open_cgroup(struct run *r)
{
	const struct xsprofd_opts *o = r->o;

	if (!o->cgroup && !o->unit)
		return 0;
	r->cgroup_fd = cgroup_path__open(o->cgroup, o->unit, r->cgroup_dir, sizeof(r->cgroup_dir));
	if (r->cgroup_fd < 0) {
		log_err("%s %s: %s", o->cgroup ? "--cgroup" : "--unit",
			o->cgroup ? o->cgroup : o->unit,
			r->cgroup_fd == -EMEDIUMTYPE ? "not a cgroup v2 directory (the filter "
						       "needs cgroup2)"
			: r->cgroup_fd == -ENOENT    ? "no such cgroup under the cgroup2 mount"
						     : strerror(-r->cgroup_fd));
		return 2;
	}
	r->ropts.cgroup_fd = r->cgroup_fd;
	log_debug("cgroup filter: %s", r->cgroup_dir);
	return 0;
}

/* Load, attach, start sampling, let the command run. 0, or the exit status. */
static int start_recording(struct run *r)
{
	const struct xsprofd_opts *o = r->o;
	struct symbolizer_opts yopts = {
		.no_demangle = o->no_demangle,
		.debug_dirs = o->nr_debug_dirs ? o->debug_dirs : NULL,
		.nr_debug_dirs = (size_t)o->nr_debug_dirs,
		.debuginfod = o->debuginfod,
		.cache_bytes = (uint64_t)o->symbol_cache_mb << 20,
		.debug_info = o->debug_info,
		.kallsyms_cache = XSPROF_KALLSYMS_CACHE,
	};
	const char *what;
	int err;

	r->sym = symbolizer__new(&yopts);
	if (wants_pprof(o))
		r->sites = frame_sites__new(0);
	if (r->sym)
		symbolizer__set_sites(r->sym, r->sites);
	if (!r->sym || (wants_pprof(o) && !r->sites) ||
	    (o->group_by && !session_group__is_range(o->group_by) &&
	     !(r->groups = group_by__new(o->group_by)))) {
		log_err("out of memory setting up");
		return 1;
	}
	/* Process labels (unit, container, pod, job and rank) for the outputs that carry them,
	 * and the job report's ranks. */
	if (wants_labels(o) && !(r->labels = host_labels__new(NULL, NULL, 0))) {
		log_err("out of memory setting up");
		return 1;
	}
	if (job_filter__on(&o->job_filter) &&
	    !(r->keep = job_keep__new(&o->job_filter, r->labels))) {
		log_err("out of memory setting up");
		return 1;
	}
	r->ropts.on_new_process = r->groups || r->labels ? note_process : NULL;
	r->ropts.on_new_process_ctx = r;
	r->ropts.on_exec = r->labels ? note_exec : NULL;
	r->recording = recording__new(r->ev, &r->ropts, r->sym, &what);
	if (!r->recording) {
		preflight__explain_bpf_error(what, -errno);
		return 1;
	}
	if (r->cmd && (err = command_add(r->recording, r->cmd))) {
		log_err("adding %s to the pid filter: %s", o->command[0], strerror(-err));
		return 1;
	}
	/* Loading parsed the kernel's BTF (megabytes), now freed: give it back before sampling. */
	malloc_trim(0);
	err = recording__start(r->recording);
	if (err) {
		preflight__explain_bpf_error("attaching the sampler to perf events", err);
		return 1;
	}
	if (r->cmd) {
		r->released = true;
		err = command__release(r->cmd);
		if (err) {
			log_err("%s: %s", command__path(r->cmd), strerror(-err));
			recording__stop(r->recording);
			command__reap(r->cmd, true, &(int){0});
			command__free(r->cmd);
			r->cmd = NULL;
			return err == -ENOENT ? 127 : 126;
		}
		log_info("profiling %s (pid %d) and its children until it exits%s", o->command[0],
			 (int)command__pid(r->cmd),
			 o->duration_s > 0 ? " or the duration ends" : "");
	} else if (o->duration_s > 0) {
		log_info("sampling %s at %u Hz for %g s (Ctrl-C ends early)",
			 o->nr_pids ? "the given processes" : "all CPUs", o->freq_hz,
			 o->duration_s);
	} else {
		log_info("sampling %s at %u Hz until Ctrl-C",
			 o->nr_pids ? "the given processes" : "all CPUs", o->freq_hz);
	}
	if (o->nr_pids && !o->no_children) {
		struct recording_stats rs;

		recording__stats(r->recording, &rs);
		if (rs.descendants || rs.descendants_capped)
			log_info("with %llu of their descendants already running%s",
				 (unsigned long long)rs.descendants,
				 rs.descendants_capped ? " (more past 4096 left out)" : "");
	}
	return 0;
}

/* What --job and --rank kept. */
static void keep_report(const struct xsprofd_opts *o, const struct job_keep *keep)
{
	struct job_keep_stats ks;
	char what[192];

	job_keep__stats(keep, &ks);
	job_filter__describe(&o->job_filter, what, sizeof(what));
	log_info("%s: kept %llu processes, left out %llu (another job or rank, or none said in "
		 "their environment)%s",
		 what, (unsigned long long)ks.kept, (unsigned long long)ks.left_out,
		 ks.uncounted ? "; more past the count's cap" : "");
	if (!ks.kept)
		log_warn("%s: no process was kept: the profile is empty (--group-by rank or job "
			 "shows what the processes say)",
			 what);
}

/*
 * The profile (daemon/session/profile.c: named, the GPU work joined, grouped), then what it
 * took and came to in the log. 0, or the exit status.
 */
static int build_profile(struct run *r)
{
	const struct xsprofd_opts *o = r->o;
	const struct session_view view = {
		.mode = o->gpu_mode,
		.mode_set = o->gpu_mode_set,
		.unit = o->weight,
		.freq_hz = o->freq_hz,
		.strategy = o->correlate,
		.cpu_mode = o->mode,
		.group_by = o->group_by,
		.groups = r->groups,
		.range_domain = o->range_domain,
		.timeline = r->ropts.max_timeline > 0,
		.keep = r->keep ? job_keep__accepts : NULL,
		.keep_ctx = r->keep,
	};
	struct session_profile *sp = &r->sp;
	struct session_source src;
	struct correlate_stats cs = {};
	double cpu1 = clock__cpu_s();
	int err;

	malloc_trim(0); /* the naming below is the run's memory peak: start it lean */
	session_source__of_recording(&src, r->recording,
				     r->gpu ? oneshot_gpu__store(r->gpu) : NULL);
	err = session_profile__build(sp, &src, r->sym, NULL, &view, &cs);
	if (err) {
		log_err("%s failed: %s", sp->failed, strerror(-err));
		return 1;
	}
	sp->pd.start_ns = r->start_ns;
	sp->pd.end_ns = r->end_ns;
	sp->pd.realtime_offset_ns = r->realtime_offset_ns;
	if (r->keep)
		keep_report(o, r->keep);
	if (r->gpu) {
		struct gpu_store_stats gs;

		gpu_report(o, &sp->pd, &cs);
		if (o->correlate_check)
			join_check_report(&sp->pd);
		gpu_store__stats(oneshot_gpu__store(r->gpu), &gs);
		if (gs.evicted)
			log_warn("GPU: %llu records dropped, the oldest first, at the GPU record "
				 "store's cap (%u MiB): the profile misses that GPU work; raise "
				 "--gpu-store-mb",
				 (unsigned long long)gs.evicted, gpu_store_mb(o));
		if (gs.open_refused)
			log_warn(
				"NVTX: %llu ranges' openings refused (at most 1024 open per process, "
				"4 MiB in all): if they had not ended by the end, they are missing",
				(unsigned long long)gs.open_refused);
	}
	if (sp->ranges)
		ranges_report(o, sp->ranges);
	if (sp->waits_added)
		waits_report(r->recording, &sp->waits);
	recording_report(r->recording, o, clock__cpu_s() - cpu1, &sp->fold, r->sym);
	if (sp->timeline_dropped)
		log_warn("%llu samples left off the timeline (the Chrome trace keeps %u at most, "
			 "or memory ran out); the flamegraph outputs still count them",
			 (unsigned long long)sp->timeline_dropped, MAX_TIMELINE_SAMPLES);
	if (!o->no_cuda)
		cuda_report(r->recording, o->nr_command > 0);
	offcpu_report(r->recording);
	bpf_cost_report(r->recording);
	if (r->ceiling.max_pct > 0)
		ceiling_report(&r->ceiling, o->freq_hz, r->recording);
	return 0;
}

/* "xsprof: CMD, 3.0 s at 99 Hz" and "DATE on HOST". */
static void titles(const struct run *r, char *title, size_t tsize, char *subtitle, size_t ssize)
{
	const struct xsprofd_opts *o = r->o;
	struct recording_stats rs;
	char host[64] = "";
	time_t now = time(NULL);

	recording__stats(r->recording, &rs);
	gethostname(host, sizeof(host) - 1);
	snprintf(title, tsize, "xsprof: %s, %.1f s %s",
		 o->nr_command ? o->command[0]
		 : o->nr_pids  ? "selected processes"
			       : "all CPUs",
		 rs.wall_s,
		 o->mode == SESSION_MODE_OFFCPU ? "off-CPU time"
		 : o->mode == SESSION_MODE_WALL ? "wall time (on and off CPU)"
						: "");
	if (o->mode != SESSION_MODE_OFFCPU)
		snprintf(title + strlen(title), tsize - strlen(title), "%sat %u Hz",
			 o->mode == SESSION_MODE_WALL ? ", samples " : "", o->freq_hz);
	strftime(subtitle, ssize, "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
	snprintf(subtitle + strlen(subtitle), ssize - strlen(subtitle), " on %s", host);
}

/* The analyses every output and --report asked for, built once for all of them. */
static int build_analyses(const struct xsprofd_opts *o, const struct profile_data *pd,
			  struct output_analyses *ret)
{
	unsigned int needs = 0;
	int err;

	for (int i = 0; i < o->nr_outputs; i++)
		needs |= output_analyses__needs(o->outputs[i].format);
	needs |= o->report_gpu ? OUTPUT_NEEDS_GPU_REPORT : 0;
	needs |= o->report_job ? OUTPUT_NEEDS_JOB_REPORT : 0;
	err = output_analyses__build(pd, needs, ret);
	if (err)
		log_err("building the %s failed: %s; the outputs that need it are not written",
			needs & OUTPUT_NEEDS_JOB_REPORT ? "GPU and job reports" : "GPU report",
			strerror(-err));
	return err;
}

static int write_all(struct run *r)
{
	struct output_meta meta = {.unit = "samples"};
	struct output_analyses an = {0};
	char title[256], subtitle[256];
	int status;

	titles(r, title, sizeof(title), subtitle, sizeof(subtitle));
	meta.title = title;
	meta.subtitle = subtitle;
	meta.cpu_mode = r->o->mode != SESSION_MODE_CPU ? session_mode__name(r->o->mode) : NULL;
	r->sp.pd.process_labels = r->labels ? host_labels__of : NULL;
	r->sp.pd.process_labels_ctx = r->labels;
	status = build_analyses(r->o, &r->sp.pd, &an) ? 1 : 0;
	meta.an = &an;
	status |= write_outputs(r->o, &r->sp.pd, &meta) ? 1 : 0;
	if (r->o->report && print_report(&r->sp.pd))
		status = 1;
	if (r->o->report_gpu && print_gpu_report(&an))
		status = 1;
	if (r->o->report_job && print_job_report(&an))
		status = 1;
	meta.an = NULL;
	output_analyses__release(&an);
	if (write_launches(r->o, r->recording, r->sym, r->keep, &meta))
		status = 1;
	return status;
}

/*
 * Sample until the duration, Ctrl-C or the command's exit. The duration counts from now, not
 * from the start: loading the programs can take seconds on a busy machine.
 */
static void sample(struct run *r)
{
	uint64_t t_start = clock__mono_ns();
	struct ceiling *ceiling = NULL;
	int err = 0;

	if (r->o->max_cpu_pct > 0) {
		ceiling = ceiling__new(r->ev, r->o->max_cpu_pct);
		err = ceiling ? ceiling__add(ceiling, r->recording) : -errno;
		if (err) {
			log_warn(
				"--max-cpu: the ceiling could not be set up (%s): sampling without",
				strerror(-err));
			ceiling__free(ceiling);
			ceiling = NULL;
			err = 0;
		}
	}
	if (r->o->duration_s > 0)
		err = sd_event_add_time_relative(r->ev, NULL, CLOCK_MONOTONIC,
						 (uint64_t)llround(r->o->duration_s * 1e6), 0,
						 on_end, NULL);
	if (err >= 0)
		err = sd_event_loop(r->ev);

	if (ceiling) {
		ceiling__remove(ceiling, r->recording);
		ceiling__stats(ceiling, &r->ceiling);
		ceiling__free(ceiling);
	}
	recording__stop(r->recording);
	r->end_ns = clock__mono_ns();
	r->start_ns = t_start;
	r->realtime_offset_ns = clock__realtime_offset_ns();
	if (err < 0)
		log_err("sampling stopped on an error: %s; writing what was collected",
			strerror(-err));
}

int oneshot__run(const struct xsprofd_opts *o)
{
	struct run r = {.o = o, .cgroup_fd = -1};
	int status;

	libbpf_set_print(preflight__libbpf_log);
	status = preflight_all(o);
	if (status)
		return status;
	if (!o->no_cuda)
		raise_fd_limit();
	recording_opts_for(o, &r.ropts);
	/* The command finds a socket other than the default through the environment. */
	if (o->nr_command && strcmp(o->cupti_socket, XSPROF_WIRE_DEFAULT_SOCKET))
		setenv(XSPROF_WIRE_SOCKET_ENV, o->cupti_socket, 1);
	/* A recording asks for every GPU record the joins and the report use (the injection
	 * library's own default, kernels, is the service's always-on one); the user's choice,
	 * when the environment has one, stands. */
	if (o->nr_command)
		setenv("XSPROF_CUPTI_POLICY", "full", 0);
	/* Command mode: the command is forked now and runs once the recording is ready. */
	status = 1;
	if (o->nr_command && !(r.cmd = command_new(o, &status)))
		return status;
	if (setup_loop(&r))
		goto out;
	setup_gpu(&r);
	status = open_cgroup(&r);
	if (!status)
		status = start_recording(&r);
	if (status)
		goto out;
	sample(&r);
	status = build_profile(&r);
	if (!status)
		status = write_all(&r);
out:
	session_profile__release(&r.sp);
	group_by__free(r.groups);
	job_keep__free(r.keep);
	host_labels__free(r.labels);
	oneshot_gpu__free(r.gpu);
	recording__free(r.recording);
	symbolizer__free(r.sym);
	frame_sites__free(r.sites);
	sd_event_unref(r.ev);
	if (r.cgroup_fd >= 0)
		close(r.cgroup_fd);
	return o->nr_command ? command_end(r.cmd, r.released, status) : status;
}
