// SPDX-License-Identifier: Apache-2.0
/*
 * XPlane by hand (output/xplane.h): protobuf fields of output/proto/xla/xplane.proto through
 * output/protobuf.h. Each plane interns its event names (XEventMetadata) and its stat names and
 * string values (XStatMetadata, the strings referred to by ref_value: launch stacks) as it
 * goes, and writes both maps at its end; a metadata id is the name's index in its table.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/base/hashmap.h"
#include "daemon/base/utf8.h"
#include "daemon/base/vec.h"
#include "output/model/profile.h"
#include "output/output_meta.h"
#include "output/protobuf.h"
#include "output/xplane.h"

/* XSpace, XPlane, XLine, XEvent, XStat, XEventMetadata and XStatMetadata fields. */
enum {
	SPACE_PLANES = 1,
	SPACE_HOSTNAMES = 4,
	PLANE_ID = 1,
	PLANE_NAME = 2,
	PLANE_LINES = 3,
	PLANE_EVENT_METADATA = 4,
	PLANE_STAT_METADATA = 5,
	PLANE_STATS = 6,
	LINE_ID = 1,
	LINE_NAME = 2,
	LINE_TIMESTAMP_NS = 3,
	LINE_EVENTS = 4,
	LINE_DURATION_PS = 9,
	LINE_DISPLAY_ID = 10,
	LINE_DISPLAY_NAME = 11,
	EVENT_METADATA_ID = 1,
	EVENT_OFFSET_PS = 2,
	EVENT_DURATION_PS = 3,
	EVENT_STATS = 4,
	STAT_METADATA_ID = 1,
	STAT_UINT64 = 3,
	STAT_STR = 5,
	STAT_REF = 7,
	META_ID = 1,
	META_NAME = 2,
	MAP_KEY = 1,
	MAP_VALUE = 2,
};

/* The samples line of thread tid: beside its activity line (id tid). */
#define SAMPLES_LINE (1ll << 32)

struct plane {
	struct buf b;
	struct strtab events, stats;
	struct hashmap *stacks; /* (pid, stack id) -> stat metadata id + 1 */
};

struct xw {
	const struct profile_data *pd;
	uint64_t base_ns, end_ns; /* CLOCK_MONOTONIC: the earliest and latest time written */
	int64_t epoch_ns;	  /* base_ns on CLOCK_REALTIME */
	struct buf space, line, ev, stat, text;
	uint32_t *first_join, *next_join;
	int err;
};

static void put_str(struct buf *b, unsigned int field, const char *s)
{
	char small[256], *fixed = NULL;
	size_t len;

	if (!s)
		s = "";
	len = strlen(s);
	if (!utf8_valid(s)) {
		fixed = len < sizeof(small) ? small : malloc(len + 1);
		if (!fixed) {
			b->err = -ENOMEM;
			return;
		}
		utf8_repair(fixed, s);
		s = fixed;
	}
	pb_bytes(b, field, s, len);
	if (fixed != small)
		free(fixed);
}

/* A oneof member: written even when zero. */
static void put_varint_always(struct buf *b, unsigned int field, uint64_t v)
{
	pb_key(b, field, WT_VARINT);
	pb_varint(b, v);
}

static int64_t intern(struct plane *p, struct strtab *t, const char *s)
{
	int64_t id = pb_intern(t, s && *s ? s : "?");

	if (id < 0 && !p->b.err)
		p->b.err = (int)id;
	return id < 0 ? 0 : id;
}

static void plane_begin(struct plane *p, int64_t id, const char *name)
{
	memset(p, 0, sizeof(*p));
	p->stacks = hashmap__new();
	if (!p->stacks)
		p->b.err = -ENOMEM;
	/* Index 0 of both tables is "": no event or stat refers to it. */
	pb_intern(&p->events, "");
	pb_intern(&p->stats, "");
	pb_uint(&p->b, PLANE_ID, (uint64_t)id);
	put_str(&p->b, PLANE_NAME, name);
}

