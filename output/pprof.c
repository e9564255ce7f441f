// SPDX-License-Identifier: Apache-2.0
/*
 * Protobuf by hand: varints and length-delimited fields. Messages are small (one sample, one
 * location), so each is built in a scratch buffer and then emitted as a field of Profile; the
 * repeated fields of Profile may come in any order, so samples are streamed through zlib as
 * they are made and the tables they refer to (strings, functions, locations) follow at the end.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "daemon/base/keymap.h"
#include "daemon/base/vec.h"
#include "output/model/calltree.h"
#include "output/model/profile.h"
#include "output/output_meta.h"
#include "output/pprof.h"
#include "output/pprof_locations.h"
#include "output/protobuf.h"
#include "output/sample_agg.h"

/* Profile fields */
#define P_SAMPLE_TYPE	      1
#define P_SAMPLE	      2
#define P_MAPPING	      3
#define P_LOCATION	      4
#define P_FUNCTION	      5
#define P_STRING_TABLE	      6
#define P_TIME_NANOS	      9
#define P_DURATION_NANOS      10
#define P_PERIOD_TYPE	      11
#define P_PERIOD	      12
#define P_COMMENT	      13
#define P_DEFAULT_SAMPLE_TYPE 14

#define NVALUES 3 /* samples/count, cpu/nanoseconds, gpu/nanoseconds */

struct pp {
	const struct profile_data *pd;
	FILE *f;
	z_stream z;
	uint8_t zout[65536];
	struct strtab strs;
	struct pprof_locs *locs;
	struct buf scratch, sample, lbl;
	const char **frames; /* scratch for one stack */
	size_t frames_cap;
	int err;
};

static int deflate_out(struct pp *p, const void *data, size_t len, int flush)
{
	p->z.next_in = (Bytef *)data;
	p->z.avail_in = (uInt)len;
	do {
		size_t have;
		int zr;

		p->z.next_out = p->zout;
		p->z.avail_out = sizeof(p->zout);
		zr = deflate(&p->z, flush);
		if (zr == Z_STREAM_ERROR)
			return -EIO;
		have = sizeof(p->zout) - p->z.avail_out;
		errno = 0;
		if (have && fwrite(p->zout, 1, have, p->f) != have)
			return errno ? -errno : -EIO;
	} while (p->z.avail_out == 0 || (flush == Z_FINISH && p->z.avail_in));
	return 0;
}

/* Emits one field of Profile. */
static void emit(struct pp *p, unsigned int field, const struct buf *m)
{
	struct buf hdr = {0};
	uint8_t small[16];

	if (p->err)
		return;
	if (m->err) {
		p->err = m->err;
		return;
	}
	hdr.p = small;
	hdr.cap = sizeof(small);
	pb_key(&hdr, field, WT_LEN);
	pb_varint(&hdr, m->len);
	p->err = deflate_out(p, hdr.p, hdr.len, Z_NO_FLUSH);
	if (!p->err)
		p->err = deflate_out(p, m->p, m->len, Z_NO_FLUSH);
}

static int64_t str(struct pp *p, const char *s)
{
	int64_t i = pb_intern(&p->strs, s);

	if (i < 0 && !p->err)
		p->err = (int)i;
	return i < 0 ? 0 : i;
}

static void label_str(struct pp *p, const char *key, const char *val)
{
	p->lbl.len = 0;
	pb_uint(&p->lbl, 1, str(p, key));
	pb_uint(&p->lbl, 2, str(p, val));
	pb_msg(&p->sample, 3, &p->lbl);
}

static void label_num(struct pp *p, const char *key, int64_t val)
{
	p->lbl.len = 0;
	pb_uint(&p->lbl, 1, str(p, key));
	pb_key(&p->lbl, 3, WT_VARINT);
	pb_varint(&p->lbl, (uint64_t)val);
	pb_msg(&p->sample, 3, &p->lbl);
}

/* One label of a label set (profile__label_set_each). */
static void label_one(void *ctx, const char *key, size_t klen, const char *val, size_t vlen)
{
	struct pp *p = ctx;
	char k[128], v[256];

	snprintf(k, sizeof(k), "%.*s", (int)klen, key);
	snprintf(v, sizeof(v), "%.*s", (int)vlen, val);
	label_str(p, k, v);
}

