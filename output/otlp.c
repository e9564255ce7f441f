// SPDX-License-Identifier: Apache-2.0
/*
 * OTLP profiles by hand, with output/protobuf.h. The dictionary's tables are written as their
 * entries are first met (each a repeated field of ProfilesDictionary, so order is free) and only
 * keymaps of what is in them are kept; the string table goes last, once everything is interned.
 * Frames are names: a function per name, a location per function (same index), no mappings.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "daemon/base/keymap.h"
#include "daemon/base/vec.h"
#include "output/gpu_report/gpu_report.h"
#include "output/model/calltree.h"
#include "output/model/profile.h"
#include "output/otlp.h"
#include "output/output_meta.h"
#include "output/protobuf.h"
#include "output/sample_agg.h"

#define WT_I64 1

/* ProfilesDictionary */
#define D_MAPPING   1
#define D_LOCATION  2
#define D_FUNCTION  3
#define D_LINK	    4
#define D_STRING    5
#define D_ATTRIBUTE 6
#define D_STACK	    7

/* Profile */
#define P_SAMPLE_TYPE 1
#define P_SAMPLES     2
#define P_TIME	      3
#define P_DURATION    4
#define P_PERIOD_TYPE 5
#define P_PERIOD      6
#define P_PROFILE_ID  7

#define MAX_ATTRS 32 /* per sample: the labels a sample can have, with room to spare */

struct ot {
	const struct profile_data *pd;
	const struct gpu_report *gr; /* pd's GPU report, for gpu_idle; NULL: none */
	struct strtab strs;
	struct keymap *funcs, *stacks, *attrs; /* -> index */
	size_t nfuncs, nstacks, nattrs;
	struct buf dict, prof, sample, m, m2;
	int32_t *locs;
	size_t locs_cap;
	const char **frames;
	size_t frames_cap;
	int32_t sa[MAX_ATTRS]; /* the sample's attributes */
	int32_t sk[MAX_ATTRS]; /* and their keys' strings, kept unique */
	size_t nsa;
	int err;
};

static void fail(struct ot *o, int err)
{
	if (!o->err)
		o->err = err;
}

static int32_t str(struct ot *o, const char *s, size_t n)
{
	char small[256], *copy = n < sizeof(small) ? small : malloc(n + 1);
	int64_t i;

	if (!copy) {
		fail(o, -ENOMEM);
		return 0;
	}
	memcpy(copy, s, n);
	copy[n] = '\0';
	i = pb_intern(&o->strs, copy);
	if (copy != small)
		free(copy);
	if (i < 0 || i > INT32_MAX) {
		fail(o, i < 0 ? (int)i : -E2BIG);
		return 0;
	}
	return (int32_t)i;
}

static int32_t cstr(struct ot *o, const char *s)
{
	return str(o, s ? s : "", s ? strlen(s) : 0);
}

/* Index of key's entry, or 0 and *ret_new set to the index it gets once written. */
static uintptr_t lookup(struct ot *o, struct keymap **map, size_t *n, const void *key, size_t klen,
			bool *ret_new)
{
	uintptr_t at;

	*ret_new = false;
	if (!*map && !(*map = keymap__new())) {
		fail(o, -ENOMEM);
		return 0;
	}
	at = (uintptr_t)keymap__get(*map, key, klen);
	if (at)
		return at;
	if (*n >= INT32_MAX) {
		fail(o, -E2BIG);
		return 0;
	}
	at = ++*n;
	if (keymap__put(*map, key, klen, (void *)at, NULL)) {
		fail(o, -ENOMEM);
		return 0;
	}
	*ret_new = true;
	return at;
}

/* A frame's location (and function, same index). */
static int32_t location(struct ot *o, const char *name)
{
	bool fresh;
	uintptr_t i = lookup(o, &o->funcs, &o->nfuncs, name, strlen(name), &fresh);
	int32_t s;

	if (!fresh)
		return (int32_t)i;
	s = cstr(o, name);
	o->m.len = 0;
	pb_uint(&o->m, 1, (uint32_t)s); /* name_strindex */
	pb_uint(&o->m, 2, (uint32_t)s); /* system_name_strindex */
	pb_msg(&o->dict, D_FUNCTION, &o->m);
	o->m2.len = 0;
	pb_uint(&o->m2, 1, i); /* Line.function_index */
	o->m.len = 0;
	pb_msg(&o->m, 3, &o->m2); /* Location.lines */
	pb_msg(&o->dict, D_LOCATION, &o->m);
	return (int32_t)i;
}

