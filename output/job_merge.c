// SPDX-License-Identifier: Apache-2.0
/* A training job across hosts: hosts' job parts read, aligned and merged (output/job_merge.h). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "correlate/correlate.h"
#include "daemon/base/job_filter.h"
#include "daemon/base/keymap.h"
#include "daemon/base/sort.h"
#include "daemon/base/vec.h"
#include "output/calltree.h"
#include "output/chrome_trace.h"
#include "output/diff.h"
#include "output/job_merge.h"
#include "output/job_parts.h"
#include "output/job_parts_read.h"
#include "output/job_report_internal.h"
#include "output/nccl.h"
#include "output/profile.h"

struct jm_stack {
	const char **frames;
	size_t n;
};

struct jm_host {
	char *name;
	char **strs; /* the parts' string table, owned */
	size_t nr_strs;
	struct keymap *threads; /* pid << 32 | tid -> index + 1 into tnames */
	char **tnames;
	size_t nr_tnames, cap_tnames;
	struct keymap *stacks; /* pid << 32 | id -> index + 1 into stacks */
	struct jm_stack *stack;
	size_t nr_stack;
	struct keymap *labels; /* pid -> its label set, owned (host.name added) */
	int64_t start, end, rt_offset;
	bool probed;
	struct job_clock_probe probe;
	int64_t offset; /* its time + offset = the job's clock */
	struct job_report_clock clock;
};

struct job_merge {
	struct job_filter job; /* the processes kept (job_merge__new's job; off: all) */
	struct jm_host *hosts;
	size_t nr_hosts, cap_hosts;
	size_t processes;
	struct corr_gpu_rec *gpu;
	size_t nr_gpu, cap_gpu;
	struct corr_cpu_rec *launches;
	size_t nr_launches, cap_launches;
	struct profile_join *joins;
	size_t nr_joins, cap_joins;
	struct profile_sample *samples;
	size_t nr_samples, cap_samples;
	struct profile_data pd;
	struct job_report *report;
	struct job_report_clock *clocks;
	size_t *flow_gpu; /* the collectives' GPU work, a meet's in rank order */
	struct profile_flow *flows;
	size_t nr_flows;
	uint64_t rows_dropped;	  /* past the row budgets (job_merge__rows_dropped) */
	int64_t span_lo, span_hi; /* the hosts' common span (INT64_MIN/MAX: all) */
	int64_t epoch;		  /* the wall time (first estimates) of the job clock's 0 */
};

/* The parts' top-level fields read (job_merge__add): the small ones through json-c, the row
 * arrays straight from the text. */
enum {
	F_SCHEMA,
	F_VERSION,
	F_START,
	F_END,
	F_RT_OFFSET,
	F_STRINGS,
	F_PROCESSES,
	F_THREADS,
	F_SMALL, /* the fields above are parsed into a document */
	F_STACKS = F_SMALL,
	F_GPU,
	F_LAUNCHES,
	F_JOINS,
	F_SAMPLES,
	F_FIELDS,
};
static const char *const field_keys[F_FIELDS] = {
	"schema",   "version",	 "start_ns", "end_ns", "realtime_offset_ns",
	"strings",  "processes", "threads",  "stacks", "gpu",
	"launches", "joins",	 "samples",
};

static inline uint32_t merged_id(size_t host, uint32_t id)
{
	return (uint32_t)host << JOB_REPORT_PID_BITS | (id & JOB_REPORT_PID_MASK);
}

static struct jm_host *host_of(const struct job_merge *m, uint32_t pid)
{
	size_t h = pid >> JOB_REPORT_PID_BITS;

	return h < m->nr_hosts ? &m->hosts[h] : NULL;
}

/* ---- the profile's callbacks ---- */

static int merged_stack(void *ctx, uint32_t pid, uint32_t id, const char *const **ret, size_t *n)
{
	const struct job_merge *m = ctx;
	struct jm_host *h = host_of(m, pid);
	uint64_t k = (uint64_t)(pid & JOB_REPORT_PID_MASK) << 32 | id;
	uintptr_t v = h ? (uintptr_t)keymap__get(h->stacks, &k, sizeof(k)) : 0;

	if (!v)
		return -ENOENT;
	*ret = h->stack[v - 1].frames;
	*n = h->stack[v - 1].n;
	return 0;
}

static const char *merged_name(void *ctx, uint32_t pid, uint32_t tid)
{
	const struct job_merge *m = ctx;
	struct jm_host *h = host_of(m, pid);
	uint64_t k = (uint64_t)(pid & JOB_REPORT_PID_MASK) << 32 | (tid & JOB_REPORT_PID_MASK);
	uintptr_t v = h ? (uintptr_t)keymap__get(h->threads, &k, sizeof(k)) : 0;

	return v ? h->tnames[v - 1] : NULL;
}

static const char *merged_labels(void *ctx, uint32_t pid)
{
	const struct job_merge *m = ctx;
	struct jm_host *h = host_of(m, pid);
	uint32_t p = pid & JOB_REPORT_PID_MASK;

	return h ? keymap__get(h->labels, &p, sizeof(p)) : NULL;
}

static const char *merged_device(void *ctx, uint32_t device, char *buf, size_t size)
{
	const struct job_merge *m = ctx;
	size_t h = device >> 8;

	snprintf(buf, size, "GPU %u of %s", device & 0xff,
		 h < m->nr_hosts ? m->hosts[h].name : "?");
	return buf;
}

/* ---- reading a host's parts ---- */

static int64_t geti(struct json_object *a, size_t i)
{
	return json_object_get_int64(json_object_array_get_idx(a, i));
}

static const char *str_at(const struct jm_host *h, int64_t i)
{
	return i >= 0 && (size_t)i < h->nr_strs ? h->strs[i] : NULL;
}

