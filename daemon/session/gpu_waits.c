// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/cuda/cuda_api.h"
#include "daemon/cuda/cuda_probes.h"
#include "daemon/base/vec.h"
#include "daemon/cuda/cuda_waits.h"
#include "daemon/gpu/gpu_records.h"
#include "daemon/session/gpu_waits.h"
#include "daemon/cuda/launch_store.h"
#include "daemon/log.h"
#include "daemon/session/stack_names.h"
#include "output/model/calltree.h"
#include "output/model/profile.h"

/* Stream handles of the legacy default stream (0, cudaStreamLegacy): it waits for every
 * blocking stream of the device. */
#define STREAM_LEGACY_MAX 1

/* A uprobe event, for finding a wait's call by (tid, entry time). */
struct call_ix {
	uint32_t tid;
	uint32_t event;
	uint64_t time_ns;
};

/* A stream handle of a process, and the GPU stream id the join saw its work on. */
struct handle_ix {
	uint32_t pid;
	uint32_t stream_id;
	uint64_t handle;
};

struct waits {
	const struct launch_store *ls;
	const struct profile_data *pd;
	struct calltree *ns; /* weights in ns, converted once at the end */
	struct call_ix *calls;
	size_t nr_calls;
	struct handle_ix *handles;
	size_t nr_handles;
	uint64_t max_gpu_ns; /* longest GPU record: how far back an overlapping one may start */
	const char **frames;
	size_t cap_frames;
	struct fold_procs procs;	/* the processes kept, a frame above each */
	char comm[XSPROF_COMM_LEN + 1]; /* the current wait's process name: frames point at it */
	struct gpu_waits_stats st;
};

static int cmp_call(const void *a, const void *b)
{
	const struct call_ix *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

static int cmp_handle(const void *a, const void *b)
{
	const struct handle_ix *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->handle < y->handle ? -1 : x->handle > y->handle;
}

static int index_calls(struct waits *w)
{
	const struct launch_event *ev = launch_store__events(w->ls);
	size_t n = launch_store__nr_events(w->ls);

	w->calls = calloc(n ? n : 1, sizeof(*w->calls));
	if (!w->calls)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (ev[i].kind == LAUNCH_UPROBE &&
		    (cuda_api__waits(ev[i].api) || cuda_api__allocates(ev[i].api)))
			w->calls[w->nr_calls++] = (struct call_ix){
				.tid = ev[i].tid, .event = (uint32_t)i, .time_ns = ev[i].time_ns};
	qsort(w->calls, w->nr_calls, sizeof(*w->calls), cmp_call);
	return 0;
}

static bool is_work(const struct corr_gpu_rec *g)
{
	return g->kind == CORR_GPU_KERNEL || g->kind == CORR_GPU_MEMCPY ||
	       g->kind == CORR_GPU_MEMSET;
}

/* What the join learnt: the handle each uprobe launch named and the stream its work ran on. */
static int index_handles(struct waits *w)
{
	const struct profile_data *pd = w->pd;

	w->handles = calloc(pd->nr_joins ? pd->nr_joins : 1, sizeof(*w->handles));
	if (!w->handles)
		return -ENOMEM;
	for (size_t i = 0; i < pd->nr_joins; i++) {
		const struct corr_cpu_rec *l;
		const struct corr_gpu_rec *g;

		if (pd->joins[i].launch >= pd->nr_launches || pd->joins[i].gpu >= pd->nr_gpu)
			continue;
		l = &pd->launches[pd->joins[i].launch];
		g = &pd->gpu[pd->joins[i].gpu];
		if (l->kind != CORR_CPU_UPROBE || l->stream <= STREAM_LEGACY_MAX)
			continue;
		w->handles[w->nr_handles++] = (struct handle_ix){
			.pid = l->pid, .stream_id = g->stream_id, .handle = l->stream};
	}
	qsort(w->handles, w->nr_handles, sizeof(*w->handles), cmp_handle);
	/* Only what a wait looks at: a long NVTX range or API call must not widen every scan. */
	for (size_t i = 0; i < pd->nr_gpu; i++)
		if ((is_work(&pd->gpu[i]) || pd->gpu[i].kind == CORR_GPU_SYNC) &&
		    pd->gpu[i].end_ns > pd->gpu[i].start_ns &&
		    pd->gpu[i].end_ns - pd->gpu[i].start_ns > w->max_gpu_ns)
			w->max_gpu_ns = pd->gpu[i].end_ns - pd->gpu[i].start_ns;
	return 0;
}

/* The launch event of the wait's call, or NULL. */
static const struct launch_event *call_of(const struct waits *w, const struct launch_wait *lw)
{
	struct call_ix key = {.tid = lw->tid, .time_ns = lw->entry_ns};
	const struct call_ix *c = bsearch(&key, w->calls, w->nr_calls, sizeof(key), cmp_call);

	return c ? &launch_store__events(w->ls)[c->event] : NULL;
}

/* First GPU record (sorted by start) that may still be running at t. */
static size_t first_gpu_at(const struct waits *w, uint64_t t)
{
	uint64_t from = t > w->max_gpu_ns ? t - w->max_gpu_ns : 0;
	size_t lo = 0, hi = w->pd->nr_gpu;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w->pd->gpu[mid].start_ns < from)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The GPU stream a stream wait waited for: the stream of CUPTI's synchronization record of
 * the same thread inside the wait, else the one the join saw the handle's launches run on.
 * UINT32_MAX (every stream) for a device-wide wait, the legacy stream, or when unknown.
 */
static uint32_t stream_of(struct waits *w, const struct launch_wait *lw)
{
	const struct profile_data *pd = w->pd;
	struct handle_ix key = {.pid = lw->tgid, .handle = lw->stream};
	const struct handle_ix *h;

	if (cuda_api__waits_all_streams(lw->api) || lw->stream <= STREAM_LEGACY_MAX)
		return UINT32_MAX;
	for (size_t i = first_gpu_at(w, lw->entry_ns); i < pd->nr_gpu; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];

		if (g->start_ns > lw->return_ns)
			break;
		/* CUPTI's synchronization records carry no thread: the process's, inside. */
		if (g->kind == CORR_GPU_SYNC && g->pid == lw->tgid &&
		    (!g->tid || g->tid == lw->tid) && g->end_ns <= lw->return_ns &&
		    g->stream_id != GPU_NO_ID && g->start_ns >= lw->entry_ns)
			return g->stream_id;
	}
	h = bsearch(&key, w->handles, w->nr_handles, sizeof(key), cmp_handle);
	if (h)
		return h->stream_id;
	w->st.stream_guess++;
	return UINT32_MAX;
}

