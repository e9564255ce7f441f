// SPDX-License-Identifier: Apache-2.0
/*
 * GET /metrics: the status document in Prometheus' text exposition format (version 0.0.4).
 * A recording's counters are written from the table of daemon/session/counters.c; one table here
 * maps each other number of status__json to a metric, so the two never disagree: counters end
 * in _total, sizes are bytes and times seconds, a family's members differ by labels. Every
 * number of the status has a metric (metrics__covers; tests/daemon/service/test_metrics_cover.c).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/base/flight_rule.h"
#include "daemon/service/gpu_metrics.h"
#include "daemon/service/internal.h"
#include "daemon/session/counters.h"

enum metric_type { GAUGE, COUNTER };

struct metric {
	const char *path; /* status JSON: "object.key" (or "key") */
	const char *name; /* xsprof_..., members of a family adjacent */
	enum metric_type type;
	const char *labels; /* "cause=\"x\"", or NULL */
	double scale;	    /* the JSON value times this (0: 1) */
	const char *help;
};

/* The status document's numbers apart from a recording's counters (daemon/session/counters.c
 * has the rows of those). */
/* A row's labels: one member for each flight recorder trigger kind, at PATH.KIND (gpu_idle),
 * labelled trigger="gpu-idle". */
static const char BY_TRIGGER[] = "trigger";