/* The stack of frames[0..n) (root first), leaf first as a Stack is. */
static int32_t stack(struct ot *o, const char *const *frames, size_t n)
{
	uintptr_t i;
	bool fresh;

	if (vec_reserve(&o->locs, &o->locs_cap, n ? n : 1)) {
		fail(o, -ENOMEM);
		return 0;
	}
	for (size_t k = 0; k < n; k++)
		o->locs[k] = location(o, frames[n - 1 - k]);
	i = lookup(o, &o->stacks, &o->nstacks, o->locs, n * sizeof(*o->locs), &fresh);
	if (fresh) {
		o->m2.len = 0;
		for (size_t k = 0; k < n; k++)
			pb_varint(&o->m2, (uint32_t)o->locs[k]);
		o->m.len = 0;
		pb_msg(&o->m, 1, &o->m2); /* packed location_indices */
		pb_msg(&o->dict, D_STACK, &o->m);
	}
	return (int32_t)i;
}

/* An attribute for the sample being made; a key it has already is left as it was. */
static void attr(struct ot *o, const char *key, size_t klen, const char *sval, size_t vlen,
		 int64_t ival)
{
	int32_t k = str(o, key, klen), v = sval ? str(o, sval, vlen) : 0;
	int64_t id[3] = {k, sval ? 1 : 2, sval ? v : ival};
	uintptr_t i;
	bool fresh;

	for (size_t j = 0; j < o->nsa; j++)
		if (o->sk[j] == k)
			return;
	if (o->nsa == MAX_ATTRS)
		return;
	i = lookup(o, &o->attrs, &o->nattrs, id, sizeof(id), &fresh);
	if (fresh) {
		o->m2.len = 0;
		if (sval)
			/* AnyValue.string_value: the string table's copy, UTF-8 repaired */
			pb_bytes(&o->m2, 1, o->strs.s[v], strlen(o->strs.s[v]));
		else {
			pb_key(&o->m2, 3, WT_VARINT); /* AnyValue.int_value */
			pb_varint(&o->m2, (uint64_t)ival);
		}
		o->m.len = 0;
		pb_uint(&o->m, 1, (uint32_t)k);
		pb_msg(&o->m, 2, &o->m2);
		pb_msg(&o->dict, D_ATTRIBUTE, &o->m);
	}
	o->sk[o->nsa] = k;
	o->sa[o->nsa++] = (int32_t)i;
}

static void attr_str(struct ot *o, const char *key, const char *val)
{
	attr(o, key, strlen(key), val, strlen(val), 0);
}

static void attr_int(struct ot *o, const char *key, int64_t val)
{
	attr(o, key, strlen(key), NULL, 0, val);
}

static void set_one(void *ctx, const char *key, size_t klen, const char *val, size_t vlen)
{
	attr(ctx, key, klen, val, vlen, 0);
}

/* A root label: the process name under its OTel name, a label set split. */
static void root_attr(struct ot *o, const char *key, const char *val)
{
	if (!strcmp(key, PROFILE_LABEL_SET))
		profile__label_set_each(val, set_one, o);
	else
		attr_str(o, !strcmp(key, "process") ? "process.executable.name" : key, val);
}

/* The root labels of process pid (pd->root's, a label set or one keyed label). */
static void pid_root_attrs(struct ot *o, uint32_t pid)
{
	const struct profile_data *pd = o->pd;

	if (pd->root && pd->root_labels && pd->nr_root_labels > 1)
		root_attr(o, pd->root_labels[0], pd->root(pd->root_ctx, pid));
	else if (pd->process_labels)
		profile__label_set_each(pd->process_labels(pd->process_labels_ctx, pid), set_one,
					o);
}

static void sample_begin(struct ot *o)
{
	o->nsa = 0;
	o->sample.len = 0;
}

/* The sample of a stack, root first (without labels), and its attributes so far. */
static void sample_end(struct ot *o, const char *const *frames, size_t n, int64_t value)
{
	int32_t s = stack(o, frames, n);

	if (value <= 0)
		return;
	pb_uint(&o->sample, 1, (uint32_t)s);
	o->m.len = 0;
	for (size_t i = 0; i < o->nsa; i++)
		pb_varint(&o->m, (uint32_t)o->sa[i]);
	pb_msg(&o->sample, 2, &o->m); /* packed attribute_indices */
	o->m.len = 0;
	pb_varint(&o->m, (uint64_t)value);
	pb_msg(&o->sample, 4, &o->m); /* packed values */
	pb_msg(&o->prof, P_SAMPLES, &o->sample);
}

