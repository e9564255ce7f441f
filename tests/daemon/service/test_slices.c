// SPDX-License-Identifier: Apache-2.0
/*
 * The rolling window's slices alone (daemon/service/slices.c compiled in, the attachments and
 * the status line replaced by recorders): the always-on recording's options from the daemon's,
 * which GPU records a slice's close lets go (none a running recording, the window's unfolded
 * slice or an attachment's waiting one may still join), and the timer that closes a slice every
 * SLICE_US and fires again.
 */
#include <criterion/criterion.h>
#include <systemd/sd-event.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "daemon/gpu/gpu_records.h"
#include "daemon/options.h"
#include "daemon/service/gpu_metrics.h"
#include "daemon/service/internal.h"
#include "daemon/session/lasting.h"
#include "daemon/session/recording.h"
#include "daemon/symbolize/symbolizer.h"
#include "daemon/session/window.h"

static struct {
	unsigned int closes, prunes, notifies, reaps, alive_ok;
	uint32_t exec_tgid;
	const struct service *exec_s;
	uint64_t end_ns;
	const struct gpu_store *gs;
	uint64_t attachment_oldest; /* an attachment's slice waiting for its ranges; 0: none */
} seen;

void attachments__close_slices(struct service *s, const struct gpu_store *gs, uint64_t end_ns)
{
	(void)s;
	seen.closes++;
	seen.gs = gs;
	seen.end_ns = end_ns;
}

uint64_t attachments__oldest_slice(struct service *s, uint64_t cutoff_ns)
{
	(void)s;
	return seen.attachment_oldest && seen.attachment_oldest < cutoff_ns ? seen.attachment_oldest
									    : cutoff_ns;
}

/* The recordings' exec notice (recordings.c): who was told. */
void recordings__note_exec(struct service *s, uint32_t tgid)
{
	seen.exec_s = s;
	seen.exec_tgid = tgid;
}

void recordings__prune(struct service *s)
{
	(void)s;
	seen.prunes++;
}

/* The GPU metrics let go of the memory of processes gone, told by the slices' liveness test. */
void gpu_metrics__reap(struct gpu_metrics *m, int (*alive)(uint32_t pid))
{
	(void)m;
	seen.reaps++;
	/* This process lives; a pid past any pid_max (2^22) does not. */
	seen.alive_ok += alive((uint32_t)getpid()) && !alive(0x7ffffff0u);
}

/* The flight recorder's hooks on the recording (flight_api.c): none here (it is off). */
void flight_api__recording_opts(struct service *s, struct recording_opts *ro)
{
	(void)s;
	(void)ro;
}

void status__notify(struct service *s)
{
	(void)s;
	seen.notifies++;
}

/* --max-cpu's ceiling (service.c): none here. */
void service__govern(struct service *s, struct recording *r)
{
	(void)s, (void)r;
}

