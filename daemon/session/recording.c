// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "daemon/base/clock.h"
#include "daemon/base/vec.h"
#include "daemon/cuda/cuda_probes.h"
#include "daemon/log.h"
#include "daemon/probes/bpf_cost.h"
#include "daemon/probes/offcpu.h"
#include "daemon/probes/proc_events.h"
#include "daemon/python/autograd.h"
#include "daemon/python/pyprof.h"
#include "daemon/cuda/launch_store.h"
#include "daemon/session/ceiling.h"
#include "daemon/session/recording.h"
#include "xsprof.skel.h"
#include "daemon/probes/sampler.h"
#include "daemon/stacks/stack_table.h"
#include "daemon/symbolize/symbolizer.h"
#include "daemon/unwind/unwinder.h"
#include "output/model/profile.h"

/* How often queued samples are read when the BPF side did not ask earlier. */
#define DRAIN_INTERVAL_US (100 * 1000)
#define PID_SET_MAX	  (1u << 20)

/* Processes seen so far, so each one's mappings are snapshotted once, when it first appears.
 * By hand, not base/hashmap: looked up per sample, in 4-byte slots (a hashmap slot is 24). */
struct pid_set {
	uint32_t *slots; /* 0 = empty (pid 0 is never stored) */
	size_t cap, len;
};

struct recording {
	sd_event *ev;
	sd_event_source *io, *drain, *unwind_work;
	sd_event_source *dither; /* the sampler's restarts off its grid */
	uint64_t last_drain_ns;	 /* the drain timer's last run: a long gap is a stall */
	struct sampler *sampler;
	struct proc_events *pe;
	struct symbolizer *sym;
	struct stack_table *stacks;
	struct pid_set seen;
	void (*on_new_process)(void *ctx, uint32_t tgid);
	void *on_new_process_ctx;
	void (*on_exit)(void *ctx, uint32_t tgid, uint64_t time_ns, int signal);
	void (*on_cuda_wait)(void *ctx, uint32_t tgid, uint32_t tid, unsigned int api,
			     uint64_t entry_ns, uint64_t return_ns);
	void (*on_scope)(void *ctx, uint32_t tgid, uint32_t tid, const char *name,
			 uint64_t start_ns, uint64_t end_ns);
	struct cuda_probes *cuda;
	struct unwinder *unwinder;	   /* NULL in fp mode */
	bool own_unwinder;		   /* made here, freed here (not the service's) */
	struct pyprof *py;		   /* NULL without interpreter frames */
	struct autograd *ag;		   /* NULL without opts.autograd (or its programs) */
	struct offcpu *oc;		   /* with opts.offcpu */
	struct stack_table *offcpu_stacks; /* counts in microseconds, filled at stop */
	struct profile_sample *timeline;   /* with opts.max_timeline */
	size_t nr_timeline, timeline_cap, max_timeline;
	uint64_t timeline_dropped;
	struct profile_pass *passes; /* autograd with a timeline: the backward passes */
	size_t nr_passes, cap_passes;
	struct profile_fwd *fwds; /* ... and backward launches' forward ops */
	size_t nr_fwds, cap_fwds;
	struct profile_woken *woken; /* --wakers with a timeline: the chained stretches */
	size_t nr_woken, cap_woken;
	struct profile_hop *hops; /* their hops */
	size_t nr_hops, cap_hops;
	bool running;
	unsigned int max_stacks;
	/* With opts.follow_forks: the given pids, whose descendants already running join at
	 * the start (the fork follower sees only children forked after it). */
	pid_t *roots;
	int nr_roots;
	double t0, cpu0;
	uint64_t end_ns;	 /* when it stopped */
	struct ceiling *ceiling; /* --max-cpu's, governing it; NULL: none */
	struct recording_stats st;
};

static bool pid_set__insert(struct pid_set *s, uint32_t pid)
{
	size_t i;

	if ((s->len + 1) * 2 > s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 1024;
		uint32_t *ns;

		if (ncap > PID_SET_MAX)
			return false; /* full: treat as seen, the snapshot is only an optimisation */
		ns = calloc(ncap, sizeof(*ns));
		if (!ns)
			return false;
		for (size_t j = 0; j < s->cap; j++) {
			if (!s->slots[j])
				continue;
			for (i = (s->slots[j] * 2654435761u) & (ncap - 1); ns[i];
			     i = (i + 1) & (ncap - 1))
				;
			ns[i] = s->slots[j];
		}
		free(s->slots);
		s->slots = ns;
		s->cap = ncap;
	}
	for (i = (pid * 2654435761u) & (s->cap - 1); s->slots[i]; i = (i + 1) & (s->cap - 1))
		if (s->slots[i] == pid)
			return false;
	s->slots[i] = pid;
	s->len++;
	return true;
}

/* Count the sample (weight: what it stands for) and keep it on the timeline, within
 * max_timeline. */
static void timeline_add(struct recording *r, const struct xsprof_sample *s, uint32_t gen,
			 uint64_t weight)
{
	uint32_t id;

	if (stack_table__add_id_weighted(r->stacks, s, gen, weight, &id)) {
		r->st.store_failures++;
		r->timeline_dropped++;
		return;
	}
	/* By hand, not vec_reserve: the doubling stops at max_timeline (a fixed cap). */
	if (r->nr_timeline == r->timeline_cap) {
		size_t ncap = r->timeline_cap ? r->timeline_cap * 2 : 4096;
		struct profile_sample *nt;

		if (ncap > r->max_timeline)
			ncap = r->max_timeline;
		nt = ncap > r->timeline_cap ? realloc(r->timeline, ncap * sizeof(*nt)) : NULL;
		if (!nt) {
			r->timeline_dropped++;
			return;
		}
		r->timeline = nt;
		r->timeline_cap = ncap;
	}
	r->timeline[r->nr_timeline++] = (struct profile_sample){
		.time_ns = s->time_ns,
		.pid = s->tgid,
		.tid = s->tid,
		.stack_id = id,
		.cpu = s->cpu,
	};
}

