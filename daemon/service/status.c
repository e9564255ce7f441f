// SPDX-License-Identifier: Apache-2.0
/* GET /v1/status, and the status line systemd shows. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>
#include <systemd/sd-daemon.h>

#include "bpf/xsprof_events.h"
#include "correlate/correlate.h"
#include "cupti_inject/xsprof_wire.h"
#include "daemon/base/clock.h"
#include "daemon/cuda/cuda_probes.h"
#include "daemon/cuda/launch_store.h"
#include "daemon/gpu/cupti_server.h"
#include "daemon/gpu/gpu_records.h"
#include "daemon/options.h"
#include "daemon/probes/features.h"
#include "daemon/probes/proc_events.h"
#include "daemon/probes/sampler.h"
#include "daemon/service/http.h"
#include "daemon/service/export.h"
#include "daemon/service/gpu_metrics.h"
#include "daemon/service/internal.h"
#include "daemon/service/status_doc.h"
#include "daemon/session/ceiling.h"
#include "daemon/session/counters.h"
#include "daemon/session/counters_report.h"
#include "daemon/session/lasting.h"
#include "daemon/session/report_window.h"
#include "daemon/session/window.h"
#include "daemon/session/recording.h"
#include "daemon/stacks/stack_table.h"
#include "daemon/symbolize/symbolizer.h"
#include "daemon/unwind/unwinder.h"
#include "output/model/frame_sites.h"

static long status__rss_bytes(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * sysconf(_SC_PAGESIZE);
}

/* Counters since start: recordings retired by reloads plus the running one, read live. */
static void status__always_counters(struct service *s, struct xsprof_cpu_stats *ret,
				    uint64_t *ret_bad)
{
	struct xsprof_cpu_stats now;
	struct sampler_stats us;

	*ret = s->totals;
	*ret_bad = s->totals_bad;
	if (!s->machine.recording)
		return;
	if (!sampler__read_stats(recording__sampler(s->machine.recording), NULL, &now))
		xsprof_cpu_stats__add(ret, &now);
	sampler__user_stats(recording__sampler(s->machine.recording), &us);
	*ret_bad += us.bad_records;
}

/* The always-on recording's counters, gathered for the table (daemon/session/counters.h). */
static void status__snapshot(struct service *s, struct counters_snapshot *ret)
{
	struct recording *r = s->machine.recording;
	struct cuda_probes *cp;

	memset(ret, 0, sizeof(*ret));
	status__always_counters(s, &ret->cpu, &ret->bad_records);
	ret->has[COUNTERS_SAMPLER] = true;
	symbolizer__stats(s->sym, &ret->sym);
	ret->sym_cache_bytes = symbolizer__cache_bytes(s->sym);
	ret->has[COUNTERS_SYMBOLIZER] = true;
	if (!r)
		return;
	recording__stats(r, &ret->rec);
	ret->has[COUNTERS_PROCESSES] = true;
	stack_table__stats(recording__stacks(r), &ret->stacks);
	ret->has[COUNTERS_STACKS] = true;
	if (!recording__unwind_stats(r, &ret->unwind_bpf, &ret->unwind)) {
		ret->unwind_mb = recording__unwind_mb(r);
		ret->has[COUNTERS_UNWIND] = true;
	}
	ret->has[COUNTERS_PYTHON] = !recording__python_stats(r, &ret->py_bpf, &ret->py);
	recording__autograd_stats(r, &ret->ag_bpf, &ret->ag); /* zeros without */
	cp = recording__cuda(r);
	if (cp && !cuda_probes__stats(cp, &ret->cuda)) {
		/* Emptied with each window slice: it never fills. */
		ret->launches_in_slice = launch_store__nr_events(cuda_probes__store(cp));
		ret->has[COUNTERS_CUDA] = true;
	}
	ret->has[COUNTERS_OFFCPU] = !recording__offcpu_stats(r, &ret->offcpu);
}