static const char **frame_list(struct ot *o, size_t n)
{
	if (vec_reserve(&o->frames, &o->frames_cap, n ? n : 1)) {
		fail(o, -ENOMEM);
		return NULL;
	}
	return o->frames;
}

/* The launch or sample stack of pid (without the process name), leaf appended. */
static const char *const *stack_with(struct ot *o, uint32_t pid, uint32_t stack_id,
				     const char *leaf, size_t *ret_n)
{
	static const char *const unknown[] = {"[unknown]"};
	const struct profile_data *pd = o->pd;
	const char *const *frames = NULL;
	const char **v;
	size_t n = 0;

	if (stack_id == CORR_NO_STACK || !pd->stack ||
	    pd->stack(pd->ctx, pid, stack_id, &frames, &n) || !n) {
		frames = unknown;
		n = 1;
	}
	v = frame_list(o, n + 1);
	if (!v)
		return NULL;
	memcpy(v, frames, n * sizeof(*v));
	if (leaf)
		v[n++] = leaf;
	*ret_n = n;
	return v;
}

static void thread_attrs(struct ot *o, uint32_t pid, uint32_t tid)
{
	char comm[64], tname[64];

	attr_str(o, "process.executable.name", profile__name_or(o->pd, pid, 0, comm, sizeof(comm)));
	attr_int(o, "process.pid", pid);
	if (tid) {
		attr_int(o, "thread.id", tid);
		attr_str(o, "thread.name", profile__name_or(o->pd, pid, tid, tname, sizeof(tname)));
	}
	pid_root_attrs(o, pid);
}

static void cpu_timeline(struct ot *o)
{
	const struct profile_data *pd = o->pd;
	struct sample_agg a = {0};
	int err = 0;

	err = sample_agg__samples(pd, &a);
	fail(o, err);
	for (size_t i = 0; i < a.n && !o->err; i++) {
		const struct profile_sample *s = a.e[i].ref;
		const char *const *frames;
		size_t n = 0;

		sample_begin(o);
		thread_attrs(o, s->pid, s->tid);
		if (a.e[i].k[3])
			attr_str(o, "range", (const char *)(uintptr_t)a.e[i].k[3]);
		frames = stack_with(o, s->pid, s->stack_id, NULL, &n);
		if (frames)
			sample_end(o, frames, n, (int64_t)(a.e[i].value * pd->sample_period_ns));
	}
	sample_agg__free(&a);
}

struct tree_ctx {
	struct ot *o;
	const char **path;
};

static int tree_visit(const struct calltree_frame *fr, void *data)
{
	static const char *const process_only[] = {"process"};
	struct tree_ctx *c = data;
	struct ot *o = c->o;
	const struct profile_data *pd = o->pd;
	const char *const *keys = pd->root_labels ? pd->root_labels : process_only;
	size_t nl = pd->root_labels ? pd->nr_root_labels : 1, n = fr->depth + 1;

	c->path[fr->depth] = fr->name;
	if (!fr->self)
		return 0;
	if (nl >= n)
		nl = n - 1;
	sample_begin(o);
	for (size_t i = 0; i < nl; i++)
		root_attr(o, keys[i], c->path[i]);
	sample_end(o, c->path + nl, n - nl, (int64_t)(fr->self * pd->sample_period_ns));
	return o->err;
}

static void cpu_tree(struct ot *o)
{
	const struct calltree *t = o->pd->cpu_tree;
	struct tree_ctx c = {.o = o};

	if (!calltree__max_depth(t))
		return;
	c.path = calloc(calltree__max_depth(t), sizeof(*c.path));
	if (!c.path) {
		fail(o, -ENOMEM);
		return;
	}
	fail(o, calltree__walk(t, tree_visit, &c));
	free(c.path);
}

static void gpu_attrs(struct ot *o, const struct corr_gpu_rec *g, const char *leaf)
{
	attr_int(o, "gpu.device", g->device);
	attr_int(o, "gpu.stream", g->stream_id);
	attr_str(o, "gpu.kernel", leaf + strlen("[gpu] "));
}

