// SPDX-License-Identifier: Apache-2.0
/*
 * A session's plan (daemon/session/plan.c): for each kind of session (a one-shot run, a
 * recording on request, an attachment, the window's slices), the view, base and outputs its
 * caller passes give, field by field, the recording options its own builder used to write by
 * hand, and the same wants (samples, labels, groups, frame sites).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "daemon/options.h"
#include "daemon/session/job_keep.h"
#include "daemon/session/plan.h"
#include "daemon/session/profile.h"

/* The caps each kind of session had (oneshot.c, service/internal.h). */
#define ONESHOT_TIMELINE (10u * 1000 * 1000)
#define RECORD_TIMELINE	 (2u * 1000 * 1000)
#define ATTACH_TIMELINE	 (128u * 1024)
#define WINDOW_TIMELINE	 (512u * 1024)

static struct unwinder *const UNWINDER = (struct unwinder *)0x1000;

/* Every field of struct recording_opts: a field added there must be added here. */
static void expect_opts(const struct recording_opts *got, const struct recording_opts *want)
{
#define SAME(f) cr_expect_eq(got->f, want->f, "recording_opts." #f)
	SAME(freq_hz);
	SAME(include_idle);
	SAME(ring_bytes);
	SAME(max_stacks);
	SAME(pids);
	SAME(nr_pids);
	SAME(proc_events);
	SAME(max_timeline);
	SAME(unwind_mode);
	SAME(unwind_mb);
	SAME(unwinder);
	SAME(sampler);
	SAME(python);
	SAME(cuda);
	SAME(follow_forks);
	SAME(cuda_libs);
	SAME(nr_cuda_libs);
	SAME(max_launch_stacks);
	SAME(keep_launch_uprobes);
	SAME(offcpu);
	SAME(offcpu_min_ns);
	SAME(comm);
	SAME(cgroup_fd);
	SAME(tids);
	SAME(nr_tids);
	SAME(gpu_wait_exclusive);
	SAME(only_uid);
	SAME(uid);
	SAME(on_new_process);
	SAME(on_new_process_ctx);
	SAME(on_exec);
	SAME(on_exit);
	SAME(on_cuda_wait);
	SAME(on_scope);
#undef SAME
}

/* Flags with values none of the defaults has. */
static void flags(struct xsprofd_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->freq_hz = 97;
	o->max_stacks = 1234;
	o->unwind = 2;
	o->unwind_mb = 64;
	o->ring_buffer_bytes = 1u << 21;
	o->include_idle = true;
	o->cuda_libs[0] = "/opt/libcuda.so.1";
	o->nr_cuda_libs = 1;
	o->min_block_us = 50;
	o->correlate = "auto";
}

/* ---- one-shot: oneshot.c's plan_run ---- */

static void oneshot_plan(const struct xsprofd_opts *o, int cgroup_fd, bool job_filter,
			 struct session_plan *ret)
{
	struct session_view view = {
		.freq_hz = o->freq_hz,
		.strategy = o->correlate,
		.cpu_mode = o->mode,
		.group_by = o->group_by,
		.keep = job_filter ? job_keep__accepts : NULL,
	};
	enum output_format fmts[XSPROFD_MAX_OUTPUTS + 2];
	struct session_plan_base base;
	size_t n = 0;

	session_plan_base__of_flags(o, NULL, &base);
	base.ring_bytes = o->ring_buffer_bytes;
	base.include_idle = o->include_idle;
	base.proc_events = true;
	base.cuda_libs = o->cuda_libs;
	base.nr_cuda_libs = o->nr_cuda_libs;
	base.offcpu_min_ns = (uint64_t)o->min_block_us * 1000;
	base.check_joins = o->correlate_check;
	base.pids = o->pids;
	base.nr_pids = o->nr_pids;
	base.command = o->nr_command > 0;
	base.children = !o->no_children;
	base.tids = o->tids;
	base.nr_tids = o->nr_tids;
	base.comm = o->comm;
	base.cgroup_fd = cgroup_fd;
	base.max_timeline = ONESHOT_TIMELINE;
	for (int i = 0; i < o->nr_outputs; i++)
		fmts[n++] = (enum output_format)o->outputs[i].format;
	if (o->report_gpu)
		fmts[n++] = OUTPUT_GPU_TEXT;
	if (o->report_job)
		fmts[n++] = OUTPUT_JOB_TEXT;
	session_plan__of(&view, &base, fmts, n, ret);
}

