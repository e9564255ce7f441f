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

/* The GPU report as text for a person, 80 columns. */
#define TOP	    10 /* kernels, idle causes, syncs listed */
#define TEXT_FRAMES 8  /* innermost frames a text report shows of a stack */

static const char *fmt_ns(char *buf, size_t size, uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, size, "%" PRIu64 " ns", ns);
	else if (ns < MS)
		snprintf(buf, size, "%.1f us", ns / 1e3);
	else if (ns < S)
		snprintf(buf, size, "%.1f ms", ns / 1e6);
	else
		snprintf(buf, size, "%.3f s", ns / 1e9);
	return buf;
}

#define NS(x) fmt_ns((char[24]){0}, 24, (x))

/* A line of at most 80 columns: longer ones are cut (at a UTF-8 character's start). */
__attribute__((format(printf, 2, 3))) static void line(FILE *f, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	n = strlen(buf);
	if (n > 80) {
		n = 80;
		while (n && ((unsigned char)buf[n] & 0xC0) == 0x80)
			n--;
		buf[n] = 0;
	}
	fprintf(f, "%s\n", buf);
}

/* Words of text wrapped at 80 columns: the first line after lead, the others indented as far. */
static void wrap(FILE *f, const char *lead, const char *text)
{
	char buf[81], indent[41];
	size_t len = 0, ind = strlen(lead) < 40 ? strlen(lead) : 40;
	const char *p = text;

	memset(indent, ' ', ind);
	indent[ind] = 0;
	while (*p) {
		const char *w = p;
		size_t wl;

		while (*p && *p != ' ')
			p++;
		wl = (size_t)(p - w);
		while (*p == ' ')
			p++;
		if (len && len + 1 + wl > 80) {
			fprintf(f, "%.*s\n", (int)len, buf);
			len = 0;
		}
		if (!len) {
			len = ind;
			memcpy(buf, lead ? lead : indent, len);
			lead = indent;
		} else {
			buf[len++] = ' ';
		}
		if (wl > 80 - len)
			wl = 80 - len;
		memcpy(buf + len, w, wl);
		len += wl;
	}
	if (len)
		fprintf(f, "%.*s\n", (int)len, buf);
}

/* "f3 < f2 < f1": innermost first, on one line of at most 80 columns. */
static void stack_line(FILE *f, const char *lead, const char *const *frames, size_t n)
{
	char buf[1024];
	size_t len = (size_t)snprintf(buf, sizeof(buf), "%s", lead);

	if (!n)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "[no stack]");
	for (size_t i = n; i-- > 0 && len < sizeof(buf) - 1;)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", frames[i],
					i ? " < " : "");
	line(f, "%s", buf);
}

/* A stack, one frame a line, innermost first, at most TEXT_FRAMES. */
static void stack_lines(FILE *f, const char *indent, const char *const *frames, size_t n)
{
	if (!n)
		line(f, "%s[no stack known]", indent);
	for (size_t i = n, k = 0; i-- > 0 && k < TEXT_FRAMES; k++)
		line(f, "%s%s", indent, frames[i]);
	if (n > TEXT_FRAMES)
		line(f, "%s... %zu outer frames", indent, n - TEXT_FRAMES);
}

