// SPDX-License-Identifier: Apache-2.0
/* The GPU as Prometheus metrics (gpu_metrics.h). */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/base/hashmap.h"
#include "daemon/base/proc_env.h"
#include "daemon/base/utf8.h"
#include "daemon/service/gpu_metrics.h"
#include "daemon/session/group_by.h"
#include "daemon/session/slice.h"

#define OTHER "[other]"

/* A process's labels besides its name: its systemd unit, and its job and rank as its launcher
 * put them in its environment (daemon/base/proc_env.h); "" when not known. */
struct plabels {
	char unit[96];
	char job[64];
	char rank[24];
};

/* Processes' labels, looked up once each (the most recent GPU_METRICS_LABEL_CACHE). */
#define GPU_METRICS_LABEL_CACHE 512

/* One label set: counters since xsprofd started. */
struct series {
	uint32_t device;
	char process[16];
	struct plabels l;
	uint64_t busy_ns, idle_ns, idle_by[GPU_IDLE_NR];
	uint64_t kernels, copies, memsets;
};

/* A process with GPU memory followed, on one device. */
struct proc_mem {
	uint32_t pid, uid;
	int32_t device;
	char process[16];
	struct plabels l;
	uint64_t live, peak; /* bytes in use now, and the most at once */
	uint64_t allocs;     /* allocations followed now */
	bool used;
};

struct alloc {
	uint64_t addr, bytes;
	uint32_t pid;
	int32_t device;
	size_t proc; /* its proc_mem */
};

struct gpu_metrics {
	struct series *series;
	size_t nr_series;
	uint64_t series_overflow; /* slice figures counted under [other] at the cap */
	uint64_t slices, figures_left_out;
	struct proc_mem procs[GPU_METRICS_MAX_PROCS];
	size_t nr_procs;
	struct hashmap *allocs; /* (pid, address) -> struct alloc */
	size_t nr_allocs;
	uint64_t allocs_untracked, frees_unknown, procs_refused;
	/* The users holding allocations, and how many each holds (a user: at most half). */
	struct {
		uint32_t uid;
		size_t n;
	} users[64];
	size_t nr_users;
	struct {
		uint32_t pid;
		struct plabels l;
	} cache[GPU_METRICS_LABEL_CACHE];
	size_t nr_cache, next_cache;
};

struct gpu_metrics *gpu_metrics__new(void)
{
	struct gpu_metrics *m = calloc(1, sizeof(*m));

	/* Room for the cap and one [other] per device of a slice. */
	if (m &&
	    (m->series =
		     calloc(GPU_METRICS_MAX_SERIES + SLICE_FIGURE_DEVICES, sizeof(*m->series))) &&
	    (m->allocs = hashmap__new()))
		return m;
	gpu_metrics__free(m);
	errno = ENOMEM;
	return NULL;
}

static void free_alloc(void *val, void *ctx)
{
	(void)ctx;
	free(val);
}

void gpu_metrics__free(struct gpu_metrics *m)
{
	if (m && m->allocs) {
		hashmap__for_each(m->allocs, free_alloc, NULL);
		hashmap__free(m->allocs);
	}
	if (m)
		free(m->series);
	free(m);
}

static bool same_labels(const struct plabels *a, const struct plabels *b)
{
	return !strcmp(a->unit, b->unit) && !strcmp(a->job, b->job) && !strcmp(a->rank, b->rank);
}