Test(slices, the_always_on_recordings_options)
{
	struct unwinder *unwinder = (struct unwinder *)&seen;
	struct xsprofd_opts o = {.freq_hz = 19, .max_stacks = 5000, .include_idle = true};
	struct service s = {.opts = &o, .unwinder = unwinder};
	struct recording_opts ro;

	slices__recording_opts(&s, &ro);
	cr_expect_eq(ro.freq_hz, 19);
	cr_expect_eq(ro.max_stacks, 5000);
	cr_expect(ro.include_idle);
	cr_expect_eq(ro.nr_pids, 0, "the whole machine");
	cr_expect_not(ro.follow_forks);
	cr_expect(ro.proc_events, "the one recording that tells the symbolizer of exec and exit");
	cr_expect_eq(ro.max_timeline, WINDOW_MAX_TIMELINE, "samples kept for the GPU reports");
	cr_expect(ro.cuda);
	cr_expect(ro.python);
	cr_expect_eq(ro.unwinder, unwinder);
	cr_expect_not(ro.offcpu, "the window counts on-CPU samples");
	/* Only this recording reads exec events: the recordings of processes hear of theirs
	 * from it (their jobs and ranks are the new image's). */
	cr_assert_not_null(ro.on_exec);
	ro.on_exec(ro.on_new_process_ctx, 4242);
	cr_expect_eq(seen.exec_s, &s);
	cr_expect_eq(seen.exec_tgid, 4242);

	/* --pid trees: their descendants too, unless --no-children. */
	o.pids[0] = 7;
	o.pids[1] = 9;
	o.nr_pids = 2;
	o.cuda_libs[0] = "/opt/libcuda.so.1";
	o.nr_cuda_libs = 1;
	slices__recording_opts(&s, &ro);
	cr_expect_eq(ro.nr_pids, 2);
	cr_expect_eq(ro.pids[1], 9);
	cr_expect(ro.follow_forks);
	cr_expect_eq(ro.nr_cuda_libs, 1);
	cr_expect_str_eq(ro.cuda_libs[0], "/opt/libcuda.so.1");
	o.no_children = true;
	o.no_cuda = true;
	o.no_python = true;
	slices__recording_opts(&s, &ro);
	cr_expect_not(ro.follow_forks);
	cr_expect_not(ro.cuda);
	cr_expect_not(ro.python);
}

static struct svc_recording *running(uint64_t started_ns, enum recording_state state,
				     struct svc_recording *next)
{
	struct svc_recording *r = calloc(1, sizeof(*r));

	cr_assert_not_null(r);
	r->state = state;
	r->started_ns = started_ns;
	r->next = next;
	return r;
}

Test(slices, what_a_close_must_keep)
{
	struct service s = {0};

	memset(&seen, 0, sizeof(seen));
	cr_expect_eq(slices__wanted_since(&s, 1000), 1000, "nothing running: up to the close");
	s.recordings = running(600, RECORDING_RUNNING, NULL);
	s.recordings = running(300, RECORDING_DONE, s.recordings);
	s.recordings = running(400, RECORDING_RUNNING, s.recordings);
	cr_expect_eq(slices__wanted_since(&s, 1000), 400, "the oldest running recording's start");
	seen.attachment_oldest = 200;
	cr_expect_eq(slices__wanted_since(&s, 1000), 200, "an attachment's waiting slice");
	while (s.recordings) {
		struct svc_recording *next = s.recordings->next;

		free(s.recordings);
		s.recordings = next;
	}
}

static int count(void *ctx, const struct gpu_activity *a)
{
	(void)a;
	++*(unsigned int *)ctx;
	return 0;
}

static int first_end(void *ctx, const struct gpu_activity *a)
{
	*(uint64_t *)ctx = a->end_ns;
	return 1;
}

/* A service whose window has no recording (its slices only expire) and a GPU store with a
 * kernel ending at each of ends. */
static void service_with_records(struct service *s, struct xsprofd_opts *o, struct gpu_store **gs,
				 const uint64_t *ends, size_t n)
{
	struct window_opts wo = {.window_s = 300, .cap_bytes = 1 << 20};

	memset(&seen, 0, sizeof(seen));
	*s = (struct service){.opts = o, .sym = symbolizer__new(NULL)};
	s->machine.cpu = window__new(&wo);
	s->machine.gpu = window__new(&wo);
	s->machine.name = "the window";
	cr_assert(s->sym && s->machine.cpu && s->machine.gpu);
	*gs = gpu_store__new(NULL);
	cr_assert_not_null(*gs);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(gpu_store__add(*gs, &(struct gpu_activity){.kind = GPU_ACT_KERNEL,
									.pid = 1,
									.start_ns = ends[i] - 1,
									.end_ns = ends[i]}),
			     0);
}

static void service_release(struct service *s, struct gpu_store *gs)
{
	lasting__release(&s->machine);
	symbolizer__free(s->sym);
	gpu_store__free(gs);
	while (s->recordings) {
		struct svc_recording *next = s->recordings->next;

		free(s->recordings);
		s->recordings = next;
	}
}

