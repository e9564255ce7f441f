// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/hashmap.h"
#include "daemon/base/keymap.h"
#include "daemon/base/vec.h"
#include "output/gpu_report/gpu_memory.h"
#include "output/model/profile.h"

#define MAX_CHANGES 200000

/* The building state: where each live allocation came from, and the place of each stack. */
struct walk {
	const struct profile_data *pd;
	struct gpu_memory *m;
	struct hashmap *live;	/* (pid, addr) -> pd->mem index + 1 */
	struct hashmap *by_id;	/* (pid, device and stack_id) -> stacks index + 1 */
	struct keymap *by_name; /* pid, device, api, frames -> stacks index + 1 */
	size_t *place;		/* pd->mem index -> stacks index (allocations) */
	char *key;
	size_t cap_key;
};

static struct gpu_mem_proc *proc_of(struct gpu_memory *m, uint32_t pid, int32_t device)
{
	for (size_t i = 0; i < m->nr_procs; i++)
		if (m->procs[i].pid == pid && m->procs[i].device == device)
			return &m->procs[i];
	if (vec_reserve(&m->procs, &m->cap_procs, m->nr_procs + 1))
		return NULL;
	m->procs[m->nr_procs] = (struct gpu_mem_proc){.pid = pid, .device = device};
	return &m->procs[m->nr_procs++];
}

/* The hash key of a stack on a device: one stack may allocate on several. */
static uint64_t id_key(const struct profile_mem *e)
{
	return (uint64_t)(uint32_t)e->device << 32 | e->stack_id;
}

/* The place of an allocation: its stack as named (stacks that read the same are one). */
static int place_of(struct walk *w, const struct profile_mem *e, size_t *ret)
{
	const struct profile_data *pd = w->pd;
	struct gpu_memory *m = w->m;
	void *v = hashmap__get(w->by_id, e->pid, id_key(e));
	const char *const *frames = NULL;
	size_t n = 0, len, need;

	if (v) {
		*ret = (size_t)v - 1;
		return 0;
	}
	if (e->stack_id == CORR_NO_STACK || !pd->stack ||
	    pd->stack(pd->ctx, e->pid, e->stack_id, &frames, &n))
		n = 0;
	need = 64 + (e->api ? strlen(e->api) : 0);
	for (size_t i = 0; i < n; i++)
		need += strlen(frames[i]) + 1;
	if (vec_reserve(&w->key, &w->cap_key, need))
		return -ENOMEM;
	len = (size_t)snprintf(w->key, w->cap_key, "%u|%d|%s|", e->pid, e->device,
			       e->api ? e->api : "");
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(w->key + len, w->cap_key - len, "%s;", frames[i]);
	v = keymap__get(w->by_name, w->key, len);
	if (!v) {
		struct gpu_mem_stack *s;

		if (vec_reserve(&m->stacks, &m->cap_stacks, m->nr_stacks + 1) ||
		    keymap__put(w->by_name, w->key, len, (void *)(m->nr_stacks + 1), NULL))
			return -ENOMEM;
		s = &m->stacks[m->nr_stacks];
		*s = (struct gpu_mem_stack){.pid = e->pid, .device = e->device, .api = e->api};
		if (n) {
			s->frames = malloc(n * sizeof(*s->frames));
			if (!s->frames)
				return -ENOMEM;
			memcpy(s->frames, frames, n * sizeof(*s->frames));
			s->nr_frames = n;
		}
		v = (void *)(++m->nr_stacks);
	}
	if (hashmap__put(w->by_id, e->pid, id_key(e), v))
		return -ENOMEM;
	*ret = (size_t)v - 1;
	return 0;
}

/*
 * One pass over the calls in time order. The first counts and finds each process's peak (the
 * call at which its live bytes peaked: peak_ix); the second (again) notes each place's live
 * bytes at that call as at_peak.
 */