static uint64_t overlap(const struct corr_gpu_rec *g, const struct launch_wait *lw)
{
	uint64_t a = g->start_ns > lw->entry_ns ? g->start_ns : lw->entry_ns;
	uint64_t b = g->end_ns < lw->return_ns ? g->end_ns : lw->return_ns;

	return b > a ? b - a : 0;
}

/* Frames of the wait's caller: comm, the call's stack, the API, the wait frame. */
static int wait_frames(struct waits *w, const struct launch_wait *lw, size_t *ret_n)
{
	static const char *const unknown[] = {"[unknown]"};
	const struct launch_event *e = call_of(w, lw);
	const char *const *frames = unknown;
	struct launch_stack ls = {.comm = ""};
	size_t n = 1, k = 0;
	const char *api = cuda_api__name(lw->api);

	if (!e || e->stack == UINT32_MAX || launch_store__stack(w->ls, e->stack, &ls) ||
	    !w->pd->stack ||
	    w->pd->stack(w->pd->ctx, lw->tgid, STACK_NAMES_LAUNCH | e->stack, &frames, &n) || !n) {
		frames = unknown;
		n = 1;
		w->st.no_stack++;
	}
	if (n + 5 > w->cap_frames) {
		const char **v = realloc(w->frames, (n + 5) * sizeof(*v));

		if (!v)
			return -ENOMEM;
		w->frames = v;
		w->cap_frames = n + 5;
	}
	if (w->procs.root)
		w->frames[k++] = w->procs.root(w->procs.root_ctx, lw->tgid);
	/* ls is gone when the frames are used: its name is copied. */
	snprintf(w->comm, sizeof(w->comm), "%.*s", (int)sizeof(ls.comm), ls.comm);
	w->frames[k++] = w->comm[0] ? w->comm : "[unknown]";
	for (size_t i = 0; i < n; i++)
		w->frames[k++] = frames[i] && frames[i][0] ? frames[i] : "[unknown]";
	w->frames[k++] = api ? api : "[cuda]";
	w->frames[k++] = GPU_WAITS_FRAME;
	*ret_n = k;
	return 0;
}

