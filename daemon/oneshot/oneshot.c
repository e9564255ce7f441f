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
#include "daemon/oneshot/oneshot_report.h"
#include "daemon/options.h"
#include "daemon/probes/preflight.h"
#include "daemon/session/gpu_waits.h"
#include "daemon/session/group_by.h"
#include "daemon/session/host_labels.h"
#include "daemon/session/job_keep.h"
#include "daemon/session/plan.h"
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
#include "output/model/frame_sites.h"
#include "daemon/session/python_report.h"
#include "xsprof.skel.h"
#include "cupti_inject/xsprof_wire.h"
#include "output/model/calltree.h"
#include "output/folded.h"
#include "output/analyses.h"
#include "output/output.h"
#include "output/model/profile.h"
#include "output/gpu_report/gpu_report.h"
#include "output/job/job_report.h"
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

/* The stacks whose user walk stopped before the root (each marked "[truncated: reason]"), by
 * reason, as a share of what the profile counts. */
/* ---- GPU path (cuda_probes): command mode, the launches output ---- */

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

/* --report: the flamegraph's top functions, on stdout. */
static int print_report(const struct profile_data *pd)
{
	int err = report__write_profile(pd, 20, stdout);

	if (err)
		log_err("writing the report failed: %s", strerror(-err));
	return err;
}

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

/* The program's NVTX ranges and marks, when there are any (what a cap refused is in the
 * sender's drops, which the CUPTI server reports). */
/* ---- */

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
	struct session_view view; /* what it shows: build_profile adds what it made */
	struct session_plan plan; /* its recording and what it reads while it runs */
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
	struct host_labels *labels; /* each process's host-side labels (plan.labels) */
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

/*
 * The view the run shows and its plan (daemon/session/plan.h): the outputs, and the GPU and job
 * reports printed as gpu-text and job-text, say what it reads while it runs.
 */
static void plan_run(struct run *r)
{
	const struct xsprofd_opts *o = r->o;
	enum output_format fmts[XSPROFD_MAX_OUTPUTS + 2];
	struct session_plan_base base;
	size_t n = 0;

	r->view = (struct session_view){
		.mode = o->gpu_mode,
		.mode_set = o->gpu_mode_set,
		.unit = o->weight,
		.freq_hz = o->freq_hz,
		.strategy = o->correlate,
		.cpu_mode = o->mode,
		.group_by = o->group_by,
		.range_domain = o->range_domain,
		/* Its ctx, the job_keep, once the labels it reads are there. */
		.keep = job_filter__on(&o->job_filter) ? job_keep__accepts : NULL,
	};
	session_plan_base__of_flags(o, NULL, &base);
	base.ring_bytes = o->ring_buffer_bytes;
	base.include_idle = o->include_idle;
	base.proc_events = true;
	base.cuda_libs = o->cuda_libs;
	base.nr_cuda_libs = o->nr_cuda_libs;
	base.offcpu_min_ns = (uint64_t)o->min_block_us * 1000;
	base.wakers = o->wakers;
	base.check_joins = o->correlate_check;
	base.pids = o->pids;
	base.nr_pids = o->nr_pids;
	base.command = o->nr_command > 0;
	base.children = !o->no_children;
	base.tids = o->tids;
	base.nr_tids = o->nr_tids;
	base.comm = o->comm;
	base.cgroup_fd = r->cgroup_fd;
	base.max_timeline = MAX_TIMELINE_SAMPLES;
	for (int i = 0; i < o->nr_outputs; i++)
		fmts[n++] = (enum output_format)o->outputs[i].format;
	if (o->report_gpu)
		fmts[n++] = OUTPUT_GPU_TEXT;
	if (o->report_job)
		fmts[n++] = OUTPUT_JOB_TEXT;
	session_plan__of(&r->view, &base, fmts, n, &r->plan);
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

	plan_run(r);
	r->sym = symbolizer__new(&yopts);
	if (r->plan.frame_sites)
		r->sites = frame_sites__new(0);
	if (r->sym)
		symbolizer__set_sites(r->sym, r->sites);
	if (!r->sym || (r->plan.frame_sites && !r->sites) ||
	    (r->plan.groups && !(r->groups = group_by__new(o->group_by)))) {
		log_err("out of memory setting up");
		return 1;
	}
	/* Process labels (unit, container, pod, job and rank) for the outputs that carry them,
	 * and the job report's ranks. */
	if (r->plan.labels && !(r->labels = host_labels__new(NULL, NULL, 0))) {
		log_err("out of memory setting up");
		return 1;
	}
	if (job_filter__on(&o->job_filter) &&
	    !(r->keep = job_keep__new(&o->job_filter, r->labels))) {
		log_err("out of memory setting up");
		return 1;
	}
	/* The callbacks are the run's own. */
	r->plan.ro.on_new_process = r->groups || r->labels ? note_process : NULL;
	r->plan.ro.on_new_process_ctx = r;
	r->plan.ro.on_exec = r->labels ? note_exec : NULL;
	r->recording = recording__new(r->ev, &r->plan.ro, r->sym, &what);
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

/*
 * The profile (daemon/session/profile.c: named, the GPU work joined, grouped), then what it
 * took and came to in the log. 0, or the exit status.
 */
static int build_profile(struct run *r)
{
	const struct xsprofd_opts *o = r->o;
	struct session_view view = r->view;
	struct session_profile *sp = &r->sp;
	struct session_source src;
	struct correlate_stats cs = {};
	double cpu1 = clock__cpu_s();
	int err;

	view.groups = r->groups;
	view.timeline = r->plan.samples;
	view.keep_ctx = r->keep;
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
		oneshot_report__keep(o, r->keep);
	if (r->gpu) {
		struct gpu_store_stats gs;

		oneshot_report__gpu(o, &sp->pd, &cs);
		if (o->correlate_check)
			oneshot_report__join_check(&sp->pd);
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
		oneshot_report__ranges(o, sp->ranges);
	if (sp->waits_added)
		oneshot_report__waits(r->recording, &sp->waits);
	oneshot_report__recording(r->recording, o, clock__cpu_s() - cpu1, &sp->fold, r->sym);
	if (sp->timeline_dropped)
		log_warn("%llu samples left off the timeline (the Chrome trace keeps %u at most, "
			 "or memory ran out); the flamegraph outputs still count them",
			 (unsigned long long)sp->timeline_dropped, MAX_TIMELINE_SAMPLES);
	if (!o->no_cuda)
		oneshot_report__cuda(r->recording, o->nr_command > 0);
	oneshot_report__offcpu(r->recording);
	if (oneshot_report__counters(r->recording, o, r->sym))
		return 1;
	oneshot_report__bpf_cost(r->recording);
	if (r->ceiling.max_pct > 0)
		oneshot_report__ceiling(&r->ceiling, o->freq_hz, r->recording);
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