/* What recording_opts_for wrote, then open_cgroup's fd (-1: none). */
static struct recording_opts oneshot_old(const struct xsprofd_opts *o, int cgroup_fd,
					 size_t max_timeline, bool keep_uprobes)
{
	return (struct recording_opts){
		.freq_hz = o->freq_hz,
		.include_idle = o->include_idle,
		.ring_bytes = o->ring_buffer_bytes,
		.max_stacks = o->max_stacks,
		.pids = o->pids,
		.nr_pids = o->nr_pids,
		.cuda = !o->no_cuda,
		.follow_forks = (o->nr_command > 0 || o->nr_pids > 0) && !o->no_children,
		.cuda_libs = o->cuda_libs,
		.nr_cuda_libs = o->nr_cuda_libs,
		.proc_events = true,
		.max_timeline = max_timeline,
		.unwind_mode = o->unwind,
		.unwind_mb = o->unwind_mb,
		.python = !o->no_python,
		.keep_launch_uprobes = keep_uprobes,
		.offcpu = o->mode != SESSION_MODE_CPU,
		.offcpu_min_ns = (uint64_t)o->min_block_us * 1000,
		.comm = o->comm,
		.cgroup_fd = cgroup_fd,
		.tids = o->tids,
		.nr_tids = o->nr_tids,
		.gpu_wait_exclusive = o->mode == SESSION_MODE_WALL,
	};
}

static void output(struct xsprofd_opts *o, enum output_format fmt)
{
	o->outputs[o->nr_outputs].path = "out";
	o->outputs[o->nr_outputs++].format = (int)fmt;
}

Test(session_plan, a_command_written_as_folded)
{
	struct xsprofd_opts o;
	struct session_plan p;
	struct recording_opts want;

	flags(&o);
	o.nr_command = 1;
	output(&o, OUTPUT_FOLDED);
	oneshot_plan(&o, -1, false, &p);
	want = oneshot_old(&o, -1, 0, false);
	expect_opts(&p.ro, &want);
	cr_expect(p.ro.follow_forks, "the command's children");
	cr_expect_not(p.samples);
	cr_expect_not(p.labels);
	cr_expect_not(p.groups);
	cr_expect_not(p.frame_sites);

	o.no_children = true;
	o.no_cuda = true;
	o.no_python = true;
	oneshot_plan(&o, -1, false, &p);
	want = oneshot_old(&o, -1, 0, false);
	expect_opts(&p.ro, &want);
	cr_expect_not(p.ro.follow_forks);
}

Test(session_plan, pids_in_wall_time_with_a_trace_and_pprof)
{
	struct xsprofd_opts o;
	struct session_plan p;
	struct recording_opts want;

	flags(&o);
	o.pids[0] = 7;
	o.pids[1] = 9;
	o.nr_pids = 2;
	o.tids[0] = 11;
	o.nr_tids = 1;
	o.comm = "python3";
	o.mode = SESSION_MODE_WALL;
	o.correlate = "stream";
	output(&o, OUTPUT_CHROME_JSON);
	output(&o, OUTPUT_PPROF);
	oneshot_plan(&o, 5, true, &p);
	want = oneshot_old(&o, 5, ONESHOT_TIMELINE, true);
	expect_opts(&p.ro, &want);
	cr_expect(p.samples, "the trace's samples");
	cr_expect(p.labels, "the trace's process names, pprof's labels, --job");
	cr_expect_not(p.groups);
	cr_expect(p.frame_sites, "pprof's addresses");

	o.mode = SESSION_MODE_OFFCPU;
	o.correlate = "timestamp";
	oneshot_plan(&o, 5, false, &p);
	want = oneshot_old(&o, 5, ONESHOT_TIMELINE, true);
	expect_opts(&p.ro, &want);
	cr_expect(p.ro.offcpu);
	cr_expect_not(p.ro.gpu_wait_exclusive);
}