static int replay(struct walk *w, bool again)
{
	const struct profile_data *pd = w->pd;
	struct gpu_memory *m = w->m;
	int err = 0;

	for (size_t i = 0; i < pd->nr_mem && !err; i++) {
		const struct profile_mem *e = &pd->mem[i];
		struct gpu_mem_proc *p;

		if (e->is_free) {
			void *v = hashmap__remove(w->live, e->pid, e->addr);
			const struct profile_mem *a = v ? &pd->mem[(size_t)v - 1] : NULL;

			/* On its allocation's device; not known: device -1 until fold_unknown. */
			p = proc_of(m, e->pid, a ? a->device : -1);
			if (!p)
				return -ENOMEM;
			if (!again)
				p->frees++;
			if (!a) {
				p->unknown_frees += !again;
				continue;
			}
			p->end -= a->bytes;
			m->stacks[w->place[(size_t)v - 1]].live -= a->bytes;
		} else {
			size_t s;

			p = proc_of(m, e->pid, e->device);
			if (!p)
				return -ENOMEM;
			err = place_of(w, e, &s);
			if (err)
				break;
			w->place[i] = s;
			if (e->failed) {
				if (!again && !p->failed++)
					p->failed_ix = s + 1;
				continue;
			}
			if (!e->addr || hashmap__get(w->live, e->pid, e->addr))
				continue; /* not readable, or a double report: counted once */
			if (hashmap__count(w->live) >= GPU_MEMORY_MAX_LIVE) {
				m->untracked += !again;
				continue;
			}
			if (hashmap__put(w->live, e->pid, e->addr, (void *)(i + 1)))
				return -ENOMEM;
			p->end += e->bytes;
			m->stacks[s].live += e->bytes;
			if (!again) {
				p->allocs++;
				p->allocated += e->bytes;
				m->stacks[s].allocs++;
				m->stacks[s].bytes += e->bytes;
			}
		}
		if (!again && p->end > p->peak) {
			p->peak = p->end;
			p->peak_ns = e->time_ns;
			p->peak_ix = i + 1;
		}
		if (again && p->peak_ix == i + 1)
			for (size_t k = 0; k < m->nr_stacks; k++)
				if (m->stacks[k].pid == p->pid && m->stacks[k].device == p->device)
					m->stacks[k].at_peak = m->stacks[k].live;
	}
	return err;
}

static int cmp_peak(const void *a, const void *b)
{
	const struct gpu_mem_stack *x = *(const struct gpu_mem_stack *const *)a;
	const struct gpu_mem_stack *y = *(const struct gpu_mem_stack *const *)b;

	return x->at_peak < y->at_peak ? 1 : x->at_peak > y->at_peak ? -1 : 0;
}

static int cmp_end(const void *a, const void *b)
{
	const struct gpu_mem_stack *x = *(const struct gpu_mem_stack *const *)a;
	const struct gpu_mem_stack *y = *(const struct gpu_mem_stack *const *)b;

	return x->live < y->live ? 1 : x->live > y->live ? -1 : 0;
}

/* Each process's places by bytes at the peak and at the end (those with some). */
static int rank(struct gpu_memory *m)
{
	for (size_t i = 0; i < m->nr_procs; i++) {
		struct gpu_mem_proc *p = &m->procs[i];
		size_t n = 0;

		for (size_t k = 0; k < m->nr_stacks; k++)
			n += m->stacks[k].pid == p->pid && m->stacks[k].device == p->device;
		p->at_peak = calloc(n ? n : 1, sizeof(*p->at_peak));
		p->at_end = calloc(n ? n : 1, sizeof(*p->at_end));
		if (!p->at_peak || !p->at_end)
			return -ENOMEM;
		for (size_t k = 0; k < m->nr_stacks; k++) {
			const struct gpu_mem_stack *s = &m->stacks[k];

			if (s->pid != p->pid || s->device != p->device)
				continue;
			if (s->at_peak)
				p->at_peak[p->nr_at_peak++] = s;
			if (s->live)
				p->at_end[p->nr_at_end++] = s;
		}
		qsort(p->at_peak, p->nr_at_peak, sizeof(*p->at_peak), cmp_peak);
		qsort(p->at_end, p->nr_at_end, sizeof(*p->at_end), cmp_end);
		if (p->failed_ix)
			p->failed_at = &m->stacks[p->failed_ix - 1];
	}
	return 0;
}

static void count_live(void *val, void *ctx)
{
	struct walk *w = ctx;
	const struct profile_mem *e = &w->pd->mem[(size_t)val - 1];
	struct gpu_mem_proc *p = proc_of(w->m, e->pid, e->device);

	if (p)
		p->end_allocs++;
}

/*
 * The frees of memory allocated before the profile (device not known, counted on device -1)
 * move to their process's first device, where it has one.
 */
static void fold_unknown(struct gpu_memory *m)
{
	for (size_t i = 0; i < m->nr_procs;) {
		struct gpu_mem_proc *u = &m->procs[i], *to = NULL;

		if (u->device != -1 || u->allocs || u->failed) {
			i++;
			continue;
		}
		for (size_t k = 0; k < m->nr_procs; k++)
			if (k != i && m->procs[k].pid == u->pid &&
			    (!to || m->procs[k].device < to->device))
				to = &m->procs[k];
		if (!to) {
			i++;
			continue;
		}
		to->frees += u->frees;
		to->unknown_frees += u->unknown_frees;
		memmove(u, u + 1, (m->nr_procs - i - 1) * sizeof(*u));
		m->nr_procs--;
	}
}