/* The maps, then the plane into the space. */
static void plane_end(struct xw *w, struct plane *p)
{
	struct buf *e = &w->ev, *m = &w->stat;

	for (int map = 0; map < 2; map++) {
		const struct strtab *t = map ? &p->stats : &p->events;

		for (size_t i = 1; i < t->n; i++) {
			m->len = 0;
			pb_uint(m, META_ID, i);
			put_str(m, META_NAME, t->s[i]);
			e->len = 0;
			pb_uint(e, MAP_KEY, i);
			pb_msg(e, MAP_VALUE, m);
			pb_msg(&p->b, map ? PLANE_STAT_METADATA : PLANE_EVENT_METADATA, e);
		}
	}
	pb_msg(&w->space, SPACE_PLANES, &p->b);
	if (p->b.err && !w->err)
		w->err = p->b.err;
	free(p->b.p);
	pb_strtab_free(&p->events);
	pb_strtab_free(&p->stats);
	hashmap__free(p->stacks);
	memset(p, 0, sizeof(*p));
}

static void line_begin(struct xw *w, int64_t id, const char *name, const char *display)
{
	struct buf *l = &w->line;

	l->len = 0;
	pb_uint(l, LINE_ID, (uint64_t)id);
	put_str(l, LINE_NAME, name);
	pb_uint(l, LINE_TIMESTAMP_NS, (uint64_t)w->epoch_ns);
	pb_uint(l, LINE_DURATION_PS, (w->end_ns - w->base_ns) * 1000);
	pb_uint(l, LINE_DISPLAY_ID, (uint64_t)id);
	put_str(l, LINE_DISPLAY_NAME, display);
}

static void line_end(struct xw *w, struct plane *p)
{
	if (w->line.err && !p->b.err)
		p->b.err = w->line.err;
	pb_msg(&p->b, PLANE_LINES, &w->line);
	w->line.len = 0;
}

/* An event into w->ev; its stats follow (stat_*), then event_end puts it on the line. */
static void event_begin(struct xw *w, struct plane *p, const char *name, uint64_t start_ns,
			uint64_t dur_ns)
{
	struct buf *e = &w->ev;

	e->len = 0;
	pb_uint(e, EVENT_METADATA_ID, (uint64_t)intern(p, &p->events, name));
	put_varint_always(e, EVENT_OFFSET_PS,
			  (start_ns > w->base_ns ? start_ns - w->base_ns : 0) * 1000);
	pb_uint(e, EVENT_DURATION_PS, dur_ns * 1000);
}

static void event_end(struct xw *w)
{
	pb_msg(&w->line, LINE_EVENTS, &w->ev);
}

static void stat_u64(struct xw *w, struct plane *p, const char *name, uint64_t v)
{
	struct buf *s = &w->stat;

	s->len = 0;
	pb_uint(s, STAT_METADATA_ID, (uint64_t)intern(p, &p->stats, name));
	put_varint_always(s, STAT_UINT64, v);
	pb_msg(&w->ev, EVENT_STATS, s);
}

static void stat_str(struct xw *w, struct plane *p, const char *name, const char *v)
{
	struct buf *s = &w->stat;

	s->len = 0;
	pb_uint(s, STAT_METADATA_ID, (uint64_t)intern(p, &p->stats, name));
	put_str(s, STAT_STR, v);
	pb_msg(&w->ev, EVENT_STATS, s);
}

/* The stack of (pid, stack id) as "outer;...;leaf", interned once a plane and referred to. */
static void stat_stack(struct xw *w, struct plane *p, const char *name, uint32_t pid,
		       uint32_t stack_id)
{
	const struct profile_data *pd = w->pd;
	uintptr_t id = (uintptr_t)hashmap__get(p->stacks, pid, stack_id);
	struct buf *s = &w->stat;

	if (stack_id == CORR_NO_STACK || !pd->stack)
		return;
	if (!id) {
		const char *const *frames;
		size_t n;

		if (pd->stack(pd->ctx, pid, stack_id, &frames, &n) || !n)
			return;
		w->text.len = 0;
		for (size_t i = 0; i < n; i++) {
			const char *f = frames[i] && frames[i][0] ? frames[i] : "[unknown]";
			size_t len = strlen(f);

			pb_need(&w->text, len + 2);
			if (w->text.err)
				break;
			if (i)
				w->text.p[w->text.len++] = ';';
			memcpy(w->text.p + w->text.len, f, len);
			w->text.len += len;
		}
		pb_need(&w->text, 1);
		if (w->text.err) {
			p->b.err = w->text.err;
			return;
		}
		w->text.p[w->text.len] = '\0';
		id = (uintptr_t)intern(p, &p->stats, (const char *)w->text.p) + 1;
		if (hashmap__put(p->stacks, pid, stack_id, (void *)id))
			p->b.err = -ENOMEM;
	}
	s->len = 0;
	pb_uint(s, STAT_METADATA_ID, (uint64_t)intern(p, &p->stats, name));
	put_varint_always(s, STAT_REF, id - 1);
	pb_msg(&w->ev, EVENT_STATS, s);
}