Test(session_plan, the_reports_and_the_join_check)
{
	struct xsprofd_opts o;
	struct session_plan p;
	struct recording_opts want;

	flags(&o);
	o.correlate = NULL;
	o.correlate_check = true;
	output(&o, OUTPUT_FOLDED);
	o.report_gpu = true;
	oneshot_plan(&o, -1, false, &p);
	want = oneshot_old(&o, -1, ONESHOT_TIMELINE, true);
	expect_opts(&p.ro, &want);
	cr_expect(p.samples, "the GPU report's idle gaps");
	cr_expect_not(p.labels, "the GPU report has no ranks");

	o.report_gpu = false;
	o.report_job = true;
	o.correlate_check = false;
	o.correlate = "id";
	oneshot_plan(&o, -1, false, &p);
	want = oneshot_old(&o, -1, ONESHOT_TIMELINE, false);
	expect_opts(&p.ro, &want);
	cr_expect(p.labels, "the job report's ranks");
}

Test(session_plan, grouped_by_range_or_by_unit)
{
	struct xsprofd_opts o;
	struct session_plan p;
	struct recording_opts want;

	flags(&o);
	output(&o, OUTPUT_SVG);
	o.group_by = SESSION_GROUP_OUTER_RANGE;
	oneshot_plan(&o, -1, false, &p);
	want = oneshot_old(&o, -1, ONESHOT_TIMELINE, false);
	expect_opts(&p.ro, &want);
	cr_expect(p.samples, "each sample matched to its range");
	cr_expect_not(p.groups, "ranges are the samples', not the processes'");

	o.group_by = SESSION_GROUP_UNIT;
	oneshot_plan(&o, -1, false, &p);
	want = oneshot_old(&o, -1, 0, false);
	expect_opts(&p.ro, &want);
	cr_expect_not(p.samples);
	cr_expect(p.groups);
}

/* ---- a recording on request: recordings.c's recordings__start ---- */

struct request {
	pid_t pids[4];
	int nr_pids;
	bool children;
	enum output_format format;
	bool owner_root;
	uint32_t owner;
	bool job_filter;
	struct session_view view;
};

static void recording_plan(const struct xsprofd_opts *o, const struct request *r,
			   struct session_plan *ret)
{
	struct session_view view = r->view;
	struct session_plan_base base;

	session_plan_base__of_flags(o, UNWINDER, &base);
	base.pids = r->pids;
	base.nr_pids = r->nr_pids;
	base.children = r->children;
	base.cuda_libs = r->nr_pids ? NULL : o->cuda_libs;
	base.nr_cuda_libs = r->nr_pids ? 0 : o->nr_cuda_libs;
	base.offcpu_min_ns = 10000;
	base.only_uid = !r->owner_root;
	base.uid = r->owner;
	base.max_timeline = RECORD_TIMELINE;
	view.keep = r->job_filter ? job_keep__accepts : NULL;
	session_plan__of(&view, &base, &r->format, 1, ret);
}

/* What recordings__start's initializer wrote (the callbacks came after). */
static struct recording_opts recording_old(const struct xsprofd_opts *o, const struct request *r,
					   size_t max_timeline)
{
	return (struct recording_opts){
		.max_stacks = o->max_stacks,
		.unwind_mode = o->unwind,
		.unwind_mb = o->unwind_mb,
		.unwinder = UNWINDER,
		.python = !o->no_python,
		.freq_hz = r->view.freq_hz,
		.pids = r->pids,
		.nr_pids = r->nr_pids,
		.follow_forks = r->children && r->nr_pids,
		.cuda = !o->no_cuda,
		.cuda_libs = r->nr_pids ? NULL : o->cuda_libs,
		.nr_cuda_libs = r->nr_pids ? 0 : o->nr_cuda_libs,
		.keep_launch_uprobes = !strcmp(r->view.strategy, "timestamp") ||
				       !strcmp(r->view.strategy, "stream"),
		.max_timeline = max_timeline,
		.offcpu = r->view.cpu_mode != SESSION_MODE_CPU,
		.offcpu_min_ns = 10000,
		.gpu_wait_exclusive = r->view.cpu_mode == SESSION_MODE_WALL,
		.only_uid = !r->owner_root,
		.uid = r->owner,
	};
}

