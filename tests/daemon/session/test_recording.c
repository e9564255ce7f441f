// SPDX-License-Identifier: Apache-2.0
/*
 * One recording (daemon/session/recording.c) on the real BPF sampler, loaded into the running
 * kernel: a thread of this test burns CPU in burn_loop, and what the recording keeps must be
 * that thread's samples with their leaf in burn_loop, from this process only when the pid
 * filter names it and from none of it when the filter names another process (or a process that
 * recording__add_pid adds later); each sample one by one on the timeline up to its cap, the
 * rest counted; a rotation that hands over the counts and the processes seen and starts afresh;
 * and allocation failures that say what failed and leave the recording as it was. Needs root
 * and BPF: it fails, never skips, without them.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "daemon/session/recording.h"
#include "daemon/stacks/stack_table.h"
#include "daemon/symbolize/symbolizer.h"
#include "output/model/profile.h"
#include "tests/lib/alloc_fail.h"
#include "tests/lib/burn.h"

#define FREQ_HZ 999
#define BURN_MS 300

static sd_event *ev;
static struct symbolizer *sym;

static void setup(void)
{
	struct symbolizer_opts so = {};

	cr_assert_geq(sd_event_new(&ev), 0);
	sym = symbolizer__new(&so);
	cr_assert(sym);
}

static void teardown(void)
{
	symbolizer__free(sym);
	sd_event_unref(ev);
}

TestSuite(recording, .init = setup, .fini = teardown, .timeout = 60);

static struct recording_opts opts_for(const pid_t *pids, int nr_pids)
{
	return (struct recording_opts){
		.freq_hz = FREQ_HZ,
		.max_stacks = 4096,
		.pids = pids,
		.nr_pids = nr_pids,
		.cgroup_fd = -1,
	};
}

/* Each recording on a loop of its own: a loop that has exited takes no more sources. */
static struct recording *make(const struct recording_opts *ro)
{
	const char *what = "";
	struct recording *r;

	sd_event_unref(ev);
	cr_assert_geq(sd_event_new(&ev), 0);
	r = recording__new(ev, ro, sym, &what);

	cr_assert(r, "%s failed: %s (run as root, on a kernel with BPF)", what, strerror(errno));
	return r;
}

/* Start r and keep the loop (and so r) running while a thread burns BURN_MS; r runs on. */
static void burn_while_recording(struct recording *r)
{
	cr_assert_eq(recording__start(r), 0);
	cr_assert_eq(burn_while_looping(ev, BURN_MS), 0);
}

/* What a stack table holds: all its samples, this process's, and those whose leaf (the
 * innermost user frame) is in burn_loop. */
struct tally {
	pid_t self;
	uint64_t total, mine, others, in_burn_loop;
	size_t entries;
};

static int tally_entry(void *ctx, const struct stack_entry *e)
{
	struct tally *t = ctx;
	uintptr_t leaf = e->nr_user ? (uintptr_t)e->user_ips[0] : 0;

	t->entries++;
	t->total += e->count;
	if (e->tgid == (uint32_t)t->self)
		t->mine += e->count;
	else
		t->others += e->count;
	if (leaf >= (uintptr_t)__start_xs_burn && leaf < (uintptr_t)__stop_xs_burn)
		t->in_burn_loop += e->count;
	return 0;
}

static struct tally tally(const struct stack_table *st)
{
	struct tally t = {.self = getpid()};

	cr_assert_eq(stack_table__for_each(st, tally_entry, &t), 0);
	return t;
}

/* A process of our own that sleeps until killed, or until the test ends however it ends
 * (it holds no output of the test's open): a pid for the filter that never runs. */
static pid_t sleeper(void)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (!pid) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(STDOUT_FILENO);
		close(STDERR_FILENO);
		for (;;)
			pause();
	}
	return pid;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

Test(recording, filter_keeps_this_process_and_its_burning_thread)
{
	pid_t self = getpid();
	struct recording_opts ro = opts_for(&self, 1);
	struct recording *r = make(&ro);
	struct recording_stats rs;
	struct tally t;

	burn_while_recording(r);
	recording__stop(r);
	recording__stop(r); /* idempotent */
	t = tally(recording__stacks(r));
	cr_assert_gt(t.total, 0, "no sample of this process in %d ms", BURN_MS);
	cr_expect_eq(t.others, 0, "%lu samples of other processes passed the pid filter",
		     (unsigned long)t.others);
	/* The burning thread is where this process spends its CPU: most samples end there. */
	cr_expect_gt(t.in_burn_loop * 2, t.total, "%lu of %lu samples have their leaf in burn_loop",
		     (unsigned long)t.in_burn_loop, (unsigned long)t.total);
	recording__stats(r, &rs);
	cr_expect_geq(rs.records, t.total, "records read %lu, samples counted %lu",
		      (unsigned long)rs.records, (unsigned long)t.total);
	cr_expect_eq(rs.bad_records, 0);
	cr_expect_eq(rs.store_failures, 0);
	cr_expect_eq(rs.processes, 1, "processes seen: %zu", rs.processes);
	recording__free(r);
}