/* What the table has no row for: the files without a table by name, why Python is not walked. */
static void status__add_named(const struct counters_snapshot *c, struct json_object *j)
{
	struct json_object *u, *files;

	/* The files walked by frame pointers for want of a table, and why: the first met. */
	if (c->unwind.nr_refused && json_object_object_get_ex(j, "unwind", &u)) {
		files = json_object_new_array();
		for (uint32_t i = 0; i < c->unwind.nr_refused && i < UW_REFUSED_NAMED; i++) {
			const struct unwinder_refused *f = &c->unwind.refused[i];
			struct json_object *o = json_object_new_object();

			json_object_object_add(o, "path",
					       json_object_new_string(f->path ? f->path : "?"));
			json_object_object_add(o, "why", json_object_new_string(f->why));
			json_object_array_add(files, o);
		}
		json_object_object_add(u, "files_without_table_named", files);
	}
	if (c->py.last_reason && json_object_object_get_ex(j, "python", &u))
		json_object_object_add(u, "unsupported_reason",
				       json_object_new_string(c->py.last_reason));
}

static uint64_t status__sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* The control API's connections and what its caps refused, both servers together. */
static struct json_object *status__api_json(struct service *s)
{
	struct http_server_stats t = {}, u;
	struct http_server *servers[] = {s->unix_http, s->tcp_http};
	struct json_object *o = json_object_new_object();

	for (size_t i = 0; i < 2; i++) {
		if (!servers[i])
			continue;
		http_server__stats(servers[i], &u);
		t.conns += u.conns;
		t.accepted += u.accepted;
		t.refused_full += u.refused_full;
		t.refused_share += u.refused_share;
		t.header_timeouts += u.header_timeouts;
		t.wait_timeouts += u.wait_timeouts;
		t.waiters_hung_up += u.waiters_hung_up;
		t.accept_errors += u.accept_errors;
		t.evicted_unauth += u.evicted_unauth;
		t.token_failures += u.token_failures;
		t.refused_backoff += u.refused_backoff;
	}
	status_doc__add_u64(o, "connections", t.conns);
	status_doc__add_u64(o, "accepted", t.accepted);
	status_doc__add_u64(o, "refused_at_limit", t.refused_full);
	status_doc__add_u64(o, "refused_over_share", t.refused_share);
	status_doc__add_u64(o, "header_timeouts", t.header_timeouts);
	status_doc__add_u64(o, "wait_timeouts", t.wait_timeouts);
	status_doc__add_u64(o, "waiters_hung_up", t.waiters_hung_up);
	status_doc__add_u64(o, "accept_errors", t.accept_errors);
	status_doc__add_u64(o, "tcp_evicted_without_token", t.evicted_unauth);
	status_doc__add_u64(o, "tcp_wrong_tokens", t.token_failures);
	status_doc__add_u64(o, "tcp_refused_after_wrong_tokens", t.refused_backoff);
	status_doc__add_u64(o, "recordings_refused_full", s->refused.recordings_full);
	status_doc__add_u64(o, "recordings_refused_user_cap", s->refused.recordings_uid);
	status_doc__add_u64(o, "recordings_refused_user_seconds", s->refused.record_seconds_uid);
	status_doc__add_u64(o, "recordings_ended_owner_changed", s->refused.ended_owner_changed);
	status_doc__add_u64(o, "attach_refused_full", s->refused.attach_full);
	status_doc__add_u64(o, "attach_refused_user_cap", s->refused.attach_uid);
	status_doc__add_u64(o, "starts_refused_user_rate", s->refused.start_rate);
	status_doc__add_u64(o, "attach_gone_pruned", s->refused.attach_dead_pruned);
	status_doc__add_u64(o, "detached_owner_changed", s->refused.detached_owner_changed);
	return o;
}

/* Every cap a client can run into, so a refusal can be explained. */
static struct json_object *status__limits_json(struct service *s)
{
	struct json_object *o = json_object_new_object();

