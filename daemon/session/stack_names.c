// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/sort.h"
#include "daemon/base/strset.h"
#include "daemon/base/vec.h"
#include "daemon/stacks/fold.h"
#include "daemon/cuda/launch_fold.h"
#include "daemon/cuda/launch_store.h"
#include "daemon/session/stack_names.h"
#include "daemon/stacks/stack_table.h"
#include "daemon/symbolize/symbolizer.h"

/* Where one stack's frames start in the frame array, and how many. */
struct span {
	size_t off;
	size_t n;
};

struct proc_name {
	uint32_t pid;
	const char *comm; /* interned */
	bool launched;	  /* from a CUDA launch: the image that did the GPU work */
	uint32_t seq;	  /* a CPU stack's id: the higher, the later the name was seen */
};

struct stack_names {
	struct strset *names; /* each frame and process name once */
	/* Frames of every stack, back to back. */
	const char **frames;
	size_t nr_frames, frames_cap;
	struct span *cpu, *launch;
	size_t nr_cpu, nr_launch;
	struct fold_names buf;
	/* Process names by pid, so GPU work sits under its process's name like its samples. */
	struct proc_name *procs;
	size_t nr_procs, procs_cap;
};

/* Append a stack's frames; its span into *ret. */
static int add_frames(struct stack_names *sn, const char *const *frames, size_t n, struct span *ret)
{
	if (vec_reserve(&sn->frames, &sn->frames_cap, sn->nr_frames + n))
		return -ENOMEM;
	ret->off = sn->nr_frames;
	ret->n = n;
	for (size_t i = 0; i < n; i++) {
		const char *s = strset__intern(sn->names, frames[i]);

		if (!s)
			return -ENOMEM;
		sn->frames[sn->nr_frames++] = s;
	}
	return 0;
}

static int add_proc(struct stack_names *sn, uint32_t pid, const char *comm16, bool launched,
		    uint32_t seq)
{
	char comm[XSPROF_COMM_LEN + 1];
	const char *name;
	struct proc_name *last = sn->nr_procs ? &sn->procs[sn->nr_procs - 1] : NULL;

	memcpy(comm, comm16, XSPROF_COMM_LEN);
	comm[XSPROF_COMM_LEN] = '\0';
	if (!comm[0])
		return 0;
	name = strset__intern(sn->names, comm);
	if (!name)
		return -ENOMEM;
	/* Entries of one process tend to come together: one per name (interned: by address). */
	if (last && last->pid == pid && last->launched == launched && last->comm == name) {
		if (seq > last->seq)
			last->seq = seq;
		return 0;
	}
	if (vec_reserve(&sn->procs, &sn->procs_cap, sn->nr_procs + 1))
		return -ENOMEM;
	sn->procs[sn->nr_procs++] = (struct proc_name){pid, name, launched, seq};
	return 0;
}

static int cmp_proc(const void *a, const void *b)
{
	const struct proc_name *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	/* A process seen before its exec (command mode's fork, a shell's exec) has two names:
	 * the one its launches carry names its GPU work, so it sorts first; else the latest its
	 * stacks carry (the image it runs now), whichever order the table is walked in. */
	if (x->launched != y->launched)
		return (int)y->launched - (int)x->launched;
	return x->seq < y->seq ? 1 : x->seq > y->seq ? -1 : 0;
}

const char *stack_names__comm(void *ctx, uint32_t pid, uint32_t tid)
{
	const struct stack_names *sn = ctx;
	size_t lo = 0, hi = sn->nr_procs;

	/* The first entry of pid (lower bound): its launches' name when it has one. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sn->procs[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sn->nr_procs && sn->procs[lo].pid == pid ? sn->procs[lo].comm : NULL;
}

struct walk {
	struct stack_names *sn;
	struct symbolizer *sym;
	const uint32_t *pids; /* NULL: every process's */
	size_t nr_pids;
};