/* A stack kept for the timeline's waits: counted 0 times (the folds leave it out), its id. */
static uint32_t chain_stack(struct recording *r, const struct xsprof_sample *s, uint32_t gen)
{
	uint32_t id;

	return s && !stack_table__add_id_weighted(r->stacks, s, gen, 0, &id) ? id : CORR_NO_STACK;
}

/* offcpu's chained stretch kept for the timeline (the GPU report follows it): 0, 1 when past
 * RECORDING_MAX_WOKEN (counted there), or -ENOMEM. */
static int keep_chain(void *ctx, const struct offcpu_chain *c)
{
	struct recording *r = ctx;
	struct profile_woken *w;

	if (r->nr_woken >= RECORDING_MAX_WOKEN)
		return 1;
	if (vec_reserve(&r->woken, &r->cap_woken, r->nr_woken + 1) ||
	    vec_reserve(&r->hops, &r->cap_hops, r->nr_hops + c->nr_hops))
		return -ENOMEM;
	w = &r->woken[r->nr_woken++];
	*w = (struct profile_woken){.start_ns = c->start_ns,
				    .end_ns = c->end_ns,
				    .pid = c->tgid,
				    .tid = c->tid,
				    .stack_id = chain_stack(r, c->s, c->gen),
				    .first_hop = (uint32_t)r->nr_hops,
				    .nr_hops = (uint32_t)c->nr_hops};
	for (size_t i = 0; i < c->nr_hops; i++) {
		const struct offcpu_hop *h = &c->hops[i];

		r->hops[r->nr_hops++] =
			(struct profile_hop){.wake_ns = h->wake_ns,
					     .run_ns = h->run_ns,
					     .pid = h->tgid,
					     .tid = h->tid,
					     .stack_id = chain_stack(r, h->s, h->gen)};
	}
	return 0;
}

const struct profile_woken *recording__woken(const struct recording *r, size_t *ret_n,
					     const struct profile_hop **ret_hops,
					     size_t *ret_nr_hops)
{
	*ret_n = r->nr_woken;
	*ret_hops = r->hops;
	*ret_nr_hops = r->nr_hops;
	return r->woken;
}

/* autograd's backward pass kept for the timeline: 0, 1 when past RECORDING_MAX_PASSES
 * (counted there), or -ENOMEM (counted there too). */
static int keep_pass(void *ctx, const struct autograd_pass *p)
{
	struct recording *r = ctx;

	if (r->nr_passes >= RECORDING_MAX_PASSES)
		return 1;
	if (vec_reserve(&r->passes, &r->cap_passes, r->nr_passes + 1))
		return -ENOMEM;
	r->passes[r->nr_passes++] = (struct profile_pass){
		.start_ns = p->start_ns, .end_ns = p->end_ns, .pid = p->tgid, .tid = p->tid};
	return 0;
}

/* autograd's link of a backward launch to its forward op, kept likewise. */
static int keep_fwd(void *ctx, const struct autograd_link *l)
{
	struct recording *r = ctx;

	if (r->nr_fwds >= RECORDING_MAX_FWDS)
		return 1;
	if (vec_reserve(&r->fwds, &r->cap_fwds, r->nr_fwds + 1))
		return -ENOMEM;
	r->fwds[r->nr_fwds++] = (struct profile_fwd){.launch_ns = l->time_ns,
						     .fwd_ns = l->fwd_ns,
						     .pid = l->tgid,
						     .tid = l->tid,
						     .fwd_tid = l->fwd_tid};
	return 0;
}

const struct profile_fwd *recording__fwds(const struct recording *r, size_t *ret_n)
{
	*ret_n = r->nr_fwds;
	return r->fwds;
}

const struct profile_pass *recording__passes(const struct recording *r, size_t *ret_n)
{
	*ret_n = r->nr_passes;
	return r->passes;
}

static void new_process(struct recording *r, uint32_t tgid)
{
	if (r->on_new_process)
		r->on_new_process(r->on_new_process_ctx, tgid);
}

/* The image a sample of tgid ran in (the symbolizer snapshots it if it is new); a process met
 * first here (running before we started) gets its mappings loaded now. */
/* A process met: its interpreter looked for, and a CPython we walk has its libtorch given the
 * autograd probes (no other process has its mappings read for them). */
static void python_add(struct recording *r, pid_t pid)
{
	if (r->py && !pyprof__add_process(r->py, pid) && r->ag)
		autograd__scan(r->ag, pid);
}

static uint32_t sample_gen(struct recording *r, uint32_t tgid, uint32_t flags)
{
	if (!tgid || (flags & (XSPROF_SAMPLE_F_KTHREAD | XSPROF_SAMPLE_F_FOREIGN)))
		return 0;
	if (pid_set__insert(&r->seen, tgid)) {
		/* First met here: the snapshot may be of an earlier process with this pid (its
		 * exit and this one's exec lost with a full ring buffer). */
		symbolizer__verify(r->sym, (pid_t)tgid);
		if (r->unwinder)
			unwinder__add_process(r->unwinder, (pid_t)tgid);
		python_add(r, (pid_t)tgid);
		new_process(r, tgid);
	}
	return symbolizer__gen(r->sym, tgid);
}

/* A sample taken at a rate --max-cpu lowered stands for the samples the asked rate would have
 * taken (the timeline keeps the samples taken). */
static void record_sample(struct recording *r, const struct xsprof_sample *s, uint32_t gen)
{
	uint64_t weight = sampler__rate_divisor(r->sampler);

	if (r->max_timeline) {
		timeline_add(r, s, gen, weight);
		return;
	}
	if (stack_table__add_weighted(r->stacks, s, gen, weight))
		r->st.store_failures++;
}