/* Processes in the order they came, each one's devices in order (insertion: a few entries). */
static int order(struct gpu_memory *m)
{
	size_t *first = calloc(m->nr_procs ? m->nr_procs : 1, sizeof(*first));

	if (!first)
		return -ENOMEM;
	for (size_t i = 0; i < m->nr_procs; i++)
		for (first[i] = 0; m->procs[first[i]].pid != m->procs[i].pid; first[i]++)
			;
	for (size_t i = 1; i < m->nr_procs; i++) {
		struct gpu_mem_proc p = m->procs[i];
		size_t f = first[i], k = i;

		for (; k > 0 && (first[k - 1] > f ||
				 (first[k - 1] == f && m->procs[k - 1].device > p.device));
		     k--) {
			m->procs[k] = m->procs[k - 1];
			first[k] = first[k - 1];
		}
		m->procs[k] = p;
		first[k] = f;
	}
	free(first);
	return 0;
}

static int build(struct walk *w)
{
	struct gpu_memory *m = w->m;
	int err = replay(w, false);

	if (err)
		return err;
	for (size_t i = 0; i < m->nr_procs; i++)
		m->procs[i].end = 0;
	for (size_t k = 0; k < m->nr_stacks; k++)
		m->stacks[k].live = 0;
	hashmap__free(w->live);
	w->live = hashmap__new();
	err = w->live ? replay(w, true) : -ENOMEM;
	if (!err)
		hashmap__for_each(w->live, count_live, w);
	if (!err) {
		fold_unknown(m);
		err = order(m);
	}
	return err ? err : rank(m);
}

int gpu_memory__build(const struct profile_data *pd, struct gpu_memory **ret)
{
	struct walk w = {.pd = pd};
	int err;

	*ret = NULL;
	if (!pd->nr_mem)
		return 0;
	w.m = calloc(1, sizeof(*w.m));
	w.live = hashmap__new();
	w.by_id = hashmap__new();
	w.by_name = keymap__new();
	w.place = calloc(pd->nr_mem, sizeof(*w.place));
	err = w.m && w.live && w.by_id && w.by_name && w.place ? build(&w) : -ENOMEM;
	hashmap__free(w.live);
	hashmap__free(w.by_id);
	keymap__free(w.by_name);
	free(w.place);
	free(w.key);
	if (err) {
		gpu_memory__free(w.m);
		return err;
	}
	*ret = w.m;
	return 0;
}

void gpu_memory__free(struct gpu_memory *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nr_procs; i++) {
		free(m->procs[i].at_peak);
		free(m->procs[i].at_end);
	}
	for (size_t i = 0; i < m->nr_stacks; i++)
		free(m->stacks[i].frames);
	free(m->procs);
	free(m->stacks);
	free(m);
}

int gpu_memory__changes(const struct profile_data *pd, struct gpu_mem_change **ret, size_t *ret_n)
{
	struct hashmap *live, *per_pid;
	struct gpu_mem_change *ch;
	size_t n = 0;
	int err = 0;

	if (!pd->nr_mem) {
		*ret = NULL;
		*ret_n = 0;
		return 0;
	}
	live = hashmap__new();
	per_pid = hashmap__new(); /* pid -> live bytes + 1 (a value is never NULL) */
	ch = malloc((pd->nr_mem < MAX_CHANGES ? pd->nr_mem : MAX_CHANGES) * sizeof(*ch));
	if (!live || !per_pid || !ch) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < pd->nr_mem && n < MAX_CHANGES; i++) {
		const struct profile_mem *e = &pd->mem[i];
		uint64_t cur = (uint64_t)(uintptr_t)hashmap__get(per_pid, e->pid, 0);

		cur = cur ? cur - 1 : 0;
		if (e->is_free) {
			void *v = hashmap__remove(live, e->pid, e->addr);

			if (!v)
				continue;
			cur -= pd->mem[(size_t)v - 1].bytes;
		} else {
			if (e->failed || !e->addr || hashmap__get(live, e->pid, e->addr) ||
			    hashmap__count(live) >= GPU_MEMORY_MAX_LIVE)
				continue;
			if (hashmap__put(live, e->pid, e->addr, (void *)(i + 1))) {
				err = -ENOMEM;
				break;
			}
			cur += e->bytes;
		}
		if (hashmap__put(per_pid, e->pid, 0, (void *)(uintptr_t)(cur + 1))) {
			err = -ENOMEM;
			break;
		}
		ch[n++] =
			(struct gpu_mem_change){.pid = e->pid, .time_ns = e->time_ns, .live = cur};
	}
out:
	hashmap__free(live);
	hashmap__free(per_pid);
	if (err) {
		free(ch);
		return err;
	}
	*ret = ch;
	*ret_n = n;
	return 0;
}