Test(session_plan, a_recording_on_request)
{
	struct xsprofd_opts o;
	struct request r = {
		.pids = {42},
		.nr_pids = 1,
		.children = true,
		.format = OUTPUT_FOLDED,
		.owner = 1000,
		.view = {.freq_hz = 49, .strategy = "auto"},
	};
	struct session_plan p;
	struct recording_opts want;

	flags(&o);
	recording_plan(&o, &r, &p);
	want = recording_old(&o, &r, 0);
	expect_opts(&p.ro, &want);
	cr_expect(p.ro.only_uid, "a member's: only their threads");
	cr_expect_null(p.ro.cuda_libs, "a process tree's: no --cuda-lib");
	cr_expect_not(p.ro.include_idle, "--include-idle is the window's");
	cr_expect_eq(p.ro.ring_bytes, 0, "--ring-buffer-size is the window's");
	cr_expect_not(p.samples);
	cr_expect_not(p.labels);

	/* The whole machine, root's, a trace of wall time. */
	r.nr_pids = 0;
	r.owner_root = true;
	r.owner = 0;
	r.format = OUTPUT_CHROME_JSON;
	r.view.cpu_mode = SESSION_MODE_WALL;
	r.view.strategy = "timestamp";
	recording_plan(&o, &r, &p);
	want = recording_old(&o, &r, RECORD_TIMELINE);
	expect_opts(&p.ro, &want);
	cr_expect_eq(p.ro.nr_cuda_libs, 1, "the whole machine: --cuda-lib too");
	cr_expect(p.samples);
	cr_expect(p.labels, "the trace's process names");

	/* pprof of a group by range, kept by job. */
	r.format = OUTPUT_PPROF;
	r.view.cpu_mode = SESSION_MODE_CPU;
	r.view.group_by = SESSION_GROUP_RANGE;
	r.job_filter = true;
	recording_plan(&o, &r, &p);
	want = recording_old(&o, &r, RECORD_TIMELINE);
	expect_opts(&p.ro, &want);
	cr_expect(p.labels);
	cr_expect(p.frame_sites);
	cr_expect_not(p.groups);

	/* The job report by unit, off-CPU. */
	r.format = OUTPUT_JOB_REPORT;
	r.view.cpu_mode = SESSION_MODE_OFFCPU;
	r.view.group_by = SESSION_GROUP_UNIT;
	r.job_filter = false;
	recording_plan(&o, &r, &p);
	want = recording_old(&o, &r, RECORD_TIMELINE);
	expect_opts(&p.ro, &want);
	cr_expect(p.labels, "the job report's ranks");
	cr_expect(p.groups);
}

/* ---- an attachment: attach.c's attachment_opts (the loading thread's sampler options, and
 * attachment_start's recording with that sampler) ---- */

static void attachment_plan(const struct xsprofd_opts *o, const pid_t *pid, bool children,
			    bool by_root, uint32_t by, unsigned int freq_hz,
			    enum session_group group, struct session_plan *ret)
{
	const struct session_view view = {
		.freq_hz = freq_hz,
		.cpu_mode = SESSION_MODE_CPU,
		.group_by = group,
	};
	static const enum output_format reports = OUTPUT_GPU_REPORT;
	struct session_plan_base base;

	session_plan_base__of_flags(o, UNWINDER, &base);
	base.pids = pid;
	base.nr_pids = 1;
	base.children = children;
	base.only_uid = !by_root;
	base.uid = by;
	base.max_timeline = ATTACH_TIMELINE;
	session_plan__of(&view, &base, &reports, 1, ret);
}