static struct series *series_of(struct gpu_metrics *m, uint32_t device, const char *process,
				const struct plabels *l)
{
	static const struct plabels other = {OTHER, OTHER, OTHER};
	struct series *s;

	for (size_t i = 0; i < m->nr_series; i++) {
		s = &m->series[i];
		if (s->device == device && !strcmp(s->process, process) && same_labels(&s->l, l))
			return s;
	}
	/* Past the cap: the device's [other] (room is kept for one per device of a slice). */
	if (m->nr_series >= GPU_METRICS_MAX_SERIES) {
		if (strcmp(process, OTHER) || !same_labels(l, &other)) {
			m->series_overflow++;
			return series_of(m, device, OTHER, &other);
		}
		if (m->nr_series >= GPU_METRICS_MAX_SERIES + SLICE_FIGURE_DEVICES)
			return &m->series[m->nr_series - 1];
	}
	s = &m->series[m->nr_series++];
	memset(s, 0, sizeof(*s));
	s->device = device;
	snprintf(s->process, sizeof(s->process), "%s", process);
	s->l = *l;
	return s;
}

/* The labels of pid: looked up in /proc at its first slice, then kept (a process gone by then
 * has none). */
static void labels_of(struct gpu_metrics *m, uint32_t pid, struct plabels *ret)
{
	struct proc_job job;
	size_t slot;

	for (size_t i = 0; i < m->nr_cache; i++)
		if (m->cache[i].pid == pid) {
			*ret = m->cache[i].l;
			return;
		}
	memset(ret, 0, sizeof(*ret));
	group_by__unit_of_pid(pid, ret->unit, sizeof(ret->unit));
	if (!proc_env__job("/proc", pid, &job)) {
		snprintf(ret->job, sizeof(ret->job), "%s", job.job_id);
		if (job.rank >= 0)
			snprintf(ret->rank, sizeof(ret->rank), "%lld", (long long)job.rank);
	}
	if (m->nr_cache < GPU_METRICS_LABEL_CACHE) {
		slot = m->nr_cache++;
	} else {
		slot = m->next_cache;
		m->next_cache = (m->next_cache + 1) % GPU_METRICS_LABEL_CACHE;
	}
	m->cache[slot].pid = pid;
	m->cache[slot].l = *ret;
}

static struct proc_mem *proc_of(struct gpu_metrics *m, uint32_t pid, uint32_t uid, int32_t device,
				const char *comm)
{
	struct proc_mem *free_slot = NULL;

	for (size_t i = 0; i < m->nr_procs; i++) {
		struct proc_mem *p = &m->procs[i];

		if (p->used && p->pid == pid && p->device == device)
			return p;
		if (!p->used && !free_slot)
			free_slot = p;
	}
	if (!free_slot && m->nr_procs < GPU_METRICS_MAX_PROCS)
		free_slot = &m->procs[m->nr_procs++];
	if (!free_slot) {
		m->procs_refused++;
		return NULL;
	}
	memset(free_slot, 0, sizeof(*free_slot));
	free_slot->used = true;
	free_slot->pid = pid;
	free_slot->uid = uid;
	free_slot->device = device;
	snprintf(free_slot->process, sizeof(free_slot->process), "%s", comm && *comm ? comm : "?");
	labels_of(m, pid, &free_slot->l);
	return free_slot;
}

static size_t *user_count(struct gpu_metrics *m, uint32_t uid, bool create)
{
	for (size_t i = 0; i < m->nr_users; i++)
		if (m->users[i].uid == uid)
			return &m->users[i].n;
	if (!create)
		return NULL;
	for (size_t i = 0; i < m->nr_users; i++)
		if (!m->users[i].n) {
			m->users[i].uid = uid;
			return &m->users[i].n;
		}
	if (m->nr_users == sizeof(m->users) / sizeof(m->users[0]))
		return NULL;
	m->users[m->nr_users].uid = uid;
	m->users[m->nr_users].n = 0;
	return &m->users[m->nr_users++].n;
}

/* pid in this slice (its uid and name), or NULL. */
static const struct slice_proc *proc_in(const struct slice_out *out, uint32_t pid)
{
	for (size_t i = 0; i < out->nr_procs; i++)
		if (out->procs[i].pid == pid)
			return &out->procs[i];
	return NULL;
}