/* Each element of key's array: an array of at least min numbers, else -EINVAL. */
static struct json_object *rows(struct json_object *doc, const char *key, size_t min, int *err)
{
	struct json_object *a;

	if (!json_object_object_get_ex(doc, key, &a) || !json_object_is_type(a, json_type_array)) {
		*err = -EINVAL;
		return NULL;
	}
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		struct json_object *r = json_object_array_get_idx(a, i);

		if (!json_object_is_type(r, json_type_array) || json_object_array_length(r) < min) {
			*err = -EINVAL;
			return NULL;
		}
	}
	return a;
}

static int read_strings(struct jm_host *h, struct json_object *doc)
{
	struct json_object *a;

	if (!json_object_object_get_ex(doc, "strings", &a) ||
	    !json_object_is_type(a, json_type_array))
		return -EINVAL;
	h->nr_strs = json_object_array_length(a);
	h->strs = calloc(h->nr_strs + 1, sizeof(*h->strs));
	if (!h->strs)
		return -ENOMEM;
	for (size_t i = 0; i < h->nr_strs; i++) {
		const char *s = json_object_get_string(json_object_array_get_idx(a, i));

		if (!(h->strs[i] = strdup(s ? s : "")))
			return -ENOMEM;
	}
	return 0;
}

/* The ranked processes (of the merge's job) with their labels, host.name added. */
static int read_processes(struct job_merge *m, struct jm_host *h, struct json_object *doc)
{
	struct json_object *a, *o;

	if (!json_object_object_get_ex(doc, "processes", &a) ||
	    !json_object_is_type(a, json_type_array))
		return -EINVAL;
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		struct json_object *p = json_object_array_get_idx(a, i);
		const char *set;
		uint32_t pid;
		char *l;

		if (!json_object_object_get_ex(p, "pid", &o))
			return -EINVAL;
		pid = (uint32_t)json_object_get_int64(o) & JOB_REPORT_PID_MASK;
		set = json_object_object_get_ex(p, "labels", &o) ? json_object_get_string(o) : "";
		if (!job_filter__matches(&m->job, set))
			continue;
		if (asprintf(&l, "%s\x1fhost.name=%s", set, h->name) < 0)
			return -ENOMEM;
		if (keymap__put(h->labels, &pid, sizeof(pid), l, NULL)) {
			free(l);
			return -ENOMEM;
		}
		m->processes++;
	}
	return 0;
}

static bool kept(const struct jm_host *h, int64_t pid)
{
	uint32_t p = (uint32_t)pid & JOB_REPORT_PID_MASK;

	return keymap__get(h->labels, &p, sizeof(p)) != NULL;
}

static int read_threads(struct jm_host *h, struct json_object *doc)
{
	int err = 0;
	struct json_object *th = rows(doc, "threads", 3, &err);

	if (err)
		return err;
	for (size_t i = 0; i < json_object_array_length(th); i++) {
		struct json_object *r = json_object_array_get_idx(th, i);
		uint64_t k = (uint64_t)(geti(r, 0) & JOB_REPORT_PID_MASK) << 32 |
			     ((uint64_t)geti(r, 1) & JOB_REPORT_PID_MASK);
		const char *name = json_object_get_string(json_object_array_get_idx(r, 2));

		if (vec__reserve((void **)&h->tnames, &h->cap_tnames, h->nr_tnames + 1,
				 sizeof(*h->tnames)) ||
		    !(h->tnames[h->nr_tnames] = strdup(name ? name : "")))
			return -ENOMEM;
		h->nr_tnames++;
		if (keymap__put(h->threads, &k, sizeof(k), (void *)(uintptr_t)h->nr_tnames, NULL))
			return -ENOMEM;
	}
	return 0;
}

/* A row budget spent: the host's (JOB_MERGE_MAX_HOST_ROWS) or the merge's
 * (JOB_MERGE_MAX_RECORDS, its records of every host); the row is counted, not kept. */
static bool over_budget(struct job_merge *m, size_t *host_rows)
{
	if (++*host_rows > JOB_MERGE_MAX_HOST_ROWS ||
	    m->nr_gpu + m->nr_launches + m->nr_samples >= JOB_MERGE_MAX_RECORDS) {
		m->rows_dropped++;
		return true;
	}
	return false;
}

/* Each stack's frames, read row by row: [pid, id, [string index...]]. */
static int read_stacks(struct job_merge *m, struct jm_host *h, struct jp_span span,
		       size_t *host_rows)
{
	int64_t v[3], *fr = malloc(JOB_MERGE_MAX_FRAMES * sizeof(*fr));
	struct jp_rows r;
	size_t n, nf, cap = 0;
	int got, err = 0;

	if (!fr)
		return -ENOMEM;
	if (jp_rows_begin(&r, span)) {
		free(fr);
		return -EINVAL;
	}
	while ((got = jp_row_next(&r, v, 3, &n, fr, JOB_MERGE_MAX_FRAMES, &nf)) == 1) {
		struct jm_stack *st;
		uint64_t k;

		if (n < 3) {
			err = -EINVAL;
			break;
		}
		if (over_budget(m, host_rows))
			continue;
		if (vec__reserve((void **)&h->stack, &cap, h->nr_stack + 1, sizeof(*h->stack))) {
			err = -ENOMEM;
			break;
		}
		st = &h->stack[h->nr_stack];
		*st = (struct jm_stack){.frames = calloc(nf + 1, sizeof(char *))};
		if (!st->frames) {
			err = -ENOMEM;
			break;
		}
		h->nr_stack++;
		for (size_t f = 0; f < nf; f++) {
			const char *name = str_at(h, fr[f]);

			st->frames[st->n++] = name ? name : "[unknown]";
		}
		k = (uint64_t)(v[0] & JOB_REPORT_PID_MASK) << 32 | (uint32_t)v[1];
		if (keymap__put(h->stacks, &k, sizeof(k), (void *)(uintptr_t)h->nr_stack, NULL)) {
			err = -ENOMEM;
			break;
		}
	}
	free(fr);
	return err ? err : got < 0 ? -EINVAL : 0;
}