static void on_sample(void *ctx, const struct xsprof_sample *s)
{
	struct recording *r = ctx;

	record_sample(r, s, sample_gen(r, s->tgid, s->flags));
}

/* An off-CPU stack names the image its process has now, as a sample would. */
static uint32_t offcpu_gen(void *ctx, pid_t tgid)
{
	struct recording *r = ctx;

	if (pid_set__insert(&r->seen, (uint32_t)tgid))
		new_process(r, (uint32_t)tgid);
	return symbolizer__gen(r->sym, tgid);
}

static int drain(struct recording *r)
{
	int n = sampler__drain(r->sampler);

	if (n < 0)
		log_err("reading the ring buffer failed: %s", strerror(-n));
	return n < 0 ? n : 0;
}

static int on_ring(sd_event_source *src, int fd, uint32_t revents, void *ctx)
{
	return drain(ctx);
}

static void unwind_kick(struct recording *r);

/* The loop did not run for this long (the daemon stopped, or starved): said, since what the
 * ring buffer could not hold meanwhile is lost. */
#define STALL_NS (1000ull * 1000 * 1000)

static void note_stall(struct recording *r)
{
	uint64_t now = clock__mono_ns();

	if (r->last_drain_ns && now - r->last_drain_ns > STALL_NS) {
		r->st.stalls++;
		r->st.stalled_ns += now - r->last_drain_ns - DRAIN_INTERVAL_US * 1000;
	}
	r->last_drain_ns = now;
}

static int on_drain_timer(sd_event_source *src, uint64_t usec, void *ctx)
{
	int err;

	note_stall(ctx);
	err = drain(ctx);

	/* Builds that waited for their user's budget, and held samples' deadlines. */
	unwind_kick(ctx);
	if (!err)
		err = sd_event_source_set_time_relative(src, DRAIN_INTERVAL_US);
	return err;
}

/* At the moment the sampler asked for, to the microsecond: a timer that the loop would round
 * to a grid of its own would restart the events on a grid again. */
static int arm_dither(struct recording *r, uint64_t now_ns)
{
	uint64_t next = sampler__dither(r->sampler, now_ns);

	if (next == UINT64_MAX)
		return sd_event_source_set_enabled(r->dither, SD_EVENT_OFF);
	return sd_event_source_set_time(r->dither, next / 1000 + 1);
}

static int on_dither_timer(sd_event_source *src, uint64_t usec, void *ctx)
{
	return arm_dither(ctx, clock__mono_ns());
}

/* ---- GPU path (cuda_probes) ---- */

/* The process mapped a CUDA library or sent its first launch: its mappings are worth reading
 * again, whatever the CPU samples saw before. */
static void on_cuda_process(void *ctx, pid_t pid)
{
	struct recording *r = ctx;

	if (pid_set__insert(&r->seen, pid))
		new_process(r, (uint32_t)pid);
	if (symbolizer__add_process(r->sym, pid))
		r->st.snapshot_failed++;
	if (r->unwinder)
		unwinder__add_process(r->unwinder, pid);
	python_add(r, pid);
}

/* A launch walk asked for a table and its process waits: build what is queued (the tables
 * are shared; a training job's libraries take tens of ms each), then let it run on. */
#define TABLE_WAIT_NS (250ull * 1000 * 1000)

static void on_cuda_tables(void *ctx, pid_t pid)
{
	struct recording *r = ctx;

	(void)pid;
	if (!r->unwinder)
		return;
	unwinder__build_queued(r->unwinder, clock__mono_ns() + TABLE_WAIT_NS);
	unwind_kick(r);
}

static void on_process_exit(void *ctx, uint32_t tgid, uint64_t time_ns, int signal)
{
	struct recording *r = ctx;

	if (r->cuda)
		cuda_probes__process_exited(r->cuda, tgid, time_ns);
	if (r->on_exit)
		r->on_exit(r->on_new_process_ctx, tgid, time_ns, signal);
}

static void on_cuda_wait(void *ctx, uint32_t tgid, uint32_t tid, unsigned int api,
			 uint64_t entry_ns, uint64_t return_ns)
{
	struct recording *r = ctx;

	if (r->on_cuda_wait)
		r->on_cuda_wait(r->on_new_process_ctx, tgid, tid, api, entry_ns, return_ns);
}

static void on_cuda_scope(void *ctx, const struct launch_range *lr)
{
	struct recording *r = ctx;

	if (r->on_scope)
		r->on_scope(r->on_new_process_ctx, lr->tgid, lr->tid, lr->name, lr->start_ns,
			    lr->end_ns);
}

static int recording_cuda_setup(struct recording *r, const struct recording_opts *o,
				const char **ret_what)
{
	struct cuda_probes_opts copts = {
		.follow_forks = o->follow_forks,
		.by_file = o->follow_forks, /* forked children inherit the libraries */
		/* Only processes we were asked for: the watch stops them while it attaches. */
		.watch_maps = o->cuda && (o->nr_pids > 0 || o->follow_forks),
		.max_stacks = o->max_launch_stacks,
		.keep_launch_uprobes = o->keep_launch_uprobes,
		.on_process = on_cuda_process,
		.on_tables = on_cuda_tables,
		.on_wait = on_cuda_wait,
		.on_scope = on_cuda_scope,
		.ctx = r,
	};
	int err;

	if (!o->cuda && !o->follow_forks)
		return 0;
	*ret_what = "setting up the CUDA probes";
	r->cuda = cuda_probes__new(r->sampler, &copts);
	if (!r->cuda)
		return -errno;
	if (!o->cuda)
		return 0; /* following forks only (--no-cuda in command mode) */
	for (int i = 0; i < o->nr_cuda_libs; i++) {
		err = cuda_probes__attach_path(r->cuda, o->cuda_libs[i]);
		if (err == -ENOENT && !access(o->cuda_libs[i], F_OK)) {
			log_err("--cuda-lib %s: no CUDA API nor xsprof:launch probe in it (a stripped "
				"executable cannot be probed: link with -cudart shared)",
				o->cuda_libs[i]);
			return err;
		}
		if (err) {
			log_err("--cuda-lib %s: %s", o->cuda_libs[i],
				cuda_probes__last_error(r->cuda) && err != -ENOENT
					? cuda_probes__last_error(r->cuda)
					: strerror(-err));
			return err;
		}
	}
	for (int i = 0; i < o->nr_pids; i++) {
		err = cuda_probes__attach_pid(r->cuda, o->pids[i]);
		if (err < 0 && err != -ESRCH)
			log_warn("pid %d: CUDA probes not attached: %s", (int)o->pids[i],
				 cuda_probes__last_error(r->cuda) ? cuda_probes__last_error(r->cuda)
								  : strerror(-err));
	}
	return 0;
}

