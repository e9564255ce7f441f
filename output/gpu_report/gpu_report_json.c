// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "daemon/base/keymap.h"
#include "daemon/base/sort.h"
#include "daemon/base/strset.h"
#include "daemon/base/vec.h"
#include "output/gpu_report/gpu_memory.h"
#include "output/gpu_report/gpu_report.h"
#include "output/gpu_report/gpu_report_internal.h"
#include "output/model/json_string.h"
#include "output/model/profile.h"

/* The GPU report as its JSON document (GPU_REPORT_SCHEMA, GPU_REPORT_VERSION). */

static void json_frames(FILE *f, const char *const *frames, size_t n)
{
	fputc('[', f);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', f);
		json__put_string(f, frames[i]);
	}
	fputc(']', f);
}

static void json_i64_or_null(FILE *f, bool known, int64_t v)
{
	if (known)
		fprintf(f, "%" PRId64, v);
	else
		fputs("null", f);
}

static void json_clock(const struct gpu_clock *c, FILE *f)
{
	int64_t lo, hi;
	bool bound = gpu_clock__bound(c, &lo, &hi);

	fprintf(f, "\"clock\":{\"launch_to_start_min_ns\":");
	json_i64_or_null(f, c->leads, c->lead_min_ns);
	fprintf(f, ",\"launches\":%" PRIu64 ",\"sync_return_after_end_min_ns\":", c->leads);
	json_i64_or_null(f, c->drains, c->drain_min_ns);
	fprintf(f, ",\"syncs\":%" PRIu64 ",\"offset_bound_ns\":", c->drains);
	if (bound)
		fprintf(f, "[%" PRId64 ",%" PRId64 "]}", lo, hi);
	else
		fputs("null}", f);
}

static void json_device(const struct gpu_report *r, const struct device *d, FILE *f)
{
	uint64_t active = d->last - d->first;
	bool first = true;

	fprintf(f,
		"{\"device\":%u,\"first_ns\":%" PRIu64 ",\"last_ns\":%" PRIu64
		",\"active_ns\":%" PRIu64 ",\"busy_ns\":%" PRIu64 ",\"idle_ns\":%" PRIu64
		",\"utilisation\":%.6f,\"profile_utilisation\":%.6f,\"kernels\":%" PRIu64
		",\"copies\":%" PRIu64 ",\"memsets\":%" PRIu64 ",",
		d->device, d->first, d->last, active, d->busy, d->idle,
		gr_share_of(d->busy, active), gr_share_of(d->busy, gr_profile_span(r)), d->kernels,
		d->copies, d->memsets);
	fprintf(f, "\"idle_by_cause\":{");
	for (int c = 0; c < GPU_IDLE_NR; c++)
		fprintf(f, "%s\"%s_ns\":%" PRIu64, c ? "," : "", gr_cause_names[c], d->idle_by[c]);
	fprintf(f,
		"},\"gaps\":{\"count\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"longest_ns\":%" PRIu64
		",\"histogram\":[",
		d->nr_gaps, d->idle, d->longest_gap);
	for (int b = 0; b < NR_GAP_BUCKETS; b++) {
		if (b < NR_GAP_BUCKETS - 1)
			fprintf(f, "%s{\"below_ns\":%" PRIu64 ",\"count\":%" PRIu64 "}",
				b ? "," : "", gr_gap_le_ns[b], d->hist[b]);
		else
			fprintf(f, ",{\"below_ns\":null,\"count\":%" PRIu64 "}", d->hist[b]);
	}
	fprintf(f, "]},\"utilisation_series\":{\"bin_ns\":%" PRIu64 ",\"busy\":[", d->bin_ns);
	for (size_t i = 0; i < d->nr_bins; i++) {
		uint64_t width = i + 1 < d->nr_bins ? d->bin_ns : active - i * d->bin_ns;

		fprintf(f, "%s%.4f", i ? "," : "", gr_share_of(d->bins[i], width));
	}
	fprintf(f, "]},\"communication\":{\"busy_ns\":%" PRIu64 ",\"overlap_ns\":%" PRIu64 "},",
		d->comm_ns, d->comm_overlap_ns);
	json_clock(&d->clock, f);
	fprintf(f, ",\"streams\":[");
	for (size_t i = 0; i < r->nr_streams; i++) {
		const struct stream_stat *st = &r->streams[i];

		if (st->device != d->device)
			continue;
		fprintf(f,
			"%s{\"stream\":%u,\"work\":%" PRIu64 ",\"joined\":%" PRIu64
			",\"launch_to_start\":{\"mean_ns\":%" PRIu64 ",\"p50_ns\":%" PRIu64
			",\"p99_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64 "}}",
			first ? "" : ",", st->stream, st->work, st->n, st->mean, st->p50, st->p99,
			st->max);
		first = false;
	}
	fprintf(f, "]}");
}