Test(session_plan, an_attachment)
{
	static const pid_t pid = 4321;
	struct xsprofd_opts o;
	struct session_plan p;
	struct recording_opts want;

	flags(&o);
	o.mode = SESSION_MODE_WALL; /* one-shot's, not an attachment's */
	o.correlate_check = true;
	/* A member's, with its descendants. */
	attachment_plan(&o, &pid, true, false, 1000, 199, SESSION_GROUP_NONE, &p);
	want = (struct recording_opts){.freq_hz = 199,
				       .max_stacks = o.max_stacks,
				       .unwind_mode = o.unwind,
				       .unwind_mb = o.unwind_mb,
				       .unwinder = UNWINDER,
				       .python = true,
				       .pids = &pid,
				       .nr_pids = 1,
				       .follow_forks = true,
				       .cuda = true,
				       .only_uid = true,
				       .uid = 1000,
				       .max_timeline = ATTACH_TIMELINE};
	expect_opts(&p.ro, &want);
	cr_expect(p.samples, "the slices' GPU reports");
	cr_expect_not(p.labels);

	/* Root's, alone, grouped by range, without Python or CUDA. */
	o.no_python = true;
	o.no_cuda = true;
	attachment_plan(&o, &pid, false, true, 0, 99, SESSION_GROUP_RANGE, &p);
	want.freq_hz = 99;
	want.follow_forks = false;
	want.only_uid = false;
	want.uid = 0;
	want.python = false;
	want.cuda = false;
	expect_opts(&p.ro, &want);
	cr_expect_not(p.groups);
}

/* ---- the window: slices.c's slices__recording_opts (test_slices checks its callbacks) ---- */

static void window_plan(const struct xsprofd_opts *o, struct session_plan *ret)
{
	const struct session_view view = {
		.freq_hz = o->freq_hz,
		.cpu_mode = SESSION_MODE_CPU,
		.group_by = o->window_group_by,
	};
	static const enum output_format reports = OUTPUT_GPU_REPORT;
	struct session_plan_base base;

	session_plan_base__of_flags(o, UNWINDER, &base);
	base.ring_bytes = o->ring_buffer_bytes;
	base.include_idle = o->include_idle;
	base.proc_events = true;
	base.cuda_libs = o->cuda_libs;
	base.nr_cuda_libs = o->nr_cuda_libs;
	base.pids = o->pids;
	base.nr_pids = o->nr_pids;
	base.children = !o->no_children;
	base.max_timeline = WINDOW_TIMELINE;
	session_plan__of(&view, &base, &reports, 1, ret);
}

static struct recording_opts window_old(const struct xsprofd_opts *o)
{
	return (struct recording_opts){
		.freq_hz = o->freq_hz,
		.include_idle = o->include_idle,
		.ring_bytes = o->ring_buffer_bytes,
		.max_stacks = o->max_stacks,
		.pids = o->pids,
		.nr_pids = o->nr_pids,
		.follow_forks = o->nr_pids > 0 && !o->no_children,
		.proc_events = true,
		.unwind_mode = o->unwind,
		.unwind_mb = o->unwind_mb,
		.unwinder = UNWINDER,
		.python = !o->no_python,
		.cuda = !o->no_cuda,
		.cuda_libs = o->cuda_libs,
		.nr_cuda_libs = o->nr_cuda_libs,
		.max_timeline = WINDOW_TIMELINE,
	};
}

Test(session_plan, the_windows_slices)
{
	struct xsprofd_opts o;
	struct session_plan p;
	struct recording_opts want;

	flags(&o);
	o.mode = SESSION_MODE_OFFCPU; /* one-shot's, not the window's */
	o.correlate = "stream";
	o.comm = "python3";
	o.tids[0] = 3;
	o.nr_tids = 1;
	window_plan(&o, &p);
	want = window_old(&o);
	expect_opts(&p.ro, &want);
	cr_expect_not(p.ro.follow_forks, "the whole machine");

	o.pids[0] = 7;
	o.nr_pids = 1;
	o.window_group_by = SESSION_GROUP_RANGE;
	window_plan(&o, &p);
	want = window_old(&o);
	expect_opts(&p.ro, &want);
	cr_expect(p.ro.follow_forks, "--pid trees");
	o.no_children = true;
	window_plan(&o, &p);
	want = window_old(&o);
	expect_opts(&p.ro, &want);
	cr_expect_not(p.ro.follow_forks);
}