static const struct metric metrics[] = {
	{"pid", "xsprof_pid", GAUGE, NULL, 0, "xsprofd's process id."},
	{"uptime_s", "xsprof_uptime_seconds", GAUGE, NULL, 0, "Seconds since xsprofd started."},
	{"freq_hz", "xsprof_sample_frequency_hertz", GAUGE, NULL, 0,
	 "Samples a second per CPU of the always-on window."},
	{"cpus", "xsprof_sampled_cpus", GAUGE, NULL, 0, "CPUs the window samples."},
	{"cost.own_cpu_s", "xsprof_cpu_seconds_total", COUNTER, NULL, 0,
	 "CPU time xsprofd itself used since it started."},
	{"cost.bpf_ns_per_sample", "xsprof_bpf_sample_seconds", GAUGE, NULL, 1e-9,
	 "The sampler program's time per sample (timed one run in 16)."},
	{"cost.bpf_ns_per_launch", "xsprof_bpf_launch_seconds", GAUGE, NULL, 1e-9,
	 "A CUDA launch probe's time per run."},
	{"memory.rss_bytes", "xsprof_resident_memory_bytes", GAUGE, NULL, 0,
	 "xsprofd's resident memory."},
	{"store.samples", "xsprof_window_samples", GAUGE, NULL, 0,
	 "Samples held in the rolling window."},
	{"store.bytes", "xsprof_window_bytes", GAUGE, NULL, 0, "Memory of the rolling window."},
	{"store.cap_bytes", "xsprof_window_cap_bytes", GAUGE, NULL, 0,
	 "The rolling window's memory cap (--store-mb)."},
	{"store.expired_slices", "xsprof_window_slices_dropped_total", COUNTER, "cause=\"expired\"",
	 0, "Window slices let go, by cause (cap: data lost early)."},
	{"store.dropped_slices", "xsprof_window_slices_dropped_total", COUNTER, "cause=\"cap\"", 0,
	 NULL},
	{"store.dropped_samples", "xsprof_window_samples_dropped_total", COUNTER, NULL, 0,
	 "Samples in slices dropped at the window's cap."},
	{"store.gpu_reports", "xsprof_window_gpu_reports", GAUGE, NULL, 0,
	 "GPU reports held in the rolling window (one per slice and user)."},
	{"store.gpu_reports_bytes", "xsprof_window_gpu_reports_bytes", GAUGE, NULL, 0,
	 "Memory of the rolling window's GPU reports."},
	{"store.gpu_reports_cap_bytes", "xsprof_window_gpu_reports_cap_bytes", GAUGE, NULL, 0,
	 "The cap of the rolling window's GPU reports (a quarter of --store-mb)."},
	{"store.gpu_reports_expired", "xsprof_window_gpu_reports_dropped_total", COUNTER,
	 "cause=\"expired\"", 0, "GPU reports let go, by cause (cap: data lost early)."},
	{"store.gpu_reports_dropped", "xsprof_window_gpu_reports_dropped_total", COUNTER,
	 "cause=\"cap\"", 0, NULL},
	{"store.gpu_reports_dropped_bytes", "xsprof_window_gpu_reports_dropped_bytes_total",
	 COUNTER, NULL, 0, "Bytes of the GPU reports dropped at their cap."},
	{"store.gpu_reports_samples_dropped", "xsprof_window_gpu_report_samples_dropped_total",
	 COUNTER, NULL, 0, "Samples past a slice's timeline cap, not on the GPU reports."},
	{"gpu.connections", "xsprof_gpu_connections", GAUGE, NULL, 0,
	 "CUDA processes connected to the CUPTI socket."},
	{"gpu.kernels", "xsprof_gpu_records_total", COUNTER, "kind=\"kernel\"", 0,
	 "GPU records received, by kind."},
	{"gpu.memcpys", "xsprof_gpu_records_total", COUNTER, "kind=\"memcpy\"", 0, NULL},
	{"gpu.memsets", "xsprof_gpu_records_total", COUNTER, "kind=\"memset\"", 0, NULL},
	{"gpu.api_calls", "xsprof_gpu_records_total", COUNTER, "kind=\"api\"", 0, NULL},
	{"gpu.sender_dropped", "xsprof_gpu_records_lost_total", COUNTER, "cause=\"sender\"", 0,
	 "GPU records lost, by cause."},
	{"gpu.records_evicted", "xsprof_gpu_records_lost_total", COUNTER, "cause=\"evicted\"", 0,
	 NULL},
	{"gpu.users_refused", "xsprof_gpu_records_lost_total", COUNTER, "cause=\"too_many_users\"",
	 0, NULL},
	{"gpu.nvtx_open_refused", "xsprof_gpu_nvtx_open_refused_total", COUNTER, NULL, 0,
	 "NVTX ranges' openings refused at the caps (1024 open per process, 4 MiB in all, half of "
	 "it per uid): a range "
	 "refused so that has not ended when a slice closes is missing from it."},
	{"gpu.refused_connections", "xsprof_gpu_connections_refused_total", COUNTER, NULL, 0,
	 "CUPTI connections refused at the caps."},
	{"gpu.intake_pauses", "xsprof_gpu_intake_pauses_total", COUNTER, NULL, 0,
	 "Times a user's CUPTI connections were left unread for the rest of a window, at "
	 "--max-cpu's cap on GPU records read per user."},
	{"gpu.intake_paused_s", "xsprof_gpu_intake_paused_seconds_total", COUNTER, NULL, 0,
	 "Time users' CUPTI connections were left unread at that cap, summed over users."},
	{"api.connections", "xsprof_api_connections", GAUGE, NULL, 0,
	 "Control API connections open."},
	{"api.refused_at_limit", "xsprof_api_refused_total", COUNTER, "cause=\"connections\"", 0,
	 "API connections and requests refused at a cap, by cause."},
	{"api.refused_over_share", "xsprof_api_refused_total", COUNTER,
	 "cause=\"connections_per_user\"", 0, NULL},
	{"api.recordings_refused_full", "xsprof_api_refused_total", COUNTER, "cause=\"recordings\"",
	 0, NULL},
	{"api.recordings_refused_user_cap", "xsprof_api_refused_total", COUNTER,
	 "cause=\"recordings_per_user\"", 0, NULL},
	{"api.recordings_refused_user_seconds", "xsprof_api_refused_total", COUNTER,
	 "cause=\"recorded_seconds_per_user\"", 0, NULL},
	{"api.attach_refused_full", "xsprof_api_refused_total", COUNTER, "cause=\"attached\"", 0,
	 NULL},
	{"api.attach_refused_user_cap", "xsprof_api_refused_total", COUNTER,
	 "cause=\"attached_per_user\"", 0, NULL},
	{"api.starts_refused_user_rate", "xsprof_api_refused_total", COUNTER,
	 "cause=\"start_rate\"", 0, NULL},
	{"api.tcp_evicted_without_token", "xsprof_api_refused_total", COUNTER,
	 "cause=\"tcp_without_token\"", 0, NULL},
	{"api.tcp_refused_after_wrong_tokens", "xsprof_api_refused_total", COUNTER,
	 "cause=\"tcp_wrong_token_backoff\"", 0, NULL},
	{"api.header_timeouts", "xsprof_api_timeouts_total", COUNTER, "phase=\"request\"", 0,
	 "API connections cut at a deadline, by phase."},
	{"api.wait_timeouts", "xsprof_api_timeouts_total", COUNTER, "phase=\"wait\"", 0, NULL},
	{"api.tcp_wrong_tokens", "xsprof_api_wrong_tokens_total", COUNTER, NULL, 0,
	 "TCP requests with wrong credentials."},
	{"export.pushed", "xsprof_export_slices_total", COUNTER, "outcome=\"pushed\"", 0,
	 "Window slices the export sinks handled, by outcome (dropped: past the queue cap)."},
	{"export.dropped", "xsprof_export_slices_total", COUNTER, "outcome=\"dropped\"", 0, NULL},
	{"export.rejected", "xsprof_export_slices_total", COUNTER, "outcome=\"rejected\"", 0, NULL},
	{"export.dropped_too_large", "xsprof_export_slices_too_large_total", COUNTER, NULL, 0,
	 "Slices larger than the whole export queue, dropped as they came (in dropped too): "
	 "raise --export-queue-kb."},
	{"export.failed_pushes", "xsprof_export_failed_pushes_total", COUNTER, NULL, 0,
	 "Pushes to a profile store that failed and were retried."},
	{"export.queued_bytes", "xsprof_export_queued_bytes", GAUGE, NULL, 0,
	 "Encoded slices waiting for their store (--export-queue-kb caps them)."},
	{"flight.ring_bytes", "xsprof_flight_ring_bytes", GAUGE, NULL, 0,
	 "Memory the flight recorder's ring holds (--flight-mb caps it)."},
	{"flight.ring_cap_bytes", "xsprof_flight_ring_cap_bytes", GAUGE, NULL, 0,
	 "The flight recorder ring's cap."},
	{"flight.evicted_cap", "xsprof_flight_evicted_total", COUNTER, "cause=\"cap\"", 0,
	 "Slices the flight recorder let go, by cause (cap: before their age)."},
	{"flight.evicted_age", "xsprof_flight_evicted_total", COUNTER, "cause=\"age\"", 0, NULL},
	/* One member per trigger kind (flight_rule.c's table): BY_TRIGGER rows. */
	{"flight.dumps_by_trigger", "xsprof_flight_dumps_total", COUNTER, BY_TRIGGER, 0,
	 "Flight recorder dumps written, by trigger."},
	{"flight.suppressed_by_trigger", "xsprof_flight_trips_suppressed_total", COUNTER,
	 BY_TRIGGER, 0,
	 "Trips held back by a cooldown, an hourly limit or pending dumps, by trigger."},
	{"flight.dumps_failed", "xsprof_flight_dump_failures_total", COUNTER, NULL, 0,
	 "Flight recorder dumps that could not be written (disk full, directory gone)."},
	{"flight.dump_bytes", "xsprof_flight_dump_bytes", GAUGE, NULL, 0,
	 "Bytes of the dumps kept (--dump-keep-mb caps them)."},
	{"window_s", "xsprof_window_seconds", GAUGE, NULL, 0,
	 "How far back the rolling window keeps slices (--window)."},
	{"cost.own_cpu_pct", "xsprof_cpu_ratio", GAUGE, NULL, 0.01,
	 "xsprofd's own CPU since it started, as a share of one CPU."},
	{"cost.bpf_cpu_pct", "xsprof_bpf_cpu_ratio", GAUGE, NULL, 0.01,
	 "The sampler program's time, as a share of one CPU."},
	{"store.slices", "xsprof_window_slices", GAUGE, NULL, 0,
	 "Slices held in the rolling window."},
	{"store.merged_slices", "xsprof_window_slices_merged_total", COUNTER, NULL, 0,
	 "Window slices merged into their neighbour to save memory."},
	{"store.span_s", "xsprof_window_span_seconds", GAUGE, NULL, 0,
	 "Time between the window's oldest and newest slice."},
	{"store.gpu_reports_merged", "xsprof_window_gpu_reports_merged_total", COUNTER, NULL, 0,
	 "GPU reports merged into their neighbour to save memory."},
	{"store.waiting_slices", "xsprof_window_waiting_slices", GAUGE, NULL, 0,
	 "Slices waiting for their NVTX ranges to end (--window-group-by)."},
	{"store.waiting_samples", "xsprof_window_waiting_samples", GAUGE, NULL, 0,
	 "Samples of the slices waiting for their ranges."},
	{"store.named_to_ms", "xsprof_window_named_to_seconds", GAUGE, NULL, 1e-3,
	 "The CPU samples before this (xsprofd's monotonic clock) are in the window."},
	{"store.range_dropped", "xsprof_window_range_samples_dropped_total", COUNTER, NULL, 0,
	 "Samples dropped at the cap of the slices waiting for their ranges."},
	{"store.range_wait_s", "xsprof_window_range_wait_seconds", GAUGE, NULL, 0,
	 "How long a sample waits for its range to end (--window-range-wait)."},
	{"memory.frame_sites_names", "xsprof_frame_sites_names", GAUGE, NULL, 0,
	 "Names pprof's frame sites hold."},
	{"memory.frame_sites_bytes", "xsprof_frame_sites_bytes", GAUGE, NULL, 0,
	 "Memory of pprof's frame sites."},
	{"memory.frame_sites_cap_bytes", "xsprof_frame_sites_cap_bytes", GAUGE, NULL, 0,
	 "The cap of pprof's frame sites."},
	{"memory.frame_sites_resets", "xsprof_frame_sites_resets_total", COUNTER, NULL, 0,
	 "Times pprof's frame sites were emptied at their cap."},
	{"memory.frame_sites_refused", "xsprof_frame_sites_refused_total", COUNTER, NULL, 0,
	 "Frame sites refused (written by name, without an address)."},
	{"api.accepted", "xsprof_api_accepted_total", COUNTER, NULL, 0,
	 "Control API connections accepted."},
	{"api.waiters_hung_up", "xsprof_api_waiters_hung_up_total", COUNTER, NULL, 0,
	 "API clients that hung up while waiting for a result."},
	{"api.accept_errors", "xsprof_api_accept_errors_total", COUNTER, NULL, 0,
	 "Errors accepting API connections."},
	{"api.recordings_ended_owner_changed", "xsprof_api_owner_changed_total", COUNTER,
	 "what=\"recording\"", 0,
	 "Recordings ended and attachments detached because their process changed owner."},
	{"api.detached_owner_changed", "xsprof_api_owner_changed_total", COUNTER,
	 "what=\"attachment\"", 0, NULL},
	{"api.attach_gone_pruned", "xsprof_api_attachments_pruned_total", COUNTER, NULL, 0,
	 "Attachments whose processes were gone, pruned."},
	{"export.queued", "xsprof_export_queued_slices", GAUGE, NULL, 0,
	 "Encoded slices waiting for their store."},
	{"export.cap_bytes", "xsprof_export_queue_cap_bytes", GAUGE, NULL, 0,
	 "The export queue's cap (--export-queue-kb)."},
	{"export.encode_us_mean", "xsprof_export_encode_seconds", GAUGE, NULL, 1e-6,
	 "Time to encode a slice, on average."},
	{"export.encoded_bytes_mean", "xsprof_export_encoded_bytes", GAUGE, NULL, 0,
	 "Size of an encoded slice, on average."},
	{"gpu.accepted", "xsprof_gpu_connections_accepted_total", COUNTER, NULL, 0,
	 "CUPTI connections accepted."},
	{"gpu.malformed_connections", "xsprof_gpu_connections_closed_total", COUNTER,
	 "cause=\"malformed\"", 0, "CUPTI connections closed by xsprofd, by cause."},
	{"gpu.idle_connections_closed", "xsprof_gpu_connections_closed_total", COUNTER,
	 "cause=\"idle\"", 0, NULL},
	{"gpu.records_held", "xsprof_gpu_records_held", GAUGE, NULL, 0,
	 "GPU records in the GPU record store."},
	{"gpu.slices_closed_early", "xsprof_gpu_slices_closed_early_total", COUNTER, NULL, 0,
	 "Window slices closed early under a flood of GPU records (every 65,536)."},
	{"flight.ring_parts", "xsprof_flight_ring_parts", GAUGE, NULL, 0,
	 "Slice parts the flight recorder's ring holds."},
	{"flight.ring_users", "xsprof_flight_ring_users", GAUGE, NULL, 0,
	 "Users whose slices the flight recorder's ring holds."},
	{"flight.ring_reach_s", "xsprof_flight_ring_reach_seconds", GAUGE, NULL, 0,
	 "How far back the flight recorder's ring reaches now."},
	{"flight.freeze_failed", "xsprof_flight_freeze_failures_total", COUNTER, NULL, 0,
	 "Trips whose ring could not be frozen for a dump."},
	{"flight.tables_full", "xsprof_flight_tables_full_total", COUNTER, NULL, 0,
	 "Times the flight recorder's tables were full."},
	{"flight.log_lines_held_back", "xsprof_flight_log_lines_held_back_total", COUNTER, NULL, 0,
	 "Flight recorder log lines held back by their rate limit."},
	{"flight.dumps", "xsprof_flight_dumps_kept", GAUGE, NULL, 0,
	 "Flight recorder dumps kept (--dump-keep caps them)."},
	{"flight.dumps_pending", "xsprof_flight_dumps_in_progress", GAUGE, "state=\"pending\"", 0,
	 "Flight recorder dumps not written yet, by state."},
	{"flight.dumps_writing", "xsprof_flight_dumps_in_progress", GAUGE, "state=\"writing\"", 0,
	 NULL},
	{"flight.dumps_partial", "xsprof_flight_dumps_partial_total", COUNTER, NULL, 0,
	 "Flight recorder dumps written with part of their data missing."},
	{"flight.dumps_removed", "xsprof_flight_dumps_removed_total", COUNTER, NULL, 0,
	 "Flight recorder dumps removed past --dump-keep."},
	{"gpu_metrics.slices", "xsprof_gpu_metrics_slices_total", COUNTER, NULL, 0,
	 "Window slices the GPU metrics summed."},
	{"gpu_metrics.series_cap", "xsprof_gpu_metric_series_cap", GAUGE, NULL, 0,
	 "The cap of the GPU metrics' series."},
	{"gpu_metrics.processes_left_out", "xsprof_gpu_metrics_processes_left_out_total", COUNTER,
	 NULL, 0, "Processes left out of the GPU metrics at their caps."},
	{"gpu_metrics.allocations", "xsprof_gpu_memory_allocations_tracked", GAUGE, NULL, 0,
	 "GPU memory allocations tracked now."},
	{"gpu_metrics.allocations_cap", "xsprof_gpu_memory_allocations_cap", GAUGE, NULL, 0,
	 "The cap of the GPU memory allocations tracked."},
	{"gpu_metrics.frees_unknown", "xsprof_gpu_memory_frees_unknown_total", COUNTER, NULL, 0,
	 "GPU memory frees of allocations not tracked."},
	{"gpu.intake_last_paused_uid", "xsprof_gpu_intake_last_paused_uid", GAUGE, NULL, 0,
	 "The uid whose CUPTI connections were left unread last."},
};
static struct json_object *at_path(struct json_object *j, const char *path)
{
	char key[64];
	const char *dot;

