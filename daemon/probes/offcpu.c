// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "daemon/probes/offcpu.h"
#include "daemon/probes/sampler.h"
#include "daemon/stacks/stack_table.h"
#include "daemon/base/hashmap.h"
#include "daemon/unwind/unwinder.h"
#include "xsprof.skel.h"

/* A key's stack, as the stack table takes it, and the image it blocked in. */
struct pending {
	uint32_t gen;
	struct xsprof_sample s; /* ips[] sized for the frames only (allocated to fit) */
};

struct offcpu {
	struct sampler *sampler;
	struct xsprof_bpf *skel;
	struct bpf_link *link;
	struct hashmap *pending; /* (tgid << 32 | tid, hash) -> struct pending */
	size_t max_stacks;
	offcpu_gen_fn gen;
	void *ctx;
	struct unwinder *uw; /* finishes held stacks; NULL in fp mode */
	struct xsprof_sample_held *buf;
	struct offcpu_stats st;
};

/* The stack of a new key, as a sample (kernel frames, then user frames). */
static void sample_of(const struct xsprof_offcpu_stack *r, struct xsprof_sample *s)
{
	s->type = XSPROF_REC_SAMPLE;
	s->tgid = r->tgid;
	s->tid = r->tid;
	s->uid = r->uid;
	s->flags = r->flags;
	memcpy(s->comm, r->comm, sizeof(s->comm));
	s->nr_kernel = r->nr_kernel;
	s->nr_user = r->nr_user;
	s->kernel_err = r->kernel_err;
	s->user_err = r->user_err;
	s->walk_end = r->walk_end;
	memcpy(s->ips, r->kips, r->nr_kernel * sizeof(r->kips[0]));
	memcpy(s->ips + r->nr_kernel, r->uips, r->nr_user * sizeof(r->uips[0]));
}

/* Keep s (nr_kernel + nr_user frames, no interpreter frames) for key (tgid, tid, hash). */
static void keep(struct offcpu *oc, const struct xsprof_sample *s, uint64_t hash)
{
	uint64_t k1 = (uint64_t)s->tgid << 32 | s->tid;
	size_t n = (size_t)s->nr_kernel + s->nr_user;
	struct pending *p;

	if (hashmap__get(oc->pending, k1, hash))
		return;
	if (hashmap__count(oc->pending) >= oc->max_stacks) {
		oc->st.pending_full++;
		return;
	}
	p = calloc(1, sizeof(*p) - sizeof(p->s.ips) + n * sizeof(p->s.ips[0]));
	if (!p)
		return;
	p->gen = oc->gen ? oc->gen(oc->ctx, (pid_t)s->tgid) : 0;
	memcpy(&p->s, s, XSPROF_SAMPLE_HDR_SIZE + n * sizeof(s->ips[0]));
	p->s.nr_python = 0;
	if (hashmap__put(oc->pending, k1, hash, p))
		free(p);
}

static bool stack_ok(const struct xsprof_offcpu_stack *r)
{
	return r->nr_kernel <= XSPROF_MAX_STACK_DEPTH && r->nr_user <= XSPROF_MAX_STACK_DEPTH;
}

static int on_record(void *ctx, const void *data, size_t size)
{
	struct offcpu *oc = ctx;
	const struct xsprof_offcpu_stack *r = data;

	if (size < sizeof(*r) || r->type != XSPROF_REC_OFFCPU || !stack_ok(r))
		return -EBADMSG;
	if (hashmap__get(oc->pending, (uint64_t)r->tgid << 32 | r->tid, r->hash))
		return 0;
	sample_of(r, &oc->buf->sample);
	keep(oc, &oc->buf->sample, r->hash);
	return 0;
}

static void on_held_done(void *ctx, const struct xsprof_sample *s, size_t size, uint64_t hash)
{
	struct offcpu *oc = ctx;

	/* Its interpreter frames, if it has some, in place now that the native walk is whole. */
	s = sampler__rewrite(oc->sampler, s, size, &size);
	keep(oc, s, hash);
}

/* A new stack whose walk stopped at a missing table: finished by the unwinder. */
static int on_held(void *ctx, const void *data, size_t size)
{
	struct offcpu *oc = ctx;
	const struct xsprof_offcpu_held *h = data;
	struct xsprof_sample_held *sh = oc->buf;

	if (!oc->uw || size < sizeof(*h) || h->type != XSPROF_REC_OFFCPU_HELD ||
	    h->stack.type != XSPROF_REC_OFFCPU || !stack_ok(&h->stack) || !h->stack.nr_user ||
	    h->copy_len > sizeof(h->copy) || sizeof(h->copy) != sizeof(sh->stack))
		return -EBADMSG;
	if (hashmap__get(oc->pending, (uint64_t)h->stack.tgid << 32 | h->stack.tid, h->stack.hash))
		return 0;
	oc->st.held++;
	memset(sh, 0, XSPROF_SAMPLE_HELD_HDR_SIZE);
	sh->type = XSPROF_REC_SAMPLE_HELD;
	sh->reason = XSPROF_HOLD_NO_TABLE;
	sh->pc = h->pc;
	sh->sp = h->sp;
	sh->bp = h->bp;
	sh->exact = h->exact;
	sh->copy_len = h->copy_len;
	sample_of(&h->stack, &sh->sample);
	/* The interpreter frames after the native ones, as a held sample carries them. */
	sh->sample.nr_python = h->stack.nr_python <= XSPROF_PY_MAX_FRAMES ? h->stack.nr_python : 0;
	memcpy(&sh->sample.ips[h->stack.nr_kernel + h->stack.nr_user],
	       &h->stack.uips[h->stack.nr_user],
	       sh->sample.nr_python * sizeof(struct xsprof_py_frame));
	memcpy(sh->stack, h->copy, h->copy_len);
	return unwinder__hold(oc->uw, sh, sizeof(*sh), on_held_done, oc, h->stack.hash);
}

