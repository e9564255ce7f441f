// SPDX-License-Identifier: Apache-2.0
/* The always-on recording, and the slices it is folded into for the rolling window. */
#include <errno.h>
#include <signal.h>
#include <malloc.h>

#include <systemd/sd-event.h>

#include "daemon/base/clock.h"
#include "daemon/gpu/cupti_server.h"
#include "daemon/gpu/gpu_records.h"
#include "daemon/options.h"
#include "daemon/probes/preflight.h"
#include "daemon/service/gpu_metrics.h"
#include "daemon/service/internal.h"
#include "daemon/session/host_labels.h"
#include "daemon/session/lasting.h"
#include "daemon/session/plan.h"
#include "daemon/session/recording.h"
#include "daemon/symbolize/symbolizer.h"
#include "output/model/shelf.h"

/* An exec, from the one recording that reads them: the labels read from the old image's
 * environment are forgotten, for the recordings and for the service's own readers. */
static void on_exec(void *ctx, uint32_t tgid)
{
	struct service *s = ctx;

	recordings__note_exec(s, tgid);
	host_labels__forget(s->export_labels, tgid);
	host_labels__forget(s->flight_labels, tgid);
}

void slices__recording_opts(const struct service *s, struct recording_opts *ret)
{
	/* The window: the whole machine's on-CPU samples, grouped by range with
	 * --window-group-by. */
	const struct session_view view = {
		.freq_hz = s->opts->freq_hz,
		.cpu_mode = SESSION_MODE_CPU,
		.group_by = s->opts->window_group_by,
	};
	/* Its slices' GPU reports (the host's stacks while a GPU idles) want the samples. */
	static const enum output_format reports = OUTPUT_GPU_REPORT;
	struct session_plan_base base;
	struct session_plan plan;

	session_plan_base__of_flags(s->opts, s->unwinder, &base);
	/* The daemon's flags that describe this recording. */
	base.ring_bytes = s->opts->ring_buffer_bytes;
	base.include_idle = s->opts->include_idle;
	base.proc_events = true; /* the one recording that feeds exec/exit to s->sym */
	/* CUDA probes for attached processes (and --cuda-lib files) only: none otherwise. */
	base.cuda_libs = s->opts->cuda_libs;
	base.nr_cuda_libs = s->opts->nr_cuda_libs;
	base.pids = s->opts->pids;
	base.nr_pids = s->opts->nr_pids;
	base.children = !s->opts->no_children;
	base.max_timeline = WINDOW_MAX_TIMELINE;
	session_plan__of(&view, &base, &reports, 1, &plan);
	*ret = plan.ro;
	/* The callbacks are the service's own: the exec events its readers hear of, and the
	 * flight recorder's triggers, exits (death) and waiting CUDA calls (hang). */
	ret->on_exec = on_exec;
	ret->on_new_process_ctx = (struct service *)s;
	flight_api__recording_opts((struct service *)s, ret);
}

int slices__start(struct service *s)
{
	struct recording_opts ro;
	const char *what;
	int err;

	slices__recording_opts(s, &ro);
	s->machine.recording = recording__new(s->ev, &ro, s->sym, &what);
	if (!s->machine.recording) {
		err = -errno;
		preflight__explain_bpf_error(what, err);
		return err;
	}
	err = recording__start(s->machine.recording);
	if (err) {
		preflight__explain_bpf_error("attaching the sampler to perf events", err);
		recording__free(s->machine.recording);
		s->machine.recording = NULL;
		return err;
	}
	service__govern(s, s->machine.recording);
	s->machine.slice_start_ns = clock__mono_ns();
	s->machine.seen_seq = s->cupti ? gpu_store__last_seq(cupti_server__store(s->cupti)) : 0;
	return 0;
}

uint64_t slices__wanted_since(struct service *s, uint64_t end_ns)
{
	uint64_t cutoff = end_ns;

	for (const struct svc_recording *r = s->recordings; r; r = r->next)
		if (r->state == RECORDING_RUNNING && r->started_ns < cutoff)
			cutoff = r->started_ns;
	/* An attachment grouped by range names its slice a slice late. */
	return attachments__oldest_slice(s, cutoff);
}