static int add_wait(struct waits *w, const struct launch_wait *lw)
{
	const struct profile_data *pd = w->pd;
	uint64_t dur = lw->return_ns - lw->entry_ns, busy = 0, given = 0;
	uint32_t stream = pd->nr_gpu ? stream_of(w, lw) : UINT32_MAX;
	char leaf[512];
	size_t n, i0 = pd->nr_gpu ? first_gpu_at(w, lw->entry_ns) : 0;
	int err = wait_frames(w, lw, &n);

	for (size_t i = i0; !err && i < pd->nr_gpu && pd->gpu[i].start_ns < lw->return_ns; i++)
		if (is_work(&pd->gpu[i]) && pd->gpu[i].pid == lw->tgid &&
		    (stream == UINT32_MAX || pd->gpu[i].stream_id == stream))
			busy += overlap(&pd->gpu[i], lw);
	for (size_t i = i0; !err && busy && i < pd->nr_gpu && pd->gpu[i].start_ns < lw->return_ns;
	     i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];
		unsigned __int128 part;

		if (!is_work(g) || g->pid != lw->tgid ||
		    (stream != UINT32_MAX && g->stream_id != stream) || !overlap(g, lw))
			continue;
		/* Streams side by side: each its share of the wait. */
		part = busy > dur ? (unsigned __int128)overlap(g, lw) * dur / busy : overlap(g, lw);
		w->frames[n] = profile__gpu_leaf(g, leaf, sizeof(leaf));
		err = calltree__add(w->ns, w->frames, n + 1, (uint64_t)part);
		given += (uint64_t)part;
	}
	if (!err && dur > given)
		err = calltree__add(w->ns, w->frames, n, dur - given);
	w->st.waits++;
	w->st.wait_ns += dur;
	w->st.gpu_ns += given;
	return err;
}

int gpu_waits__add(const struct launch_store *ls, const struct profile_data *pd,
		   struct calltree *tree, uint64_t ns_per_unit, const struct fold_procs *procs,
		   struct gpu_waits_stats *ret_stats)
{
	const struct launch_wait *lw = ls ? launch_store__waits(ls) : NULL;
	size_t nw = ls ? launch_store__nr_waits(ls) : 0;
	struct waits w = {.ls = ls, .pd = pd};
	int err = 0;

	if (!nw)
		return 0;
	if (procs)
		w.procs = *procs;
	w.ns = calltree__new();
	if (!w.ns)
		return -ENOMEM;
	err = index_calls(&w);
	if (!err)
		err = index_handles(&w);
	for (size_t i = 0; !err && i < nw; i++)
		if (!w.procs.accept || w.procs.accept(w.procs.accept_ctx, lw[i].tgid))
			err = add_wait(&w, &lw[i]);
	if (!err)
		err = calltree__add_scaled(tree, w.ns, 1, ns_per_unit ? ns_per_unit : 1);
	if (ret_stats) {
		ret_stats->waits += w.st.waits;
		ret_stats->wait_ns += w.st.wait_ns;
		ret_stats->gpu_ns += w.st.gpu_ns;
		ret_stats->no_stack += w.st.no_stack;
		ret_stats->stream_guess += w.st.stream_guess;
	}
	free(w.calls);
	free(w.handles);
	free(w.frames);
	calltree__free(w.ns);
	return err;
}

void gpu_waits__report(const struct gpu_waits_stats *st, const struct launch_store *ls,
		       const struct xsprof_wait_stats *bpf)
{
	struct launch_store_stats ss = {};

	if (ls)
		launch_store__stats(ls, &ss);
	if (!st->waits && !bpf->entries && !ss.waits_dropped)
		return;
	log_info("GPU waits: %llu calls waited %.3f s for the GPU (%.3f s of it with GPU work "
		 "seen on what they waited for); %llu CPU samples and %llu off-CPU stretches "
		 "inside them left to " GPU_WAITS_FRAME,
		 (unsigned long long)st->waits, st->wait_ns / 1e9, st->gpu_ns / 1e9,
		 (unsigned long long)bpf->samples_in_wait, (unsigned long long)bpf->offcpu_in_wait);
	if (st->no_stack || st->stream_guess)
		log_info("GPU waits: %llu without their caller's stack, %llu stream waits shown "
			 "with every stream's work (stream not known)",
			 (unsigned long long)st->no_stack, (unsigned long long)st->stream_guess);
	if (bpf->drop_ringbuf || ss.waits_dropped)
		log_warn("GPU waits: %llu lost (ring buffer full: raise --ring-buffer-size), %llu "
			 "past the launch store's event cap",
			 (unsigned long long)bpf->drop_ringbuf,
			 (unsigned long long)ss.waits_dropped);
}