void offcpu__set_unwinder(struct offcpu *oc, struct unwinder *uw)
{
	oc->uw = uw;
}

struct offcpu *offcpu__attach(struct sampler *s, offcpu_gen_fn gen, void *ctx, size_t max_stacks)
{
	struct offcpu *oc = calloc(1, sizeof(*oc));
	int err;

	if (!oc)
		return NULL;
	oc->sampler = s;
	oc->skel = sampler__skel(s);
	oc->gen = gen;
	oc->ctx = ctx;
	oc->max_stacks = max_stacks ? max_stacks : bpf_map__max_entries(oc->skel->maps.offcpu_agg);
	oc->pending = hashmap__new();
	oc->buf = malloc(sizeof(*oc->buf));
	if (!oc->pending || !oc->buf) {
		err = -ENOMEM;
		goto fail;
	}
	err = sampler__set_handler(s, XSPROF_REC_OFFCPU, on_record, oc);
	if (!err)
		err = sampler__set_handler(s, XSPROF_REC_OFFCPU_HELD, on_held, oc);
	if (err)
		goto fail;
	return oc;
fail:
	offcpu__free(oc);
	errno = -err;
	return NULL;
}

int offcpu__start(struct offcpu *oc)
{
	if (oc->link)
		return 0;
	oc->link = bpf_program__attach(oc->skel->progs.xsprof_offcpu);
	return oc->link ? 0 : -errno;
}

void offcpu__stop(struct offcpu *oc)
{
	if (!oc)
		return;
	bpf_link__destroy(oc->link);
	oc->link = NULL;
}

static void free_pending(void *val, void *ctx)
{
	free(val);
}

void offcpu__free(struct offcpu *oc)
{
	if (!oc)
		return;
	offcpu__stop(oc);
	if (oc->sampler) {
		sampler__set_handler(oc->sampler, XSPROF_REC_OFFCPU, NULL, NULL);
		sampler__set_handler(oc->sampler, XSPROF_REC_OFFCPU_HELD, NULL, NULL);
	}
	free(oc->buf);
	if (oc->pending) {
		hashmap__for_each(oc->pending, free_pending, NULL);
		hashmap__free(oc->pending);
	}
	free(oc);
}

/* A key whose stack is not here: its time counted under the thread, without frames. */
static int add_lost(struct stack_table *t, const struct xsprof_offcpu_key *k, uint64_t us)
{
	struct xsprof_sample s = {.type = XSPROF_REC_SAMPLE, .tgid = k->tgid, .tid = k->tid};

	snprintf(s.comm, sizeof(s.comm), "[off-cpu lost]");
	return stack_table__add_weighted(t, &s, 0, us);
}

int offcpu__collect(struct offcpu *oc, struct stack_table *t)
{
	int fd = bpf_map__fd(oc->skel->maps.offcpu_agg);
	struct xsprof_offcpu_key key, next, *prev = NULL;
	struct xsprof_offcpu_val v;
	int err = 0;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		struct pending *p;
		uint64_t us;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &v))
			continue;
		oc->st.keys++;
		oc->st.ns += v.ns;
		us = (v.ns + 500) / 1000;
		if (!us)
			continue;
		p = hashmap__get(oc->pending, (uint64_t)key.tgid << 32 | key.tid, key.hash);
		if (p) {
			err = stack_table__add_weighted(t, &p->s, p->gen, us);
		} else {
			oc->st.keys_lost++;
			err = add_lost(t, &key, us);
		}
		if (err)
			return err;
	}
	return 0;
}

void offcpu__stats(const struct offcpu *oc, struct offcpu_stats *ret)
{
	int ncpu = sampler__nr_cpus(oc->sampler);
	struct xsprof_offcpu_stats *v;
	__u32 zero = 0;

	*ret = oc->st;
	if (ncpu <= 0 || !(v = calloc((size_t)ncpu, sizeof(*v))))
		return;
	if (!bpf_map__lookup_elem(oc->skel->maps.offcpu_stats, &zero, sizeof(zero), v,
				  sizeof(*v) * (size_t)ncpu, 0)) {
		for (int i = 0; i < ncpu; i++) {
			ret->switches += v[i].switches;
			ret->blocks += v[i].blocks;
			ret->below_min += v[i].below_min;
			ret->new_stacks += v[i].new_stacks;
			ret->agg_full += v[i].agg_full;
			ret->drop_ringbuf += v[i].drop_ringbuf;
			ret->start_full += v[i].start_full;
			ret->ustack_err += v[i].ustack_err;
		}
	}
	free(v);
}