struct cuda_probes *recording__cuda(struct recording *r)
{
	return r->cuda;
}

int recording__add_pid(struct recording *r, pid_t pid)
{
	int err = sampler__add_pid(r->sampler, pid);

	if (!err && r->cuda) {
		err = cuda_probes__attach_pid(r->cuda, pid);
		err = err < 0 ? err : 0;
	}
	return err;
}

/* ---- user stacks without frame pointers (daemon/unwind) ---- */

/* A held sample, finished by the unwinder: on as any other, in the image it arrived in. */
static void on_held_done(void *ctx, const struct xsprof_sample *s, size_t size, uint64_t gen)
{
	struct recording *r = ctx;

	s = sampler__rewrite(r->sampler, s, size, &size);
	record_sample(r, s, (uint32_t)gen);
}

static void unwind_kick(struct recording *r)
{
	if (r->unwind_work && unwinder__busy(r->unwinder))
		sd_event_source_set_enabled(r->unwind_work, SD_EVENT_ON);
}

static int on_held(void *ctx, const void *data, size_t size)
{
	struct recording *r = ctx;
	const struct xsprof_sample_held *h = data;
	uint32_t gen;
	int err;

	if (size < sizeof(*h))
		return -EBADMSG;
	gen = sample_gen(r, h->sample.tgid, h->sample.flags);
	err = unwinder__hold(r->unwinder, data, size, on_held_done, r, gen);
	unwind_kick(r);
	return err;
}

static int on_unwind_want(void *ctx, const void *data, size_t size)
{
	struct recording *r = ctx;
	const struct xsprof_unwind_want *w = data;
	int err = unwinder__want(r->unwinder, data, size);

	(void)w;

	/* Code mapped since the snapshot (JIT): the names want the new mappings too. */
	if (err == 1) {
		symbolizer__refresh(r->sym, (pid_t)w->tgid);
		err = 0;
	}
	unwind_kick(r);
	return err;
}

/* Table builds run in slices between reads of the ring buffer (below its priority). */
static int on_unwind_work(sd_event_source *src, void *ctx)
{
	struct recording *r = ctx;

	if (!unwinder__work(r->unwinder, 4 * 1000 * 1000))
		sd_event_source_set_enabled(src, SD_EVENT_OFF);
	return 0;
}

/* The unwinder (and its maps) before the sampler, which reuses them. */
static int recording_unwind_new(struct recording *r, const struct recording_opts *o,
				struct unwinder_maps *ret_maps)
{
	struct unwinder_opts uo = {.table_mb = o->unwind_mb};

	if (o->unwind_mode == XSPROF_UNWIND_FP)
		return 0;
	r->unwinder = o->unwinder;
	if (!r->unwinder) {
		r->unwinder = unwinder__new(&uo);
		if (!r->unwinder)
			return -errno;
		r->own_unwinder = true;
	}
	unwinder__maps(r->unwinder, ret_maps);
	return 0;
}

static int recording_unwind_setup(struct recording *r)
{
	int err;

	if (!r->unwinder)
		return 0;
	err = sampler__set_handler(r->sampler, XSPROF_REC_UNWIND_WANT, on_unwind_want, r);
	if (!err)
		err = sampler__set_handler(r->sampler, XSPROF_REC_SAMPLE_HELD, on_held, r);
	if (!err)
		err = sd_event_add_defer(r->ev, &r->unwind_work, on_unwind_work, r);
	if (!err)
		err = sd_event_source_set_priority(r->unwind_work, SD_EVENT_PRIORITY_IDLE);
	if (err)
		return err;
	sd_event_source_set_enabled(r->unwind_work, SD_EVENT_OFF);
	sampler__set_hold(r->sampler, true);
	return 0;
}

uint32_t recording__unwind_mb(const struct recording *r)
{
	return r->unwinder ? unwinder__table_mb(r->unwinder) : 0;
}

int recording__unwind_stats(const struct recording *r, struct xsprof_unwind_stats *ret_bpf,
			    struct unwinder_stats *ret_tables)
{
	if (!r->unwinder)
		return -ENOENT;
	unwinder__stats(r->unwinder, ret_tables);
	return sampler__unwind_stats(r->sampler, ret_bpf);
}

/* ---- interpreter frames (daemon/python) ---- */

/* Interpreter frames put in place, then backward work put under its forward line. */
static const void *python_rewrite(void *ctx, const void *data, size_t size, size_t *ret_size)
{
	struct recording *r = ctx;

	data = pyprof__rewrite(r->py, data, size, ret_size);
	if (r->ag)
		data = autograd__rewrite(r->ag, data, *ret_size, ret_size);
	return data;
}

static int on_autograd_record(void *ctx, const void *data, size_t size)
{
	return autograd__record(ctx, data, size);
}

static int recording_python_setup(struct recording *r, const struct recording_opts *o,
				  struct symbolizer *sym)
{
	struct pyprof_opts po = {.sym = sym};
	int err = sampler__python_map(r->sampler, &po.procs_fd, &po.max_procs);
	struct xsprof_bpf *skel = sampler__skel(r->sampler);