/* The host's records (its index hi) appended to the merge's, pids and tids made the merge's,
 * read row by row from the text (output/job_parts_read.h). */
static int read_records(struct job_merge *m, size_t hi, const struct jp_field *fields,
			size_t *host_rows)
{
	struct jm_host *h = &m->hosts[hi];
	size_t gbase = m->nr_gpu, lbase = m->nr_launches, ng = 0, nl = 0, cap_g = 0, cap_l = 0, n;
	size_t *gto = NULL, *lto = NULL;
	struct jp_rows r;
	int64_t v[17];
	int got, err = 0;

	/* gpu: [kind, copy_kind, host_mem, flags, pid, tid, device, context, stream, corr, cbid,
	 * graph, start, end, bytes, name, domain] */
	if (jp_rows_begin(&r, fields[F_GPU].val))
		return -EINVAL;
	while ((got = jp_row_next(&r, v, 17, &n, NULL, 0, NULL)) == 1) {
		if (n < 17)
			goto bad;
		if (vec__reserve((void **)&gto, &cap_g, ng + 1, sizeof(*gto))) {
			err = -ENOMEM;
			goto out;
		}
		gto[ng++] = SIZE_MAX;
		if (!kept(h, v[4]) || over_budget(m, host_rows))
			continue;
		if (vec__reserve((void **)&m->gpu, &m->cap_gpu, m->nr_gpu + 1, sizeof(*m->gpu))) {
			err = -ENOMEM;
			goto out;
		}
		gto[ng - 1] = m->nr_gpu - gbase;
		m->gpu[m->nr_gpu++] = (struct corr_gpu_rec){
			.kind = (uint8_t)v[0],
			.copy_kind = (uint8_t)v[1],
			.host_mem = (uint8_t)v[2],
			.flags = (uint8_t)v[3],
			.pid = merged_id(hi, (uint32_t)v[4]),
			.tid = v[5] ? merged_id(hi, (uint32_t)v[5]) : 0,
			.device = (uint32_t)hi << 8 | ((uint32_t)v[6] & 0xff),
			.context = (uint32_t)v[7],
			.stream_id = (uint32_t)v[8],
			.corr_id = (uint32_t)v[9],
			.cbid = (uint32_t)v[10],
			.graph_id = (uint64_t)v[11],
			.start_ns = (uint64_t)(v[12] + h->offset),
			.end_ns = (uint64_t)(v[13] + h->offset),
			.bytes = (uint64_t)v[14],
			.name = str_at(h, v[15]),
			.domain = str_at(h, v[16]),
		};
	}
	if (got < 0)
		goto bad;
	/* launches: [kind, api_kind, flags, api_id, pid, tid, time, stream, graph_exec, corr,
	 * stack, api_name] */
	if (jp_rows_begin(&r, fields[F_LAUNCHES].val))
		goto bad;
	while ((got = jp_row_next(&r, v, 12, &n, NULL, 0, NULL)) == 1) {
		if (n < 12)
			goto bad;
		if (vec__reserve((void **)&lto, &cap_l, nl + 1, sizeof(*lto))) {
			err = -ENOMEM;
			goto out;
		}
		lto[nl++] = SIZE_MAX;
		if (!kept(h, v[4]) || over_budget(m, host_rows))
			continue;
		if (vec__reserve((void **)&m->launches, &m->cap_launches, m->nr_launches + 1,
				 sizeof(*m->launches))) {
			err = -ENOMEM;
			goto out;
		}
		lto[nl - 1] = m->nr_launches - lbase;
		m->launches[m->nr_launches++] = (struct corr_cpu_rec){
			.kind = (uint8_t)v[0],
			.api_kind = (uint8_t)v[1],
			.flags = (uint16_t)v[2],
			.api_id = (uint32_t)v[3],
			.pid = merged_id(hi, (uint32_t)v[4]),
			.tid = merged_id(hi, (uint32_t)v[5]),
			.time_ns = (uint64_t)(v[6] + h->offset),
			.stream = (uint64_t)v[7],
			.graph_exec = (uint64_t)v[8],
			.corr_id = (uint32_t)v[9],
			.stack_id = (uint32_t)v[10],
			.api_name = str_at(h, v[11]),
		};
	}
	if (got < 0)
		goto bad;
	/* joins: [launch row, gpu row], of this host's rows */
	if (jp_rows_begin(&r, fields[F_JOINS].val))
		goto bad;
	while ((got = jp_row_next(&r, v, 2, &n, NULL, 0, NULL)) == 1) {
		if (n < 2)
			goto bad;
		if (v[0] < 0 || v[1] < 0 || (size_t)v[0] >= nl || (size_t)v[1] >= ng ||
		    lto[v[0]] == SIZE_MAX || gto[v[1]] == SIZE_MAX)
			continue;
		if (vec__reserve((void **)&m->joins, &m->cap_joins, m->nr_joins + 1,
				 sizeof(*m->joins))) {
			err = -ENOMEM;
			goto out;
		}
		m->joins[m->nr_joins++] = (struct profile_join){.launch = lbase + lto[v[0]],
								.gpu = gbase + gto[v[1]]};
	}
	if (got < 0)
		goto bad;
	/* samples: [time, pid, tid, stack, cpu] */
	if (jp_rows_begin(&r, fields[F_SAMPLES].val))
		goto bad;
	while ((got = jp_row_next(&r, v, 5, &n, NULL, 0, NULL)) == 1) {
		if (n < 5)
			goto bad;
		if (!kept(h, v[1]) || over_budget(m, host_rows))
			continue;
		if (vec__reserve((void **)&m->samples, &m->cap_samples, m->nr_samples + 1,
				 sizeof(*m->samples))) {
			err = -ENOMEM;
			goto out;
		}
		m->samples[m->nr_samples++] = (struct profile_sample){
			.time_ns = (uint64_t)(v[0] + h->offset),
			.pid = merged_id(hi, (uint32_t)v[1]),
			.tid = merged_id(hi, (uint32_t)v[2]),
			.stack_id = (uint32_t)v[3],
			.cpu = (uint32_t)v[4],
		};
	}
	if (got < 0)
		goto bad;
	goto out;
bad:
	err = -EINVAL;
out:
	free(gto);
	free(lto);
	return err;
}