Test(recording, filter_of_another_process_leaves_this_one_out_until_added)
{
	pid_t child = sleeper(), self = getpid();
	struct recording_opts ro = opts_for(&child, 1);
	struct recording *r = make(&ro);
	struct tally t;

	burn_while_recording(r);
	recording__stop(r);
	t = tally(recording__stacks(r));
	cr_expect_eq(t.mine, 0, "%lu samples of this process, which the filter does not name",
		     (unsigned long)t.mine);
	recording__free(r);

	/* The same filter, with this process added after the recording was made. */
	r = make(&ro);
	cr_assert_eq(recording__add_pid(r, self), 0);
	burn_while_recording(r);
	recording__stop(r);
	t = tally(recording__stacks(r));
	cr_expect_gt(t.in_burn_loop, 0, "recording__add_pid's process was not sampled");
	cr_expect_eq(t.others, 0);
	recording__free(r);
	reap(child);
}

/* Every sample kept is one the stack table counted, of this process, under a known stack. */
static void check_timeline(const struct profile_sample *v, size_t n, const struct tally *t)
{
	for (size_t i = 0; i < n; i++) {
		cr_expect_eq(v[i].pid, (uint32_t)t->self, "sample %zu is of pid %u", i, v[i].pid);
		cr_expect_lt(v[i].stack_id, t->entries, "sample %zu: stack id %u of %zu", i,
			     v[i].stack_id, t->entries);
		cr_expect_neq(v[i].time_ns, 0);
	}
}

Test(recording, timeline_keeps_each_sample_within_its_cap)
{
	pid_t self = getpid();
	struct recording_opts ro = opts_for(&self, 1);
	const struct profile_sample *v;
	struct recording *r;
	uint64_t dropped;
	struct tally t;
	size_t n;

	ro.max_timeline = 1000000;
	r = make(&ro);
	burn_while_recording(r);
	recording__stop(r);
	t = tally(recording__stacks(r));
	v = recording__timeline(r, &n, &dropped);
	cr_assert_gt(n, 0);
	cr_expect_eq(dropped, 0);
	cr_expect_eq(n, t.total, "%zu samples kept, %lu counted", n, (unsigned long)t.total);
	check_timeline(v, n, &t);
	recording__free(r);

	/* A cap of 5: the first five kept, every other one counted as dropped, none lost. */
	ro.max_timeline = 5;
	r = make(&ro);
	burn_while_recording(r);
	recording__stop(r);
	t = tally(recording__stacks(r));
	cr_assert_gt(t.total, 5, "too few samples (%lu) to pass the cap", (unsigned long)t.total);
	v = recording__timeline(r, &n, &dropped);
	cr_expect_eq(n, 5);
	cr_expect_eq(n + dropped, t.total, "%zu kept + %lu dropped, %lu counted", n,
		     (unsigned long)dropped, (unsigned long)t.total);
	check_timeline(v, n, &t);
	recording__free(r);
}

static bool has_pid(const uint32_t *pids, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (pids[i] == (uint32_t)pid)
			return true;
	return false;
}

Test(recording, rotation_hands_over_counts_and_processes)
{
	pid_t self = getpid();
	struct recording_opts ro = opts_for(&self, 1);
	struct recording *r = make(&ro);
	struct stack_table *old = NULL;
	uint32_t *pids = NULL;
	size_t nr_pids = 0;
	struct tally before, handed;
	int err;

	burn_while_recording(r);
	recording__stop(r);
	before = tally(recording__stacks(r));
	cr_assert_gt(before.total, 0);

	/* Out of memory: -ENOMEM, and the recording keeps what it counted. */
	alloc_fail__nth(1);
	err = recording__rotate(r, &old, &pids, &nr_pids);
	alloc_fail__nth(0);
	cr_expect_eq(err, -ENOMEM);
	cr_expect_null(old);
	cr_expect_eq(tally(recording__stacks(r)).total, before.total);

	cr_assert_eq(recording__rotate(r, &old, &pids, &nr_pids), 0);
	handed = tally(old);
	cr_expect_eq(handed.total, before.total);
	cr_expect_eq(handed.in_burn_loop, before.in_burn_loop);
	cr_expect(has_pid(pids, nr_pids, self), "this process is not among the %zu handed over",
		  nr_pids);
	cr_expect_eq(tally(recording__stacks(r)).total, 0, "the fresh table is not empty");
	stack_table__free(old);
	free(pids);

	/* Nothing since: an empty table and no processes. */
	cr_assert_eq(recording__rotate(r, &old, &pids, &nr_pids), 0);
	cr_expect_eq(tally(old).total, 0);
	cr_expect_eq(nr_pids, 0);
	stack_table__free(old);
	free(pids);
	recording__free(r);
}

Test(recording, allocation_failure_names_its_step)
{
	pid_t self = getpid();
	struct recording_opts ro = opts_for(&self, 1);
	const char *what = NULL;
	struct recording *r;

	/* The recording's second allocation is its stack table's. */
	alloc_fail__nth(2);
	r = recording__new(ev, &ro, sym, &what);
	alloc_fail__nth(0);
	cr_expect_null(r);
	cr_expect_eq(errno, ENOMEM);
	cr_expect_str_eq(what, "setting up");
	/* Nothing was left loaded: the same options make a recording that samples. */
	r = make(&ro);
	burn_while_recording(r);
	recording__stop(r);
	cr_expect_gt(tally(recording__stacks(r)).in_burn_loop, 0);
	recording__free(r);
}