	while ((dot = strchr(path, '.'))) {
		size_t n = (size_t)(dot - path);

		if (n >= sizeof(key))
			return NULL;
		memcpy(key, path, n);
		key[n] = '\0';
		if (!json_object_object_get_ex(j, key, &j))
			return NULL;
		path = dot + 1;
	}
	return json_object_object_get_ex(j, path, &j) ? j : NULL;
}

static void family(FILE *f, const char *name, enum metric_type type, const char *help,
		   const char **last)
{
	if (*last && !strcmp(*last, name))
		return;
	*last = name;
	if (help)
		fprintf(f, "# HELP %s %s\n", name, help);
	fprintf(f, "# TYPE %s %s\n", name, type == COUNTER ? "counter" : "gauge");
}

static void sample(FILE *f, const char *name, const char *labels, double v)
{
	if (labels)
		fprintf(f, "%s{%s} %.15g\n", name, labels, v);
	else
		fprintf(f, "%s %.15g\n", name, v);
}

/* A BY_TRIGGER row: its member of each kind, in the kinds' order. */
static void by_trigger(FILE *f, struct json_object *st, const struct metric *m, const char *help,
		       const char **last)
{
	for (enum flight_kind k = 0; k < FLIGHT_NR_KINDS; k++) {
		char path[96], key[32], labels[64];
		struct json_object *v;

		flight_kind__key(k, key, sizeof(key));
		snprintf(path, sizeof(path), "%s.%s", m->path, key);
		v = at_path(st, path);
		if (!v || !(json_object_is_type(v, json_type_int) ||
			    json_object_is_type(v, json_type_double)))
			continue;
		family(f, m->name, m->type, help, last);
		snprintf(labels, sizeof(labels), "trigger=\"%s\"", flight_kind__name(k));
		sample(f, m->name, labels, json_object_get_double(v));
	}
}