static void labels_free(const void *key, size_t len, void *val, void *ctx)
{
	(void)key, (void)len, (void)ctx;
	free(val);
}

static void host_free(struct jm_host *h)
{
	for (size_t i = 0; i < h->nr_strs; i++)
		free(h->strs[i]);
	free(h->strs);
	for (size_t i = 0; i < h->nr_tnames; i++)
		free(h->tnames[i]);
	free(h->tnames);
	for (size_t i = 0; i < h->nr_stack; i++)
		free(h->stack[i].frames);
	free(h->stack);
	keymap__free(h->threads);
	keymap__free(h->stacks);
	if (h->labels)
		keymap__for_each(h->labels, labels_free, NULL);
	keymap__free(h->labels);
	free(h->name);
}

/* The host's header (schema, times) and its clock's first estimate. */
static int read_header(struct jm_host *h, struct json_object *doc, char *why, size_t why_size)
{
	struct json_object *o;

	if (!json_object_object_get_ex(doc, "schema", &o) ||
	    strcmp(json_object_get_string(o) ? json_object_get_string(o) : "", JOB_PARTS_SCHEMA)) {
		snprintf(why, why_size, "not job parts (no schema %s)", JOB_PARTS_SCHEMA);
		return -EINVAL;
	}
	if (!json_object_object_get_ex(doc, "version", &o) ||
	    json_object_get_int(o) != JOB_PARTS_VERSION) {
		snprintf(why, why_size, "job parts of version %s, this reads %d",
			 o ? json_object_get_string(o) : "none", JOB_PARTS_VERSION);
		return -EINVAL;
	}
	h->start = json_object_object_get_ex(doc, "start_ns", &o) ? json_object_get_int64(o) : 0;
	h->end = json_object_object_get_ex(doc, "end_ns", &o) ? json_object_get_int64(o) : 0;
	h->rt_offset = json_object_object_get_ex(doc, "realtime_offset_ns", &o)
			       ? json_object_get_int64(o)
			       : 0;
	h->offset = h->probed ? h->probe.offset_ns : h->rt_offset;
	return 0;
}

/* The small fields parsed into one document (json-c); -EINVAL with why when one is not JSON. */
static int small_doc(const struct jp_field *fields, struct json_object **ret, char *why,
		     size_t why_size)
{
	struct json_object *doc = json_object_new_object();

	if (!doc)
		return -ENOMEM;
	for (int i = 0; i < F_SMALL; i++) {
		struct json_tokener *tok;
		struct json_object *o;
		enum json_tokener_error e;

		if (!fields[i].found)
			continue;
		if (!(tok = json_tokener_new())) {
			json_object_put(doc);
			return -ENOMEM;
		}
		o = json_tokener_parse_ex(tok, fields[i].val.p, (int)fields[i].val.len);
		if (!o && json_tokener_get_error(tok) == json_tokener_continue)
			o = json_tokener_parse_ex(tok, "", 1); /* a number ends at the end */
		e = json_tokener_get_error(tok);
		json_tokener_free(tok);
		if (e != json_tokener_success) {
			snprintf(why, why_size, "not JSON: %s in \"%s\"",
				 json_tokener_error_desc(e), fields[i].key);
			json_object_put(o);
			json_object_put(doc);
			return -EINVAL;
		}
		json_object_object_add(doc, fields[i].key, o);
	}
	*ret = doc;
	return 0;
}