	status_doc__add_u64(o, "connections", HTTP_MAX_CONNECTIONS);
	status_doc__add_u64(o, "connections_root_only", HTTP_ROOT_RESERVE);
	status_doc__add_u64(o, "connections_per_user", HTTP_MAX_CONNECTIONS_PER_PEER);
	status_doc__add_u64(o, "request_deadline_s", HTTP_HEADER_DEADLINE_S);
	status_doc__add_u64(o, "tcp_without_token", HTTP_TCP_UNAUTH_MAX);
	status_doc__add_u64(o, "tcp_handshake_deadline_s", HTTP_TCP_HANDSHAKE_S);
	status_doc__add_u64(o, "tcp_wrong_tokens_per_minute", HTTP_TOKEN_FAILS_MAX);
	status_doc__add_u64(o, "tcp_wrong_token_backoff_s", HTTP_TOKEN_BACKOFF_S);
	status_doc__add_u64(o, "recordings", MAX_RECORDINGS);
	status_doc__add_u64(o, "recordings_root_only", RECORDINGS_ROOT_SLOTS);
	status_doc__add_u64(o, "recordings_per_user", RECORDINGS_PER_UID);
	status_doc__add_u64(o, "recorded_seconds_per_user", s->opts->max_record_s);
	status_doc__add_u64(o, "results_kept", MAX_FINISHED);
	status_doc__add_u64(o, "results_kept_per_user", FINISHED_PER_UID);
	status_doc__add_u64(o, "attached", MAX_ATTACHED);
	status_doc__add_u64(o, "attached_root_only", ATTACHED_ROOT_SLOTS);
	status_doc__add_u64(o, "attached_per_user", ATTACHED_PER_UID);
	status_doc__add_u64(o, "starts_at_once_per_user", START_BURST);
	status_doc__add_u64(o, "start_every_s_per_user", START_REFILL_NS / 1000000000ull);
	return o;
}

/* Launches joined to GPU work, per strategy, over every session so far. */
static struct json_object *status__correlation_json(struct service *s)
{
	struct json_object *o = json_object_new_object();

	for (int i = 0; i < NR_STRATEGIES; i++) {
		const struct correlate_stats *c = &s->corr[i];
		struct json_object *k = json_object_new_object();

		status_doc__add_u64(k, "matched", c->matched);
		status_doc__add_u64(k, "unmatched_launches", c->unmatched_cpu);
		status_doc__add_u64(k, "unmatched_gpu", c->unmatched_gpu);
		status_doc__add_u64(k, "late_launches", c->late_cpu);
		status_doc__add_u64(k, "late_gpu", c->late_gpu);
		json_object_object_add(o, recordings__strategies[i], k);
	}
	return o;
}

static void add_num(struct json_object *o, const char *k, double v)
{
	/* Three decimals are enough for a share or a cost; NaN and infinities are not JSON. */
	json_object_object_add(o, k,
			       json_object_new_double(isfinite(v) ? round(v * 1e3) / 1e3 : 0));
}

/*
 * What profiling costs here: xsprofd's own CPU since it started (a share of one CPU), and the
 * BPF programs' time per sample and per CUDA launch, from the one run in XSPROF_TIMED_EVERY
 * that they time themselves (the kernel's BPF statistics would tax every program).
 */
static struct json_object *cost_json(struct service *s, const struct xsprof_cpu_stats *c)
{
	struct json_object *o = json_object_new_object();
	double up = (double)(clock__mono_ns() - s->started_ns) / 1e9, cpu = clock__cpu_s(), per = 0;
	add_num(o, "own_cpu_s", cpu);
	add_num(o, "own_cpu_pct", up > 0 ? 100.0 * cpu / up : 0);
	if (c->timed)
		per = (double)c->timed_ns / (double)c->timed;
	add_num(o, "bpf_ns_per_sample", per);
	add_num(o, "bpf_cpu_pct", up > 0 ? 100.0 * per * (double)c->samples / (up * 1e9) : 0);
	per = 0;
	if (s->machine.recording && recording__cuda(s->machine.recording)) {
		struct cuda_probes_stats ps;

		if (!cuda_probes__stats(recording__cuda(s->machine.recording), &ps) &&
		    ps.reuse.timed)
			per = (double)ps.reuse.timed_ns / (double)ps.reuse.timed;
	}
	add_num(o, "bpf_ns_per_launch", per);
	return o;
}