static int name_entry(void *ctx, const struct stack_entry *e)
{
	struct walk *w = ctx;

	int err;

	if (w->pids && !bsearch(&e->tgid, w->pids, w->nr_pids, sizeof(*w->pids), cmp_u32))
		return 0; /* not asked for: its span stays empty (-ENOENT) */
	fold__name_stack(w->sym, e, &w->sn->buf, NULL);
	err = add_frames(w->sn, w->sn->buf.frames, w->sn->buf.n, &w->sn->cpu[e->id]);
	if (!err && e->tgid)
		err = add_proc(w->sn, e->tgid, e->comm, false, e->id);
	symbolizer__trim(w->sym); /* copied: the cache may shrink to its cap */
	return err;
}

static int name_launch(void *ctx, const struct launch_stack *s)
{
	struct walk *w = ctx;
	const char *frames[LAUNCH_FOLD_MAX_FRAMES];
	size_t n = launch_fold__name_stack(w->sym, s, frames, NULL);
	int err;

	if (!n)
		frames[n++] = "[no frames]";
	err = add_frames(w->sn, frames, n, &w->sn->launch[w->sn->nr_launch++]);
	if (!err)
		err = add_proc(w->sn, s->tgid, s->comm, true, 0);
	symbolizer__trim(w->sym);
	return err;
}

struct stack_names *stack_names__new(const struct stack_table *st, const struct launch_store *ls,
				     struct symbolizer *sym)
{
	return stack_names__new_of(st, ls, sym, NULL, 0);
}

struct stack_names *stack_names__new_of(const struct stack_table *st, const struct launch_store *ls,
					struct symbolizer *sym, const uint32_t *pids,
					size_t nr_pids)
{
	struct stack_names *sn = calloc(1, sizeof(*sn));
	struct walk w = {.sn = sn, .sym = sym, .pids = pids, .nr_pids = nr_pids};
	size_t nl = ls ? launch_store__nr_stacks(ls) : 0;
	int err = 0;

	if (!sn)
		return NULL;
	sn->nr_cpu = st ? stack_table__nr_entries(st) : 0;
	if (sn->nr_cpu >= STACK_NAMES_LAUNCH || nl >= STACK_NAMES_LAUNCH) {
		err = -EOVERFLOW;
		goto fail;
	}
	sn->names = strset__new(0);
	sn->cpu = calloc(sn->nr_cpu ? sn->nr_cpu : 1, sizeof(*sn->cpu));
	sn->launch = calloc(nl ? nl : 1, sizeof(*sn->launch));
	if (!sn->names || !sn->cpu || !sn->launch) {
		err = -ENOMEM;
		goto fail;
	}
	if (st)
		err = stack_table__for_each(st, name_entry, &w);
	/* Launch stacks in index order: for_each visits them in insertion order. */
	if (!err && ls)
		err = launch_store__for_each(ls, name_launch, &w);
	if (err)
		goto fail;
	/* By pid for lookups; a pid that exec'd under two names gets one of them. */
	if (sn->nr_procs)
		qsort(sn->procs, sn->nr_procs, sizeof(*sn->procs), cmp_proc);
	return sn;
fail:
	stack_names__free(sn);
	errno = -err;
	return NULL;
}

void stack_names__free(struct stack_names *sn)
{
	if (!sn)
		return;
	strset__free(sn->names);
	free(sn->frames);
	free(sn->cpu);
	free(sn->launch);
	free(sn->procs);
	free(sn);
}

int stack_names__resolve(void *ctx, uint32_t pid, uint32_t stack_id, const char *const **ret_frames,
			 size_t *ret_n)
{
	const struct stack_names *sn = ctx;
	const struct span *sp;

	if (stack_id & STACK_NAMES_LAUNCH) {
		if ((stack_id & ~STACK_NAMES_LAUNCH) >= sn->nr_launch)
			return -ENOENT;
		sp = &sn->launch[stack_id & ~STACK_NAMES_LAUNCH];
	} else {
		if (stack_id >= sn->nr_cpu)
			return -ENOENT;
		sp = &sn->cpu[stack_id];
	}
	if (!sp->n)
		return -ENOENT;
	*ret_frames = sn->frames + sp->off;
	*ret_n = sp->n;
	return 0;
}