static void mem_call(struct gpu_metrics *m, const struct slice_out *out,
		     const struct profile_mem *c)
{
	struct alloc *a;

	if (c->failed || !c->addr)
		return;
	if (c->is_free) {
		a = hashmap__remove(m->allocs, c->pid, c->addr);
		if (!a) {
			m->frees_unknown++;
			return;
		}
		if (m->procs[a->proc].used && m->procs[a->proc].pid == a->pid) {
			m->procs[a->proc].live -= a->bytes;
			m->procs[a->proc].allocs--;
			size_t *n = user_count(m, m->procs[a->proc].uid, false);

			if (n && *n)
				(*n)--;
		}
		m->nr_allocs--;
		free(a);
		return;
	}
	const struct slice_proc *sp = proc_in(out, c->pid);
	const char *comm = sp ? sp->comm : NULL;
	uint32_t uid = sp ? sp->uid : 0;
	size_t *n = user_count(m, uid, true);
	struct proc_mem *p;

	if (!n || m->nr_allocs >= GPU_METRICS_MAX_ALLOCS || *n >= GPU_METRICS_MAX_ALLOCS / 2 ||
	    hashmap__get(m->allocs, c->pid, c->addr) ||
	    !(p = proc_of(m, c->pid, uid, c->device, comm))) {
		m->allocs_untracked++;
		return;
	}
	a = malloc(sizeof(*a));
	if (!a || hashmap__put(m->allocs, c->pid, c->addr, a)) {
		free(a);
		m->allocs_untracked++;
		return;
	}
	*a = (struct alloc){.addr = c->addr,
			    .bytes = c->bytes,
			    .pid = c->pid,
			    .device = c->device,
			    .proc = (size_t)(p - m->procs)};
	m->nr_allocs++;
	(*n)++;
	p->allocs++;
	p->live += c->bytes;
	if (p->live > p->peak)
		p->peak = p->live;
}

void gpu_metrics__add_slice(void *ctx, struct slice_out *out)
{
	struct gpu_metrics *m = ctx;
	struct plabels l;

	m->slices++;
	m->figures_left_out += out->figures_left_out;
	for (size_t i = 0; i < out->nr_figures; i++) {
		const struct slice_gpu_figure *fg = &out->figures[i];
		const struct slice_proc *p = proc_in(out, fg->pid);
		const char *comm = p && p->comm[0] ? p->comm : "?";
		struct series *s;

		labels_of(m, fg->pid, &l);
		s = series_of(m, fg->f.device, comm, &l);
		s->busy_ns += fg->f.busy_ns;
		s->idle_ns += fg->f.idle_ns;
		for (int c = 0; c < GPU_IDLE_NR; c++)
			s->idle_by[c] += fg->f.idle_by[c];
		s->kernels += fg->f.kernels;
		s->copies += fg->f.copies;
		s->memsets += fg->f.memsets;
	}
	for (size_t i = 0; i < out->nr_mem; i++)
		mem_call(m, out, &out->mem[i]);
}

/* The allocations of the processes gone (a walk cannot remove: their keys, removed after). */
struct reap {
	const uint32_t *gone;
	size_t nr_gone;
	uint64_t *keys; /* pid, address pairs */
	size_t n, cap;
	bool nomem;
};

static void reap_alloc(void *val, void *ctx)
{
	struct reap *r = ctx;
	const struct alloc *a = val;

	for (size_t i = 0; i < r->nr_gone; i++)
		if (r->gone[i] == a->pid) {
			if (r->n + 2 > r->cap) {
				size_t cap = r->cap ? 2 * r->cap : 64;
				uint64_t *k = realloc(r->keys, cap * sizeof(*k));

				if (!k) {
					r->nomem = true;
					return;
				}
				r->keys = k;
				r->cap = cap;
			}
			r->keys[r->n++] = a->pid;
			r->keys[r->n++] = a->addr;
			return;
		}
}