int job_merge__add(struct job_merge *m, const char *name, const char *json, size_t len,
		   const struct job_clock_probe *probe, char *why, size_t why_size)
{
	struct jp_field fields[F_FIELDS];
	struct json_object *doc = NULL;
	struct jm_host *h;
	size_t hi = m->nr_hosts, ng = m->nr_gpu, nl = m->nr_launches, nj = m->nr_joins,
	       ns = m->nr_samples, np = m->processes, rows = 0;
	uint64_t nd = m->rows_dropped;
	int err;

	snprintf(why, why_size, "out of memory");
	if (m->nr_hosts == JOB_MERGE_MAX_HOSTS) {
		snprintf(why, why_size, "more than %d hosts", JOB_MERGE_MAX_HOSTS);
		return -E2BIG;
	}
	if (vec__reserve((void **)&m->hosts, &m->cap_hosts, m->nr_hosts + 1, sizeof(*m->hosts)))
		return -ENOMEM;
	for (int i = 0; i < F_FIELDS; i++)
		fields[i] = (struct jp_field){.key = field_keys[i]};
	if ((err = jp_scan(json, len, fields, F_FIELDS, why, why_size)) ||
	    (err = small_doc(fields, &doc, why, why_size)))
		return err;
	h = &m->hosts[hi];
	*h = (struct jm_host){.probed = probe != NULL};
	if (probe)
		h->probe = *probe;
	h->name = strdup(name);
	h->threads = keymap__new();
	h->stacks = keymap__new();
	h->labels = keymap__new();
	err = !h->name || !h->threads || !h->stacks || !h->labels ? -ENOMEM : 0;
	m->nr_hosts++;
	if (!err)
		err = read_header(h, doc, why, why_size);
	if (!err && (err = read_strings(h, doc)) == -EINVAL)
		snprintf(why, why_size, "job parts without a string table");
	if (!err && (err = read_processes(m, h, doc)) == -EINVAL)
		snprintf(why, why_size, "job parts with a bad process list");
	if (!err && (err = read_threads(h, doc)) == -EINVAL)
		snprintf(why, why_size, "job parts with bad threads");
	if (!err && (!fields[F_STACKS].found ||
		     (err = read_stacks(m, h, fields[F_STACKS].val, &rows)) == -EINVAL)) {
		err = -EINVAL;
		snprintf(why, why_size, "job parts with bad stacks");
	}
	if (!err &&
	    (!fields[F_GPU].found || !fields[F_LAUNCHES].found || !fields[F_JOINS].found ||
	     !fields[F_SAMPLES].found || (err = read_records(m, hi, fields, &rows)) == -EINVAL)) {
		err = -EINVAL;
		snprintf(why, why_size,
			 "job parts with bad records (gpu, launches, joins, samples)");
	}
	json_object_put(doc);
	if (err) {
		host_free(h);
		m->nr_hosts = hi;
		m->nr_gpu = ng, m->nr_launches = nl, m->nr_joins = nj, m->nr_samples = ns;
		m->processes = np;
		m->rows_dropped = nd;
	}
	return err;
}

uint64_t job_merge__rows_dropped(const struct job_merge *m)
{
	return m->rows_dropped;
}

struct job_merge *job_merge__new(const char *job)
{
	struct job_merge *m = calloc(1, sizeof(*m));

	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	if (job && job_filter__set_job(&m->job, job)) {
		free(m);
		errno = EINVAL;
		return NULL;
	}
	m->span_lo = INT64_MIN, m->span_hi = INT64_MAX;
	return m;
}

void job_merge__free(struct job_merge *m)
{
	if (!m)
		return;
	job_report__free(m->report);
	for (size_t i = 0; i < m->nr_hosts; i++)
		host_free(&m->hosts[i]);
	free(m->hosts);
	free(m->gpu);
	free(m->launches);
	free(m->joins);
	free(m->samples);
	free(m->clocks);
	free(m->flow_gpu);
	free(m->flows);
	free(m);
}

/* ---- the clocks ---- */