/* The table's metrics. A family's help is on its first member; a member absent from the status
 * (no CUDA probes, --unwind fp) is left out, and so is its family when all are. */
static void table_metrics(FILE *f, struct json_object *st)
{
	const char *last = NULL, *help = NULL;

	for (size_t i = 0; i < sizeof(metrics) / sizeof(metrics[0]); i++) {
		const struct metric *m = &metrics[i];
		struct json_object *v = at_path(st, m->path);

		if (m->help)
			help = m->help;
		if (m->labels == BY_TRIGGER) {
			by_trigger(f, st, m, help, &last);
			continue;
		}
		if (!v || !(json_object_is_type(v, json_type_int) ||
			    json_object_is_type(v, json_type_double)))
			continue;
		family(f, m->name, m->type, help, &last);
		sample(f, m->name, m->labels,
		       json_object_get_double(v) * (m->scale ? m->scale : 1));
	}
}

/* The kernel's features (status "kernel.features"), one member each, 1 or 0. */
static void kernel_metrics(FILE *f, struct json_object *st)
{
	struct json_object *k = at_path(st, "kernel.features");
	const char *last = NULL;
	char labels[96];

	if (!k)
		return;
	json_object_object_foreach(k, name, v)
	{
		family(f, "xsprof_kernel_feature", GAUGE,
		       "1 where this kernel has the BPF feature xsprofd uses, 0 where it runs a "
		       "fallback (xsprofctl status says which).",
		       &last);
		snprintf(labels, sizeof(labels), "feature=\"%s\"", name);
		sample(f, "xsprof_kernel_feature", labels, json_object_get_double(v));
	}
}