	if (err)
		return err;
	r->py = pyprof__new(&po);
	if (!r->py)
		return -errno;
	if (o->autograd && sampler__has_program(r->sampler, SAMPLER_PROG_AUTOGRAD)) {
		struct autograd_opts ao = {
			.sym = sym,
			.node = skel->progs.xsprof_ag_node,
			.eval = skel->progs.xsprof_ag_eval,
			.exec = skel->progs.xsprof_ag_exec,
			.exec_end = skel->progs.xsprof_ag_exec_end,
		};

		r->ag = autograd__new(&ao);
		if (!r->ag)
			return -errno;
		sampler__set_handler(r->sampler, XSPROF_REC_AUTOGRAD, on_autograd_record, r->ag);
		if (o->max_timeline)
			autograd__on_timeline(r->ag, keep_pass, keep_fwd, r);
	}
	sampler__set_rewrite(r->sampler, python_rewrite, r);
	sampler__set_python(r->sampler, true);
	return 0;
}

int recording__autograd_stats(const struct recording *r, struct xsprof_autograd_stats *ret_bpf,
			      struct autograd_stats *ret)
{
	if (!r->ag)
		return -ENOENT;
	autograd__stats(r->ag, ret);
	return sampler__autograd_stats(r->sampler, ret_bpf);
}

const char *recording__autograd_error(const struct recording *r)
{
	return r->ag ? autograd__last_error(r->ag) : NULL;
}

int recording__python_stats(const struct recording *r, struct xsprof_py_stats *ret_bpf,
			    struct pyprof_stats *ret)
{
	if (!r->py)
		return -ENOENT;
	pyprof__stats(r->py, ret);
	return sampler__python_stats(r->sampler, ret_bpf);
}

/* ---- */

/* The optional BPF programs this recording has no use for: not loaded at all. */
static uint32_t programs_not_wanted(const struct recording_opts *o)
{
	uint32_t skip = SAMPLER_PROGS_CUDA; /* cuda_probes loads them when it attaches */

	if (!o->proc_events)
		skip |= SAMPLER_PROG_BIT(SAMPLER_PROG_PROC_EXEC) |
			SAMPLER_PROG_BIT(SAMPLER_PROG_PROC_EXIT) |
			SAMPLER_PROG_BIT(SAMPLER_PROG_PROC_LIBS);
	if (!o->cuda)
		skip |= SAMPLER_PROG_BIT(SAMPLER_PROG_WATCH_MMAP) |
			SAMPLER_PROG_BIT(SAMPLER_PROG_WATCH_EXEC);
	if (!o->cuda && !o->follow_forks)
		skip |= SAMPLER_PROG_BIT(SAMPLER_PROG_FOLLOW_FORK) |
			SAMPLER_PROG_BIT(SAMPLER_PROG_UNFOLLOW_EXIT);
	if (!o->python || !o->autograd)
		skip |= SAMPLER_PROG_BIT(SAMPLER_PROG_AUTOGRAD);
	return skip;
}

/* A kernel that refused an optional program still samples: say what is missing (off-CPU
 * time, when asked for, is an error of its own). */
static void report_refused(const struct sampler *s)
{
	uint32_t refused = sampler__refused(s) & ~SAMPLER_PROG_BIT(SAMPLER_PROG_OFFCPU);

	for (int p = 0; p < SAMPLER_PROG_MAX; p++)
		if (refused & SAMPLER_PROG_BIT(p))
			log_warn("this kernel refused a BPF program: sampling goes on without %s",
				 sampler__program_feature(p));
}

/* A process joins the pid filter, its names and tables read now: one that exits before its
 * first sample still gets names. */
static int watch_pid(struct recording *r, pid_t pid)
{
	int err = sampler__add_pid(r->sampler, pid);

	if (err)
		return err;
	if (pid_set__insert(&r->seen, (uint32_t)pid) && symbolizer__add_process(r->sym, pid))
		r->st.snapshot_failed++;
	if (r->unwinder)
		unwinder__add_process(r->unwinder, pid);
	python_add(r, pid);
	return 0;
}

/* How many descendants of the given pids join at the start, at most. */
#define MAX_DESCENDANTS 4096

/*
 * The descendants of root running now, breadth first through /proc/PID/task/TID/children
 * (threads fork too), each watched and, with CUDA, probed; at most *budget of them. Children
 * forked from here on are the fork follower's.
 */
static void add_descendants(struct recording *r, pid_t root, int *budget)
{
	pid_t *queue = malloc(MAX_DESCENDANTS * sizeof(*queue));
	int head = 0, tail = 0;

	if (!queue)
		return;
	queue[tail++] = root;
	while (head < tail) {
		pid_t pid = queue[head++];
		char path[64];
		struct dirent *d;
		DIR *dir;

		snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
		dir = opendir(path);
		if (!dir)
			continue; /* gone */
		while ((d = readdir(dir))) {
			char cpath[320], buf[4096], *p, *end;
			ssize_t n;
			FILE *f;

			if (d->d_name[0] < '0' || d->d_name[0] > '9')
				continue;
			snprintf(cpath, sizeof(cpath), "/proc/%d/task/%s/children", (int)pid,
				 d->d_name);
			f = fopen(cpath, "re");
			if (!f)
				continue;
			n = (ssize_t)fread(buf, 1, sizeof(buf) - 1, f);
			fclose(f);
			buf[n > 0 ? n : 0] = '\0';
			for (p = buf;; p = end) {
				long child = strtol(p, &end, 10);

				if (end == p || child <= 0)
					break;
				if (*budget <= 0 || tail == MAX_DESCENDANTS) {
					r->st.descendants_capped++;
					continue;
				}
				/* A full filter fails here: that child goes unwatched. */
				if (!watch_pid(r, (pid_t)child) && r->cuda)
					cuda_probes__attach_pid(r->cuda, (pid_t)child);
				(*budget)--;
				r->st.descendants++;
				queue[tail++] = (pid_t)child;
			}
		}
		closedir(dir);
	}
	free(queue);
}