/* A host-bound finding's wait chain: where the launching thread waited, each thread that woke
 * the one before (the nearest first), and where the last one's time went. */
static void json_chain(const struct finding *x, FILE *f)
{
	const struct chain_stat *c = x->chain;

	fprintf(f,
		",\"chain\":{\"explained_share\":%.6g,\"idle_ns\":%" PRIu64 ",\"work_ns\":%" PRIu64
		",\"waiting\":{\"pid\":%u,\"tid\":%u,\"stack\":",
		x->explained, c->ns, c->work_ns, c->pid, c->tid);
	json_frames(f, (const char *const *)c->wait_frames, c->nr_wait_frames);
	fprintf(f, "},\"hops\":[");
	for (uint32_t h = 0; h < c->nr_hops; h++) {
		fprintf(f, "%s{\"pid\":%u,\"tid\":%u,\"process\":", h ? "," : "", c->hop_pid[h],
			c->hop_tid[h]);
		if (c->hop_names[h])
			json__put_string(f, c->hop_names[h]);
		else
			fputs("null", f);
		fprintf(f, ",\"stack\":");
		json_frames(f, (const char *const *)c->hop_frames[h], c->nr_hop_frames[h]);
		fputc('}', f);
	}
	fprintf(f, "],\"work\":{\"frame\":");
	if (x->work_frame)
		json__put_string(f, x->work_frame);
	else
		fputs("null", f);
	fprintf(f, ",\"share\":%.6g},\"why\":", x->work_share);
	json__put_string(f, x->why);
	fputc('}', f);
}

static void json_finding(const struct finding *x, FILE *f)
{
	fprintf(f, "{\"kind\":\"%s\",\"severity\":\"%s\",\"device\":%u,\"summary\":", x->kind,
		x->severity, x->device);
	json__put_string(f, x->summary);
	fprintf(f, ",\"figures\":{");
	for (size_t k = 0; k < x->nr_fig; k++) {
		if (x->fig[k].is_ratio)
			fprintf(f, "%s\"%s\":%.6g", k ? "," : "", x->fig[k].key, x->fig[k].d);
		else
			fprintf(f, "%s\"%s\":%" PRIu64, k ? "," : "", x->fig[k].key, x->fig[k].u);
	}
	fprintf(f, "},\"pid\":%u,\"api\":", x->pid);
	if (x->api)
		json__put_string(f, x->api);
	else
		fputs("null", f);
	fprintf(f, ",\"stack\":");
	json_frames(f, x->frames, x->nr_frames);
	if (x->chain)
		json_chain(x, f);
	fprintf(f, ",\"advice\":");
	json__put_string(f, x->advice);
	fputc('}', f);
}

static void json_places(FILE *f, const struct gpu_mem_stack *const *v, size_t n, bool at_peak)
{
	fputc('[', f);
	for (size_t k = 0; k < n; k++) {
		fprintf(f, "%s{\"bytes\":%" PRIu64 ",\"allocations\":%" PRIu64 ",\"api\":",
			k ? "," : "", at_peak ? v[k]->at_peak : v[k]->live, v[k]->allocs);
		json__put_string(f, v[k]->api ? v[k]->api : "");
		fprintf(f, ",\"stack\":");
		json_frames(f, v[k]->frames, v[k]->nr_frames);
		fputc('}', f);
	}
	fputc(']', f);
}

static void json_ranges(const struct gpu_report *r, FILE *f)
{
	for (size_t i = 0; i < r->nr_ranges; i++) {
		const struct range_stat *x = &r->ranges[i];

		fprintf(f, "%s{\"domain\":", i ? "," : "");
		if (x->domain)
			json__put_string(f, x->domain);
		else
			fputs("null", f);
		fprintf(f, ",\"name\":");
		json__put_string(f, x->name);
		fprintf(f, ",\"gpu_ns\":%" PRIu64 ",\"idle_ns\":%" PRIu64 ",\"idle_by_cause\":{",
			x->gpu_ns, gr_range_idle(x));
		for (int c = 0; c < GPU_IDLE_NR; c++)
			fprintf(f, "%s\"%s_ns\":%" PRIu64, c ? "," : "", gr_cause_names[c],
				x->idle[c]);
		fprintf(f, "},\"allocated_bytes\":%" PRIu64 "}", x->allocated);
	}
}