static bool is_api(const struct corr_gpu_rec *g)
{
	return g->kind == CORR_GPU_RUNTIME_API || g->kind == CORR_GPU_DRIVER_API;
}

#define CMP(a, b)                                  \
	do {                                       \
		if ((a) != (b))                    \
			return (a) < (b) ? -1 : 1; \
	} while (0)

/* What goes on a thread's activity line: a CUDA call or NVTX range (GPU record), a call that
 * waited for the GPU, a launch probe. */
enum host_kind { HOST_GPU_REC, HOST_WAIT, HOST_LAUNCH };

struct host_ev {
	uint32_t pid, tid;
	uint64_t start_ns, end_ns;
	uint32_t kind, ix;
};

static int cmp_host(const void *a, const void *b)
{
	const struct host_ev *x = a, *y = b;

	CMP(x->pid, y->pid);
	CMP(x->tid, y->tid);
	CMP(x->start_ns, y->start_ns);
	CMP(y->end_ns, x->end_ns); /* outer first */
	CMP(x->kind, y->kind);
	CMP(x->ix, y->ix);
	return 0;
}

static void thread_line(struct xw *w, uint32_t pid, uint32_t tid, bool samples)
{
	char name[160], display[256], pbuf[128];
	const char *thread = profile__name_or(w->pd, pid, tid, name, sizeof(name));

	snprintf(display, sizeof(display), "%s (%s %u, tid %u)%s", thread,
		 profile__process_title(w->pd, pid, pbuf, sizeof(pbuf)), pid, tid,
		 samples ? " samples" : "");
	line_begin(w, samples ? SAMPLES_LINE | tid : tid, thread, display);
}

/* Each thread's CUDA calls, GPU waits, launch probes and NVTX ranges. */
static int host_activity(struct xw *w, struct plane *p)
{
	const struct profile_data *pd = w->pd;
	struct host_ev *v;
	size_t n = 0, cap = pd->nr_gpu + pd->nr_waits + pd->nr_launches;
	char name[192];

	v = malloc((cap ? cap : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < pd->nr_gpu; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];

		if ((is_api(g) || g->kind == CORR_GPU_NVTX) && g->tid)
			v[n++] = (struct host_ev){g->pid,    g->tid,	   g->start_ns,
						  g->end_ns, HOST_GPU_REC, (uint32_t)i};
	}
	for (size_t i = 0; i < pd->nr_waits; i++) {
		const struct profile_wait *x = &pd->waits[i];

		v[n++] = (struct host_ev){
			x->pid,	     x->tid,
			x->start_ns, x->end_ns > x->start_ns ? x->end_ns : x->start_ns,
			HOST_WAIT,   (uint32_t)i};
	}
	for (size_t i = 0; i < pd->nr_launches; i++) {
		const struct corr_cpu_rec *l = &pd->launches[i];

		v[n++] = (struct host_ev){l->pid,     l->tid,	   l->time_ns,
					  l->time_ns, HOST_LAUNCH, (uint32_t)i};
	}
	qsort(v, n, sizeof(*v), cmp_host);
	for (size_t i = 0; i < n && !p->b.err; i++) {
		const struct host_ev *h = &v[i];

		if (!i || h->pid != v[i - 1].pid || h->tid != v[i - 1].tid) {
			if (i)
				line_end(w, p);
			thread_line(w, h->pid, h->tid, false);
		}
		if (h->kind == HOST_GPU_REC) {
			const struct corr_gpu_rec *g = &pd->gpu[h->ix];

			event_begin(w, p,
				    g->name	? g->name
				    : is_api(g) ? "cuda api"
						: "nvtx",
				    g->start_ns, g->end_ns - g->start_ns);
			if (is_api(g)) {
				stat_u64(w, p, "correlation_id", g->corr_id);
				stat_u64(w, p, "cbid", g->cbid);
				stat_str(w, p, "kind",
					 g->kind == CORR_GPU_RUNTIME_API ? "cuda_runtime"
									 : "cuda_driver");
			} else {
				stat_str(w, p, "kind", "nvtx");
				if (g->domain)
					stat_str(w, p, "nvtx_domain", g->domain);
			}
		} else if (h->kind == HOST_WAIT) {
			const struct profile_wait *x = &pd->waits[h->ix];

			snprintf(name, sizeof(name), "[wait gpu] %s", x->api ? x->api : "cuda");
			event_begin(w, p, name, h->start_ns, h->end_ns - h->start_ns);
			stat_str(w, p, "kind", "gpu_wait");
			stat_stack(w, p, "stack", x->pid, x->stack_id);
		} else {
			const struct corr_cpu_rec *l = &pd->launches[h->ix];

			/* The probe's moment: an instant inside its call's event. */
			event_begin(w, p, l->api_name ? l->api_name : "cuda launch", l->time_ns, 0);
			stat_str(w, p, "kind", "cuda_launch");
			stat_u64(w, p, "correlation_id", l->corr_id);
			stat_u64(w, p, "stream", l->stream);
			stat_stack(w, p, "stack", l->pid, l->stack_id);
		}
		event_end(w);
	}
	if (n)
		line_end(w, p);
	free(v);
	return p->b.err;
}