void recording__sampler_opts(const struct recording_opts *o, const struct unwinder_maps *um,
			     struct sampler_opts *ret)
{
	*ret = (struct sampler_opts){
		.freq_hz = o->freq_hz,
		.include_idle = o->include_idle,
		.ring_bytes = o->ring_bytes,
		.max_pids = o->nr_pids > 4096 ? (uint32_t)o->nr_pids : 0,
		.unwind_mode = o->unwind_mode,
		.unwind_maps = o->unwind_mode == XSPROF_UNWIND_FP ? NULL : um,
		.offcpu = o->offcpu,
		.offcpu_min_ns = o->offcpu_min_ns,
		.wakers = o->wakers,
		.offcpu_max_stacks = o->max_stacks,
		.comm = o->comm,
		.cgroup_fd = o->cgroup_fd,
		.skip_programs = programs_not_wanted(o),
		.tids = o->tids,
		.nr_tids = o->nr_tids,
		.gpu_wait_exclusive = o->gpu_wait_exclusive,
		.only_uid = o->only_uid,
		.uid = o->uid,
	};
}

/* The stack table, the unwind maps and the BPF sampler (o->sampler when given: taken over). */
static int recording_sampler_new(struct recording *r, const struct recording_opts *o,
				 const char **ret_what)
{
	struct sampler_opts sopts;
	struct unwinder_maps um;
	int err;

	r->stacks = stack_table__new(o->max_stacks);
	if (!r->stacks)
		return -ENOMEM;
	*ret_what = "making the unwind table maps (--unwind-mb)";
	err = recording_unwind_new(r, o, &um);
	if (err)
		return err;
	recording__sampler_opts(o, &um, &sopts);
	sopts.unwind_maps = r->unwinder ? &um : NULL;
	*ret_what = "loading the BPF sampler";
	if (o->sampler) {
		r->sampler = o->sampler;
		sampler__set_sample_fn(r->sampler, on_sample, r);
	} else {
		r->sampler = sampler__new(&sopts, on_sample, r);
	}
	if (!r->sampler)
		return -errno;
	report_refused(r->sampler);
	if (o->offcpu && !sampler__has_program(r->sampler, SAMPLER_PROG_OFFCPU)) {
		*ret_what = "loading the off-CPU program (this kernel refused tp_btf/sched_switch; "
			    "--mode cpu still works)";
		return -EOPNOTSUPP;
	}
	return 0;
}

/* The off-CPU program and the process exec/exit tracepoints, when asked for. */
static int recording_attach_events(struct recording *r, const struct recording_opts *o,
				   struct symbolizer *sym, const char **ret_what)
{
	if (o->offcpu) {
		*ret_what = "attaching the off-CPU program (sched_switch)";
		r->offcpu_stacks = stack_table__new(o->max_stacks);
		r->oc = r->offcpu_stacks ? offcpu__attach(r->sampler, offcpu_gen, r, o->max_stacks)
					 : NULL;
		if (r->oc)
			offcpu__set_unwinder(r->oc, r->unwinder);
		if (r->oc && o->wakers)
			offcpu__set_wakers(r->oc, sym, o->offcpu_min_ns);
		if (r->oc && o->wakers && o->max_timeline)
			offcpu__on_chain(r->oc, keep_chain, r);
		if (!r->oc)
			return r->offcpu_stacks ? -errno : -ENOMEM;
	}
	if (o->proc_events && sampler__has_program(r->sampler, SAMPLER_PROG_PROC_EXEC) &&
	    sampler__has_program(r->sampler, SAMPLER_PROG_PROC_EXIT)) {
		*ret_what = "attaching the process exec/exit tracepoints";
		r->pe = proc_events__attach(r->sampler, sym);
		if (!r->pe)
			return -errno;
		proc_events__set_unwinder(r->pe, r->unwinder);
		proc_events__set_python(r->pe, r->py);
		proc_events__set_autograd(r->pe, r->ag);
		if (o->on_exec)
			proc_events__set_on_exec(r->pe, o->on_exec, o->on_new_process_ctx);
	}
	return 0;
}

/* The pids asked for, into the filter; with --follow-forks, kept as the roots of their trees. */
static int recording_watch_pids(struct recording *r, const struct recording_opts *o)
{
	int err;

	for (int i = 0; i < o->nr_pids; i++) {
		err = watch_pid(r, o->pids[i]);
		if (err)
			return err;
	}
	if (o->follow_forks && o->nr_pids > 0) {
		r->roots = malloc(o->nr_pids * sizeof(*r->roots));
		if (!r->roots)
			return -ENOMEM;
		memcpy(r->roots, o->pids, o->nr_pids * sizeof(*r->roots));
		r->nr_roots = o->nr_pids;
	}
	return 0;
}

/* The ring buffer's fd and the drain and dither timers in the event loop, the timers off. */
static int recording_add_sources(struct recording *r, sd_event *ev)
{
	int err;

	err = sd_event_add_io(ev, &r->io, sampler__fd(r->sampler), EPOLLIN, on_ring, r);
	if (err)
		return err;
	err = sd_event_add_time_relative(ev, &r->drain, CLOCK_MONOTONIC, DRAIN_INTERVAL_US, 0,
					 on_drain_timer, r);
	if (err)
		return err;
	/* Not until started. */
	sd_event_source_set_enabled(r->drain, SD_EVENT_OFF);
	err = sd_event_add_time(ev, &r->dither, CLOCK_MONOTONIC, 0, 1, on_dither_timer, r);
	if (err)
		return err;
	sd_event_source_set_enabled(r->dither, SD_EVENT_OFF);
	return 0;
}

struct recording *recording__new(sd_event *ev, const struct recording_opts *o,
				 struct symbolizer *sym, const char **ret_what)
{
	struct recording *r;
	int err;