const char *gr_dir_name(uint8_t dir)
{
	static const char *const names[] = {"copy", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"};

	return dir < sizeof(names) / sizeof(names[0]) ? names[dir] : "copy";
}

const char *gr_host_mem_name(uint8_t m)
{
	return m == CORR_HOST_MEM_PAGEABLE ? "pageable"
	       : m == CORR_HOST_MEM_PINNED ? "pinned"
					   : "-";
}

/* The profiled window, when known (else 0: shares of it are 0). */
uint64_t gr_profile_span(const struct gpu_report *r)
{
	return r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0;
}

/* How far the device's times may be from the CPU's (output/gpu_report/gpu_clock.h). */
static void text_clock(const struct gpu_clock *c, FILE *f)
{
	int64_t lo, hi;

	if (gpu_clock__bound(c, &lo, &hi))
		line(f,
		     "  clock: GPU times within %+.1f..%+.1f us of the CPU's (%" PRIu64
		     " launches, %" PRIu64 " device syncs)",
		     lo / 1e3, hi / 1e3, c->leads, c->drains);
	else if (c->leads)
		line(f,
		     "  clock: GPU times at most %+.1f us late (%" PRIu64 " launches; no "
		     "device-wide sync for the other bound)",
		     c->lead_min_ns / 1e3, c->leads);
}

static void text_device(const struct gpu_report *r, const struct device *d, FILE *f)
{
	uint64_t active = d->last - d->first;
	char buf[128];
	size_t len = 0;

	line(f, "Device %u: busy %s of %s active (%.1f%%; %.1f%% of the profile)", d->device,
	     NS(d->busy), NS(active), 100 * gr_share_of(d->busy, active),
	     100 * gr_share_of(d->busy, gr_profile_span(r)));
	line(f, "  work: %" PRIu64 " kernels, %" PRIu64 " copies, %" PRIu64 " memsets", d->kernels,
	     d->copies, d->memsets);
	line(f, "  idle: %s in %" PRIu64 " gaps, longest %s", NS(d->idle), d->nr_gaps,
	     NS(d->longest_gap));
	line(f, "    host %s (%.1f%%), launch %s (%.1f%%), sync %s (%.1f%%)",
	     NS(d->idle_by[GPU_IDLE_HOST]), 100 * gr_share_of(d->idle_by[GPU_IDLE_HOST], active),
	     NS(d->idle_by[GPU_IDLE_LAUNCH]),
	     100 * gr_share_of(d->idle_by[GPU_IDLE_LAUNCH], active), NS(d->idle_by[GPU_IDLE_SYNC]),
	     100 * gr_share_of(d->idle_by[GPU_IDLE_SYNC], active));
	line(f, "    dependency %s (%.1f%%), unknown %s (%.1f%%)",
	     NS(d->idle_by[GPU_IDLE_DEPENDENCY]),
	     100 * gr_share_of(d->idle_by[GPU_IDLE_DEPENDENCY], active),
	     NS(d->idle_by[GPU_IDLE_UNKNOWN]),
	     100 * gr_share_of(d->idle_by[GPU_IDLE_UNKNOWN], active));
	line(f,
	     "  gaps: %s %" PRIu64 ", %s %" PRIu64 ", %s %" PRIu64 ", %s %" PRIu64 ", %s %" PRIu64
	     ", %s %" PRIu64,
	     gr_gap_label[0], d->hist[0], gr_gap_label[1], d->hist[1], gr_gap_label[2], d->hist[2],
	     gr_gap_label[3], d->hist[3], gr_gap_label[4], d->hist[4], gr_gap_label[5], d->hist[5]);
	len = (size_t)snprintf(buf, sizeof(buf), "  busy per %s:", NS(d->bin_ns));
	for (size_t i = 0; i < d->nr_bins; i++) {
		uint64_t width =
			i + 1 < d->nr_bins ? d->bin_ns : d->last - d->first - i * d->bin_ns;

		if (len + 5 > 80) {
			line(f, "%s", buf);
			len = (size_t)snprintf(buf, sizeof(buf), "   ");
		}
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, " %.0f%%",
					100 * gr_share_of(d->bins[i], width));
	}
	line(f, "%s", buf);
	text_clock(&d->clock, f);
	if (d->comm_ns)
		line(f, "  communication (NCCL): %s, %.1f%% of it overlapped computation",
		     NS(d->comm_ns), 100 * gr_share_of(d->comm_overlap_ns, d->comm_ns));
	for (size_t i = 0; i < r->nr_streams; i++) {
		const struct stream_stat *st = &r->streams[i];

		if (st->device != d->device)
			continue;
		line(f, "  stream %u: %" PRIu64 " pieces of work; launch to start p50 %s,",
		     st->stream, st->work, NS(st->p50));
		line(f, "    p99 %s, max %s (%" PRIu64 " joined)", NS(st->p99), NS(st->max), st->n);
	}
}