void gpu_metrics__reap(struct gpu_metrics *m, int (*alive)(uint32_t pid))
{
	uint32_t gone[GPU_METRICS_MAX_PROCS];
	struct reap r = {.gone = gone};

	for (size_t i = 0; i < m->nr_procs; i++) {
		struct proc_mem *p = &m->procs[i];
		bool seen = false;

		if (!p->used || alive(p->pid))
			continue;
		for (size_t k = 0; k < r.nr_gone && !seen; k++)
			seen = gone[k] == p->pid;
		if (!seen)
			gone[r.nr_gone++] = p->pid;
	}
	if (!r.nr_gone)
		return;
	hashmap__for_each(m->allocs, reap_alloc, &r);
	if (r.nomem) {
		free(r.keys);
		return; /* tried again at the next slice */
	}
	for (size_t i = 0; i < r.n; i += 2)
		free(hashmap__remove(m->allocs, r.keys[i], r.keys[i + 1]));
	free(r.keys);
	for (size_t i = 0; i < m->nr_procs; i++) {
		struct proc_mem *p = &m->procs[i];

		for (size_t k = 0; p->used && k < r.nr_gone; k++)
			if (gone[k] == p->pid) {
				size_t *n = user_count(m, p->uid, false);

				if (n)
					*n -= *n < p->allocs ? *n : p->allocs;
				m->nr_allocs -= m->nr_allocs < p->allocs ? m->nr_allocs : p->allocs;
				p->used = false;
			}
	}
}

/* value as a Prometheus label value: \, " and newlines escaped, and each byte that is not part
 * of valid UTF-8 written '?': one such byte in a process's name or job id made Prometheus
 * refuse the whole scrape, every user's series with it. */
static void label_value(FILE *f, const char *v)
{
	const unsigned char *p = (const unsigned char *)v;

	while (*p) {
		size_t n = utf8_seq_len(p);

		if (!n) {
			fputc('?', f);
			p++;
		} else if (*p == '\\' || *p == '"') {
			fprintf(f, "\\%c", *p++);
		} else if (*p == '\n') {
			fputs("\\n", f);
			p++;
		} else {
			fwrite(p, 1, n, f);
			p += n;
		}
	}
}

/* {device="D",process="P",unit="U",job_id="J",rank="R"[,extra]}; job_id and rank "" (absent
 * to Prometheus) when not known. Not "job": Prometheus gives every target that label. */
static void labels(FILE *f, uint32_t device, const char *process, const struct plabels *l,
		   const char *extra)
{
	fprintf(f, "{device=\"%u\",process=\"", device);
	label_value(f, process);
	fputs("\",unit=\"", f);
	label_value(f, l->unit[0] ? l->unit : "[no unit]");
	fputs("\",job_id=\"", f);
	label_value(f, l->job);
	fprintf(f, "\",rank=\"%s\"%s%s}", l->rank, extra ? "," : "", extra ? extra : "");
}