static void gpu_work(struct ot *o)
{
	const struct profile_data *pd = o->pd;
	bool *joined = calloc(pd->nr_gpu ? pd->nr_gpu : 1, sizeof(*joined));
	struct sample_agg a = {0};
	char leaf[512];
	int err = 0;

	if (!joined) {
		fail(o, -ENOMEM);
		return;
	}
	err = sample_agg__gpu(pd, &a, joined);
	fail(o, err);
	for (size_t i = 0; i < a.n && !o->err; i++) {
		const struct profile_join *j = a.e[i].ref;
		const struct corr_cpu_rec *l = &pd->launches[j->launch];
		const struct corr_gpu_rec *g = &pd->gpu[j->gpu];
		const char *const *frames;
		size_t n = 0;

		profile__gpu_leaf(g, leaf, sizeof(leaf));
		sample_begin(o);
		thread_attrs(o, l->pid, l->tid);
		gpu_attrs(o, g, leaf);
		if (a.e[i].k[4])
			attr_str(o, "range", (const char *)(uintptr_t)a.e[i].k[4]);
		frames = stack_with(o, l->pid, l->stack_id, leaf, &n);
		if (frames)
			sample_end(o, frames, n, (int64_t)a.e[i].value);
	}
	sample_agg__free(&a);
	for (size_t i = 0; i < pd->nr_gpu && !o->err; i++) {
		const struct corr_gpu_rec *g = &pd->gpu[i];
		const char *v[2] = {"[no launch stack]", leaf};

		if (joined[i] || !corr_gpu_kind__is_activity(g->kind))
			continue;
		profile__gpu_leaf(g, leaf, sizeof(leaf));
		sample_begin(o);
		thread_attrs(o, g->pid, 0);
		gpu_attrs(o, g, leaf);
		sample_end(o, v, 2, (int64_t)(g->end_ns - g->start_ns));
	}
	free(joined);
}

static void fixed64(struct buf *b, unsigned int field, uint64_t v)
{
	pb_key(b, field, WT_I64);
	pb_need(b, 8);
	if (b->err)
		return;
	for (int i = 0; i < 8; i++)
		b->p[b->len++] = (uint8_t)(v >> (8 * i));
}

static void value_type(struct ot *o, struct buf *b, unsigned int field, const char *type,
		       const char *unit)
{
	struct buf vt = {0};

	pb_uint(&vt, 1, (uint32_t)cstr(o, type));
	pb_uint(&vt, 2, (uint32_t)cstr(o, unit));
	pb_msg(b, field, &vt);
	free(vt.p);
}

/* One profile of one sample type into scope (ScopeProfiles.profiles), if it has samples or
 * always (the CPU profile: its times say which span the request covers). */
static void profile(struct ot *o, struct buf *scope, const char *type, void (*fill)(struct ot *),
		    bool always)
{
	const struct profile_data *pd = o->pd;
	uint8_t id[16] = {0};

	o->prof.len = 0;
	fill(o);
	if (o->err || (!o->prof.len && !always))
		return;
	value_type(o, &o->prof, P_SAMPLE_TYPE, type, "nanoseconds");
	fixed64(&o->prof, P_TIME, (uint64_t)((int64_t)pd->start_ns + pd->realtime_offset_ns));
	pb_uint(&o->prof, P_DURATION, pd->end_ns > pd->start_ns ? pd->end_ns - pd->start_ns : 0);
	value_type(o, &o->prof, P_PERIOD_TYPE, "cpu", "nanoseconds");
	pb_uint(&o->prof, P_PERIOD, pd->sample_period_ns);
	/* A profile id of all zeroes is invalid. */
	if (getrandom(id, sizeof(id), GRND_NONBLOCK) != (ssize_t)sizeof(id))
		memcpy(id, &o->prof.len, sizeof(o->prof.len));
	id[0] |= 1;
	pb_bytes(&o->prof, P_PROFILE_ID, id, sizeof(id));
	pb_msg(scope, 2, &o->prof);
}

/* One share of the GPU's idle time: its blamed stack, then "[gpu idle: CAUSE]". */
static void idle_blame(void *ctx, const struct gpu_blame_view *b)
{
	struct ot *o = ctx;
	char leaf[64];
	const char **v;
	size_t n = b->nr_frames ? b->nr_frames : 1;

	if (o->err || !b->ns)
		return;
	v = frame_list(o, n + 2);
	if (!v)
		return;
	if (b->nr_frames)
		memcpy(v, b->frames, b->nr_frames * sizeof(*v));
	else
		v[0] = "[no stack]";
	if (b->api)
		v[n++] = b->api;
	snprintf(leaf, sizeof(leaf), "[gpu idle: %s]", gpu_report__cause_name(b->cause));
	v[n++] = leaf;
	sample_begin(o);
	thread_attrs(o, b->pid, b->tid);
	attr_int(o, "gpu.device", b->device);
	attr_str(o, "gpu.idle.cause", gpu_report__cause_name(b->cause));
	sample_end(o, v, n, (int64_t)b->ns);
}