static void shift_host(struct job_merge *m, size_t hi, int64_t d)
{
	for (size_t i = 0; i < m->nr_gpu; i++)
		if (m->gpu[i].pid >> JOB_REPORT_PID_BITS == hi) {
			m->gpu[i].start_ns = (uint64_t)((int64_t)m->gpu[i].start_ns + d);
			m->gpu[i].end_ns = (uint64_t)((int64_t)m->gpu[i].end_ns + d);
		}
	for (size_t i = 0; i < m->nr_launches; i++)
		if (m->launches[i].pid >> JOB_REPORT_PID_BITS == hi)
			m->launches[i].time_ns = (uint64_t)((int64_t)m->launches[i].time_ns + d);
	for (size_t i = 0; i < m->nr_samples; i++)
		if (m->samples[i].pid >> JOB_REPORT_PID_BITS == hi)
			m->samples[i].time_ns = (uint64_t)((int64_t)m->samples[i].time_ns + d);
	m->hosts[hi].offset += d;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/* The median end of the collective m of host hi's ranks in job (0: none ran it there). */
static int64_t host_end(const struct jr_job *job, const struct jr_meet *mt, size_t hi)
{
	int64_t ends[64];
	size_t n = 0;

	for (size_t k = 0; k < job->nr_ranks && n < 64; k++) {
		const struct jr_coll *c = jr_coll_at(job, mt, k);

		if (c && job->ranks[k]->pid >> JOB_REPORT_PID_BITS == hi)
			ends[n++] = (int64_t)c->end;
	}
	if (!n)
		return 0;
	qsort(ends, n, sizeof(*ends), cmp_i64);
	return ends[(n - 1) / 2];
}

/* The job with the most ranks: the one whose collectives align the clocks. */
static const struct jr_job *main_job(const struct job_report *r)
{
	const struct jr_job *best = NULL;

	for (size_t j = 0; j < r->nr_jobs; j++)
		if (r->jobs[j].nr_ranks && (!best || r->jobs[j].nr_ranks > best->nr_ranks))
			best = &r->jobs[j];
	return best;
}

/*
 * Host hi's offset from the reference host ref by the collectives of job both ran: shifted
 * onto it, its clock's figures set. False when too few collectives are in common.
 */
static bool align_host(struct job_merge *m, const struct jr_job *job, size_t ref, size_t hi,
		       int64_t *d, int64_t *res)
{
	struct jm_host *h = &m->hosts[hi];
	size_t n = 0;
	int64_t est;

	for (size_t i = 0; i < job->nr_meets; i++) {
		int64_t a = host_end(job, &job->meets[i], ref), b;

		if (a && (b = host_end(job, &job->meets[i], hi)))
			d[n++] = a - b;
	}
	if (n < JOB_MERGE_MIN_COLLECTIVES)
		return false;
	qsort(d, n, sizeof(*d), cmp_i64);
	est = d[(n - 1) / 2];
	for (size_t i = 0; i < n; i++)
		res[i] = d[i] > est ? d[i] - est : est - d[i];
	qsort(res, n, sizeof(*res), cmp_i64);
	shift_host(m, hi, est);
	h->clock.error_ns = res[(n * 9) / 10 < n ? (n * 9) / 10 : n - 1];
	if (h->clock.error_ns < JOB_MERGE_EXIT_SKEW_NS)
		h->clock.error_ns = JOB_MERGE_EXIT_SKEW_NS;
	h->clock.method = "collectives";
	h->clock.collectives = n;
	return true;
}

/* Every host's clock: first estimates, then the collectives of the report's main job. */
static int align(struct job_merge *m, const struct job_report *r, bool *moved)
{
	const struct jr_job *job = main_job(r);
	size_t ref = 0, n = job ? job->nr_meets : 0;
	int64_t *d = calloc(n + 1, sizeof(*d)), *res = calloc(n + 1, sizeof(*res));

	if (!d || !res) {
		free(d);
		free(res);
		return -ENOMEM;
	}
	if (job)
		ref = job->ranks[0]->pid >> JOB_REPORT_PID_BITS;
	*moved = false;
	for (size_t hi = 0; hi < m->nr_hosts; hi++) {
		struct jm_host *h = &m->hosts[hi];

		h->clock = (struct job_report_clock){
			.host = h->name,
			.error_ns = -1,
			.method = h->probed ? "round trip" : "wall clock",
		};
		if (hi == ref && job) {
			h->clock.method = "reference";
			h->clock.error_ns = 0;
		} else if (job && align_host(m, job, ref, hi, d, res)) {
			*moved = true;
		} else if (h->probed && m->hosts[ref].probed) {
			h->clock.error_ns =
				(int64_t)(h->probe.error_ns + m->hosts[ref].probe.error_ns);
		}
	}
	for (size_t hi = 0; hi < m->nr_hosts; hi++)
		m->hosts[hi].clock.offset_ns = m->hosts[hi].offset - m->hosts[ref].offset;
	free(d);
	free(res);
	return 0;
}

/* ---- the hosts' common time ---- */

static bool is_collective(const struct corr_gpu_rec *g)
{
	struct nccl_kernel k;

	return g->kind == CORR_GPU_KERNEL && g->name && nccl__parse(g->name, &k);
}

/* Only the work inside [lo, hi] of the job's clock (a collective: its end), its launches,
 * and the samples inside. */
static int keep_span(struct job_merge *m, int64_t lo, int64_t hi)
{
	size_t *gto = calloc(m->nr_gpu + 1, sizeof(*gto));
	bool *lkeep = calloc(m->nr_launches + 1, sizeof(*lkeep));
	size_t *lto = calloc(m->nr_launches + 1, sizeof(*lto));
	size_t n = 0;

	if (!gto || !lkeep || !lto) {
		free(gto), free(lkeep), free(lto);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->nr_gpu; i++) {
		const struct corr_gpu_rec *g = &m->gpu[i];

		gto[i] = SIZE_MAX;
		/* A collective by its end, which its ranks share (their starts differ by their
		 * lateness); other work by overlap. */
		if ((int64_t)g->end_ns < lo || (int64_t)g->start_ns > hi ||
		    (is_collective(g) && (int64_t)g->end_ns > hi))
			continue;
		gto[i] = n;
		m->gpu[n++] = *g;
	}
	m->nr_gpu = n;
	for (size_t i = 0; i < m->nr_launches; i++)
		lkeep[i] = (int64_t)m->launches[i].time_ns >= lo &&
			   (int64_t)m->launches[i].time_ns <= hi;
	for (size_t i = 0; i < m->nr_joins; i++)
		lkeep[m->joins[i].launch] = gto[m->joins[i].gpu] != SIZE_MAX;
	n = 0;
	for (size_t i = 0; i < m->nr_launches; i++) {
		lto[i] = lkeep[i] ? n : SIZE_MAX;
		if (lkeep[i])
			m->launches[n++] = m->launches[i];
	}
	m->nr_launches = n;
	n = 0;
	for (size_t i = 0; i < m->nr_joins; i++) {
		struct profile_join j = m->joins[i];

		if (gto[j.gpu] != SIZE_MAX && lto[j.launch] != SIZE_MAX)
			m->joins[n++] =
				(struct profile_join){.launch = lto[j.launch], .gpu = gto[j.gpu]};
	}
	m->nr_joins = n;
	n = 0;
	for (size_t i = 0; i < m->nr_samples; i++)
		if ((int64_t)m->samples[i].time_ns >= lo && (int64_t)m->samples[i].time_ns <= hi)
			m->samples[n++] = m->samples[i];
	m->nr_samples = n;
	m->span_lo = lo, m->span_hi = hi;
	free(gto), free(lkeep), free(lto);
	return 0;
}

/*
 * The reference host's collectives' ends on the job's clock (first estimates), one per moment
 * (ranks' ends of one collective within 100 us are one); the latest first and the earliest
 * last collective of any rank (a recording may take one rank's record of a collective and
 * miss another's, delivered after it stopped).
 */
static int64_t *collective_ends(const struct job_merge *m, size_t ref, size_t *ret_n,
				int64_t *ret_from, int64_t *ret_to)
{
	int64_t *e = calloc(m->nr_gpu + 1, sizeof(*e)), *first, *last;
	struct keymap *slot = keymap__new();
	size_t n = 0, u = 0, nr = 0;

	first = calloc(m->nr_gpu + 1, sizeof(*first));
	last = calloc(m->nr_gpu + 1, sizeof(*last));
	if (!e || !slot || !first || !last)
		goto fail;
	for (size_t i = 0; i < m->nr_gpu; i++) {
		uint32_t pid = m->gpu[i].pid;
		int64_t end = (int64_t)m->gpu[i].end_ns;
		uintptr_t k;

		if (!is_collective(&m->gpu[i]))
			continue;
		if (!(k = (uintptr_t)keymap__get(slot, &pid, sizeof(pid)))) {
			if (keymap__put(slot, &pid, sizeof(pid), (void *)(uintptr_t)(nr + 1), NULL))
				goto fail;
			k = ++nr;
			first[k - 1] = last[k - 1] = end;
		}
		first[k - 1] = end < first[k - 1] ? end : first[k - 1];
		last[k - 1] = end > last[k - 1] ? end : last[k - 1];
		if (pid >> JOB_REPORT_PID_BITS == ref)
			e[n++] = end;
	}
	*ret_from = INT64_MIN, *ret_to = INT64_MAX;
	for (size_t k = 0; k < nr; k++) {
		*ret_from = first[k] > *ret_from ? first[k] : *ret_from;
		*ret_to = last[k] < *ret_to ? last[k] : *ret_to;
	}
	qsort(e, n, sizeof(*e), cmp_i64);
	for (size_t i = 0; i < n; i++)
		if (!u || e[i] - e[u - 1] > 100000)
			e[u++] = e[i];
	*ret_n = u;
	keymap__free(slot);
	free(first);
	free(last);
	return e;
fail:
	keymap__free(slot);
	free(first);
	free(last);
	free(e);
	return NULL;
}

/*
 * The span every host recorded: hosts' recordings start and stop at different moments, and
 * the k-th collective of one must meet the k-th of another. The cuts fall mid-way between two
 * of the reference host's collectives, just inside the latest first and the earliest last
 * collective of any rank, so a clock's first estimate off by less than half the spacing of
 * collectives puts each collective on the same side on every host. Work ending before the
 * start cut or starting after the end cut is left out, with the launches joined to it.
 */
static int common_span(struct job_merge *m, size_t ref)
{
	int64_t *e, lo = INT64_MIN, hi = INT64_MAX, from, to, gap;
	size_t n = 0, k;
	int err;

	if (!(e = collective_ends(m, ref, &n, &from, &to)))
		return -ENOMEM;
	if (n < 2) {
		free(e);
		return 0;
	}
	/* The spacing of collectives: the median gap between the reference host's. */
	{
		int64_t *d = calloc(n, sizeof(*d));

		if (!d) {
			free(e);
			return -ENOMEM;
		}
		for (k = 0; k + 1 < n; k++)
			d[k] = e[k + 1] - e[k];
		qsort(d, n - 1, sizeof(*d), cmp_i64);
		gap = d[(n - 2) / 2];
		free(d);
	}
	for (k = 0; k < n && e[k] < from - gap / 2; k++)
		;
	if (k < n)
		lo = k ? e[k - 1] + (e[k] - e[k - 1]) / 2 : e[k] - gap / 2;
	for (k = n; k > 0 && e[k - 1] > to + gap / 2; k--)
		;
	if (k > 0)
		hi = k < n ? e[k - 1] + (e[k] - e[k - 1]) / 2 : e[k - 1] + gap / 2;
	free(e);
	err = keep_span(m, lo, hi);
	return err;
}

/* ---- the merged profile and its report ---- */

static void fill_profile(struct job_merge *m)
{
	struct profile_data *pd = &m->pd;

	*pd = (struct profile_data){
		.sample_period_ns = 1000000000ull / 99,
		.samples = m->samples,
		.nr_samples = m->nr_samples,
		.launches = m->launches,
		.nr_launches = m->nr_launches,
		.gpu = m->gpu,
		.nr_gpu = m->nr_gpu,
		.joins = m->joins,
		.nr_joins = m->nr_joins,
		.stack = merged_stack,
		.name = merged_name,
		.ctx = m,
		.process_labels = merged_labels,
		.process_labels_ctx = m,
		.device_name = merged_device,
		.mode = GPU_MODE_MERGED,
		.unit = WEIGHT_SAMPLES,
		.realtime_offset_ns = m->epoch,
	};
	for (size_t hi = 0; hi < m->nr_hosts; hi++) {
		const struct jm_host *h = &m->hosts[hi];
		uint64_t s = (uint64_t)(h->start + h->offset), e = (uint64_t)(h->end + h->offset);

		if (!pd->start_ns || s < pd->start_ns)
			pd->start_ns = s;
		if (e > pd->end_ns)
			pd->end_ns = e;
	}
}

/* Each collective's GPU work across its ranks, in rank order: the trace's links. */
static int make_flows(struct job_merge *m)
{
	const struct job_report *r = m->report;
	size_t total = 0, used = 0;

	for (size_t j = 0; j < r->nr_jobs; j++)
		total += r->jobs[j].nr_meets * r->jobs[j].nr_ranks;
	m->flow_gpu = calloc(total + 1, sizeof(*m->flow_gpu));
	m->flows = calloc(total + 1, sizeof(*m->flows));
	if (!m->flow_gpu || !m->flows)
		return -ENOMEM;
	for (size_t j = 0; j < r->nr_jobs; j++) {
		const struct jr_job *job = &r->jobs[j];

		for (size_t i = 0; i < job->nr_meets; i++) {
			struct profile_flow *fl = &m->flows[m->nr_flows];

			fl->gpu = &m->flow_gpu[used];
			fl->name = job->meets[i].op;
			for (size_t k = 0; k < job->nr_ranks; k++) {
				const struct jr_coll *c = jr_coll_at(job, &job->meets[i], k);

				if (c)
					m->flow_gpu[used + fl->n++] = c->gpu;
			}
			used += fl->n;
			if (fl->n > 1)
				m->nr_flows++;
		}
	}
	return 0;
}

/* The host of the lowest rank (labels only: before a report). */
static size_t reference_host(const struct job_merge *m)
{
	long long best = LLONG_MAX;
	size_t ref = 0, len;

	for (size_t i = 0; i < m->nr_gpu; i++) {
		const char *set = merged_labels((void *)m, m->gpu[i].pid);
		const char *r = job_filter__label(set, "job.rank", &len);

		if (r && strtoll(r, NULL, 10) < best) {
			best = strtoll(r, NULL, 10);
			ref = m->gpu[i].pid >> JOB_REPORT_PID_BITS;
		}
	}
	return ref;
}

/* Times from the earliest host's start, whole seconds before it: the trace's microseconds
 * stay exact in a double, as wall-clock nanoseconds would not. */
static void rebase(struct job_merge *m)
{
	int64_t first = INT64_MAX;

	for (size_t hi = 0; hi < m->nr_hosts; hi++)
		if (m->hosts[hi].start + m->hosts[hi].offset < first)
			first = m->hosts[hi].start + m->hosts[hi].offset;
	if (first == INT64_MAX)
		return;
	m->epoch = first - first % 1000000000ll - 1000000000ll;
	for (size_t hi = 0; hi < m->nr_hosts; hi++)
		shift_host(m, hi, -m->epoch);
}

int job_merge__build(struct job_merge *m, const char *step)
{
	bool moved = false;
	int err;

	rebase(m);
	err = m->nr_hosts > 1 ? common_span(m, reference_host(m)) : 0;

	if (err)
		return err;
	fill_profile(m);
	err = job_report__build(&m->pd, step, &m->report);
	if (!err)
		err = align(m, m->report, &moved);
	if (!err && moved) {
		job_report__free(m->report);
		m->report = NULL;
		fill_profile(m);
		err = job_report__build(&m->pd, step, &m->report);
	}
	if (!err)
		err = make_flows(m);
	if (err)
		return err;
	m->clocks = calloc(m->nr_hosts + 1, sizeof(*m->clocks));
	if (!m->clocks)
		return -ENOMEM;
	for (size_t hi = 0; hi < m->nr_hosts; hi++)
		m->clocks[hi] = m->hosts[hi].clock;
	job_report__set_clocks(m->report, m->clocks, m->nr_hosts, m->epoch);
	if (m->span_lo != INT64_MIN || m->span_hi != INT64_MAX)
		jr_note(m->report, NULL,
			"hosts compared over the %.3f s every host recorded (their recordings started "
			"and stopped at different moments)",
			(double)(m->span_hi - m->span_lo) / 1e9);
	m->pd.flows = m->flows;
	m->pd.nr_flows = m->nr_flows;
	return 0;
}

const struct profile_data *job_merge__profile(const struct job_merge *m)
{
	return &m->pd;
}

struct job_report *job_merge__report(const struct job_merge *m)
{
	return m->report;
}

size_t job_merge__hosts(const struct job_merge *m)
{
	return m->nr_hosts;
}

size_t job_merge__processes(const struct job_merge *m)
{
	return m->processes;
}

int job_merge__write_trace(const struct job_merge *m, FILE *f)
{
	return chrome_trace__write_profile(&m->pd, f, NULL);
}

/* ---- the straggler against the median rank ---- */

/* The samples of pid in a call tree (no process frame: the two ranks' trees compare). */
static struct calltree *tree_of(const struct job_merge *m, uint32_t pid, size_t *ret_n)
{
	struct calltree *t = calltree__new();

	*ret_n = 0;
	for (size_t i = 0; t && i < m->nr_samples; i++) {
		const char *const *fr;
		size_t n;

		if (m->samples[i].pid != pid ||
		    merged_stack((void *)m, pid, m->samples[i].stack_id, &fr, &n) || !n)
			continue;
		if (calltree__add(t, fr, n, 1)) {
			calltree__free(t);
			return NULL;
		}
		(*ret_n)++;
	}
	return t;
}

/* The first straggler finding's rank index and the rank most often median where it was late. */
static bool straggler_and_median(const struct jr_job *job, size_t *ret_s, size_t *ret_med)
{
	size_t counts[256] = {0}, best = 0;

	for (size_t i = 0; i < job->nr_findings; i++) {
		if (strcmp(job->findings[i].kind, "straggler"))
			continue;
		for (size_t k = 0; k < job->nr_ranks; k++)
			if (job->ranks[k]->rank == job->findings[i].rank)
				*ret_s = k;
		for (size_t x = 0; x < job->nr_meets; x++) {
			const struct jr_meet *mt = &job->meets[x];

			if (mt->late && mt->last_rank == *ret_s && mt->median_rank < 256)
				counts[mt->median_rank]++;
		}
		for (size_t k = 0; k < job->nr_ranks && k < 256; k++)
			if (counts[k] > counts[best])
				best = k;
		*ret_med = best;
		return counts[best] > 0;
	}
	return false;
}

int job_merge__write_diff(const struct job_merge *m, FILE *svg, FILE *table,
			  const struct output_meta *meta)
{
	const struct jr_job *job = m->report ? main_job(m->report) : NULL;
	struct calltree *a = NULL, *b = NULL;
	struct diff *d = NULL;
	size_t s = 0, med = 0, na = 0, nb = 0;
	int err = -ENOENT;

	if (!job || !straggler_and_median(job, &s, &med))
		return -ENOENT;
	a = tree_of(m, job->ranks[med]->pid, &na);
	b = tree_of(m, job->ranks[s]->pid, &nb);
	if (!a || !b)
		err = -ENOMEM;
	else if (na && nb && !(d = diff__new(a, b)))
		err = -errno;
	else if (d) {
		err = svg ? diff__write_svg(d, svg, meta) : 0;
		if (!err && table) {
			fprintf(table,
				"rank %" PRId64 " (%zu samples) against the median rank %" PRId64
				" (%zu samples), by share:\n",
				job->ranks[s]->rank, nb, job->ranks[med]->rank, na);
			err = diff__write_table(d, table, 8);
		}
	}
	diff__free(d);
	calltree__free(a);
	calltree__free(b);
	return err;
}