	*ret_what = "setting up";
	r = calloc(1, sizeof(*r));
	if (!r) {
		sampler__free(o->sampler); /* taken over, whatever happens */
		return NULL;
	}
	r->ev = sd_event_ref(ev);
	r->sym = sym;
	r->max_stacks = o->max_stacks;
	r->max_timeline = o->max_timeline;
	r->on_new_process = o->on_new_process;
	r->on_new_process_ctx = o->on_new_process_ctx;
	r->on_exit = o->on_exit;
	r->on_cuda_wait = o->on_cuda_wait;
	r->on_scope = o->on_scope;
	err = recording_sampler_new(r, o, ret_what);
	if (err)
		goto fail;
	err = recording_unwind_setup(r);
	if (err) {
		*ret_what = "setting up the unwind tables";
		goto fail;
	}
	if (o->python && (err = recording_python_setup(r, o, sym))) {
		*ret_what = "setting up the interpreter frames";
		goto fail;
	}
	err = recording_attach_events(r, o, sym, ret_what);
	if (err)
		goto fail;
	*ret_what = "setting the pid filter";
	err = recording_watch_pids(r, o);
	if (err)
		goto fail;
	err = recording_cuda_setup(r, o, ret_what);
	if (err)
		goto fail;
	/* xsprof scopes still open in a process that exits end at its exit. */
	if (r->pe && (r->cuda || r->on_exit))
		proc_events__set_on_exit(r->pe, on_process_exit, r);
	*ret_what = "adding the ring buffer to the event loop";
	err = recording_add_sources(r, ev);
	if (err)
		goto fail;
	return r;
fail:
	if (o->sampler && r->sampler != o->sampler)
		sampler__free(o->sampler);
	recording__free(r);
	errno = -err;
	return NULL;
}

int recording__start(struct recording *r)
{
	int err = sampler__start(r->sampler);

	if (!err && r->oc)
		err = offcpu__start(r->oc);
	if (err) {
		sampler__stop(r->sampler);
		return err;
	}
	/* Without the watchers, launches right after a library loads may be missed: say so. */
	if (r->cuda && (err = cuda_probes__start(r->cuda)))
		log_warn("following forks and CUDA library loads failed (%s): children of the "
			 "profiled processes, or their first CUDA calls, may be missed",
			 strerror(-err));
	/* Children forked from now on are followed; those running already are read now. */
	for (int i = 0, budget = MAX_DESCENDANTS; i < r->nr_roots; i++)
		add_descendants(r, r->roots[i], &budget);
	r->running = true;
	r->t0 = clock__mono_s();
	r->cpu0 = clock__cpu_s();
	sd_event_source_set_time_relative(r->drain, DRAIN_INTERVAL_US);
	sd_event_source_set_enabled(r->drain, SD_EVENT_ON);
	sd_event_source_set_enabled(r->dither, SD_EVENT_ON);
	if (arm_dither(r, clock__mono_ns()) < 0)
		log_warn(
			"the sampling events' restarts could not be timed: their samples keep a "
			"fixed grid, which a program whose cycle is a whole number of periods meets "
			"at the same points every cycle");
	return 0;
}

uint64_t recording__end_ns(const struct recording *r)
{
	return r && !r->running ? r->end_ns : 0;
}

void recording__stop(struct recording *r)
{
	struct sampler_stats us;
	uint64_t end_ns = clock__mono_ns();

	if (!r || !r->running)
		return;
	/* Its end may come first after a stall (its timer was due meanwhile). */
	note_stall(r);
	cuda_probes__stop(r->cuda);
	sampler__stop(r->sampler);
	offcpu__stop(r->oc);
	r->running = false;
	r->end_ns = end_ns;
	/* Samples still queued after the perf events closed. */
	drain(r);
	/* The xsprof scopes still open end with the recording (counted). */
	cuda_probes__end_scopes(r->cuda, end_ns);
	/* So do the backward passes still open. */
	autograd__end_passes(r->ag, end_ns);
	/* Held samples: the tables they wait for, within a deadline, then as they are. */
	if (r->unwinder) {
		uint64_t deadline = clock__mono_ns() + 2000000000ull;

		/* Ours only: a shared unwinder serves other recordings too. */
		unwinder__flush(r->unwinder, r, deadline);
		if (r->oc)
			unwinder__flush(r->unwinder, r->oc, deadline);
		sd_event_source_set_enabled(r->unwind_work, SD_EVENT_OFF);
	}
	if (r->oc) {
		int err = offcpu__collect(r->oc, r->offcpu_stacks);

		if (err)
			log_warn("reading the off-CPU time failed: %s", strerror(-err));
	}
	sd_event_source_set_enabled(r->drain, SD_EVENT_OFF);
	sd_event_source_set_enabled(r->dither, SD_EVENT_OFF);
	sd_event_source_set_enabled(r->io, SD_EVENT_OFF);
	r->st.wall_s = clock__mono_s() - r->t0;
	r->st.cpu_s = clock__cpu_s() - r->cpu0;
	sampler__user_stats(r->sampler, &us);
	r->st.records = us.records;
	r->st.bad_records = us.bad_records;
	r->st.processes = r->seen.len;
	if (us.restart_failures)
		log_warn(
			"the kernel refused to restart %llu sampling events (PERF_EVENT_IOC_PERIOD): "
			"their samples kept a fixed grid, which a program whose cycle is a whole "
			"number of periods meets at the same points every cycle",
			(unsigned long long)us.restart_failures);
	if (sampler__read_stats(r->sampler, NULL, &r->st.bpf))
		log_warn("could not read the BPF counters");
	if (r->pe && proc_events__stats(r->pe, &r->st.proc))
		log_warn("could not read the process event counters");
}

const struct stack_table *recording__offcpu_stacks(const struct recording *r)
{
	return r->offcpu_stacks;
}

int recording__offcpu_stats(const struct recording *r, struct offcpu_stats *ret)
{
	if (!r->oc)
		return -ENOENT;
	offcpu__stats(r->oc, ret);
	return 0;
}

