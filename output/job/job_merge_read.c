// SPDX-License-Identifier: Apache-2.0
/*
 * A host's parts file read into the merge (job_merge__add): its header and tables through
 * json-c, its row arrays straight from the text (job_parts_read.h), each row's pids and
 * devices made the job's, within the merge's row budget.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/base/keymap.h"
#include "daemon/base/vec.h"
#include "output/job/job_merge.h"
#include "output/job/job_merge_internal.h"
#include "output/job/job_parts_read.h"

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
 * read row by row from the text (output/job/job_parts_read.h). */
/* A host's row numbers of one kind to the merged ones (SIZE_MAX: a row left out). */
struct row_map {
	size_t *to, n, cap;
};

/* A row of the host's, left out until it is kept: 0, or -ENOMEM. */
static int row_map__add(struct row_map *rm)
{
	if (vec__reserve((void **)&rm->to, &rm->cap, rm->n + 1, sizeof(*rm->to)))
		return -ENOMEM;
	rm->to[rm->n++] = SIZE_MAX;
	return 0;
}

/* gpu: [kind, copy_kind, host_mem, flags, pid, tid, device, context, stream, corr, cbid,
 * graph, start, end, bytes, name, domain]. 0, -EINVAL, -ENOMEM. */
static int read_gpu(struct job_merge *m, size_t hi, struct jp_span val, size_t *host_rows,
		    struct row_map *rm)
{
	struct jm_host *h = &m->hosts[hi];
	size_t gbase = m->nr_gpu, n;
	struct jp_rows r;
	int64_t v[17];
	int got;

	if (jp_rows_begin(&r, val))
		return -EINVAL;
	while ((got = jp_row_next(&r, v, 17, &n, NULL, 0, NULL)) == 1) {
		if (n < 17)
			return -EINVAL;
		if (row_map__add(rm))
			return -ENOMEM;
		if (!kept(h, v[4]) || over_budget(m, host_rows))
			continue;
		if (vec__reserve((void **)&m->gpu, &m->cap_gpu, m->nr_gpu + 1, sizeof(*m->gpu)))
			return -ENOMEM;
		rm->to[rm->n - 1] = m->nr_gpu - gbase;
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
	return got < 0 ? -EINVAL : 0;
}

/* launches: [kind, api_kind, flags, api_id, pid, tid, time, stream, graph_exec, corr, stack,
 * api_name]. 0, -EINVAL, -ENOMEM. */
static int read_launches(struct job_merge *m, size_t hi, struct jp_span val, size_t *host_rows,
			 struct row_map *rm)
{
	struct jm_host *h = &m->hosts[hi];
	size_t lbase = m->nr_launches, n;
	struct jp_rows r;
	int64_t v[12];
	int got;

	if (jp_rows_begin(&r, val))
		return -EINVAL;
	while ((got = jp_row_next(&r, v, 12, &n, NULL, 0, NULL)) == 1) {
		if (n < 12)
			return -EINVAL;
		if (row_map__add(rm))
			return -ENOMEM;
		if (!kept(h, v[4]) || over_budget(m, host_rows))
			continue;
		if (vec__reserve((void **)&m->launches, &m->cap_launches, m->nr_launches + 1,
				 sizeof(*m->launches)))
			return -ENOMEM;
		rm->to[rm->n - 1] = m->nr_launches - lbase;
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
	return got < 0 ? -EINVAL : 0;
}

/* joins: [launch row, gpu row], of this host's rows; those of rows left out go too. */
static int read_joins(struct job_merge *m, struct jp_span val, const struct row_map *lm,
		      size_t lbase, const struct row_map *gm, size_t gbase)
{
	struct jp_rows r;
	int64_t v[2];
	size_t n;
	int got;

	if (jp_rows_begin(&r, val))
		return -EINVAL;
	while ((got = jp_row_next(&r, v, 2, &n, NULL, 0, NULL)) == 1) {
		if (n < 2)
			return -EINVAL;
		if (v[0] < 0 || v[1] < 0 || (size_t)v[0] >= lm->n || (size_t)v[1] >= gm->n ||
		    lm->to[v[0]] == SIZE_MAX || gm->to[v[1]] == SIZE_MAX)
			continue;
		if (vec__reserve((void **)&m->joins, &m->cap_joins, m->nr_joins + 1,
				 sizeof(*m->joins)))
			return -ENOMEM;
		m->joins[m->nr_joins++] = (struct profile_join){.launch = lbase + lm->to[v[0]],
								.gpu = gbase + gm->to[v[1]]};
	}
	return got < 0 ? -EINVAL : 0;
}

/* samples: [time, pid, tid, stack, cpu]. 0, -EINVAL, -ENOMEM. */
static int read_samples(struct job_merge *m, size_t hi, struct jp_span val, size_t *host_rows)
{
	struct jm_host *h = &m->hosts[hi];
	struct jp_rows r;
	int64_t v[5];
	size_t n;
	int got;

	if (jp_rows_begin(&r, val))
		return -EINVAL;
	while ((got = jp_row_next(&r, v, 5, &n, NULL, 0, NULL)) == 1) {
		if (n < 5)
			return -EINVAL;
		if (!kept(h, v[1]) || over_budget(m, host_rows))
			continue;
		if (vec__reserve((void **)&m->samples, &m->cap_samples, m->nr_samples + 1,
				 sizeof(*m->samples)))
			return -ENOMEM;
		m->samples[m->nr_samples++] = (struct profile_sample){
			.time_ns = (uint64_t)(v[0] + h->offset),
			.pid = merged_id(hi, (uint32_t)v[1]),
			.tid = merged_id(hi, (uint32_t)v[2]),
			.stack_id = (uint32_t)v[3],
			.cpu = (uint32_t)v[4],
		};
	}
	return got < 0 ? -EINVAL : 0;
}

static int read_records(struct job_merge *m, size_t hi, const struct jp_field *fields,
			size_t *host_rows)
{
	struct row_map gm = {0}, lm = {0};
	size_t gbase = m->nr_gpu, lbase = m->nr_launches;
	int err;

	err = read_gpu(m, hi, fields[F_GPU].val, host_rows, &gm);
	if (!err)
		err = read_launches(m, hi, fields[F_LAUNCHES].val, host_rows, &lm);
	if (!err)
		err = read_joins(m, fields[F_JOINS].val, &lm, lbase, &gm, gbase);
	if (!err)
		err = read_samples(m, hi, fields[F_SAMPLES].val, host_rows);
	free(gm.to);
	free(lm.to);
	return err;
}

static void labels_free(const void *key, size_t len, void *val, void *ctx)
{
	(void)key, (void)len, (void)ctx;
	free(val);
}

void jm_host__free(struct jm_host *h)
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
		jm_host__free(h);
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