/* The GPU's idle time by cause under the stacks it is blamed on (the GPU report's). */
static void gpu_idle(struct ot *o)
{
	if (o->gr)
		gpu_report__for_each_blame(o->gr, idle_blame, o);
}

static void kv(struct buf *b, unsigned int field, const char *key, const char *val)
{
	struct buf k = {0}, v = {0};

	pb_bytes(&v, 1, val, strlen(val));
	pb_bytes(&k, 1, key, strlen(key));
	pb_msg(&k, 2, &v);
	pb_msg(b, field, &k);
	free(k.p);
	free(v.p);
}

static void cpu_fill(struct ot *o)
{
	if (o->pd->nr_samples)
		cpu_timeline(o);
	else
		cpu_tree(o);
}

static void request(struct ot *o, struct buf *out)
{
	const struct profile_data *pd = o->pd;
	struct buf res = {0}, scope = {0}, rp = {0}, sc = {0};
	uint8_t link[16 + 8] = {0};
	char host[256] = "";

	/* Entry 0 of every table is its zero value, present. */
	cstr(o, "");
	pb_bytes(&o->dict, D_MAPPING, "", 0);
	pb_bytes(&o->dict, D_LOCATION, "", 0);
	pb_bytes(&o->dict, D_FUNCTION, "", 0);
	pb_bytes(&o->dict, D_ATTRIBUTE, "", 0);
	pb_bytes(&o->dict, D_STACK, "", 0);
	o->m.len = 0;
	pb_bytes(&o->m, 1, link, 16);	  /* trace_id */
	pb_bytes(&o->m, 2, link + 16, 8); /* span_id */
	pb_msg(&o->dict, D_LINK, &o->m);

	if (pd->resource_labels)
		for (size_t i = 0; i < pd->nr_resource_labels; i++)
			kv(&res, 1, pd->resource_labels[2 * i], pd->resource_labels[2 * i + 1]);
	else if (!gethostname(host, sizeof(host) - 1))
		kv(&res, 1, "host.name", host);
	pb_bytes(&sc, 1, "xsprof", strlen("xsprof"));
	pb_msg(&scope, 1, &sc); /* InstrumentationScope */
	if (pd->mode != GPU_MODE_GPU && (pd->nr_samples || pd->cpu_tree))
		profile(o, &scope, pd->cpu_type ? pd->cpu_type : "cpu", cpu_fill, true);
	if (pd->mode != GPU_MODE_CPU) {
		profile(o, &scope, "gpu", gpu_work, false);
		profile(o, &scope, "gpu_idle", gpu_idle, false);
	}
	pb_msg(&rp, 1, &res);
	pb_msg(&rp, 2, &scope);
	pb_msg(out, 1, &rp);
	for (size_t i = 0; i < o->strs.n; i++)
		pb_bytes(&o->dict, D_STRING, o->strs.s[i], strlen(o->strs.s[i]));
	pb_msg(out, 2, &o->dict);
	free(res.p);
	free(scope.p);
	free(rp.p);
	free(sc.p);
}

int otlp__encode(const struct profile_data *pd, const struct gpu_report *gr, struct buf *out)
{
	struct ot *o;
	int err;

	if (!pd || !out || (pd->nr_samples && !pd->samples) || (pd->nr_gpu && !pd->gpu) ||
	    (pd->nr_joins && !pd->joins) || (pd->nr_launches && !pd->launches))
		return -EINVAL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->pd = pd;
	o->gr = gr;
	request(o, out);
	err = o->err	      ? o->err
	      : o->dict.err   ? o->dict.err
	      : o->prof.err   ? o->prof.err
	      : o->sample.err ? o->sample.err
	      : o->m.err      ? o->m.err
	      : o->m2.err     ? o->m2.err
			      : out->err;
	pb_strtab_free(&o->strs);
	keymap__free(o->funcs);
	keymap__free(o->stacks);
	keymap__free(o->attrs);
	free(o->dict.p);
	free(o->prof.p);
	free(o->sample.p);
	free(o->m.p);
	free(o->m2.p);
	free(o->locs);
	free(o->frames);
	free(o);
	return err;
}

int otlp__write(const struct profile_data *pd, FILE *f, const struct output_meta *meta)
{
	struct buf b = {0};
	int err;

	if (!f || !meta || !meta->an || !meta->an->gpu)
		return -EINVAL;
	err = otlp__encode(pd, meta->an->gpu, &b);
	errno = 0;
	if (!err && b.len && fwrite(b.p, 1, b.len, f) != b.len)
		err = errno ? -errno : -EIO;
	free(b.p);
	return err;
}
