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
	struct offcpu_stats st;
};

static int on_record(void *ctx, const void *data, size_t size)
{
	struct offcpu *oc = ctx;
	const struct xsprof_offcpu_stack *r = data;
	uint64_t k1 = (uint64_t)r->tgid << 32 | r->tid;
	struct pending *p;
	size_t n;

	if (size < sizeof(*r) || r->type != XSPROF_REC_OFFCPU ||
	    r->nr_kernel > XSPROF_MAX_STACK_DEPTH || r->nr_user > XSPROF_MAX_STACK_DEPTH)
		return -EBADMSG;
	if (hashmap__get(oc->pending, k1, r->hash))
		return 0;
	if (hashmap__count(oc->pending) >= oc->max_stacks) {
		oc->st.pending_full++;
		return 0;
	}
	n = (size_t)r->nr_kernel + r->nr_user;
	p = calloc(1, sizeof(*p) - sizeof(p->s.ips) + n * sizeof(p->s.ips[0]));
	if (!p)
		return 0;
	p->gen = oc->gen ? oc->gen(oc->ctx, (pid_t)r->tgid) : 0;
	p->s.type = XSPROF_REC_SAMPLE;
	p->s.tgid = r->tgid;
	p->s.tid = r->tid;
	p->s.uid = r->uid;
	p->s.flags = r->flags;
	memcpy(p->s.comm, r->comm, sizeof(p->s.comm));
	p->s.nr_kernel = r->nr_kernel;
	p->s.nr_user = r->nr_user;
	p->s.kernel_err = r->kernel_err;
	p->s.user_err = r->user_err;
	memcpy(p->s.ips, r->kips, r->nr_kernel * sizeof(r->kips[0]));
	memcpy(p->s.ips + r->nr_kernel, r->uips, r->nr_user * sizeof(r->uips[0]));
	if (hashmap__put(oc->pending, k1, r->hash, p))
		free(p);
	return 0;
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
	if (!oc->pending) {
		err = -ENOMEM;
		goto fail;
	}
	err = sampler__set_handler(s, XSPROF_REC_OFFCPU, on_record, oc);
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
	if (oc->sampler)
		sampler__set_handler(oc->sampler, XSPROF_REC_OFFCPU, NULL, NULL);
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