/* --max-cpu: the ceiling, what profiling costs against it, and what is shed (ceiling.h). */
static struct json_object *ceiling_json(struct service *s)
{
	struct json_object *o = json_object_new_object(), *now = json_object_new_array(),
			   *secs = json_object_new_object();
	struct ceiling_stats cs;

	ceiling__stats(s->ceiling, &cs);
	add_num(o, "max_cpu_pct", cs.max_pct);
	status_doc__add_u64(o, "cpus", (uint64_t)cs.cpus);
	add_num(o, "cost_pct", cs.cost_pct);
	add_num(o, "avg_cost_pct", cs.avg_pct);
	add_num(o, "own_cpu_s", cs.own_cpu_s);
	add_num(o, "bpf_s", cs.bpf_s);
	add_num(o, "span_s", cs.span_s);
	json_object_object_add(o, "bpf_measured", json_object_new_boolean(cs.bpf_measured));
	status_doc__add_u64(o, "level", cs.level);
	status_doc__add_u64(o, "levels", cs.levels);
	json_object_object_add(o, "all_shed", json_object_new_boolean(cs.all_shed));
	status_doc__add_u64(o, "rate_divisor", cs.rate_div);
	add_num(o, "freq_hz", (double)s->opts->freq_hz / cs.rate_div);
	status_doc__add_u64(o, "launch_stack_every", cs.launch_stack_every);
	status_doc__add_u64(o, "steps_shed", cs.steps_up);
	status_doc__add_u64(o, "steps_restored", cs.steps_down);
	status_doc__add_u64(o, "hold_s", cs.hold_s);
	status_doc__add_u64(o, "gpu_intake_cap_per_uid", cs.intake_cap);
	for (int k = 0; k < CEILING_KINDS; k++) {
		if (cs.shed[k])
			json_object_array_add(now, json_object_new_string(ceiling__kind_key(k)));
		add_num(secs, ceiling__kind_key(k), cs.shed_s[k]);
	}
	json_object_object_add(o, "shed_now", now);
	json_object_object_add(o, "shed_s", secs);
	/* The window's launches counted in the kernel only: in the totals, not in the stacks. */
	if (s->machine.recording && recording__cuda(s->machine.recording)) {
		struct cuda_probes_stats ps;

		if (!cuda_probes__stats(recording__cuda(s->machine.recording), &ps)) {
			status_doc__add_u64(o, "launches_without_stack", ps.bpf.stacks_shed);
			status_doc__add_u64(o, "cuda_calls_counted_only", ps.bpf.calls_shed);
		}
	}
	return o;
}

/* The recordings on request, each with its state and what it lost. */
static struct json_object *recordings_json(struct service *s)
{
	struct json_object *recordings = json_object_new_array();

	for (struct svc_recording *r = s->recordings; r; r = r->next) {
		struct json_object *o = json_object_new_object();

		status_doc__add_u64(o, "id", r->id);
		json_object_object_add(
			o, "state",
			json_object_new_string(r->state == RECORDING_RUNNING ? "running"
					       : r->state == RECORDING_DONE  ? "done"
									     : "failed"));
		status_doc__add_u64(o, "owner_uid", r->owner);
		if (r->recording) {
			struct recording_stats rs;

			recording__stats(r->recording, &rs);
			status_doc__add_left_out(o, &rs.owner);
		} else {
			status_doc__add_left_out(o, &r->left_out);
			status_doc__add_u64(o, "lost_ring_buffer_full", r->lost);
			json_object_object_add(o, "daemon_stalled_s",
					       json_object_new_double(r->stalled_ns / 1e9));
		}
		if (r->note[0])
			json_object_object_add(o, "note", json_object_new_string(r->note));
		json_object_array_add(recordings, o);
	}
	return recordings;
}

