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

/* The report's findings: what the facts and causes say a person should act on, with figures
 * and the stack to look at. */

static int cmp_blame(const void *a, const void *b)
{
	const struct blame *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return x->cause < y->cause ? -1 : x->cause > y->cause;
}

int gr_cmp_kernel(const void *a, const void *b)
{
	const struct kernel_stat *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The heaviest blame of a cause on a device (blames are sorted), or NULL. */
static const struct blame *top_blame(const struct gpu_report *r, enum gpu_idle_cause c,
				     uint32_t device)
{
	for (size_t i = 0; i < r->nr_blames; i++)
		if (r->blames[i].cause == c && r->blames[i].device == device)
			return &r->blames[i];
	return NULL;
}

struct finding *gr_finding(struct gpu_report *r, const char *kind, double share, uint32_t device,
			   const char *advice)
{
	struct finding *f;

	if (r->nr_findings >= sizeof(r->findings) / sizeof(r->findings[0]))
		return NULL;
	f = &r->findings[r->nr_findings++];
	*f = (struct finding){.kind = kind,
			      .severity = share >= 0.4	  ? "high"
					  : share >= 0.15 ? "medium"
							  : "low",
			      .advice = advice,
			      .device = device};
	return f;
}

static void point_at(struct finding *f, const struct blame *b);

/* At least this share of a cause's time must run through a frame for its path to go on. */
#define DOMINANT_SHARE 0.8

/*
 * The frames most of a cause's time on a device runs through, outermost first: from the root,
 * each next frame is the one DOMINANT_SHARE of the cause's time was blamed under, so the path
 * stops where the time splits (the loop in the user's function, the line that calls it) rather
 * than at one sample's leaf, which may be any syscall the loop makes. 0 or -ENOMEM; *ret_n 0
 * when the blames share no root.
 */
static int dominant_path(struct gpu_report *r, enum gpu_idle_cause c, uint32_t device, uint32_t pid,
			 const char ***ret, size_t *ret_n)
{
	size_t *in = malloc((r->nr_blames ? r->nr_blames : 1) * sizeof(*in)), n = 0, depth = 0;
	const char **path = NULL;
	size_t cap = 0;
	uint64_t total = 0;

	*ret = NULL;
	*ret_n = 0;
	if (!in)
		return -ENOMEM;
	for (size_t i = 0; i < r->nr_blames; i++)
		if (r->blames[i].cause == c && r->blames[i].device == device &&
		    r->blames[i].pid == pid) {
			in[n++] = i;
			total += r->blames[i].ns;
		}
	while (n && total) {
		const char *best = NULL;
		uint64_t best_ns = 0;
		size_t k = 0;

		/* The heaviest frame at this depth (a few candidates: blames sorted, heavy first). */
		for (size_t i = 0; i < n; i++) {
			const struct blame *b = &r->blames[in[i]];
			uint64_t sum = 0;

			if (b->nr_frames <= depth || (best && !strcmp(best, b->frames[depth])))
				continue;
			for (size_t j = 0; j < n; j++) {
				const struct blame *o = &r->blames[in[j]];

				if (o->nr_frames > depth &&
				    !strcmp(o->frames[depth], b->frames[depth]))
					sum += o->ns;
			}
			if (sum > best_ns) {
				best_ns = sum;
				best = b->frames[depth];
			}
			if (best_ns * 2 > total)
				break; /* a majority: no other frame can beat it */
		}
		if (!best || (double)best_ns < DOMINANT_SHARE * (double)total)
			break;
		if (vec_reserve(&path, &cap, depth + 1)) {
			free(in);
			free(path);
			return -ENOMEM;
		}
		path[depth++] = best;
		for (size_t i = 0; i < n; i++)
			if (r->blames[in[i]].nr_frames > depth - 1 &&
			    !strcmp(r->blames[in[i]].frames[depth - 1], best))
				in[k++] = in[i];
		n = k;
	}
	free(in);
	*ret = path;
	*ret_n = depth;
	return 0;
}

/* The finding points at the dominant path of the top blame's process (its stack when none). */
static void point_at_path(struct gpu_report *r, struct finding *f, enum gpu_idle_cause c,
			  uint32_t device)
{
	const struct blame *b = top_blame(r, c, device);
	const char **path;
	size_t n;

	if (!b)
		return;
	point_at(f, b);
	if (r->nr_paths >= sizeof(r->paths) / sizeof(r->paths[0]) ||
	    dominant_path(r, c, device, b->pid, &path, &n) || !n)
		return;
	r->paths[r->nr_paths++] = path;
	f->frames = path;
	f->nr_frames = n;
}

/* The finding points at a blame's stack (NULL: at none). */
static void point_at(struct finding *f, const struct blame *b)
{
	if (!b)
		return;
	f->pid = b->pid;
	f->api = b->api;
	f->frames = (const char *const *)b->frames;
	f->nr_frames = b->nr_frames;
}

static void fig_ns(struct finding *f, const char *key, uint64_t ns)
{
	if (f->nr_fig < sizeof(f->fig) / sizeof(f->fig[0]))
		f->fig[f->nr_fig++] = (struct figure){.key = key, .u = ns};
}

static void fig_ratio(struct finding *f, const char *key, double v)
{
	if (f->nr_fig < sizeof(f->fig) / sizeof(f->fig[0]))
		f->fig[f->nr_fig++] = (struct figure){.key = key, .is_ratio = true, .d = v};
}

double gr_share_of(uint64_t part, uint64_t whole)
{
	return whole ? (double)part / (double)whole : 0;
}

/* The GPU's times are off the CPU's by more than GPU_REPORT_CLOCK_SKEW_NS: work that starts
 * before its launch, or a device-wide synchronize that returns before its work ended. */
/* What a finding is judged on: a device (and its active time), the copies of the whole report,
 * or a process's GPU memory. */
struct finding_on {
	const struct device *d;
	uint64_t active;
	const struct gpu_mem_proc *p;
	uint64_t pg_n, pg_bytes, pg_ns, sync_n, sync_ns; /* the copies: pageable, blocking */
};

enum finding_scope { PER_DEVICE, PER_REPORT, PER_PROCESS };

/*
 * One kind of finding: a new one is a row of kinds[] below, its two functions, a line of
 * GPU_REPORT.md's table and a test. holds: its share when it holds, else a negative number;
 * fill: its summary, figures and the stack it points at.
 */
struct finding_kind {
	const char *kind;
	enum finding_scope scope;
	const char *advice;
	double (*holds)(const struct gpu_report *r, const struct finding_on *o);
	void (*fill)(struct gpu_report *r, struct finding *f, const struct finding_on *o);
};

/* ---- idle by cause: host, sync, dependency ---- */

static double idle_share(const struct finding_on *o, enum gpu_idle_cause c, double threshold)
{
	double share = gr_share_of(o->d->idle_by[c], o->active);

	return share >= threshold ? share : -1;
}

/* "device 0 idled 41.0% of its active time <why>", and its figures. */
static void fill_idle(struct gpu_report *r, struct finding *f, const struct finding_on *o,
		      enum gpu_idle_cause c, const char *why, bool with_active)
{
	const struct device *d = o->d;

	point_at_path(r, f, c, d->device);
	snprintf(f->summary, sizeof(f->summary), "device %u idled %.1f%% of its active time %s",
		 d->device, 100 * gr_share_of(d->idle_by[c], o->active), why);
	fig_ns(f, "idle_ns", d->idle_by[c]);
	if (with_active)
		fig_ns(f, "active_ns", o->active);
	fig_ratio(f, "share", gr_share_of(d->idle_by[c], o->active));
}

static double host_holds(const struct gpu_report *r, const struct finding_on *o)
{
	(void)r;
	return idle_share(o, GPU_IDLE_HOST, 0.2);
}

static void host_fill(struct gpu_report *r, struct finding *f, const struct finding_on *o)
{
	fill_idle(r, f, o, GPU_IDLE_HOST, "while the host was not submitting work", true);
	gr_chain_finding(r, f, o->d);
}

static double sync_holds(const struct gpu_report *r, const struct finding_on *o)
{
	(void)r;
	return idle_share(o, GPU_IDLE_SYNC, 0.1);
}

static void sync_fill(struct gpu_report *r, struct finding *f, const struct finding_on *o)
{
	fill_idle(r, f, o, GPU_IDLE_SYNC, "after synchronising calls", true);
}

static double dependency_holds(const struct gpu_report *r, const struct finding_on *o)
{
	(void)r;
	return idle_share(o, GPU_IDLE_DEPENDENCY, 0.1);
}

static void dependency_fill(struct gpu_report *r, struct finding *f, const struct finding_on *o)
{
	fill_idle(r, f, o, GPU_IDLE_DEPENDENCY, "with work queued behind a dependency", false);
}

/* ---- the device's other findings ---- */

static double launch_holds(const struct gpu_report *r, const struct finding_on *o)
{
	const struct launch_facts *lf = &r->launch;
	const struct device *d = o->d;

	if (lf->kernels >= 200 && lf->median_kernel_ns < lf->median_interval_ns &&
	    gr_share_of(lf->shorter, lf->intervals) >= 0.5 &&
	    gr_share_of(d->idle_by[GPU_IDLE_LAUNCH] + d->idle_by[GPU_IDLE_HOST], o->active) >= 0.2)
		return 1 - gr_share_of(d->busy, o->active);
	return -1;
}

static void launch_fill(struct gpu_report *r, struct finding *f, const struct finding_on *o)
{
	const struct launch_facts *lf = &r->launch;

	point_at_path(r, f,
		      top_blame(r, GPU_IDLE_LAUNCH, o->d->device) ? GPU_IDLE_LAUNCH : GPU_IDLE_HOST,
		      o->d->device);
	snprintf(f->summary, sizeof(f->summary),
		 "%.0f%% of %" PRIu64 " kernels ran shorter than the time between "
		 "their launches (median %.1f us vs %.1f us)",
		 100 * gr_share_of(lf->shorter, lf->intervals), lf->kernels,
		 lf->median_kernel_ns / 1e3, lf->median_interval_ns / 1e3);
	fig_ns(f, "median_kernel_ns", lf->median_kernel_ns);
	fig_ns(f, "median_launch_interval_ns", lf->median_interval_ns);
	fig_ns(f, "kernels", lf->kernels);
	fig_ratio(f, "launches_per_s", lf->rate_per_s);
	fig_ratio(f, "utilisation", gr_share_of(o->d->busy, o->active));
}

static double comm_holds(const struct gpu_report *r, const struct finding_on *o)
{
	const struct device *d = o->d;

	(void)r;
	if (d->comm_ns >= o->active / 20 && gr_share_of(d->comm_overlap_ns, d->comm_ns) < 0.5)
		return gr_share_of(d->comm_ns - d->comm_overlap_ns, o->active);
	return -1;
}

static void comm_fill(struct gpu_report *r, struct finding *f, const struct finding_on *o)
{
	const struct device *d = o->d;

	(void)r;
	snprintf(f->summary, sizeof(f->summary),
		 "device %u: %.0f%% of its communication time overlapped computation", d->device,
		 100 * gr_share_of(d->comm_overlap_ns, d->comm_ns));
	fig_ns(f, "communication_ns", d->comm_ns);
	fig_ns(f, "overlap_ns", d->comm_overlap_ns);
}

static double clock_holds(const struct gpu_report *r, const struct finding_on *o)
{
	const struct gpu_clock *c = &o->d->clock;
	const int64_t skew = (int64_t)GPU_REPORT_CLOCK_SKEW_NS;

	(void)r;
	return (c->leads && c->lead_min_ns < -skew) || (c->drains && c->drain_min_ns < -skew) ? 1
											      : -1;
}

static void clock_fill(struct gpu_report *r, struct finding *f, const struct finding_on *o)
{
	const struct gpu_clock *c = &o->d->clock;
	bool early = c->leads && c->lead_min_ns < -(int64_t)GPU_REPORT_CLOCK_SKEW_NS;

	(void)r;
	snprintf(f->summary, sizeof(f->summary),
		 "device %u: its times read at least %.1f us %s the CPU's (%s)", o->d->device,
		 (early ? -c->lead_min_ns : -c->drain_min_ns) / 1e3, early ? "early" : "late",
		 early ? "work started before the call that launched it"
		       : "a device synchronize returned before its work ended");
	fig_ns(f, "launches", c->leads);
	if (c->leads)
		fig_ratio(f, "launch_to_start_min_ns", (double)c->lead_min_ns);
	fig_ns(f, "syncs", c->drains);
	if (c->drains)
		fig_ratio(f, "sync_return_after_end_min_ns", (double)c->drain_min_ns);
}

static double util_holds(const struct gpu_report *r, const struct finding_on *o)
{
	double util = gr_share_of(o->d->busy, o->active);

	(void)r;
	return util < 0.5 ? 1 - util : -1;
}

static void util_fill(struct gpu_report *r, struct finding *f, const struct finding_on *o)
{
	double util = gr_share_of(o->d->busy, o->active);

	(void)r;
	snprintf(f->summary, sizeof(f->summary), "device %u was busy %.1f%% of %.3f s",
		 o->d->device, 100 * util, o->active / 1e9);
	fig_ns(f, "busy_ns", o->d->busy);
	fig_ns(f, "active_ns", o->active);
	fig_ratio(f, "utilisation", util);
}

/* ---- copies ---- */

static double pageable_holds(const struct gpu_report *r, const struct finding_on *o)
{
	(void)r;
	if (o->pg_n && (o->pg_bytes >= (1u << 20) || o->pg_ns >= o->active / 100))
		return gr_share_of(o->pg_ns, o->active);
	return -1;
}

static void pageable_fill(struct gpu_report *r, struct finding *f, const struct finding_on *o)
{
	point_at(f, r->copy_blame[0].ns ? &r->copy_blame[0] : NULL);
	snprintf(f->summary, sizeof(f->summary),
		 "%" PRIu64 " asynchronous copies (%.1f MiB) used pageable host memory", o->pg_n,
		 o->pg_bytes / 1048576.0);
	fig_ns(f, "copies", o->pg_n);
	fig_ns(f, "bytes", o->pg_bytes);
	fig_ns(f, "copy_ns", o->pg_ns);
	fig_ratio(f, "gb_per_s", o->pg_ns ? (double)o->pg_bytes / (double)o->pg_ns : 0);
}

static double sync_copy_holds(const struct gpu_report *r, const struct finding_on *o)
{
	(void)r;
	return o->sync_n >= 10 ? gr_share_of(o->sync_ns, o->active) : -1;
}

static void sync_copy_fill(struct gpu_report *r, struct finding *f, const struct finding_on *o)
{
	point_at(f, r->copy_blame[1].ns ? &r->copy_blame[1] : NULL);
	snprintf(f->summary, sizeof(f->summary),
		 "%" PRIu64 " blocking copies took %.1f ms of GPU time", o->sync_n,
		 o->sync_ns / 1e6);
	fig_ns(f, "copies", o->sync_n);
	fig_ns(f, "copy_ns", o->sync_ns);
}

/* ---- a process's GPU memory ---- */

static void point_at_place(struct finding *f, const struct gpu_mem_stack *s)
{
	f->pid = s->pid;
	f->api = s->api;
	f->frames = s->frames;
	f->nr_frames = s->nr_frames;
}

static double alloc_failed_holds(const struct gpu_report *r, const struct finding_on *o)
{
	(void)r;
	return o->p->failed ? 1 : -1;
}

static void alloc_failed_fill(struct gpu_report *r, struct finding *f, const struct finding_on *o)
{
	const struct gpu_mem_proc *p = o->p;

	(void)r;
	snprintf(f->summary, sizeof(f->summary),
		 "%" PRIu64 " GPU allocation%s of process %u on device %d failed", p->failed,
		 p->failed == 1 ? "" : "s", p->pid, p->device);
	fig_ns(f, "failed", p->failed);
	fig_ns(f, "peak_bytes", p->peak);
	if (p->failed_at)
		point_at_place(f, p->failed_at);
}

static double unfreed_holds(const struct gpu_report *r, const struct finding_on *o)
{
	(void)r;
	return o->p->end >= (1u << 20) && o->p->nr_at_end ? gr_share_of(o->p->end, o->p->peak) : -1;
}

static void unfreed_fill(struct gpu_report *r, struct finding *f, const struct finding_on *o)
{
	const struct gpu_mem_proc *p = o->p;

	(void)r;
	snprintf(f->summary, sizeof(f->summary),
		 "%.1f MiB of process %u's memory on device %d (%" PRIu64
		 " allocations) was never freed, %.1f MiB from the place below",
		 p->end / 1048576.0, p->pid, p->device, p->end_allocs,
		 p->at_end[0]->live / 1048576.0);
	fig_ns(f, "bytes", p->end);
	fig_ns(f, "allocations", p->end_allocs);
	fig_ns(f, "peak_bytes", p->peak);
	point_at_place(f, p->at_end[0]);
}

/* The kinds, in the order each scope's findings are made (GPU_REPORT.md: their thresholds). */
static const struct finding_kind kinds[] = {
	{"host_bound", PER_DEVICE,
	 "The GPU waited while the thread that feeds it did other work (the stack below). "
	 "Prepare the next batch ahead of time (a DataLoader with num_workers > 0 and "
	 "prefetching), move this work to another thread or process, or onto the GPU.",
	 host_holds, host_fill},
	{"launch_bound", PER_DEVICE,
	 "Kernels finish faster than the host launches them: the GPU waits on launch overhead. "
	 "Fuse small kernels (torch.compile), capture the loop in a CUDA graph "
	 "(torch.cuda.CUDAGraph, cudaGraphLaunch), or give each kernel more work (larger "
	 "batches).",
	 launch_holds, launch_fill},
	{"sync_bound", PER_DEVICE,
	 "The host waits for the GPU to finish, then the GPU waits for the host's next launch. "
	 "Remove the synchronisation from the loop or make it rarer: .item(), .cpu(), printing "
	 "a tensor, torch.cuda.synchronize(), blocking copies; use non_blocking=True copies and "
	 "CUDA events.",
	 sync_holds, sync_fill},
	{"dependency_bound", PER_DEVICE,
	 "Work was launched but waited for other work (an event, another stream or device) "
	 "while the device idled. Check cross-stream waits and the order work is queued in.",
	 dependency_holds, dependency_fill},
	{"communication_exposed", PER_DEVICE,
	 "Communication kernels (NCCL) mostly ran alone: overlap them with computation (DDP "
	 "bucketing, async collectives).",
	 comm_holds, comm_fill},
	{"clock_skew", PER_DEVICE,
	 "The GPU's times (CUPTI's conversion of the device clock) and the CPU's (BPF, "
	 "CLOCK_MONOTONIC) disagree, so gaps and launch delays are off by as much. Check that "
	 "the injection library set CUPTI's timestamp callback (XSPROF_CUPTI_VERBOSE=1 says "
	 "which clock it records), and that the machine's clocksource is stable (dmesg: "
	 "clocksource).",
	 clock_holds, clock_fill},
	{"low_utilisation", PER_DEVICE,
	 "The device was busy less than half of the time between its first and last work: see "
	 "its idle time by cause.",
	 util_holds, util_fill},
	{"pageable_copy", PER_REPORT,
	 "Asynchronous copies from or to pageable host memory are staged through a pinned "
	 "buffer and do not overlap: pin the host memory (pin_memory=True in the DataLoader, "
	 "tensor.pin_memory(), cudaHostAlloc).",
	 pageable_holds, pageable_fill},
	{"synchronous_copy", PER_REPORT,
	 "Blocking copies hold the host until the GPU is done: use cudaMemcpyAsync "
	 "(non_blocking=True) from pinned memory.",
	 sync_copy_holds, sync_copy_fill},
	{"allocation_failed", PER_PROCESS,
	 "A GPU allocation failed: usually out of memory. See what was live at the peak; free "
	 "caches (torch.cuda.empty_cache()), lower the batch size, or let PyTorch's allocator "
	 "grow in place (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True).",
	 alloc_failed_holds, alloc_failed_fill},
	{"memory_unfreed", PER_PROCESS,
	 "GPU memory allocated here was still allocated when the profile ended: at the "
	 "process's exit, a leak (or memory the driver frees for it); while it runs, memory "
	 "held on purpose (weights, caches) or growth to check.",
	 unfreed_holds, unfreed_fill},
};

#define NR_KINDS (sizeof(kinds) / sizeof(kinds[0]))

const char *gr_finding_kind(size_t i)
{
	return i < NR_KINDS ? kinds[i].kind : NULL;
}

/* Every kind of scope that holds on o, made into findings on device. */
static void judge(struct gpu_report *r, enum finding_scope scope, const struct finding_on *o,
		  uint32_t device)
{
	for (size_t i = 0; i < NR_KINDS; i++) {
		struct finding *f;
		double share;

		if (kinds[i].scope != scope || (share = kinds[i].holds(r, o)) < 0)
			continue;
		f = gr_finding(r, kinds[i].kind, share, device, kinds[i].advice);
		if (f)
			kinds[i].fill(r, f, o);
	}
}

void gr_device_findings(struct gpu_report *r, const struct device *d)
{
	struct finding_on o = {.d = d, .active = d->last - d->first};

	if (o.active < 10 * MS)
		return; /* too little to judge */
	judge(r, PER_DEVICE, &o, d->device);
}

/* Copies: pageable host memory behind an async copy, and blocking copies. */
void gr_copy_findings(struct gpu_report *r, uint64_t active)
{
	struct finding_on o = {.active = active};

	for (size_t i = 0; i < sizeof(r->copies) / sizeof(r->copies[0]); i++) {
		const struct copy_stat *c = &r->copies[i];

		if (c->async && c->host_mem == CORR_HOST_MEM_PAGEABLE &&
		    (c->dir == CORR_COPY_HTOD || c->dir == CORR_COPY_DTOH)) {
			o.pg_n += c->count;
			o.pg_bytes += c->bytes;
			o.pg_ns += c->ns;
		}
		if (!c->async && c->count) {
			o.sync_n += c->count;
			o.sync_ns += c->ns;
		}
	}
	judge(r, PER_REPORT, &o, 0);
}

/*
 * Blames whose stacks read the same (a stack kept twice: walked, then reused; one stack in
 * two recordings' tables) made one, so each line of the report is a different place.
 */
int gpu_report__merge_blames(struct gpu_report *r)
{
	struct keymap *m = keymap__new();
	char *key = NULL;
	size_t cap = 0, k = 0, i;
	int err = m ? 0 : -ENOMEM;

	r->last_blame = 0; /* the blames move */
	for (i = 0; i < r->nr_blames && !err; i++) {
		struct blame *b = &r->blames[i];
		size_t len = 0, need = 64 + (b->api ? strlen(b->api) : 0);
		void *v;

		for (size_t f = 0; f < b->nr_frames; f++)
			need += strlen(b->frames[f]) + 1;
		if (vec_reserve(&key, &cap, need)) {
			err = -ENOMEM;
			break; /* b is not moved: freed below */
		}
		len = (size_t)snprintf(key, cap, "%u|%u|%u|%s|", b->cause, b->device, b->pid,
				       b->api ? b->api : "");
		for (size_t f = 0; f < b->nr_frames; f++)
			len += (size_t)snprintf(key + len, cap - len, "%s;", b->frames[f]);
		v = keymap__get(m, key, len);
		if (v) {
			r->blames[(size_t)v - 1].ns += b->ns;
			r->blames[(size_t)v - 1].gaps += b->gaps;
			free(b->frames);
			continue;
		}
		if (keymap__put(m, key, len, (void *)(k + 1), NULL)) {
			err = -ENOMEM;
			break;
		}
		r->blames[k++] = *b;
	}
	for (; err && i < r->nr_blames; i++) /* not moved: their frames go now */
		free(r->blames[i].frames);
	r->nr_blames = k;
	free(key);
	keymap__free(m);
	gr_sort(r->blames, r->nr_blames, sizeof(*r->blames), cmp_blame);
	return err;
}

/* GPU memory still allocated at the end, and allocations that failed. */
void gr_memory_findings(struct gpu_report *r)
{
	for (size_t i = 0; r->mem && i < r->mem->nr_procs; i++) {
		struct finding_on o = {.p = &r->mem->procs[i]};

		judge(r, PER_PROCESS, &o, o.p->device > 0 ? (uint32_t)o.p->device : 0);
	}
}