static void text_finding(const struct finding *x, size_t i, FILE *f)
{
	char buf[1024];
	size_t len = 0;

	line(f, "%2zu. [%s] %s", i + 1, x->severity, x->kind);
	wrap(f, "    ", x->summary);
	if (x->chain)
		wrap(f, "    ", x->why);
	for (size_t k = 0; k < x->nr_fig; k++) {
		const struct figure *g = &x->fig[k];

		if (g->is_ratio)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s %s=%.3g",
						k ? "," : "", g->key, g->d);
		else if (strstr(g->key, "_ns"))
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s %.*s=%s",
						k ? "," : "", (int)(strlen(g->key) - 3), g->key,
						NS(g->u));
		else
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s %s=%" PRIu64,
						k ? "," : "", g->key, g->u);
	}
	if (len)
		wrap(f, "    ", buf + 1);
	if (x->pid) {
		line(f, "    where (pid %u%s%s), innermost first:", x->pid, x->api ? ", in " : "",
		     x->api ? x->api : "");
		stack_lines(f, "      ", x->frames, x->nr_frames);
	}
	wrap(f, "    fix: ", x->advice);
}

/* The NVTX ranges (and xsprof scopes) the GPU's idle and busy time fell in. */
static void text_ranges(const struct gpu_report *r, FILE *f)
{
	size_t shown = 0;

	for (size_t i = 0; i < r->nr_ranges && shown < TOP; i++) {
		const struct range_stat *x = &r->ranges[i];

		if (!gr_range_idle(x) && !x->gpu_ns && !x->allocated)
			continue;
		if (!shown++) {
			line(f, "%s", "");
			line(f, "By NVTX range (innermost, on the launching thread)");
			line(f, "%10s %10s %10s %10s  %s", "idle", "of it host", "GPU work",
			     "allocated", "range");
		}
		line(f, "%10s %10s %10s %6.1f MiB  %s%s%s", NS(gr_range_idle(x)),
		     NS(x->idle[GPU_IDLE_HOST]), NS(x->gpu_ns), x->allocated / 1048576.0,
		     x->domain ? x->domain : "", x->domain ? ": " : "", x->name);
	}
}

/* GPU memory per process and device: the peak and what was live then, what was left at the
 * end. */
static void text_memory(const struct gpu_report *r, FILE *f)
{
	for (size_t i = 0; r->mem && i < r->mem->nr_procs; i++) {
		const struct gpu_mem_proc *p = &r->mem->procs[i];
		char dev[32] = "an unknown device";

		if (p->device >= 0)
			snprintf(dev, sizeof(dev), "device %d", p->device);
		line(f, "%s", "");
		line(f, "GPU memory of process %u on %s:", p->pid, dev);
		line(f,
		     "  %" PRIu64 " allocations (%.1f MiB), %" PRIu64 " frees, %" PRIu64 " failed",
		     p->allocs, p->allocated / 1048576.0, p->frees, p->failed);
		line(f,
		     "  peak %.1f MiB at %s; %.1f MiB in %" PRIu64 " allocations left at the end",
		     p->peak / 1048576.0,
		     NS(p->peak_ns > r->start_ns ? p->peak_ns - r->start_ns : 0),
		     p->end / 1048576.0, p->end_allocs);
		if (p->unknown_frees)
			line(f, "  %" PRIu64 " frees of memory allocated before the profile",
			     p->unknown_frees);
		if (p->nr_at_peak)
			line(f, "  live at the peak, by allocating stack:");
		for (size_t k = 0; k < p->nr_at_peak && k < TOP; k++) {
			char lead[64];

			snprintf(lead, sizeof(lead), "%11.1f MiB %s < ",
				 p->at_peak[k]->at_peak / 1048576.0,
				 p->at_peak[k]->api ? p->at_peak[k]->api : "?");
			stack_line(f, lead, p->at_peak[k]->frames, p->at_peak[k]->nr_frames);
		}
		if (p->nr_at_end)
			line(f, "  still allocated at the end, by allocating stack:");
		for (size_t k = 0; k < p->nr_at_end && k < TOP; k++) {
			char lead[64];

			snprintf(lead, sizeof(lead), "%11.1f MiB %s < ",
				 p->at_end[k]->live / 1048576.0,
				 p->at_end[k]->api ? p->at_end[k]->api : "?");
			stack_line(f, lead, p->at_end[k]->frames, p->at_end[k]->nr_frames);
		}
	}
	if (r->mem && r->mem->untracked)
		line(f, "  %" PRIu64 " allocations not tracked (%d live at once at most)",
		     r->mem->untracked, GPU_MEMORY_MAX_LIVE);
}