/* The rolling window: its slices, their GPU reports, and the slices waiting for ranges. */
static struct json_object *store_json(struct service *s)
{
	struct json_object *st = json_object_new_object();
	struct window_stats ss;

	window__stats(s->machine.cpu, &ss);
	status_doc__add_u64(st, "slices", ss.slices);
	status_doc__add_u64(st, "samples", ss.samples);
	status_doc__add_u64(st, "bytes", ss.bytes);
	status_doc__add_u64(st, "cap_bytes", ss.cap_bytes);
	status_doc__add_u64(st, "expired_slices", ss.expired_slices);
	status_doc__add_u64(st, "merged_slices", ss.merged_slices);
	status_doc__add_u64(st, "dropped_slices", ss.dropped_slices);
	status_doc__add_u64(st, "dropped_samples", ss.dropped_samples);
	status_doc__add_u64(st, "span_s",
			    ss.newest_ns ? (ss.newest_ns - ss.oldest_ns) / 1000000000ull : 0);
	if (s->machine.reports) {
		struct report_window_stats rs;

		/* The GPU reports, one per slice and user, capped apart (a quarter of the cap). */
		report_window__stats(s->machine.reports, &rs);
		status_doc__add_u64(st, "gpu_reports", rs.reports);
		status_doc__add_u64(st, "gpu_reports_bytes", rs.bytes);
		status_doc__add_u64(st, "gpu_reports_cap_bytes", rs.cap_bytes);
		status_doc__add_u64(st, "gpu_reports_expired", rs.expired);
		status_doc__add_u64(st, "gpu_reports_merged", rs.merged);
		status_doc__add_u64(st, "gpu_reports_dropped", rs.dropped);
		status_doc__add_u64(st, "gpu_reports_dropped_bytes", rs.dropped_bytes);
		/* Samples past the slice's timeline cap: not on the reports' host stacks. */
		status_doc__add_u64(st, "gpu_reports_samples_dropped",
				    s->machine.report_samples_dropped);
	}
	if (s->machine.group_by) {
		size_t waiting;
		uint64_t waiting_samples;

		/* --window-group-by: the slices waiting for their ranges to end, and the cap. */
		lasting__waiting(&s->machine, &waiting, &waiting_samples);
		json_object_object_add(
			st, "group_by",
			json_object_new_string(session_group__name(s->machine.group_by)));
		status_doc__add_u64(st, "waiting_slices", waiting);
		status_doc__add_u64(st, "waiting_samples", waiting_samples);
		/* The CPU samples before this (daemon monotonic ms) are in the window. */
		status_doc__add_u64(st, "named_to_ms", lasting__oldest_ns(&s->machine) / 1000000);
		status_doc__add_u64(st, "range_dropped", s->machine.range_dropped);
		/* --window-range-wait: how long a sample waits for its range to end. */
		status_doc__add_u64(st, "range_wait_s", s->machine.late_ns / 1000000000ull);
	}
	return st;
}

static struct json_object *memory_json(struct service *s)
{
	struct json_object *mem = json_object_new_object();

	status_doc__add_u64(mem, "rss_bytes", (uint64_t)status__rss_bytes());
	if (s->sites) {
		struct frame_sites_stats fss;

		/* Where pprof's frame names came from: emptied when its cap is reached. */
		frame_sites__stats(s->sites, &fss);
		status_doc__add_u64(mem, "frame_sites_names", fss.names);
		status_doc__add_u64(mem, "frame_sites_bytes", fss.bytes);
		status_doc__add_u64(mem, "frame_sites_cap_bytes", XSPROFD_SERVICE_SITES_BYTES);
		status_doc__add_u64(mem, "frame_sites_resets", fss.resets);
		status_doc__add_u64(mem, "frame_sites_refused", fss.refused);
	}
	return mem;
}