int gpu_waits__timeline(const struct launch_store *ls, struct profile_wait **ret, size_t *ret_n)
{
	const struct launch_wait *lw = ls ? launch_store__waits(ls) : NULL;
	size_t n = ls ? launch_store__nr_waits(ls) : 0;
	struct waits w = {.ls = ls};
	struct profile_wait *v;

	*ret = NULL;
	*ret_n = 0;
	if (!n)
		return 0;
	v = calloc(n, sizeof(*v));
	if (!v || index_calls(&w)) {
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		const struct launch_event *e = call_of(&w, &lw[i]);

		v[i] = (struct profile_wait){.start_ns = lw[i].entry_ns,
					     .end_ns = lw[i].return_ns,
					     .pid = lw[i].tgid,
					     .tid = lw[i].tid,
					     .stack_id = e && e->stack != UINT32_MAX
								 ? STACK_NAMES_LAUNCH | e->stack
								 : CORR_NO_STACK,
					     .api = cuda_api__name(lw[i].api)};
	}
	free(w.calls);
	*ret = v;
	*ret_n = n;
	return 0;
}

static int cmp_mem(const void *a, const void *b)
{
	const struct profile_mem *x = a, *y = b;

	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

int gpu_waits__memory(const struct launch_store *ls, struct profile_mem **ret, size_t *ret_n)
{
	const struct launch_wait *al = ls ? launch_store__allocs(ls) : NULL;
	const struct launch_event *ev = ls ? launch_store__events(ls) : NULL;
	size_t na = ls ? launch_store__nr_allocs(ls) : 0, ne = ls ? launch_store__nr_events(ls) : 0;
	struct waits w = {.ls = ls};
	struct profile_mem *v = NULL;
	size_t n = 0, cap = 0;
	int err = 0;

	*ret = NULL;
	*ret_n = 0;
	if (!na && !ne)
		return 0;
	if (index_calls(&w))
		return -ENOMEM;
	for (size_t i = 0; i < na && !err; i++) {
		const struct launch_event *e = call_of(&w, &al[i]);

		if (vec_reserve(&v, &cap, n + 1)) {
			err = -ENOMEM;
			break;
		}
		v[n++] = (struct profile_mem){
			.time_ns = al[i].return_ns,
			.addr = al[i].flags & (XSPROF_CUDA_F_FAILED | XSPROF_CUDA_F_READ_ERR)
					? 0
					: al[i].stream,
			.bytes = e ? e->arg : 0,
			.pid = al[i].tgid,
			.tid = al[i].tid,
			.stack_id = e && e->stack != UINT32_MAX ? STACK_NAMES_LAUNCH | e->stack
								: CORR_NO_STACK,
			.failed = !!(al[i].flags & XSPROF_CUDA_F_FAILED),
			/* A thread that set no device is on CUDA's default, device 0. */
			.device = al[i].device >= 0 && al[i].device <= INT16_MAX
					  ? (int16_t)al[i].device
					  : 0,
			.api = cuda_api__name(al[i].api)};
	}
	for (size_t i = 0; i < ne && !err; i++) {
		if (ev[i].kind != LAUNCH_UPROBE || !cuda_api__frees(ev[i].api) || !ev[i].arg)
			continue; /* cudaFree(0) only makes the context */
		if (vec_reserve(&v, &cap, n + 1)) {
			err = -ENOMEM;
			break;
		}
		v[n++] = (struct profile_mem){.time_ns = ev[i].time_ns,
					      .addr = ev[i].arg,
					      .pid = ev[i].tgid,
					      .tid = ev[i].tid,
					      .stack_id = ev[i].stack != UINT32_MAX
								  ? STACK_NAMES_LAUNCH | ev[i].stack
								  : CORR_NO_STACK,
					      .is_free = 1,
					      .device = -1,
					      .api = cuda_api__name(ev[i].api)};
	}
	free(w.calls);
	if (err) {
		free(v);
		return err;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_mem);
	*ret = v;
	*ret_n = n;
	return 0;
}