/* ---- --max-cpu (daemon/session/ceiling.h) ---- */

void recording__shed(struct recording *r, const struct recording_shed *sh)
{
	uint32_t every = sh->launch_stack_every > 1 ? sh->launch_stack_every : 1;

	sampler__set_rate_divisor(r->sampler, sh->rate_div ? sh->rate_div : 1);
	if (r->py)
		sampler__set_python(r->sampler, !sh->python);
	sampler__set_shed(r->sampler, r->cuda ? every : 1, r->cuda && sh->cuda_calls,
			  r->oc && sh->offcpu, r->pe && sh->exec);
	if (r->cuda)
		cuda_probes__set_stack_every(r->cuda, every);
}

void recording__set_ceiling(struct recording *r, struct ceiling *c)
{
	r->ceiling = c;
}

uint32_t recording__sheddable(const struct recording *r)
{
	return RECORDING_SHED_RATE | (r->py ? RECORDING_SHED_PYTHON : 0) |
	       (r->cuda ? RECORDING_SHED_LAUNCH_STACKS | RECORDING_SHED_CUDA_CALLS : 0) |
	       (r->oc ? RECORDING_SHED_OFFCPU : 0) | (r->pe ? RECORDING_SHED_EXEC : 0);
}

static int add_run_ns(void *ctx, const struct bpf_cost *c)
{
	*(uint64_t *)ctx += c->run_ns;
	return 0;
}

uint64_t recording__bpf_run_ns(struct recording *r)
{
	uint64_t ns = 0;

	bpf_cost__for_each(sampler__skel(r->sampler)->obj, add_run_ns, &ns);
	for (int i = 0; r->cuda && cuda_probes__obj(r->cuda, i); i++)
		bpf_cost__for_each(cuda_probes__obj(r->cuda, i), add_run_ns, &ns);
	return ns;
}

void recording__stats(const struct recording *r, struct recording_stats *ret)
{
	*ret = r->st;
	if (r->sampler && sampler__owner_stats(r->sampler, &ret->owner))
		memset(&ret->owner, 0, sizeof(ret->owner));
	/* A running recording's process counters, read now (stop keeps the last reading). */
	if (r->running) {
		ret->processes = r->seen.len;
		if (r->pe && proc_events__stats(r->pe, &ret->proc))
			memset(&ret->proc, 0, sizeof(ret->proc));
	}
}

int recording__cpu_stats(const struct recording *r, struct xsprof_cpu_stats *ret)
{
	struct xsprof_cpu_stats total;

	return sampler__read_stats(r->sampler, ret, &total);
}

int recording__nr_cpus(const struct recording *r)
{
	return sampler__nr_cpus(r->sampler);
}

int recording__nr_attached(const struct recording *r)
{
	return sampler__nr_attached(r->sampler);
}

uint32_t recording__ring_bytes(const struct recording *r)
{
	return sampler__ring_bytes(r->sampler);
}

const struct profile_sample *recording__timeline(const struct recording *r, size_t *ret_n,
						 uint64_t *ret_dropped)
{
	*ret_n = r->nr_timeline;
	*ret_dropped = r->timeline_dropped;
	return r->timeline;
}

const struct stack_table *recording__stacks(const struct recording *r)
{
	return r->stacks;
}

struct sampler *recording__sampler(struct recording *r)
{
	return r->sampler;
}

void recording__free(struct recording *r)
{
	if (r && r->ceiling)
		ceiling__remove(r->ceiling, r); /* its cost so far is kept */
	if (!r)
		return;
	recording__stop(r);
	free(r->roots);
	sd_event_source_disable_unref(r->io);
	sd_event_source_disable_unref(r->drain);
	sd_event_source_disable_unref(r->dither);
	sd_event_source_disable_unref(r->unwind_work);
	cuda_probes__free(r->cuda); /* its links before the skeleton goes */
	offcpu__free(r->oc);
	stack_table__free(r->offcpu_stacks);
	proc_events__free(r->pe);
	autograd__free(r->ag); /* its links before the skeleton goes */
	sampler__free(r->sampler);
	if (r->own_unwinder)
		unwinder__free(r->unwinder); /* its maps, after the programs that use them */
	pyprof__free(r->py);
	stack_table__free(r->stacks);
	free(r->timeline);
	free(r->woken);
	free(r->passes);
	free(r->fwds);
	free(r->hops);
	free(r->seen.slots);
	sd_event_unref(r->ev);
	free(r);
}

int recording__rotate(struct recording *r, struct stack_table **ret_stacks, uint32_t **ret_pids,
		      size_t *ret_nr_pids)
{
	struct stack_table *fresh = stack_table__new(r->max_stacks);
	uint32_t *pids = malloc((r->seen.len ? r->seen.len : 1) * sizeof(*pids));
	size_t n = 0;

	if (!fresh || !pids) {
		stack_table__free(fresh);
		free(pids);
		return -ENOMEM;
	}
	for (size_t i = 0; i < r->seen.cap; i++)
		if (r->seen.slots[i])
			pids[n++] = r->seen.slots[i];
	/* Pick up queued samples first so they land in the slice they belong to. */
	if (r->running)
		drain(r);
	*ret_stacks = r->stacks;
	*ret_pids = pids;
	*ret_nr_pids = n;
	r->stacks = fresh;
	free(r->seen.slots);
	memset(&r->seen, 0, sizeof(r->seen));
	return 0;
}

void recording__take_timeline(struct recording *r, struct profile_sample **ret_samples,
			      size_t *ret_n, uint64_t *ret_dropped)
{
	*ret_samples = r->timeline;
	*ret_n = r->nr_timeline;
	*ret_dropped = r->timeline_dropped;
	r->timeline = NULL;
	r->nr_timeline = r->timeline_cap = 0;
	r->timeline_dropped = 0;
}