/* Each sender uid's share of the GPU record store: what it holds, and what it lost. */
static struct json_object *gpu_users_json(struct service *s)
{
	struct gpu_store_user_stats us[GPU_STORE_MAX_USERS];
	size_t n = gpu_store__user_stats(cupti_server__store(s->cupti), us, GPU_STORE_MAX_USERS);
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; i < n; i++) {
		struct json_object *o = json_object_new_object();

		status_doc__add_u64(o, "uid", us[i].uid);
		status_doc__add_u64(o, "records", us[i].records);
		status_doc__add_u64(o, "bytes", us[i].bytes);
		status_doc__add_u64(o, "open_bytes", us[i].open_bytes);
		status_doc__add_u64(o, "evicted", us[i].evicted);
		status_doc__add_u64(o, "refused", us[i].refused);
		status_doc__add_u64(o, "open_refused", us[i].open_refused);
		json_object_array_add(a, o);
	}
	return a;
}

/* Connections by the GPU timing policy their library said (cupti_inject/README.md). */
static struct json_object *policy_json(const struct cupti_server_stats *cs)
{
	struct json_object *o = json_object_new_object();

	for (int p = 0; p < XSPROF_WIRE_POLICY_END; p++)
		status_doc__add_u64(o, xsprof_wire_policy_name(p), cs->policy[p]);
	return o;
}

/* The CUPTI pipe and the GPU record store. */
static struct json_object *gpu_json(struct service *s)
{
	struct cupti_server_stats cs;
	struct json_object *g = json_object_new_object();

	cupti_server__stats(s->cupti, &cs);
	status_doc__add_u64(g, "connections", cs.conns);
	status_doc__add_u64(g, "accepted", cs.accepted);
	status_doc__add_u64(g, "malformed_connections", cs.malformed);
	status_doc__add_u64(g, "kernels", cs.records[XSPROF_WIRE_KERNEL]);
	status_doc__add_u64(g, "memcpys", cs.records[XSPROF_WIRE_MEMCPY]);
	status_doc__add_u64(g, "memsets", cs.records[XSPROF_WIRE_MEMSET]);
	status_doc__add_u64(g, "api_calls", cs.records[XSPROF_WIRE_API]);
	status_doc__add_u64(
		g, "sender_dropped",
		status__sat_add(status__sat_add(cs.sender_dropped_full, cs.sender_dropped_cupti),
				cs.sender_dropped_other));
	status_doc__add_u64(g, "refused_connections", cs.rejected);
	status_doc__add_u64(g, "idle_connections_closed", cs.idle_closed);
	status_doc__add_u64(g, "records_held", cs.store.records);
	status_doc__add_u64(g, "records_evicted", cs.store.evicted);
	status_doc__add_u64(g, "nvtx_open_refused", cs.store.open_refused);
	status_doc__add_u64(g, "users_refused", cs.store.users_refused);
	status_doc__add_u64(g, "slices_closed_early", s->slices_early);
	status_doc__add_u64(g, "intake_pauses", cs.intake_pauses);
	add_num(g, "intake_paused_s", (double)cs.intake_paused_ns / 1e9);
	if (cs.intake_pauses)
		status_doc__add_u64(g, "intake_last_paused_uid", cs.intake_last_paused_uid);
	json_object_object_add(g, "users", gpu_users_json(s));
	json_object_object_add(g, "senders_by_policy", policy_json(&cs));
	return g;
}

/* The kernel's features (daemon/probes/features.h): each 1 or 0, and what runs in place of
 * each missing one. */
static struct json_object *kernel_json(void)
{
	const struct kfeatures *k = kfeatures__get();
	struct json_object *o = json_object_new_object(), *f = json_object_new_object(),
			   *fb = json_object_new_array();