static int cmp_sample(const void *a, const void *b, void *ctx)
{
	const struct profile_sample *s = ctx, *x = &s[*(const uint32_t *)a],
				    *y = &s[*(const uint32_t *)b];

	CMP(x->pid, y->pid);
	CMP(x->tid, y->tid);
	CMP(x->time_ns, y->time_ns);
	return 0;
}

struct open_frame {
	const char *name;
	uint64_t start_ns;
};

/* Closes the open frames from depth down to keep, at end_ns, innermost first. */
static void close_frames(struct xw *w, struct plane *p, struct open_frame *open, size_t *depth,
			 size_t keep, uint64_t end_ns)
{
	for (; *depth > keep; (*depth)--) {
		const struct open_frame *o = &open[*depth - 1];

		event_begin(w, p, o->name, o->start_ns, end_ns - o->start_ns);
		event_end(w);
	}
}

/* Each thread's sampled stacks: frames shared with the sample before stay one event, as long
 * as the samples come a period apart. */
static int host_samples(struct xw *w, struct plane *p)
{
	const struct profile_data *pd = w->pd;
	uint64_t period = pd->sample_period_ns ? pd->sample_period_ns : 10000000;
	struct open_frame *open = NULL;
	size_t depth = 0, cap = 0, n = pd->nr_samples;
	uint32_t *idx = malloc((n ? n : 1) * sizeof(*idx));
	uint64_t open_end = 0;
	int err = 0;

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		idx[i] = (uint32_t)i;
	qsort_r(idx, n, sizeof(*idx), cmp_sample, (void *)pd->samples);
	for (size_t i = 0; i <= n && !err && !p->b.err; i++) {
		const struct profile_sample *s = i < n ? &pd->samples[idx[i]] : NULL;
		const struct profile_sample *prev = i ? &pd->samples[idx[i - 1]] : NULL;
		static const char *const unknown[] = {"[unknown]"};
		const char *const *frames = unknown;
		bool same = s && prev && s->pid == prev->pid && s->tid == prev->tid;
		size_t nf = 1, k = 0;

		if (prev && (!same || s->time_ns > open_end))
			close_frames(w, p, open, &depth, 0, open_end);
		if (prev && !same)
			line_end(w, p);
		if (!s)
			break;
		if (!same)
			thread_line(w, s->pid, s->tid, true);
		if (s->stack_id == CORR_NO_STACK || !pd->stack ||
		    pd->stack(pd->ctx, s->pid, s->stack_id, &frames, &nf) || !nf) {
			frames = unknown;
			nf = 1;
		}
		while (k < depth && k < nf && frames[k] && !strcmp(open[k].name, frames[k]))
			k++;
		close_frames(w, p, open, &depth, k, s->time_ns);
		err = vec_reserve(&open, &cap, nf);
		for (; !err && depth < nf; depth++)
			open[depth] = (struct open_frame){
				frames[depth] && frames[depth][0] ? frames[depth] : "[unknown]",
				s->time_ns};
		open_end = s->time_ns + period;
	}
	free(open);
	free(idx);
	return err ? err : p->b.err;
}

