// SPDX-License-Identifier: Apache-2.0
/*
 * The one profile builder (daemon/session/profile.c) on a real recording of this process: a
 * thread burns CPU in burn_loop while the main thread sleeps in the event loop, and each view
 * must give the profile a person would read from it: on-CPU samples with burn_loop in them;
 * wall time in microseconds that counts the burn at its CPU time; the process's name as a root
 * (--group-by comm) with pprof's labels; every sample under "[no range]" when no NVTX range
 * came (--group-by range); a failure that names its step and leaves nothing behind; and the
 * same profile when the recording's samples go through a lasting profile's slice instead (the
 * window's and attachments' path), grouped or not.
 * Needs root and BPF, as the recording does.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "daemon/session/profile.h"
#include "daemon/session/lasting.h"
#include "daemon/session/recording.h"
#include "daemon/session/source.h"
#include "daemon/session/window.h"
#include "daemon/symbolize/symbolizer.h"
#include "output/model/calltree.h"
#include "output/folded.h"
#include "tests/lib/alloc_fail.h"
#include "tests/lib/burn.h"
#include "tests/lib/folded_text.h"

#define FREQ_HZ 999
#define BURN_MS 400

static sd_event *ev;
static struct symbolizer *sym;
static struct recording *recording;
static struct session_source src;

/* BURN_MS of this process recorded: samples one by one, and its off-CPU time. */
static void record(void)
{
	pid_t self = getpid();
	struct recording_opts ro = {
		.freq_hz = FREQ_HZ,
		.max_stacks = 65536,
		.pids = &self,
		.nr_pids = 1,
		.proc_events = true,
		.max_timeline = 100000,
		.offcpu = true,
		.offcpu_min_ns = 10000,
		.cgroup_fd = -1,
	};
	struct symbolizer_opts so = {};
	const char *what = "";

	cr_assert_geq(sd_event_new(&ev), 0);
	sym = symbolizer__new(&so);
	cr_assert(sym);
	recording = recording__new(ev, &ro, sym, &what);
	cr_assert(recording, "%s failed: %s (run as root, on a kernel with BPF)", what,
		  strerror(errno));
	cr_assert_eq(recording__start(recording), 0);
	cr_assert_eq(burn_while_looping(ev, BURN_MS), 0);
	recording__stop(recording);
	session_source__of_recording(&src, recording, NULL);
}

static void unrecord(void)
{
	recording__free(recording);
	symbolizer__free(sym);
	sd_event_unref(ev);
}

static const struct session_view cpu_view = {
	.unit = WEIGHT_SAMPLES,
	.freq_hz = FREQ_HZ,
	.strategy = "auto",
	.cpu_mode = SESSION_MODE_CPU,
};

/* What a flamegraph shows: the weight of the stacks with frame name in them (of total), and
 * the frame at the root of the heaviest stack. */
struct look {
	const char *name;
	const char *path[512];
	uint64_t weight, total, top;
	char root[64];
};

static int look_visit(const struct calltree_frame *f, void *ctx)
{
	struct look *l = ctx;

	if (f->depth >= 512)
		return 0;
	l->path[f->depth] = f->name;
	l->total += f->self;
	for (size_t i = 0; f->self && i <= f->depth; i++) {
		if (!strcmp(l->path[i], l->name)) {
			l->weight += f->self;
			break;
		}
	}
	if (f->self > l->top) {
		l->top = f->self;
		snprintf(l->root, sizeof(l->root), "%s", l->path[0]);
	}
	return 0;
}

static struct look look_for(const struct profile_data *pd, const char *name)
{
	struct look l = {.name = name};
	struct calltree *t = NULL;

	cr_assert_eq(profile__build_tree(pd, &t), 0);
	cr_assert_eq(calltree__walk(t, look_visit, &l), 0);
	calltree__free(t);
	return l;
}

TestSuite(session_profile, .init = record, .fini = unrecord, .timeout = 60);

Test(session_profile, cpu_samples)
{
	struct correlate_stats cs = {};
	struct session_profile sp;
	struct look l;

	cr_assert_eq(session_profile__build(&sp, &src, sym, NULL, &cpu_view, &cs), 0);
	cr_expect_eq(sp.pd.unit, WEIGHT_SAMPLES);
	cr_expect_eq(sp.pd.sample_period_ns, 1000000000ull / FREQ_HZ);
	cr_expect_eq(sp.pd.mode, GPU_MODE_CPU, "no GPU work joined: the CPU view");
	cr_expect_gt(sp.pd.nr_samples, 0, "the recording kept its samples: they are the timeline");
	cr_expect(sp.pd.stack && sp.pd.name, "the timeline's stacks are named");
	cr_expect_null(sp.join, "nothing to join without launches or GPU records");
	l = look_for(&sp.pd, "burn_loop");
	/* The other thread sleeps: most of what ran on a CPU is the burn, however busy the host. */
	cr_expect_gt(l.weight * 2, l.total, "burn_loop in %llu of %llu samples",
		     (unsigned long long)l.weight, (unsigned long long)l.total);
	session_profile__release(&sp);
}