/*
 * Starts a sample: frames root first, written leaf first as pprof wants. The outermost ones
 * (the process name; a fleet's host too) become labels, not frames.
 */
static void sample_begin(struct pp *p, const char *const *frames, size_t n, const int64_t *values)
{
	static const char *const process_only[] = {"process"};
	const char *const *keys = p->pd->root_labels ? p->pd->root_labels : process_only;
	size_t i, nl = p->pd->root_labels ? p->pd->nr_root_labels : 1;
	const uint64_t *ids;
	int nids;

	if (nl >= n)
		nl = n ? n - 1 : 0;
	p->sample.len = 0;
	p->scratch.len = 0;
	nids = pprof_locs__stack(p->locs, frames + nl, n - nl, &ids);
	if (nids < 0) {
		p->err = nids;
		return;
	}
	for (i = 0; i < (size_t)nids; i++)
		pb_varint(&p->scratch, ids[i]);
	pb_msg(&p->sample, 1, &p->scratch); /* packed location_id */
	p->scratch.len = 0;
	for (i = 0; i < NVALUES; i++)
		pb_varint(&p->scratch, (uint64_t)values[i]);
	pb_msg(&p->sample, 2, &p->scratch); /* packed value */
	for (i = 0; i < nl; i++) {
		if (!strcmp(keys[i], PROFILE_LABEL_SET))
			profile__label_set_each(frames[i], label_one, p);
		else
			label_str(p, keys[i], frames[i]);
	}
}

static void sample_end(struct pp *p)
{
	if (p->sample.err && !p->err)
		p->err = p->sample.err;
	emit(p, P_SAMPLE, &p->sample);
}

static void stack_of(const struct profile_data *pd, uint32_t pid, uint32_t stack_id,
		     const char *const **ret_frames, size_t *ret_n)
{
	static const char *const unknown[] = {"[unknown]"};

	if (stack_id == CORR_NO_STACK || !pd->stack ||
	    pd->stack(pd->ctx, pid, stack_id, ret_frames, ret_n) || !*ret_n) {
		*ret_frames = unknown;
		*ret_n = 1;
	}
}

static const char **frame_list(struct pp *p, size_t n)
{
	return vec_reserve(&p->frames, &p->frames_cap, n) ? NULL : p->frames;
}

/* A sample of comm;stack[;leaf]. */
static void write_stack_sample(struct pp *p, uint32_t pid, uint32_t stack_id, const char *leaf,
			       const int64_t *values)
{
	const struct profile_data *pd = p->pd;
	const char *const *frames;
	const char **v;
	char comm[64];
	size_t n, k = 0, i;

	stack_of(pd, pid, stack_id, &frames, &n);
	v = frame_list(p, n + 2);
	if (!v) {
		p->err = -ENOMEM;
		return;
	}
	v[k++] = profile__name_or(pd, pid, 0, comm, sizeof(comm));
	for (i = 0; i < n; i++)
		v[k++] = frames[i];
	if (leaf)
		v[k++] = leaf;
	sample_begin(p, v, k, values);
	/* The process's job and rank, unit, ... (unless a root label set says them already). */
	if (pd->process_labels && !(pd->root_labels && pd->nr_root_labels > 1 &&
				    !strcmp(pd->root_labels[0], PROFILE_LABEL_SET)))
		profile__label_set_each(pd->process_labels(pd->process_labels_ctx, pid), label_one,
					p);
}

static int write_cpu_timeline(struct pp *p)
{
	const struct profile_data *pd = p->pd;
	uint64_t period = pd->sample_period_ns;
	struct sample_agg a = {0};
	char tname[64];
	size_t i;
	int err = 0;

	err = sample_agg__samples(pd, &a);
	for (i = 0; i < a.n && !err && !p->err; i++) {
		const struct sample_agg_ent *e = &a.e[i];
		const struct profile_sample *s = e->ref;
		int64_t values[NVALUES] = {(int64_t)e->value, (int64_t)(e->value * period), 0};

		write_stack_sample(p, s->pid, s->stack_id, NULL, values);
		label_num(p, "pid", s->pid);
		label_num(p, "tid", s->tid);
		label_str(p, "thread", profile__name_or(pd, s->pid, s->tid, tname, sizeof(tname)));
		if (e->k[3])
			label_str(p, "range", (const char *)(uintptr_t)e->k[3]);
		sample_end(p);
	}
	sample_agg__free(&a);
	return err ? err : p->err;
}

