// SPDX-License-Identifier: Apache-2.0
/* A session's view, base and outputs into its recording and what it reads while it runs. */
#include <string.h>

#include "daemon/options.h"
#include "daemon/session/plan.h"
#include "daemon/session/profile.h"
#include "daemon/session/session_mode.h"

/* What the outputs need, together. */
static unsigned int needs_of(const enum output_format *fmts, size_t nr_fmts, bool *ret_pprof)
{
	unsigned int needs = 0;

	*ret_pprof = false;
	for (size_t i = 0; i < nr_fmts; i++) {
		const struct output_format_info *fi = output__format_info(fmts[i]);

		needs |= fi ? fi->needs : 0;
		/* pprof keeps addresses: the stacks' names then record where they came from. */
		*ret_pprof |= fmts[i] == OUTPUT_PPROF;
	}
	return needs;
}

/* Those two join entry uprobe records; id (and auto's pick of it) the USDT's. */
static bool joins_uprobes(const char *strategy)
{
	return strategy && (!strcmp(strategy, "timestamp") || !strcmp(strategy, "stream"));
}

void session_plan__of(const struct session_view *view, const struct session_plan_base *base,
		      const enum output_format *fmts, size_t nr_fmts, struct session_plan *ret)
{
	bool pprof;
	unsigned int needs = needs_of(fmts, nr_fmts, &pprof);
	/* For a trace or a report, or to match each sample to the range its thread was in. */
	bool samples = (needs & OUTPUT_NEEDS_SAMPLES) || session_group__is_range(view->group_by);

	*ret = (struct session_plan){
		.ro =
			{
				.freq_hz = view->freq_hz,
				.include_idle = base->include_idle,
				.ring_bytes = base->ring_bytes,
				.max_stacks = base->max_stacks,
				.pids = base->pids,
				.nr_pids = base->nr_pids,
				.proc_events = base->proc_events,
				.max_timeline = samples ? base->max_timeline : 0,
				.unwind_mode = base->unwind_mode,
				.unwind_mb = base->unwind_mb,
				.unwinder = base->unwinder,
				.python = base->python,
				.autograd = base->autograd,
				.cuda = base->cuda,
				/* Descendants join the pid filter in the kernel at fork, so none is
			 * missed. */
				.follow_forks =
					base->children && (base->nr_pids > 0 || base->command),
				.cuda_libs = base->cuda_libs,
				.nr_cuda_libs = base->nr_cuda_libs,
				.keep_launch_uprobes =
					base->check_joins || joins_uprobes(view->strategy),
				/* Off-CPU and wall: the sched_switch program too. */
				.offcpu = view->cpu_mode != SESSION_MODE_CPU,
				.offcpu_min_ns = base->offcpu_min_ns,
				.wakers = base->wakers && view->cpu_mode != SESSION_MODE_CPU,
				.comm = base->comm,
				.cgroup_fd = base->cgroup_fd,
				.tids = base->tids,
				.nr_tids = base->nr_tids,
				.gpu_wait_exclusive = view->cpu_mode == SESSION_MODE_WALL,
				.only_uid = base->only_uid,
				.uid = base->uid,
			},
		.samples = samples,
		/* OTLP's attributes, pprof's labels, the trace's process names, the job report's
		 * ranks; and the job and rank that view->keep keeps processes by. */
		.labels = (needs & OUTPUT_NEEDS_LABELS) || view->keep,
		/* A range is the thread's at a sample's time, read from the samples, not the
		 * process. */
		.groups = view->group_by && !session_group__is_range(view->group_by),
		.frame_sites = pprof,
	};
}

void session_plan_base__of_flags(const struct xsprofd_opts *o, struct unwinder *unwinder,
				 struct session_plan_base *ret)
{
	*ret = (struct session_plan_base){
		.max_stacks = o->max_stacks,
		.unwind_mode = o->unwind,
		.unwind_mb = o->unwind_mb,
		.unwinder = unwinder,
		.python = !o->no_python,
		/* A probe trap per node made and run: on where a user asked for a profile
		 * (-f), in the always-on service only when asked (--autograd). */
		.autograd = !o->no_python && !o->no_autograd && (o->foreground || o->autograd),
		.cuda = !o->no_cuda,
	};
}