	json_object_object_add(o, "release", json_object_new_string(k->release));
	for (int i = 0; i < KF_MAX; i++) {
		const struct kfeature_row *r = &kfeature_rows[i];
		struct json_object *e;

		json_object_object_add(f, r->name, json_object_new_int(kfeatures__has(k, i)));
		if (kfeatures__has(k, i))
			continue;
		e = json_object_new_object();
		json_object_object_add(e, "feature", json_object_new_string(r->name));
		json_object_object_add(e, "since", json_object_new_string(r->since));
		json_object_object_add(e, "instead", json_object_new_string(r->without));
		json_object_array_add(fb, e);
	}
	json_object_object_add(o, "features", f);
	json_object_object_add(o, "fallbacks", fb);
	return o;
}

struct json_object *status__json(struct service *s)
{
	struct json_object *j = json_object_new_object(), *a;
	struct counters_snapshot c;

	json_object_object_add(j, "version", json_object_new_string(XSPROF_VERSION));
	status_doc__add_u64(j, "pid", (uint64_t)getpid());
	json_object_object_add(j, "kernel", kernel_json());
	status_doc__add_u64(j, "uptime_s", (clock__mono_ns() - s->started_ns) / 1000000000ull);
	status_doc__add_u64(j, "freq_hz", s->opts->freq_hz);
	status_doc__add_u64(j, "window_s", s->opts->window_s);
	status_doc__add_u64(
		j, "cpus",
		s->machine.recording ? (uint64_t)recording__nr_attached(s->machine.recording) : 0);
	a = json_object_new_array();
	for (int i = 0; i < s->nr_attached; i++)
		json_object_array_add(a, json_object_new_int(s->attached[i]->pid));
	json_object_object_add(j, "attachments", attachments__json(s));
	json_object_object_add(j, "attached", a);
	json_object_object_add(j, "recordings", recordings_json(s));
	status__snapshot(s, &c);
	counters__json(&c, j);
	status__add_named(&c, j);
	json_object_object_add(j, "cost", cost_json(s, &c.cpu));
	if (s->ceiling)
		json_object_object_add(j, "ceiling", ceiling_json(s));
	json_object_object_add(j, "store", store_json(s));
	json_object_object_add(j, "memory", memory_json(s));
	json_object_object_add(j, "correlation", status__correlation_json(s));
	json_object_object_add(j, "api", status__api_json(s));
	json_object_object_add(j, "export", exporter__json(s->exporter));
	json_object_object_add(j, "limits", status__limits_json(s));
	if (s->cupti)
		json_object_object_add(j, "gpu", gpu_json(s));
	if (s->gpu_metrics)
		json_object_object_add(j, "gpu_metrics", gpu_metrics__status(s->gpu_metrics));
	if (s->flight)
		json_object_object_add(j, "flight", flight_api__status(s));
	return j;
}

/* The service's end-of-run report, as it stops: --stats FILE and, with -v, the counters' lines. */
int status__end_report(struct service *s)
{
	struct counters_snapshot c;

	status__snapshot(s, &c);
	return counters_report__end(&c, s->opts->stats_path, s->opts->verbose);
}

void status__notify(struct service *s)
{
	struct xsprof_cpu_stats c;
	struct window_stats ss;
	uint64_t bad;

	status__always_counters(s, &c, &bad);
	window__stats(s->machine.cpu, &ss);
	sd_notifyf(0,
		   "STATUS=%u Hz on %d CPUs; %llu samples (%llu lost); window holds %llu samples "
		   "in %zu slices, %zu KiB of %zu",
		   s->opts->freq_hz,
		   s->machine.recording ? recording__nr_attached(s->machine.recording) : 0,
		   (unsigned long long)c.samples, (unsigned long long)(c.drop_ringbuf + bad),
		   (unsigned long long)ss.samples, ss.slices, ss.bytes >> 10, ss.cap_bytes >> 10);
}