struct tree_ctx {
	struct pp *p;
	const char **path;
};

static int tree_visit(const struct calltree_frame *fr, void *data)
{
	struct tree_ctx *c = data;
	int64_t values[NVALUES] = {(int64_t)fr->self,
				   (int64_t)(fr->self * c->p->pd->sample_period_ns), 0};

	c->path[fr->depth] = fr->name;
	if (!fr->self)
		return 0;
	sample_begin(c->p, c->path, fr->depth + 1, values);
	sample_end(c->p);
	return c->p->err;
}

static int write_cpu_tree(struct pp *p)
{
	const struct calltree *t = p->pd->cpu_tree;
	struct tree_ctx c = {.p = p};
	int err;

	if (!calltree__max_depth(t))
		return 0;
	c.path = calloc(calltree__max_depth(t), sizeof(*c.path));
	if (!c.path)
		return -ENOMEM;
	err = calltree__walk(t, tree_visit, &c);
	free(c.path);
	return err;
}

/*
 * Device and stream as strings: pprof drops a numeric label whose value is 0 (it cannot tell
 * it from an absent one), and device 0 is the common case.
 */
static void gpu_labels(struct pp *p, const struct corr_gpu_rec *g, const char *leaf)
{
	char v[16];

	snprintf(v, sizeof(v), "%u", g->device);
	label_str(p, "device", v);
	snprintf(v, sizeof(v), "%u", g->stream_id);
	label_str(p, "stream", v);
	label_str(p, "kernel", leaf + strlen("[gpu] "));
}

static int write_gpu(struct pp *p)
{
	const struct profile_data *pd = p->pd;
	struct sample_agg a = {0};
	bool *joined = calloc(pd->nr_gpu ? pd->nr_gpu : 1, sizeof(*joined));
	char leaf[512], tname[64];
	size_t i;
	int err = 0;

	if (!joined)
		return -ENOMEM;
	/* Key: launch stack and thread, and the work's device, stream and kind/name. */
	err = sample_agg__gpu(pd, &a, joined);
	for (i = 0; i < a.n && !err && !p->err; i++) {
		const struct sample_agg_ent *e = &a.e[i];
		const struct profile_join *j = e->ref;
		const struct corr_cpu_rec *l;
		const struct corr_gpu_rec *g;
		int64_t values[NVALUES] = {0, 0, (int64_t)e->value};

		l = &pd->launches[j->launch];
		g = &pd->gpu[j->gpu];
		write_stack_sample(p, l->pid, l->stack_id, profile__gpu_leaf(g, leaf, sizeof(leaf)),
				   values);
		label_num(p, "pid", l->pid);
		label_num(p, "tid", l->tid);
		label_str(p, "thread", profile__name_or(pd, l->pid, l->tid, tname, sizeof(tname)));
		gpu_labels(p, g, leaf);
		if (e->k[4])
			label_str(p, "range", (const char *)(uintptr_t)e->k[4]);
		sample_end(p);
	}
	sample_agg__free(&a);
	/* Work nothing was joined to: under the process, with its own labels. */
	for (i = 0; i < pd->nr_gpu && !err && !p->err; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];
		int64_t values[NVALUES] = {0, 0, (int64_t)(g->end_ns - g->start_ns)};
		const char *v[3];
		char comm[64];

		if (joined[i] || !corr_gpu_kind__is_activity(g->kind))
			continue;
		v[0] = profile__name_or(pd, g->pid, 0, comm, sizeof(comm));
		v[1] = "[no launch stack]";
		v[2] = profile__gpu_leaf(g, leaf, sizeof(leaf));
		sample_begin(p, v, 3, values);
		label_num(p, "pid", g->pid);
		gpu_labels(p, g, leaf);
		sample_end(p);
	}
	free(joined);
	return err ? err : p->err;
}