Test(session_profile, wall_microseconds)
{
	struct session_view v = cpu_view;
	struct correlate_stats cs = {};
	struct session_profile sp;
	struct look l;

	v.cpu_mode = SESSION_MODE_WALL;
	cr_assert_eq(session_profile__build(&sp, &src, sym, NULL, &v, &cs), 0);
	cr_expect_eq(sp.pd.unit, WEIGHT_US,
		     "wall time is in microseconds, whatever the view's unit");
	cr_expect_eq(sp.pd.sample_period_ns, 1000);
	l = look_for(&sp.pd, "burn_loop");
	/* The burning thread's wall time, on the CPU (samples of 1001 us) or waiting for one:
	 * BURN_MS, and more when the loop woke late on a busy host. */
	cr_expect_gt(l.weight, BURN_MS * 500ull, "burn_loop: %llu us",
		     (unsigned long long)l.weight);
	cr_expect_lt(l.weight, BURN_MS * 2000ull, "burn_loop: %llu us",
		     (unsigned long long)l.weight);
	session_profile__release(&sp);
}

Test(session_profile, grouped_by_process_name)
{
	struct correlate_stats cs = {};
	struct session_view v = cpu_view;
	struct session_profile sp;
	char comm[32] = "";
	FILE *f = fopen("/proc/self/comm", "re");
	struct look l;

	cr_assert(f && fgets(comm, sizeof(comm), f));
	fclose(f);
	comm[strcspn(comm, "\n")] = '\0';
	v.group_by = SESSION_GROUP_COMM; /* no names noted while it ran: the builder looks */
	cr_assert_eq(session_profile__build(&sp, &src, sym, NULL, &v, &cs), 0);
	cr_assert(sp.groups, "the builder keeps the group names it made");
	cr_assert_eq(sp.pd.nr_root_labels, 2);
	cr_expect_str_eq(sp.pd.root_labels[0], "comm");
	cr_expect_str_eq(sp.pd.root_labels[1], "process");
	l = look_for(&sp.pd, "burn_loop");
	cr_expect_str_eq(l.root, comm, "the heaviest stack is under the process's name");
	cr_expect_gt(l.weight * 2, l.total);
	session_profile__release(&sp);
}

Test(session_profile, grouped_by_range_without_ranges)
{
	struct correlate_stats cs = {};
	struct session_view v = cpu_view;
	struct session_profile sp;
	struct look l;

	v.group_by = SESSION_GROUP_RANGE;
	cr_assert_eq(session_profile__build(&sp, &src, sym, NULL, &v, &cs), 0);
	cr_assert(sp.ranges);
	cr_expect_null(sp.pd.cpu_tree, "the samples are folded again, each under its range");
	cr_expect(sp.pd.root_at);
	l = look_for(&sp.pd, "burn_loop");
	cr_expect_str_eq(l.root, "[no range]");
	cr_expect_gt(l.weight * 2, l.total);
	session_profile__release(&sp);
}

Test(session_profile, failure_names_its_step)
{
	struct correlate_stats cs = {};
	struct session_profile sp;
	int err;

	/* The builder's first allocation is the CPU tree's. */
	alloc_fail__nth(1);
	err = session_profile__build(&sp, &src, sym, NULL, &cpu_view, &cs);
	alloc_fail__nth(0);
	cr_expect_eq(err, -ENOMEM);
	cr_expect_str_eq(sp.failed, "naming the stacks");
	session_profile__release(&sp);
	cr_expect_null(sp.tree);
	/* Nothing was lost: the same recording builds afterwards. */
	cr_assert_eq(session_profile__build(&sp, &src, sym, NULL, &cpu_view, &cs), 0);
	cr_expect_gt(look_for(&sp.pd, "burn_loop").weight, 0);
	session_profile__release(&sp);
}

/*
 * The recording's samples as a lasting profile keeps them: one slice rotated out of the
 * recording, made by the slice path and queried back from the window (without its uid
 * roots), against the recording's own profile of the same samples, made first.
 */
static void lasting_agrees(enum session_group group_by)
{
	struct window_opts wo = {.window_s = 3600, .cap_bytes = 64u << 20};
	struct session_view v = cpu_view;
	struct correlate_stats cs = {};
	struct session_profile sp;
	struct calltree *direct = NULL, *slice = calltree__new();
	struct lasting l = {
		.recording = recording,
		.freq_hz = FREQ_HZ,
		.name = "the test's window",
		.keep_names = true,
		.group_by = group_by,
	};
	uint64_t from = 0;
	char *want, *got;

	v.group_by = group_by;
	cr_assert_eq(session_profile__build(&sp, &src, sym, NULL, &v, &cs), 0);
	cr_assert_eq(profile__build_tree(&sp.pd, &direct), 0);
	session_profile__release(&sp);
	l.cpu = window__new(&wo);
	l.gpu = window__new(&wo);
	cr_assert(l.cpu && l.gpu && slice);
	lasting__close_last(&l, sym, NULL, NULL, &cs, recording__end_ns(recording) + 1);
	cr_assert_eq(window__query(l.cpu, 0, UINT64_MAX, true, 0, slice, &from), 0);
	want = folded_text(direct);
	got = folded_text(slice);
	cr_expect_gt(calltree__total(direct), 0);
	cr_expect_str_eq(got, want, "the window's slice:\n%s\nthe recording's profile:\n%s", got,
			 want);
	free(want);
	free(got);
	calltree__free(direct);
	calltree__free(slice);
	l.recording = NULL; /* the suite's, freed by unrecord */
	lasting__release(&l);
}

Test(session_profile, lasting_slice_is_the_recordings_profile)
{
	lasting_agrees(SESSION_GROUP_NONE);
}

Test(session_profile, lasting_slice_by_range_is_the_recordings_profile)
{
	lasting_agrees(SESSION_GROUP_RANGE);
}