static unsigned int held(const struct gpu_store *gs, uint64_t *ret_oldest_end)
{
	unsigned int n = 0;

	gpu_store__for_each(gs, 0, count, &n);
	*ret_oldest_end = 0;
	gpu_store__for_each(gs, 0, first_end, ret_oldest_end);
	return n;
}

Test(slices, a_close_lets_go_of_gpu_records_nobody_wants)
{
	static const uint64_t ends[] = {100, 200, 300, 400, 950};
	struct xsprofd_opts o = {.freq_hz = 19};
	struct service s;
	struct gpu_store *gs;
	uint64_t oldest;

	/* The window's open slice started at 900: records that ended before it were joined. */
	service_with_records(&s, &o, &gs, ends, 5);
	s.machine.slice_start_ns = 900;
	slices__close_at(&s, gs, 1000);
	cr_expect_eq(seen.closes, 1, "the attachments' slices closed too");
	cr_expect_eq(seen.reaps, 1, "the GPU metrics' processes gone were let go");
	cr_expect_eq(seen.alive_ok, 1, "told a live process from one gone");
	cr_expect_eq(seen.end_ns, 1000);
	cr_expect_eq(seen.gs, gs);
	cr_expect_eq(s.machine.freq_hz, 19);
	cr_expect_not(s.machine.keep_names);
	cr_expect_eq(held(gs, &oldest), 1);
	cr_expect_eq(oldest, 950);
	service_release(&s, gs);

	/* A recording started at 250 still runs: it joins what ended since at its end. */
	service_with_records(&s, &o, &gs, ends, 5);
	s.machine.slice_start_ns = 900;
	s.recordings = running(250, RECORDING_RUNNING, NULL);
	slices__close_at(&s, gs, 1000);
	cr_expect(s.machine.keep_names, "a running recording names what it sampled at its end");
	cr_expect_eq(held(gs, &oldest), 3);
	cr_expect_eq(oldest, 300);
	service_release(&s, gs);

	/* An attachment's slice waiting for its ranges since 150. */
	service_with_records(&s, &o, &gs, ends, 5);
	s.machine.slice_start_ns = 900;
	seen.attachment_oldest = 150;
	slices__close_at(&s, gs, 1000);
	cr_expect(s.machine.keep_names);
	cr_expect_eq(held(gs, &oldest), 4);
	cr_expect_eq(oldest, 200);
	service_release(&s, gs);
}

/* Once the timer fired (sd-event disables a one-shot source), it closes a slice and is set to
 * fire again SLICE_US later. */
Test(slices, the_timer_fires_again)
{
	struct xsprofd_opts o = {.freq_hz = 19};
	struct service s;
	struct gpu_store *gs;
	sd_event_source *src = NULL;
	struct timespec ts;
	uint64_t at_us, now_us;
	sd_event *ev = NULL;
	int enabled = -1;

	service_with_records(&s, &o, &gs, NULL, 0);
	cr_assert_geq(sd_event_new(&ev), 0);
	cr_assert_geq(sd_event_add_time_relative(ev, &src, CLOCK_MONOTONIC, 1000, 0,
						 slices__on_timer, &s),
		      0);
	/* Run the loop: the source fires after 1 ms, as the service's does after SLICE_US. */
	cr_assert_geq(sd_event_run(ev, 2000000), 1);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now_us = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
	cr_expect_eq(seen.closes, 1, "a slice closed");
	cr_expect_eq(seen.prunes, 1, "finished recordings pruned");
	cr_expect_eq(seen.notifies, 1, "the status line told");
	cr_assert_geq(sd_event_source_get_time(src, &at_us), 0);
	cr_expect(at_us > now_us + SLICE_US - 1000000 && at_us <= now_us + SLICE_US,
		  "%llu, now %llu", (unsigned long long)at_us, (unsigned long long)now_us);
	cr_assert_geq(sd_event_source_get_enabled(src, &enabled), 0);
	cr_expect_eq(enabled, SD_EVENT_ONESHOT);
	sd_event_source_unref(src);
	sd_event_unref(ev);
	service_release(&s, gs);
}
