// SPDX-License-Identifier: Apache-2.0
/*
 * GET /metrics: the status document in Prometheus' text exposition format (version 0.0.4).
 * One table maps each number of status__json to a metric, so the two never disagree: counters
 * end in _total, sizes are bytes and times seconds, a family's members differ by labels.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/service/gpu_metrics.h"
#include "daemon/service/internal.h"

enum metric_type { GAUGE, COUNTER };

struct metric {
	const char *path; /* status JSON: "object.key" (or "key") */
	const char *name; /* xsprof_..., members of a family adjacent */
	enum metric_type type;
	const char *labels; /* "cause=\"x\"", or NULL */
	double scale;	    /* the JSON value times this (0: 1) */
	const char *help;
};

static const struct metric metrics[] = {
	{"uptime_s", "xsprof_uptime_seconds", GAUGE, NULL, 0, "Seconds since xsprofd started."},
	{"freq_hz", "xsprof_sample_frequency_hertz", GAUGE, NULL, 0,
	 "Samples a second per CPU of the always-on window."},
	{"cpus", "xsprof_sampled_cpus", GAUGE, NULL, 0, "CPUs the window samples."},
	{"counters.samples", "xsprof_samples_total", COUNTER, NULL, 0,
	 "CPU samples taken by the window's sampler."},
	{"counters.kept", "xsprof_samples_kept_total", COUNTER, NULL, 0,
	 "Samples sent to xsprofd (not idle, not filtered)."},
	{"counters.idle", "xsprof_samples_idle_total", COUNTER, NULL, 0,
	 "Samples of idle CPUs (left out)."},
	{"counters.lost_ring_buffer_full", "xsprof_samples_lost_total", COUNTER,
	 "cause=\"ring_buffer_full\"", 0, "Samples lost, by cause."},
	{"counters.malformed_records", "xsprof_samples_lost_total", COUNTER, "cause=\"malformed\"",
	 0, NULL},
	{"counters.kernel_stack_unreadable", "xsprof_stacks_unreadable_total", COUNTER,
	 "space=\"kernel\"", 0, "Samples whose stack could not be read, by address space."},
	{"counters.user_stack_unreadable", "xsprof_stacks_unreadable_total", COUNTER,
	 "space=\"user\"", 0, NULL},
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
	{"unwind.walks_with_tables", "xsprof_unwind_walks_total", COUNTER, "method=\"tables\"", 0,
	 "User stacks walked, by method."},
	{"unwind.walks_frame_pointers_only", "xsprof_unwind_walks_total", COUNTER,
	 "method=\"frame_pointers\"", 0, NULL},
	{"unwind.tables", "xsprof_unwind_tables", GAUGE, NULL, 0, "Unwind tables loaded."},
	{"unwind.table_rows", "xsprof_unwind_table_rows", GAUGE, NULL, 0,
	 "Rows of the loaded unwind tables."},
	{"unwind.table_rows_cap", "xsprof_unwind_table_rows_cap", GAUGE, NULL, 0,
	 "Rows the unwind table memory holds (--unwind-mb)."},
	{"unwind.bpf_map_bytes", "xsprof_unwind_map_bytes", GAUGE, NULL, 0,
	 "Kernel memory of the unwind maps."},
	{"unwind.tables_no_room", "xsprof_unwind_tables_refused_total", COUNTER,
	 "cause=\"no_room\"", 0, "Tables not loaded, by cause."},
	{"unwind.tables_without_eh_frame", "xsprof_unwind_tables_refused_total", COUNTER,
	 "cause=\"no_eh_frame\"", 0, NULL},
	{"unwind.tables_evicted", "xsprof_unwind_tables_evicted_total", COUNTER, NULL, 0,
	 "Tables evicted to make room."},
	{"unwind.held_samples", "xsprof_unwind_held_samples_total", COUNTER, NULL, 0,
	 "Samples held until their table was built."},
	{"unwind.held_lost_ring_buffer_full", "xsprof_unwind_holds_lost_total", COUNTER,
	 "cause=\"ring_buffer_full\"", 0, "Holds not made or lost, by cause."},
	{"unwind.hold_budget_spent", "xsprof_unwind_holds_lost_total", COUNTER, "cause=\"budget\"",
	 0, NULL},
	{"unwind.processes", "xsprof_unwind_processes", GAUGE, NULL, 0,
	 "Processes loaded in the unwind process table."},
	{"unwind.processes_cap", "xsprof_unwind_processes_cap", GAUGE, NULL, 0,
	 "Size of the unwind process table."},
	{"unwind.processes_evicted", "xsprof_unwind_processes_evicted_total", COUNTER, NULL, 0,
	 "Processes evicted from the unwind table (loaded again at their next sample)."},
	{"unwind.processes_over_user_share", "xsprof_unwind_processes_refused_total", COUNTER,
	 "cause=\"user_share\"", 0, "Processes refused a place in the unwind table, by cause."},
	{"unwind.processes_table_full", "xsprof_unwind_processes_refused_total", COUNTER,
	 "cause=\"table_full\"", 0, NULL},
	{"unwind.builds_deferred_user_budget", "xsprof_unwind_builds_deferred_total", COUNTER, NULL,
	 0, "Table builds that waited for their user's build budget."},
	{"processes.execs", "xsprof_process_execs_total", COUNTER, NULL, 0,
	 "Exec records handled."},
	{"processes.exits", "xsprof_process_exits_total", COUNTER, NULL, 0,
	 "Exit records handled."},
	{"processes.records_over_user_budget", "xsprof_process_records_lost_total", COUNTER,
	 "cause=\"user_budget\"", 0, "Process records not sent or lost, by cause."},
	{"processes.lost_ring_buffer_full", "xsprof_process_records_lost_total", COUNTER,
	 "cause=\"ring_buffer_full\"", 0, NULL},
	{"symbolizer.bytes", "xsprof_symbolizer_bytes", GAUGE, NULL, 0,
	 "Memory of the symbolizer's cache."},
	{"symbolizer.cache_bytes", "xsprof_symbolizer_cache_bytes", GAUGE, NULL, 0,
	 "The symbolizer's cache size (--symbol-cache-mb)."},
	{"symbolizer.evictions", "xsprof_symbolizer_evictions_total", COUNTER, NULL, 0,
	 "Tables and snapshots the symbolizer dropped at its cap."},
	{"symbolizer.user_lookups", "xsprof_symbolizer_lookups_total", COUNTER, "space=\"user\"", 0,
	 "Frames named, by address space."},
	{"symbolizer.kernel_lookups", "xsprof_symbolizer_lookups_total", COUNTER,
	 "space=\"kernel\"", 0, NULL},
	{"symbolizer.user_unnamed", "xsprof_symbolizer_unnamed_total", COUNTER, "space=\"user\"", 0,
	 "Frames left unnamed, by address space."},
	{"symbolizer.kernel_unnamed", "xsprof_symbolizer_unnamed_total", COUNTER,
	 "space=\"kernel\"", 0, NULL},
	{"python.processes", "xsprof_python_processes", GAUGE, NULL, 0,
	 "CPython processes walked."},
	{"python.walks", "xsprof_python_walks_total", COUNTER, NULL, 0, "Python stacks walked."},
	{"python.procs_full", "xsprof_python_processes_refused_total", COUNTER, NULL, 0,
	 "CPython processes past the cap."},
	{"cuda_probes.calls", "xsprof_cuda_calls_total", COUNTER, NULL, 0,
	 "CUDA API calls caught by the probes."},
	{"cuda_probes.stacks_walked", "xsprof_cuda_launch_stacks_total", COUNTER, "how=\"walked\"",
	 0, "Launch stacks, walked or reused."},
	{"cuda_probes.stacks_reused", "xsprof_cuda_launch_stacks_total", COUNTER, "how=\"reused\"",
	 0, NULL},
	{"cuda_probes.lost_ring_buffer_full", "xsprof_cuda_calls_lost_total", COUNTER,
	 "cause=\"ring_buffer_full\"", 0, "CUDA calls lost, by cause."},
	{"cuda_probes.lost_scratch_busy", "xsprof_cuda_calls_lost_total", COUNTER,
	 "cause=\"scratch_busy\"", 0, NULL},
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
	{"flight.dumps_by_trigger.manual", "xsprof_flight_dumps_total", COUNTER,
	 "trigger=\"manual\"", 0, "Flight recorder dumps written, by trigger."},
	{"flight.dumps_by_trigger.gpu_idle", "xsprof_flight_dumps_total", COUNTER,
	 "trigger=\"gpu-idle\"", 0, NULL},
	{"flight.dumps_by_trigger.slow_step", "xsprof_flight_dumps_total", COUNTER,
	 "trigger=\"slow-step\"", 0, NULL},
	{"flight.dumps_by_trigger.hang", "xsprof_flight_dumps_total", COUNTER, "trigger=\"hang\"",
	 0, NULL},
	{"flight.dumps_by_trigger.death", "xsprof_flight_dumps_total", COUNTER, "trigger=\"death\"",
	 0, NULL},
	{"flight.suppressed_by_trigger.manual", "xsprof_flight_trips_suppressed_total", COUNTER,
	 "trigger=\"manual\"", 0,
	 "Trips held back by a cooldown, an hourly limit or pending dumps, by trigger."},
	{"flight.suppressed_by_trigger.gpu_idle", "xsprof_flight_trips_suppressed_total", COUNTER,
	 "trigger=\"gpu-idle\"", 0, NULL},
	{"flight.suppressed_by_trigger.slow_step", "xsprof_flight_trips_suppressed_total", COUNTER,
	 "trigger=\"slow-step\"", 0, NULL},
	{"flight.suppressed_by_trigger.hang", "xsprof_flight_trips_suppressed_total", COUNTER,
	 "trigger=\"hang\"", 0, NULL},
	{"flight.suppressed_by_trigger.death", "xsprof_flight_trips_suppressed_total", COUNTER,
	 "trigger=\"death\"", 0, NULL},
	{"flight.dumps_failed", "xsprof_flight_dump_failures_total", COUNTER, NULL, 0,
	 "Flight recorder dumps that could not be written (disk full, directory gone)."},
	{"flight.dump_bytes", "xsprof_flight_dump_bytes", GAUGE, NULL, 0,
	 "Bytes of the dumps kept (--dump-keep-mb caps them)."},
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
static void ceiling_metrics(FILE *f, struct json_object *st)
{
	static const struct {
		const char *key, *name, *help;
		enum metric_type type;
		double scale;
	} plain[] = {
		{"max_cpu_pct", "xsprof_ceiling_max_cpu_ratio",
		 "--max-cpu, as a share of all CPUs.", GAUGE, 0.01},
		{"cost_pct", "xsprof_ceiling_cost_ratio",
		 "xsprofd's cost (its CPU and its BPF programs' time) over the last second, as a "
		 "share of all CPUs.",
		 GAUGE, 0.01},
		{"bpf_s", "xsprof_ceiling_bpf_seconds_total",
		 "Run time of xsprofd's BPF programs since the ceiling was set.", COUNTER, 1},
		{"level", "xsprof_ceiling_level", "Steps of work shed now (0: none).", GAUGE, 1},
		{"rate_divisor", "xsprof_ceiling_rate_divisor",
		 "The sampling rate is the asked one divided by this; each sample counts this much.",
		 GAUGE, 1},
		{"freq_hz", "xsprof_ceiling_sample_frequency_hertz",
		 "Samples a second per CPU the window takes now.", GAUGE, 1},
		{"launch_stack_every", "xsprof_ceiling_launch_stack_every",
		 "One CUDA launch in this many has its stack walked now.", GAUGE, 1},
		{"launches_without_stack", "xsprof_ceiling_launches_without_stack_total",
		 "CUDA launches counted without their stack while launch stacks were shed.",
		 COUNTER, 1},
		{"cuda_calls_counted_only", "xsprof_ceiling_cuda_calls_counted_only_total",
		 "CUDA calls counted only, not recorded, while CUDA calls were shed.", COUNTER, 1},
		{"gpu_intake_cap_per_uid", "xsprof_ceiling_gpu_intake_cap_records_per_second",
		 "GPU records read a second from each user's CUPTI connections at most now (0: no "
		 "cap).",
		 GAUGE, 1},
	};
	struct json_object *o, *v, *now = NULL, *secs = NULL;
	const char *last = NULL;
	char labels[64];

	if (!json_object_object_get_ex(st, "ceiling", &o))
		return;
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++) {
		if (!json_object_object_get_ex(o, plain[i].key, &v))
			continue;
		family(f, plain[i].name, plain[i].type, plain[i].help, &last);
		sample(f, plain[i].name, NULL, json_object_get_double(v) * plain[i].scale);
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

enum MHD_Result metrics__api(struct service *s, struct MHD_Connection *c)
{
	static const char *const recording_states[] = {"running", "done", "failed"};
	static const char *const att_states[] = {"starting", "running", "ended"};
	struct json_object *st = status__json(s), *arr = NULL, *v;
	const char *last = NULL;
	enum MHD_Result ret;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f) {
		json_object_put(st);
		return reply__error(c, 500, "out of memory", NULL);
	}
	family(f, "xsprof_build_info", GAUGE, "xsprofd's version, as a label; always 1.", &last);
	fprintf(f, "xsprof_build_info{version=\"%s\"} 1\n",
		(v = at_path(st, "version")) ? json_object_get_string(v) : "");
	table_metrics(f, st);
	kernel_metrics(f, st);
	json_object_object_get_ex(st, "recordings", &arr);
	by_state(f, arr, "xsprof_recordings", "Recordings held, by state.", recording_states, 3);
	arr = NULL;
	json_object_object_get_ex(st, "attachments", &arr);
	by_state(f, arr, "xsprof_attachments", "Attachments, by state.", att_states, 3);
	join_metrics(f, st);
	ceiling_metrics(f, st);
	gpu_user_metrics(f, st);
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