/* cutoff, or the window's oldest slice not folded yet, or an attachment's, the oldest. */
static uint64_t slices__unfolded_since(struct service *s, uint64_t cutoff)
{
	uint64_t oldest = lasting__oldest_ns(&s->machine);

	return attachments__oldest_slice(s, cutoff < oldest ? cutoff : oldest);
}

/* The process is still there (another user's too). */
static int pid_alive(uint32_t pid)
{
	return !kill((pid_t)pid, 0) || errno == EPERM;
}

void slices__close_at(struct service *s, struct gpu_store *gs, uint64_t end)
{
	uint64_t cutoff;

	s->machine.freq_hz = s->opts->freq_hz;
	/* Attachments first: the window forgets the processes it named, and theirs share the
	 * symbolizer; none while a recording runs (it names what it sampled at its end). */
	attachments__close_slices(s, gs, end);
	cutoff = slices__wanted_since(s, end);
	s->machine.keep_names = cutoff < end;
	/* Ended images sampled since the oldest sample still to be named stay while it names. */
	symbolizer__keep_since(s->sym, slices__unfolded_since(s, cutoff));
	lasting__close_slice(&s->machine, s->sym, gs, NULL, &s->corr[0], end);
	gpu_metrics__reap(s->gpu_metrics, pid_alive);
	/* The window grouped by range names its waiting slices later. */
	cutoff = slices__unfolded_since(s, cutoff);
	symbolizer__keep_since(s->sym, cutoff);
	if (gs)
		gpu_store__take_ended(gs, cutoff);
}

/* early: for the GPU records (slices__check_gpu), without waiting for what the pipe has
 * queued: under a flood that is more of them, and they go into the next slice. */
static void close_now(struct service *s, bool early)
{
	struct gpu_store *gs = s->cupti ? cupti_server__store(s->cupti) : NULL;

	if (gs && !early)
		cupti_server__drain(s->cupti, CUPTI_DRAIN_BATCHES);
	if (gs)
		s->slice_gpu_seq = gpu_store__last_seq(gs);
	slices__close_at(s, gs, clock__mono_ns());
}

void slices__close(struct service *s)
{
	close_now(s, false);
}

void slices__check_gpu(struct service *s)
{
	struct gpu_store *gs = s->cupti ? cupti_server__store(s->cupti) : NULL;
	uint64_t now_us = clock__mono_ns() / 1000, when;

	if (!gs || !s->slice_timer || s->slice_early ||
	    gpu_store__last_seq(gs) - s->slice_gpu_seq < SLICE_GPU_RECORDS)
		return;
	when = s->machine.slice_start_ns / 1000 + SLICE_MIN_US;
	if (sd_event_source_set_time(s->slice_timer, when > now_us ? when : now_us) < 0 ||
	    sd_event_source_set_enabled(s->slice_timer, SD_EVENT_ONESHOT) < 0)
		return;
	s->slice_early = true;
}

int slices__on_timer(sd_event_source *src, uint64_t usec, void *ctx)
{
	struct service *s = ctx;
	bool early = s->slice_early;

	(void)usec;
	s->slice_early = false;
	close_now(s, early);
	if (early)
		s->slices_early++;
	recordings__prune(s);
	/* What a slice, or a storm of exits, freed goes back to the system: malloc keeps freed
	 * heap otherwise (8400 short processes: 48 MiB of it, resident until the next peak).
	 * Not between the early closes of a flood of GPU records: the next slice takes as much
	 * again, and would fault it all back in (the slice builds' big arrays wait on the shelf
	 * for it too, output/model/shelf.h). */
	if (!early) {
		shelf__clear();
		if (s->cupti)
			gpu_store__trim(cupti_server__store(s->cupti));
		malloc_trim(0);
	}
	status__notify(s);
	/* A time source fires once: re-arm it, or the window is cut only by queries. */
	sd_event_source_set_time_relative(src, SLICE_US);
	return sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
}