static void emit_cb(void *ctx, unsigned int field, const struct buf *m)
{
	emit(ctx, field, m);
}

static void write_tables(struct pp *p, const struct output_meta *meta, bool cpu)
{
	const struct profile_data *pd = p->pd;
	static const char *const types[NVALUES][2] = {
		{"samples", "count"}, {"cpu", "nanoseconds"}, {"gpu", "nanoseconds"}};
	int64_t comment = meta && meta->title ? str(p, meta->title) : 0;
	struct buf m = {0};
	size_t i;

	for (i = 0; i < NVALUES; i++) {
		m.len = 0;
		pb_uint(&m, 1, str(p, types[i][0]));
		pb_uint(&m, 2, str(p, types[i][1]));
		emit(p, P_SAMPLE_TYPE, &m);
	}
	m.len = 0;
	pb_uint(&m, 1, str(p, "cpu"));
	pb_uint(&m, 2, str(p, "nanoseconds"));
	emit(p, P_PERIOD_TYPE, &m);
	m.len = 0;
	pb_uint(&m, P_PERIOD, pd->sample_period_ns);
	pb_uint(&m, P_TIME_NANOS, (uint64_t)((int64_t)pd->start_ns + pd->realtime_offset_ns));
	pb_uint(&m, P_DURATION_NANOS, pd->end_ns > pd->start_ns ? pd->end_ns - pd->start_ns : 0);
	pb_uint(&m, P_DEFAULT_SAMPLE_TYPE, str(p, cpu ? "cpu" : "gpu"));
	if (comment) {
		pb_key(&m, P_COMMENT, WT_VARINT);
		pb_varint(&m, (uint64_t)comment);
	}
	/* Scalars go straight into the stream: they are not length-delimited. */
	if (!p->err && !m.err)
		p->err = deflate_out(p, m.p, m.len, Z_NO_FLUSH);

	if (!p->err)
		p->err = pprof_locs__write(p->locs, emit_cb, p);
	/* The string table last: everything above has interned what it needs. */
	for (i = 0; i < p->strs.n && !p->err; i++) {
		m.len = 0;
		pb_key(&m, P_STRING_TABLE, WT_LEN);
		pb_varint(&m, strlen(p->strs.s[i]));
		if (!m.err)
			p->err = deflate_out(p, m.p, m.len, Z_NO_FLUSH);
		if (!p->err)
			p->err = deflate_out(p, p->strs.s[i], strlen(p->strs.s[i]), Z_NO_FLUSH);
	}
	if (m.err && !p->err)
		p->err = m.err;
	free(m.p);
}

int pprof__write(const struct profile_data *pd, FILE *f, const struct output_meta *meta)
{
	struct pp *p;
	bool cpu, gpu;
	int err;

	if (!pd || !f || (pd->nr_samples && !pd->samples) || (pd->nr_gpu && !pd->gpu) ||
	    (pd->nr_joins && !pd->joins) || (pd->nr_launches && !pd->launches))
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pd = pd;
	p->f = f;
	/* 15 + 16: zlib writes a gzip header and trailer instead of its own. */
	if (deflateInit2(&p->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		free(p);
		return -ENOMEM;
	}
	str(p, ""); /* index 0 must be "" */
	p->locs = pprof_locs__new(&p->strs, pd->sites);
	cpu = pd->mode != GPU_MODE_GPU && (pd->nr_samples || pd->cpu_tree);
	gpu = pd->mode != GPU_MODE_CPU;
	err = p->locs ? 0 : -ENOMEM;
	if (!err && cpu)
		err = pd->nr_samples ? write_cpu_timeline(p) : write_cpu_tree(p);
	if (!err && gpu)
		err = write_gpu(p);
	if (!err) {
		write_tables(p, meta, cpu);
		err = p->err;
	}
	if (!err)
		err = deflate_out(p, NULL, 0, Z_FINISH);
	deflateEnd(&p->z);
	pb_strtab_free(&p->strs);
	pprof_locs__free(p->locs);
	free(p->scratch.p);
	free(p->sample.p);
	free(p->lbl.p);
	free(p->frames);
	free(p);
	return err;
}