/* Counts by a string member of each element of an array ("state" of recordings). */
static void by_state(FILE *f, struct json_object *arr, const char *name, const char *help,
		     const char *const *states, size_t nr_states)
{
	const char *last = NULL;
	char labels[64];

	family(f, name, GAUGE, help, &last);
	for (size_t k = 0; k < nr_states; k++) {
		size_t n = 0;

		for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
			struct json_object *st;

			if (json_object_object_get_ex(json_object_array_get_idx(arr, i), "state",
						      &st) &&
			    !strcmp(json_object_get_string(st), states[k]))
				n++;
		}
		snprintf(labels, sizeof(labels), "state=\"%s\"", states[k]);
		sample(f, name, labels, (double)n);
	}
}

/* Launches joined to GPU work, by strategy and outcome. */
static void join_metrics(FILE *f, struct json_object *st)
{
	struct json_object *corr = at_path(st, "correlation");
	const char *last = NULL;
	char labels[128];

	if (!corr)
		return;
	family(f, "xsprof_gpu_joins_total", COUNTER,
	       "Launches and GPU records by correlation strategy and outcome.", &last);
	json_object_object_foreach(corr, strategy, outcomes)
	{
		json_object_object_foreach(outcomes, outcome, v)
		{
			snprintf(labels, sizeof(labels), "strategy=\"%s\",outcome=\"%s\"", strategy,
				 outcome);
			sample(f, "xsprof_gpu_joins_total", labels, json_object_get_double(v));
		}
	}
}