static void json_memory(const struct gpu_report *r, FILE *f)
{
	for (size_t i = 0; r->mem && i < r->mem->nr_procs; i++) {
		const struct gpu_mem_proc *p = &r->mem->procs[i];

		fprintf(f, "%s{\"pid\":%u,\"device\":", i ? "," : "", p->pid);
		if (p->device >= 0)
			fprintf(f, "%d", p->device);
		else
			fputs("null", f);
		fprintf(f,
			",\"allocations\":%" PRIu64 ",\"frees\":%" PRIu64 ",\"failed\":%" PRIu64
			",\"unknown_frees\":%" PRIu64 ",\"allocated_bytes\":%" PRIu64
			",\"peak_bytes\":%" PRIu64 ",\"peak_ns\":%" PRIu64 ",\"end_bytes\":%" PRIu64
			",\"end_allocations\":%" PRIu64 ",\"at_peak\":",
			p->allocs, p->frees, p->failed, p->unknown_frees, p->allocated, p->peak,
			p->peak_ns, p->end, p->end_allocs);
		json_places(f, p->at_peak, p->nr_at_peak, true);
		fprintf(f, ",\"at_end\":");
		json_places(f, p->at_end, p->nr_at_end, false);
		fprintf(f, ",\"failed_at\":");
		if (p->failed_at)
			json_places(f, &p->failed_at, 1, false);
		else
			fputs("[]", f);
		fprintf(f, ",\"untracked\":%" PRIu64 "}", r->mem->untracked);
	}
}

int gpu_report__write_json(const struct gpu_report *r, FILE *f)
{
	const struct launch_facts *lf = &r->launch;
	bool first = true;

	fprintf(f,
		"{\"schema\":\"%s\",\"version\":%d,\"window\":{\"start_ns\":%" PRIu64
		",\"end_ns\":%" PRIu64 "},\"thresholds\":{\"launch_gap_ns\":%llu,"
		"\"sync_slack_ns\":%llu},\"devices\":[",
		GPU_REPORT_SCHEMA, GPU_REPORT_VERSION, r->start_ns, r->end_ns,
		GPU_REPORT_LAUNCH_GAP_NS, GPU_REPORT_SYNC_SLACK_NS);
	for (size_t i = 0; i < r->nr_dev; i++) {
		if (i)
			fputc(',', f);
		json_device(r, &r->dev[i], f);
	}
	fprintf(f, "],\"findings\":[");
	for (size_t i = 0; i < r->nr_findings; i++) {
		if (i)
			fputc(',', f);
		json_finding(&r->findings[i], f);
	}
	fprintf(f, "],\"idle_causes\":[");
	for (size_t i = 0; i < r->nr_blames; i++) {
		const struct blame *b = &r->blames[i];

		fprintf(f,
			"%s{\"cause\":\"%s\",\"device\":%u,\"pid\":%u,\"tid\":%u,\"ns\":%" PRIu64
			",\"gaps\":%" PRIu64 ",\"api\":",
			i ? "," : "", gr_cause_names[b->cause], b->device, b->pid, b->tid, b->ns,
			b->gaps);
		if (b->api)
			json__put_string(f, b->api);
		else
			fputs("null", f);
		fprintf(f, ",\"stack\":");
		json_frames(f, (const char *const *)b->frames, b->nr_frames);
		fputc('}', f);
	}
	fprintf(f, "],\"kernels\":[");
	for (size_t i = 0; i < r->nr_kernels; i++) {
		const struct kernel_stat *k = &r->kernels[i];

		fprintf(f, "%s{\"name\":", i ? "," : "");
		json__put_string(f, k->name);
		fprintf(f,
			",\"count\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64
			",\"pid\":%u,\"stack\":",
			k->count, k->total, k->max, k->pid);
		json_frames(f, (const char *const *)k->frames, k->nr_frames);
		fputc('}', f);
	}
	fprintf(f,
		"],\"launches\":{\"kernels\":%" PRIu64 ",\"intervals\":%" PRIu64
		",\"shorter_than_interval\":%" PRIu64 ",\"median_kernel_ns\":%" PRIu64
		",\"median_interval_ns\":%" PRIu64 ",\"per_s\":%.3f,\"api_ns\":%" PRIu64
		",\"api_tid\":%u},\"copies\":[",
		lf->kernels, lf->intervals, lf->shorter, lf->median_kernel_ns,
		lf->median_interval_ns, lf->rate_per_s, lf->api_ns, lf->api_tid);
	for (size_t i = 0; i < sizeof(r->copies) / sizeof(r->copies[0]); i++) {
		const struct copy_stat *c = &r->copies[i];

		if (!c->count)
			continue;
		fprintf(f,
			"%s{\"direction\":\"%s\",\"host_memory\":\"%s\",\"async\":%s,\"count\":%" PRIu64
			",\"bytes\":%" PRIu64 ",\"ns\":%" PRIu64 ",\"gb_per_s\":%.4f}",
			first ? "" : ",", gr_dir_name(c->dir),
			c->host_mem == CORR_HOST_MEM_UNKNOWN ? "unknown"
							     : gr_host_mem_name(c->host_mem),
			c->async ? "true" : "false", c->count, c->bytes, c->ns,
			c->ns ? (double)c->bytes / (double)c->ns : 0);
		first = false;
	}
	fprintf(f, "],\"ranges\":[");
	json_ranges(r, f);
	fprintf(f, "],\"memory\":[");
	json_memory(r, f);
	fprintf(f, "]}\n");
	return ferror(f) ? -EIO : 0;
}
