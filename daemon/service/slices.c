// SPDX-License-Identifier: Apache-2.0
/* The always-on recording, and the slices it is folded into for the rolling window. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "cupti_inject/xsprof_wire.h"
#include "daemon/cuda/cuda_probes.h"
#include "daemon/gpu/cupti_server.h"
#include "daemon/stacks/fold.h"
#include "daemon/session/gpu_join.h"
#include "daemon/cuda/launch_store.h"
#include "daemon/service/http.h"
#include "daemon/log.h"
#include "daemon/oneshot/oneshot.h"
#include "daemon/options.h"
#include "daemon/probes/preflight.h"
#include "daemon/session/recording.h"
#include "daemon/probes/sampler.h"
#include "daemon/service/service.h"
#include "daemon/service/service_gpu.h"
#include "daemon/stacks/stack_table.h"
#include "daemon/session/stack_names.h"
#include "daemon/service/window.h"
#include "daemon/symbolize/symbolizer.h"
#include "daemon/unwind/unwinder.h"
#include "output/calltree.h"
#include "output/output.h"
#include "output/profile.h"
#include "daemon/service/internal.h"

int start_always(struct service *s)
{
	struct recording_opts ro = {
		.freq_hz = s->opts->freq_hz,
		.include_idle = s->opts->include_idle,
		.ring_bytes = s->opts->ring_buffer_bytes,
		.max_stacks = s->opts->max_stacks,
		.pids = s->opts->pids,
		.nr_pids = s->opts->nr_pids,
		.proc_events = true, /* the one recording that feeds exec/exit to s->sym */
		.unwind_mode = s->opts->unwind,
		/* CUDA probes for attached processes (and --cuda-lib files) only: none otherwise. */
		.cuda = !s->opts->no_cuda,
		.cuda_libs = s->opts->cuda_libs,
		.nr_cuda_libs = s->opts->nr_cuda_libs,
	};
	const char *what;
	int err;

	s->always = recording__new(s->ev, &ro, s->sym, &what);
	if (!s->always) {
		err = -errno;
		preflight__explain_bpf_error(what, err);
		return err;
	}
	err = recording__start(s->always);
	if (err) {
		preflight__explain_bpf_error("attaching the sampler to perf events", err);
		recording__free(s->always);
		s->always = NULL;
		return err;
	}
	s->slice_start_ns = now_ns();
	return 0;
}

int take_old(void *ctx, const struct gpu_activity *a)
{
	return a->end_ns < *(const uint64_t *)ctx ? 0 : 1;
}

/*
 * The slice's GPU work: the always-on launches joined to the GPU records that ended in it,
 * into the GPU window. The launches go with the slice, so their store never fills; records are
 * let go once no running recording may still want them.
 */
void close_gpu_slice(struct service *s, uint64_t start, uint64_t end)
{
	struct cuda_probes *cp = s->always ? recording__cuda(s->always) : NULL;
	struct gpu_store *gs = s->cupti ? cupti_server__store(s->cupti) : NULL;
	struct gpu_join_scope scope = {.since_ns = start};
	struct launch_store *ls = NULL;
	struct calltree *tree = NULL;
	uint64_t cutoff = end;
	int err = 0;

	if (cp && cuda_probes__rotate_store(cp, &ls))
		log_warn("could not start a new launch slice (out of memory); launches go on into "
			 "the current one");
	if (gs)
		cupti_server__drain(s->cupti, CUPTI_DRAIN_BATCHES);
	if (ls || gs)
		err = gpu_slice__tree(ls, gs, &scope, s->sym, "auto", s->opts->freq_hz, &tree,
				      &s->corr[0]);
	if (!err && tree) {
		err = window__add(s->gpu_window, start, end, tree);
		tree = NULL;
	}
	if (err && err != -E2BIG)
		log_warn("joining the slice's GPU work failed: %s", strerror(-err));
	calltree__free(tree);
	launch_store__free(ls);
	for (struct svc_rec *r = s->recs; r; r = r->next)
		if (r->state == REC_RUNNING && r->started_ns < cutoff)
			cutoff = r->started_ns;
	if (gs)
		gpu_store__take(gs, 0, take_old, &cutoff);
	window__expire(s->gpu_window, end);
}

/* Fold what the always-on recording counted since the last slice into the store. */
void close_slice(struct service *s)
{
	struct stack_table *st;
	struct calltree *tree;
	uint32_t *pids;
	size_t n;
	uint64_t end = now_ns();
	int err;

	if (!s->always || recording__rotate(s->always, &st, &pids, &n)) {
		log_warn("could not start a new slice (out of memory); the current one goes on");
		return;
	}
	tree = calltree__new();
	err = tree ? fold_stacks_by_uid(st, s->sym, tree, NULL) : -ENOMEM;
	if (!err) {
		err = window__add(s->store, s->slice_start_ns, end, tree);
		if (err == -E2BIG)
			log_warn("a %llu s slice is larger than --store-mb %u on its own: dropped "
				 "(raise --store-mb)",
				 (unsigned long long)((end - s->slice_start_ns) / 1000000000ull),
				 s->opts->store_mb);
	} else {
		log_err("naming a slice failed: %s; its samples are lost", strerror(-err));
		calltree__free(tree);
	}
	close_gpu_slice(s, s->slice_start_ns, end);
	/* Named: their mappings can go; a process still running is snapshotted again. */
	for (size_t i = 0; i < n; i++)
		symbolizer__forget_process(s->sym, (pid_t)pids[i]);
	free(pids);
	stack_table__free(st);
	window__expire(s->store, end);
	s->slice_start_ns = end;
}

int on_slice(sd_event_source *src, uint64_t usec, void *ctx)
{
	struct service *s = ctx;

	close_slice(s);
	prune_recordings(s);
	notify_status(s);
	/* A time source fires once: re-arm it, or the window is cut only by queries. */
	sd_event_source_set_time_relative(src, SLICE_US);
	return sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
}