/* The GPU record store's share of each sender's uid (gpu.users; at most GPU_STORE_MAX_USERS). */
static void gpu_user_metrics(FILE *f, struct json_object *st)
{
	static const struct {
		const char *key, *name, *help;
		enum metric_type type;
	} m[] = {
		{"records", "xsprof_gpu_user_records", "GPU records held, by the sender's uid.",
		 GAUGE},
		{"evicted", "xsprof_gpu_user_records_evicted_total",
		 "GPU records evicted at the store's cap, by uid (the uid holding the most pays).",
		 COUNTER},
		{"refused", "xsprof_gpu_user_records_refused_total",
		 "GPU records that could not be stored, by uid.", COUNTER},
		{"open_refused", "xsprof_gpu_user_nvtx_open_refused_total",
		 "NVTX range openings refused at a uid's share or a process's cap, by uid.",
		 COUNTER},
	};
	struct json_object *users = at_path(st, "gpu.users");
	char labels[32];

	for (size_t k = 0; users && k < sizeof(m) / sizeof(m[0]); k++) {
		const char *last = NULL;

		family(f, m[k].name, m[k].type, m[k].help, &last);
		for (size_t i = 0; i < json_object_array_length(users); i++) {
			struct json_object *u = json_object_array_get_idx(users, i), *uid, *v;

			if (!json_object_object_get_ex(u, "uid", &uid) ||
			    !json_object_object_get_ex(u, m[k].key, &v))
				continue;
			snprintf(labels, sizeof(labels), "uid=\"%d\"", json_object_get_int(uid));
			sample(f, m[k].name, labels, json_object_get_double(v));
		}
	}
}

static void response_metrics(FILE *f)
{
	const char *last = NULL;
	const uint64_t *counts;
	char labels[32];
	size_t n;

	reply__counts(&counts, &n);
	family(f, "xsprof_api_responses_total", COUNTER, "API responses sent, by HTTP status.",
	       &last);
	for (size_t code = 0; code < n; code++) {
		if (!counts[code] && code != 200) /* 200 always: the family is never empty */
			continue;
		snprintf(labels, sizeof(labels), "code=\"%zu\"", code);
		sample(f, "xsprof_api_responses_total", labels, (double)counts[code]);
	}
}