int gpu_report__write_text(const struct gpu_report *r, FILE *f)
{
	const struct launch_facts *lf = &r->launch;
	size_t shown = 0;

	line(f, "xsprof GPU report: %zu device%s, %zu finding%s", r->nr_dev,
	     r->nr_dev == 1 ? "" : "s", r->nr_findings, r->nr_findings == 1 ? "" : "s");
	if (!r->nr_dev && !r->mem)
		line(f, "No GPU work was recorded (is libxsprof_cupti.so loaded? see xsprofd(8)).");
	for (size_t i = 0; i < r->nr_dev; i++) {
		line(f, "%s", "");
		text_device(r, &r->dev[i], f);
	}
	if (r->nr_findings) {
		line(f, "%s", "");
		line(f, "Findings");
	}
	for (size_t i = 0; i < r->nr_findings; i++)
		text_finding(&r->findings[i], i, f);
	if (r->nr_blames) {
		line(f, "%s", "");
		line(f, "Idle time by cause and stack (top %d)", TOP);
	}
	for (size_t i = 0; i < r->nr_blames && shown < TOP; i++, shown++) {
		const struct blame *b = &r->blames[i];
		char lead[96];

		snprintf(lead, sizeof(lead), "%9s %-10s dev %u pid %u: %s%s", NS(b->ns),
			 gr_cause_names[b->cause], b->device, b->pid, b->api ? b->api : "",
			 b->api ? " < " : "");
		stack_line(f, lead, (const char *const *)b->frames, b->nr_frames);
	}
	if (r->nr_kernels) {
		line(f, "%s", "");
		line(f, "Kernels by total time (top %d)", TOP);
		line(f, "%8s %10s %10s %10s  %s", "count", "total", "mean", "max", "name");
	}
	for (size_t i = 0; i < r->nr_kernels && i < TOP; i++) {
		const struct kernel_stat *k = &r->kernels[i];

		line(f, "%8" PRIu64 " %10s %10s %10s  %s", k->count, NS(k->total),
		     NS(k->count ? k->total / k->count : 0), NS(k->max), k->name);
		if (k->nr_frames)
			stack_line(f, "         from ", (const char *const *)k->frames,
				   k->nr_frames);
	}
	if (lf->kernels) {
		line(f, "%s", "");
		line(f, "Launches: %" PRIu64 " kernels joined to their launch, %.0f a second",
		     lf->kernels, lf->rate_per_s);
		line(f, "  median kernel %s, median time between launches %s",
		     NS(lf->median_kernel_ns), NS(lf->median_interval_ns));
		line(f,
		     "  %.1f%% of kernels ran shorter than the time to their thread's next launch",
		     100 * gr_share_of(lf->shorter, lf->intervals));
		if (lf->api_ns)
			line(f, "  %s in launch calls on the busiest thread (tid %u)",
			     NS(lf->api_ns), lf->api_tid);
	}
	for (size_t i = 0, first = 1; i < sizeof(r->copies) / sizeof(r->copies[0]); i++) {
		const struct copy_stat *c = &r->copies[i];

		if (!c->count)
			continue;
		if (first) {
			line(f, "%s", "");
			line(f, "Copies");
			first = 0;
		}
		line(f, "  %s %-8s %-5s %6" PRIu64 " copies %10.1f MiB %10s %7.2f GB/s",
		     gr_dir_name(c->dir), gr_host_mem_name(c->host_mem),
		     c->async ? "async" : "sync", c->count, c->bytes / 1048576.0, NS(c->ns),
		     c->ns ? (double)c->bytes / (double)c->ns : 0);
	}
	text_ranges(r, f);
	text_memory(r, f);
	return ferror(f) ? -EIO : 0;
}