/* A plane a GPU, a line a (process, stream, lane): kernels, copies, memsets, syncs, graphs. */
static int gpu_planes(struct xw *w)
{
	const struct profile_data *pd = w->pd;
	const struct corr_gpu_rec *prev = NULL;
	struct plane p = {0};
	uint32_t *idx = malloc((pd->nr_gpu ? pd->nr_gpu : 1) * sizeof(*idx));
	size_t n = 0;
	int64_t line = 0;
	char buf[512], nbuf[64], pname[64];
	bool open = false;

	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < pd->nr_gpu; i++)
		if (corr_gpu_kind__is_activity(pd->gpu[i].kind))
			idx[n++] = (uint32_t)i;
	qsort_r(idx, n, sizeof(*idx), profile__cmp_gpu_track, (void *)pd->gpu);
	for (size_t i = 0; i < n && !w->err; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[idx[i]];
		const struct corr_gpu_rec *nx = i + 1 < n ? &pd->gpu[idx[i + 1]] : NULL;
		uint64_t dur = g->end_ns - g->start_ns;
		uint32_t j = w->first_join[idx[i]];

		if (!prev || prev->device != g->device) {
			if (open) {
				line_end(w, &p);
				plane_end(w, &p);
			}
			snprintf(pname, sizeof(pname), XPLANE_GPU_NAME_PREFIX "%u", g->device);
			plane_begin(&p, 1 + (int64_t)g->device, pname);
			open = true;
			line = 0;
			prev = NULL;
		}
		if (!prev || prev->pid != g->pid || prev->stream_id != g->stream_id ||
		    profile__gpu_lane(prev) != profile__gpu_lane(g)) {
			const char *lane = profile__lane_name(profile__gpu_lane(g));

			if (prev)
				line_end(w, &p);
			snprintf(nbuf, sizeof(nbuf), "Stream #%u%s", g->stream_id, lane);
			snprintf(buf, sizeof(buf), "stream %u%s (%s %u)", g->stream_id, lane,
				 profile__name_or(pd, g->pid, 0, pname, sizeof(pname)), g->pid);
			line_begin(w, ++line, nbuf, buf);
		}
		/* One stream runs one thing at a time: a clock blip must not make them overlap. */
		if (nx && nx->device == g->device && nx->pid == g->pid &&
		    nx->stream_id == g->stream_id &&
		    profile__gpu_lane(nx) == profile__gpu_lane(g) && nx->start_ns < g->end_ns)
			dur = nx->start_ns > g->start_ns ? nx->start_ns - g->start_ns : 0;
		if (g->kind == CORR_GPU_KERNEL)
			snprintf(buf, sizeof(buf), "%s",
				 g->name && g->name[0] ? g->name : "kernel");
		else if (g->kind == CORR_GPU_MEMCPY)
			snprintf(buf, sizeof(buf), "memcpy %s", corr_copy_kind__name(g->copy_kind));
		else
			snprintf(buf, sizeof(buf), "%s", corr_gpu_kind__name(g->kind));
		event_begin(w, &p, buf, g->start_ns, dur);
		stat_u64(w, &p, "correlation_id", g->corr_id);
		stat_u64(w, &p, "pid", g->pid);
		stat_u64(w, &p, "device_id", g->device);
		stat_u64(w, &p, "context_id", g->context);
		stat_u64(w, &p, "stream_id", g->stream_id);
		if (g->kind == CORR_GPU_MEMCPY || g->kind == CORR_GPU_MEMSET)
			stat_u64(w, &p, "bytes", g->bytes);
		if (g->graph_id)
			stat_u64(w, &p, "graph_id", g->graph_id);
		if (j != PROFILE_NO_JOIN) {
			const struct corr_cpu_rec *l = &pd->launches[pd->joins[j].launch];

			stat_stack(w, &p, "launch_stack", l->pid, l->stack_id);
			if (l->api_name)
				stat_str(w, &p, "launch_api", l->api_name);
			/* The range its launch was made in (--group-by range). */
			if (pd->root_at)
				stat_str(w, &p, "range",
					 pd->root_at(pd->root_at_ctx, l->pid, l->tid, l->time_ns));
		}
		event_end(w);
		if (p.b.err && !w->err)
			w->err = p.b.err;
		prev = g;
	}
	if (open) {
		line_end(w, &p);
		plane_end(w, &p);
	}
	free(idx);
	return w->err;
}