/* --max-cpu's ceiling (status "ceiling"): absent without one. */
static const struct {
	const char *key, *name, *help;
	enum metric_type type;
	double scale;
} ceiling_plain[] = {
	{"max_cpu_pct", "xsprof_ceiling_max_cpu_ratio", "--max-cpu, as a share of all CPUs.", GAUGE,
	 0.01},
	{"cost_pct", "xsprof_ceiling_cost_ratio",
	 "xsprofd's cost (its CPU and its BPF programs' time) over the last second, as a "
	 "share of all CPUs.",
	 GAUGE, 0.01},
	{"bpf_s", "xsprof_ceiling_bpf_seconds_total",
	 "Run time of xsprofd's BPF programs since the ceiling was set.", COUNTER, 1},
	{"level", "xsprof_ceiling_level", "Steps of work shed now (0: none).", GAUGE, 1},
	{"rate_divisor", "xsprof_ceiling_rate_divisor",
	 "The sampling rate is the asked one divided by this; each sample counts this much.", GAUGE,
	 1},
	{"freq_hz", "xsprof_ceiling_sample_frequency_hertz",
	 "Samples a second per CPU the window takes now.", GAUGE, 1},
	{"launch_stack_every", "xsprof_ceiling_launch_stack_every",
	 "One CUDA launch in this many has its stack walked now.", GAUGE, 1},
	{"launches_without_stack", "xsprof_ceiling_launches_without_stack_total",
	 "CUDA launches counted without their stack while launch stacks were shed.", COUNTER, 1},
	{"cuda_calls_counted_only", "xsprof_ceiling_cuda_calls_counted_only_total",
	 "CUDA calls counted only, not recorded, while CUDA calls were shed.", COUNTER, 1},
	{"gpu_intake_cap_per_uid", "xsprof_ceiling_gpu_intake_cap_records_per_second",
	 "GPU records read a second from each user's CUPTI connections at most now (0: no "
	 "cap).",
	 GAUGE, 1},
	{"cpus", "xsprof_ceiling_cpus", "CPUs the ceiling's share is of.", GAUGE, 1},
	{"avg_cost_pct", "xsprof_ceiling_average_cost_ratio",
	 "xsprofd's cost since the ceiling was set, as a share of all CPUs.", GAUGE, 0.01},
	{"own_cpu_s", "xsprof_ceiling_own_cpu_seconds_total",
	 "xsprofd's own CPU since the ceiling was set.", COUNTER, 1},
	{"span_s", "xsprof_ceiling_span_seconds_total", "Time since the ceiling was set.", COUNTER,
	 1},
	{"levels", "xsprof_ceiling_levels", "Steps of work the ceiling can shed.", GAUGE, 1},
	{"hold_s", "xsprof_ceiling_hold_seconds", "How long a step is held before it is restored.",
	 GAUGE, 1},
};

static bool ceiling_covers(const char *key)
{
	for (size_t i = 0; i < sizeof(ceiling_plain) / sizeof(ceiling_plain[0]); i++)
		if (!strcmp(ceiling_plain[i].key, key))
			return true;
	return false;
}

static void ceiling_metrics(FILE *f, struct json_object *st)
{
	struct json_object *o, *v, *now = NULL, *secs = NULL;
	const char *last = NULL;
	char labels[64];

	if (!json_object_object_get_ex(st, "ceiling", &o))
		return;
	for (size_t i = 0; i < sizeof(ceiling_plain) / sizeof(ceiling_plain[0]); i++) {
		if (!json_object_object_get_ex(o, ceiling_plain[i].key, &v))
			continue;
		family(f, ceiling_plain[i].name, ceiling_plain[i].type, ceiling_plain[i].help,
		       &last);
		sample(f, ceiling_plain[i].name, NULL,
		       json_object_get_double(v) * ceiling_plain[i].scale);
	}
	if (json_object_object_get_ex(o, "steps_shed", &v)) {
		family(f, "xsprof_ceiling_steps_total", COUNTER,
		       "Steps of work shed and restored, by direction.", &last);
		sample(f, "xsprof_ceiling_steps_total", "direction=\"shed\"",
		       json_object_get_double(v));
		if (json_object_object_get_ex(o, "steps_restored", &v))
			sample(f, "xsprof_ceiling_steps_total", "direction=\"restored\"",
			       json_object_get_double(v));
	}
	json_object_object_get_ex(o, "shed_now", &now);
	json_object_object_get_ex(o, "shed_s", &secs);
	if (!secs)
		return;
	family(f, "xsprof_ceiling_shed", GAUGE, "1 for each kind of work shed now, by kind.",
	       &last);
	json_object_object_foreach(secs, key, val)
	{
		double on = 0;

		(void)val;
		for (size_t i = 0; now && i < json_object_array_length(now); i++)
			on += !strcmp(json_object_get_string(json_object_array_get_idx(now, i)),
				      key);
		snprintf(labels, sizeof(labels), "kind=\"%s\"", key);
		sample(f, "xsprof_ceiling_shed", labels, on);
	}
	family(f, "xsprof_ceiling_shed_seconds_total", COUNTER,
	       "Seconds each kind of work was shed, by kind.", &last);
	json_object_object_foreach(secs, key2, val2)
	{
		snprintf(labels, sizeof(labels), "kind=\"%s\"", key2);
		sample(f, "xsprof_ceiling_shed_seconds_total", labels,
		       json_object_get_double(val2));
	}
}