static void header(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void gpu_metrics__write(const struct gpu_metrics *m, FILE *f)
{
	static const char *const causes[GPU_IDLE_NR] = {"host", "launch", "sync", "dependency",
							"unknown"};
	static const struct {
		const char *name, *help;
		size_t off;
	} counters[] = {
		{"xsprof_gpu_busy_seconds_total",
		 "Seconds the GPU ran work of the process (the window's slices, as its GPU report).",
		 offsetof(struct series, busy_ns)},
		{"xsprof_gpu_kernels_total", "Kernels the GPU ran for the process.",
		 offsetof(struct series, kernels)},
		{"xsprof_gpu_copies_total", "Memory copies the GPU ran for the process.",
		 offsetof(struct series, copies)},
	};

	for (size_t k = 0; k < sizeof(counters) / sizeof(counters[0]); k++) {
		bool seconds = strstr(counters[k].name, "seconds") != NULL;

		header(f, counters[k].name, "counter", counters[k].help);
		for (size_t i = 0; i < m->nr_series; i++) {
			const struct series *s = &m->series[i];
			uint64_t v = *(const uint64_t *)((const char *)s + counters[k].off);

			fputs(counters[k].name, f);
			labels(f, s->device, s->process, &s->l, NULL);
			fprintf(f, " %.15g\n", seconds ? (double)v / 1e9 : (double)v);
		}
	}
	header(f, "xsprof_gpu_idle_seconds_total", "counter",
	       "Seconds the GPU idled between the process's work, by cause (the GPU report's: "
	       "host, launch, sync, dependency, unknown).");
	for (size_t i = 0; i < m->nr_series; i++) {
		const struct series *s = &m->series[i];

		for (int c = 0; c < GPU_IDLE_NR; c++) {
			char cause[32];

			snprintf(cause, sizeof(cause), "cause=\"%s\"", causes[c]);
			fputs("xsprof_gpu_idle_seconds_total", f);
			labels(f, s->device, s->process, &s->l, cause);
			fprintf(f, " %.15g\n", (double)s->idle_by[c] / 1e9);
		}
	}
	static const struct {
		const char *name, *help;
		size_t off;
	} mem[] = {
		{"xsprof_gpu_memory_bytes",
		 "GPU memory the process has allocated and not freed (allocations it made while "
		 "xsprofd followed it).",
		 offsetof(struct proc_mem, live)},
		{"xsprof_gpu_memory_peak_bytes",
		 "The most GPU memory the process had allocated at once.",
		 offsetof(struct proc_mem, peak)},
	};
	for (size_t k = 0; k < sizeof(mem) / sizeof(mem[0]); k++) {
		header(f, mem[k].name, "gauge", mem[k].help);
		for (size_t i = 0; i < m->nr_procs; i++) {
			const struct proc_mem *p = &m->procs[i];
			char pid[24];

			if (!p->used)
				continue;
			snprintf(pid, sizeof(pid), "pid=\"%u\"", p->pid);
			fputs(mem[k].name, f);
			labels(f, (uint32_t)p->device, p->process, &p->l, pid);
			fprintf(f, " %llu\n",
				(unsigned long long)*(const uint64_t *)((const char *)p +
									mem[k].off));
		}
	}
	header(f, "xsprof_gpu_metric_series", "gauge",
	       "Label sets of the GPU metrics (at most 256).");
	fprintf(f, "xsprof_gpu_metric_series %zu\n", m->nr_series);
	header(f, "xsprof_gpu_metric_series_overflow_total", "counter",
	       "Slice figures counted under process=\"[other]\" at the label-set cap.");
	fprintf(f, "xsprof_gpu_metric_series_overflow_total %llu\n",
		(unsigned long long)m->series_overflow);
	header(f, "xsprof_gpu_memory_allocations_untracked_total", "counter",
	       "GPU allocations not followed (the caps: 262144 at once, a user half of them).");
	fprintf(f, "xsprof_gpu_memory_allocations_untracked_total %llu\n",
		(unsigned long long)m->allocs_untracked);
}

struct json_object *gpu_metrics__status(const struct gpu_metrics *m)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "slices", json_object_new_uint64(m->slices));
	json_object_object_add(o, "series", json_object_new_uint64(m->nr_series));
	json_object_object_add(o, "series_cap", json_object_new_uint64(GPU_METRICS_MAX_SERIES));
	json_object_object_add(o, "series_overflow", json_object_new_uint64(m->series_overflow));
	json_object_object_add(o, "processes_left_out",
			       json_object_new_uint64(m->figures_left_out + m->procs_refused));
	json_object_object_add(o, "allocations", json_object_new_uint64(m->nr_allocs));
	json_object_object_add(o, "allocations_cap",
			       json_object_new_uint64(GPU_METRICS_MAX_ALLOCS));
	json_object_object_add(o, "allocations_untracked",
			       json_object_new_uint64(m->allocs_untracked));
	json_object_object_add(o, "frees_unknown", json_object_new_uint64(m->frees_unknown));
	return o;
}