/* The span every line covers: the earliest and latest time of anything written. */
static void span(struct xw *w)
{
	const struct profile_data *pd = w->pd;
	uint64_t lo = UINT64_MAX, hi = 0;

#define SEE(a, b)                 \
	do {                      \
		if ((a) < lo)     \
			lo = (a); \
		if ((b) > hi)     \
			hi = (b); \
	} while (0)
	for (size_t i = 0; i < pd->nr_samples; i++)
		SEE(pd->samples[i].time_ns, pd->samples[i].time_ns + pd->sample_period_ns);
	for (size_t i = 0; i < pd->nr_launches; i++)
		SEE(pd->launches[i].time_ns, pd->launches[i].time_ns);
	for (size_t i = 0; i < pd->nr_waits; i++)
		SEE(pd->waits[i].start_ns, pd->waits[i].end_ns);
	for (size_t i = 0; i < pd->nr_gpu; i++)
		SEE(pd->gpu[i].start_ns, pd->gpu[i].end_ns);
	if (pd->start_ns)
		SEE(pd->start_ns, pd->start_ns);
	if (pd->end_ns)
		SEE(pd->end_ns, pd->end_ns);
#undef SEE
	if (lo > hi)
		lo = hi = 0;
	w->base_ns = lo;
	w->end_ns = hi;
	w->epoch_ns = (int64_t)lo + pd->realtime_offset_ns;
}

static bool valid(const struct profile_data *pd)
{
	if (!pd || (!pd->samples && pd->nr_samples) || (!pd->launches && pd->nr_launches) ||
	    (!pd->waits && pd->nr_waits) || (!pd->gpu && pd->nr_gpu) ||
	    (!pd->joins && pd->nr_joins) || pd->nr_gpu >= UINT32_MAX ||
	    pd->nr_samples >= UINT32_MAX || pd->nr_launches + pd->nr_waits >= UINT32_MAX)
		return false;
	for (size_t i = 0; i < pd->nr_gpu; i++)
		if (pd->gpu[i].end_ns < pd->gpu[i].start_ns)
			return false;
	return true;
}

int xplane__write(const struct profile_data *pd, FILE *f, const struct output_meta *meta)
{
	struct xw w = {.pd = pd};
	struct plane host;
	char hostname[256] = "";
	int err;

	(void)meta;
	if (!valid(pd) || !f)
		return -EINVAL;
	span(&w);
	err = profile__join_chains(pd, &w.first_join, &w.next_join);
	if (!err) {
		plane_begin(&host, 0, XPLANE_HOST_NAME);
		err = host_activity(&w, &host);
		if (!err)
			err = host_samples(&w, &host);
		plane_end(&w, &host);
		if (!err)
			err = w.err;
	}
	if (!err)
		err = gpu_planes(&w);
	if (!err && !gethostname(hostname, sizeof(hostname) - 1))
		put_str(&w.space, SPACE_HOSTNAMES, hostname);
	if (!err)
		err = w.space.err;
	errno = 0;
	if (!err && w.space.len && fwrite(w.space.p, 1, w.space.len, f) != w.space.len)
		err = errno ? -errno : -EIO;
	free(w.space.p);
	free(w.line.p);
	free(w.ev.p);
	free(w.stat.p);
	free(w.text.p);
	free(w.first_join);
	free(w.next_join);
	return err;
}