/* Numbers other renderings write: gpu_metrics__write's (from its own sums), and the families
 * written by label. */
static bool covered_elsewhere(const char *path)
{
	static const char *const exact[] = {"gpu_metrics.series", "gpu_metrics.series_overflow",
					    "gpu_metrics.allocations_untracked",
					    "ceiling.steps_shed", "ceiling.steps_restored"};
	static const char *const prefixes[] = {"kernel.features.", "correlation.",
					       "ceiling.shed_s.", "limits.",
					       "gpu.senders_by_policy."};

	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (!strcmp(path, exact[i]))
			return true;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(path, prefixes[i], strlen(prefixes[i])))
			return true;
	return !strncmp(path, "ceiling.", 8) && ceiling_covers(path + 8);
}

bool metrics__covers(const char *path)
{
	for (size_t i = 0; i < sizeof(metrics) / sizeof(metrics[0]); i++) {
		size_t n = strlen(metrics[i].path);

		if (!strcmp(metrics[i].path, path))
			return true;
		if (metrics[i].labels == BY_TRIGGER && !strncmp(path, metrics[i].path, n) &&
		    path[n] == '.') {
			for (enum flight_kind k = 0; k < FLIGHT_NR_KINDS; k++) {
				char key[32];

				flight_kind__key(k, key, sizeof(key));
				if (!strcmp(path + n + 1, key))
					return true;
			}
		}
	}
	for (size_t i = 0; i < counters_nr_rows; i++)
		if (counters_rows[i].metric && !strcmp(counters_rows[i].path, path))
			return true;
	return covered_elsewhere(path);
}

/* Every name=value of a status object, as one family labelled by name. */
static void by_key(FILE *f, struct json_object *st, const char *path, const char *name,
		   const char *label, const char *help)
{
	struct json_object *o = at_path(st, path);
	const char *last = NULL;
	char labels[128];

	if (!o || !json_object_is_type(o, json_type_object))
		return;
	json_object_object_foreach(o, key, v)
	{
		if (!json_object_is_type(v, json_type_int) &&
		    !json_object_is_type(v, json_type_double))
			continue;
		family(f, name, GAUGE, help, &last);
		snprintf(labels, sizeof(labels), "%s=\"%s\"", label, key);
		sample(f, name, labels, json_object_get_double(v));
	}
}

void metrics__write(FILE *f, struct json_object *st)
{
	static const char *const recording_states[] = {"running", "done", "failed"};
	static const char *const att_states[] = {"starting", "running", "ended"};
	struct json_object *arr = NULL, *v;
	const char *last = NULL;

	family(f, "xsprof_build_info", GAUGE, "xsprofd's version, as a label; always 1.", &last);
	fprintf(f, "xsprof_build_info{version=\"%s\"} 1\n",
		(v = at_path(st, "version")) ? json_object_get_string(v) : "");
	table_metrics(f, st);
	counters__write_metrics(f, st);
	kernel_metrics(f, st);
	json_object_object_get_ex(st, "recordings", &arr);
	by_state(f, arr, "xsprof_recordings", "Recordings held, by state.", recording_states, 3);
	arr = NULL;
	json_object_object_get_ex(st, "attachments", &arr);
	by_state(f, arr, "xsprof_attachments", "Attachments, by state.", att_states, 3);
	join_metrics(f, st);
	ceiling_metrics(f, st);
	gpu_user_metrics(f, st);
	by_key(f, st, "limits", "xsprof_limit", "name",
	       "Every cap a client can run into (status \"limits\"), by name.");
	by_key(f, st, "gpu.senders_by_policy", "xsprof_gpu_senders", "policy",
	       "CUPTI connections by the GPU timing policy their library said.");
}

enum MHD_Result metrics__api(struct service *s, struct MHD_Connection *c)
{
	struct json_object *st = status__json(s);
	enum MHD_Result ret;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f) {
		json_object_put(st);
		return reply__error(c, 500, "out of memory", NULL);
	}
	metrics__write(f, st);
	gpu_metrics__write(s->gpu_metrics, f);
	response_metrics(f);
	json_object_put(st);
	if (fclose(f)) {
		free(buf);
		return reply__error(c, 500, "out of memory", NULL);
	}
	ret = reply__send(c, 200, "text/plain; version=0.0.4; charset=utf-8", buf, len);
	free(buf);
	return ret;
}
