// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/base/keymap.h"
#include "daemon/base/vec.h"
#include "output/diff/gpu_report_diff.h"
#include "output/gpu_report/gpu_report.h"

/* A time must also grow by this share of the longest device's active time (before). */
#define FLOOR_OF_ACTIVE 0.02

struct metric {
	const char *name; /* the keymap's copy */
	bool bytes;	  /* else nanoseconds */
	double *v;	  /* the before runs, then the after runs */
	double b_med, a_med, b_lo, b_hi, a_lo, a_hi;
	double change_pct; /* of the before median; INFINITY when it was 0 */
	bool regressed;
};

struct gpu_report_diff {
	struct metric *m;
	size_t n, cap;
	struct keymap *ix; /* name -> index + 1 */
	size_t nb, na;
};

static struct metric *metric(struct gpu_report_diff *d, const char *name, bool bytes)
{
	void *v = keymap__get(d->ix, name, strlen(name));
	const void *copy;
	struct metric *m;

	if (v)
		return &d->m[(size_t)v - 1];
	if (vec_reserve(&d->m, &d->cap, d->n + 1) ||
	    keymap__put(d->ix, name, strlen(name), (void *)(d->n + 1), &copy))
		return NULL;
	m = &d->m[d->n];
	*m = (struct metric){.name = copy, .bytes = bytes};
	m->v = calloc(d->nb + d->na, sizeof(*m->v));
	if (!m->v)
		return NULL;
	d->n++;
	return m;
}

/* Run `run` (before runs first) adds value to the figure name. */
static int add(struct gpu_report_diff *d, size_t run, const char *name, bool bytes, double value)
{
	struct metric *m = metric(d, name, bytes);

	if (!m)
		return -ENOMEM;
	m->v[run] += value;
	return 0;
}

static struct json_object *field(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;

	return json_object_object_get_ex(o, k, &v) ? v : NULL;
}

static double num(struct json_object *o, const char *k)
{
	return json_object_get_double(field(o, k));
}

static size_t len(struct json_object *o, const char *k)
{
	struct json_object *a = field(o, k);

	return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

static struct json_object *at(struct json_object *o, const char *k, size_t i)
{
	return json_object_array_get_idx(field(o, k), i);
}

/*
 * The idle time blamed on a stack, to every function on it once (inclusive time: what a
 * function and its callees cost the GPU): "idle CAUSE in FUNCTION", and the call for a sync.
 * Samples spread a gap over many leaf stacks; functions add them up again.
 */
static int add_idle(struct gpu_report_diff *d, size_t run, struct json_object *c)
{
	struct json_object *st = field(c, "stack"), *api = field(c, "api");
	size_t n = json_object_is_type(st, json_type_array) ? json_object_array_length(st) : 0;
	const char *cause = json_object_get_string(field(c, "cause"));
	double ns = num(c, "ns");
	char name[512];
	int err = 0;

	if (api && json_object_is_type(api, json_type_string)) {
		snprintf(name, sizeof(name), "idle %s in %s", cause, json_object_get_string(api));
		err = add(d, run, name, false, ns);
	}
	for (size_t k = 0; k < n && !err; k++) {
		const char *fn = json_object_get_string(json_object_array_get_idx(st, k));
		bool seen = false;

		for (size_t j = 0; j < k && !seen; j++)
			seen = !strcmp(fn,
				       json_object_get_string(json_object_array_get_idx(st, j)));
		if (seen)
			continue;
		snprintf(name, sizeof(name), "idle %s in %s", cause, fn);
		err = add(d, run, name, false, ns);
	}
	return err;
}

static int read_run(struct gpu_report_diff *d, size_t run, struct json_object *r)
{
	static const char *const causes[] = {"host", "launch", "sync", "dependency", "unknown"};
	char name[512];
	int err = 0;

	for (size_t i = 0; i < len(r, "devices") && !err; i++) {
		struct json_object *dev = at(r, "devices", i), *idle = field(dev, "idle_by_cause");
		int id = (int)num(dev, "device");

		snprintf(name, sizeof(name), "device %d active", id);
		err = add(d, run, name, false, num(dev, "active_ns"));
		snprintf(name, sizeof(name), "device %d busy", id);
		err = err ? err : add(d, run, name, false, num(dev, "busy_ns"));
		for (size_t c = 0; c < sizeof(causes) / sizeof(causes[0]) && !err; c++) {
			char key[32];

			snprintf(key, sizeof(key), "%s_ns", causes[c]);
			snprintf(name, sizeof(name), "device %d idle: %s", id, causes[c]);
			err = add(d, run, name, false, num(idle, key));
		}
	}
	for (size_t i = 0; i < len(r, "kernels") && !err; i++) {
		struct json_object *k = at(r, "kernels", i);

		snprintf(name, sizeof(name), "kernel %s", json_object_get_string(field(k, "name")));
		err = add(d, run, name, false, num(k, "total_ns"));
	}
	for (size_t i = 0; i < len(r, "idle_causes") && !err; i++)
		err = add_idle(d, run, at(r, "idle_causes", i));
	for (size_t i = 0; i < len(r, "memory") && !err; i++) {
		struct json_object *m = at(r, "memory", i);

		/* Processes differ between runs: their sums. */
		err = add(d, run, "GPU memory peak (all processes)", true, num(m, "peak_bytes"));
		if (!err)
			err = add(d, run, "GPU memory left at the end", true, num(m, "end_bytes"));
	}
	return err;
}

static int load(struct gpu_report_diff *d, size_t run, const char *path, FILE *errf)
{
	struct json_object *r = json_object_from_file(path), *schema, *version;
	int err;

	if (!r) {
		fprintf(errf, "xsprof-diff: %s: %s\n", path, json_util_get_last_err());
		return -EINVAL;
	}
	schema = field(r, "schema");
	version = field(r, "version");
	if (!schema || strcmp(json_object_get_string(schema), GPU_REPORT_SCHEMA) || !version) {
		fprintf(errf, "xsprof-diff: %s is not a GPU report (schema %s)\n", path,
			GPU_REPORT_SCHEMA);
		json_object_put(r);
		return -EINVAL;
	}
	if (json_object_get_int(version) != GPU_REPORT_VERSION) {
		fprintf(errf,
			"xsprof-diff: %s is a GPU report of version %d; this xsprof-diff reads "
			"version %d\n",
			path, json_object_get_int(version), GPU_REPORT_VERSION);
		json_object_put(r);
		return -EINVAL;
	}
	err = read_run(d, run, r);
	json_object_put(r);
	if (err)
		fprintf(errf, "xsprof-diff: reading %s: %s\n", path, strerror(-err));
	return err;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median, least and most of n values (sorted in place). */
static void spread(double *v, size_t n, double *med, double *lo, double *hi)
{
	qsort(v, n, sizeof(*v), cmp_double);
	*lo = v[0];
	*hi = v[n - 1];
	*med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct gpu_report_diff *gpu_report_diff__new(const char *const *before, size_t nb,
					     const char *const *after, size_t na, FILE *errf)
{
	struct gpu_report_diff *d = calloc(1, sizeof(*d));
	int err = 0;

	if (!d || !(d->ix = keymap__new())) {
		fprintf(errf, "xsprof-diff: out of memory\n");
		free(d);
		return NULL;
	}
	d->nb = nb;
	d->na = na;
	for (size_t i = 0; i < nb + na && !err; i++)
		err = load(d, i, i < nb ? before[i] : after[i - nb], errf);
	if (err) {
		gpu_report_diff__free(d);
		return NULL;
	}
	for (size_t i = 0; i < d->n; i++) {
		struct metric *m = &d->m[i];

		spread(m->v, nb, &m->b_med, &m->b_lo, &m->b_hi);
		spread(m->v + nb, na, &m->a_med, &m->a_lo, &m->a_hi);
		m->change_pct = m->b_med > 0   ? 100 * (m->a_med - m->b_med) / m->b_med
				: m->a_med > 0 ? INFINITY
					       : 0;
	}
	return d;
}

void gpu_report_diff__free(struct gpu_report_diff *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++)
		free(d->m[i].v);
	free(d->m);
	keymap__free(d->ix);
	free(d);
}

/* Regressed: grew past the threshold and past the runs' spread (the best after run is worse
 * than the worst before run by the threshold), and by more than the floor. */
static bool regressed(const struct metric *m, double threshold_pct, double ns_floor)
{
	double floor = m->bytes ? (double)GPU_REPORT_DIFF_MIN_BYTES : ns_floor;

	return threshold_pct >= 0 && m->a_med - m->b_med >= floor &&
	       m->a_lo > m->b_hi * (1 + threshold_pct / 100) && m->change_pct > threshold_pct;
}

static int cmp_change(const void *a, const void *b)
{
	const struct metric *x = a, *y = b;
	double cx = fabs(x->change_pct), cy = fabs(y->change_pct);

	if (x->regressed != y->regressed)
		return x->regressed ? -1 : 1;
	if (cx != cy)
		return cx > cy ? -1 : 1;
	return strcmp(x->name, y->name);
}

static const char *value(char *buf, size_t size, double v, bool bytes)
{
	if (bytes)
		snprintf(buf, size, "%.1f MiB", v / 1048576.0);
	else if (v < 1e6)
		snprintf(buf, size, "%.1f us", v / 1e3);
	else if (v < 1e9)
		snprintf(buf, size, "%.1f ms", v / 1e6);
	else
		snprintf(buf, size, "%.3f s", v / 1e9);
	return buf;
}

int gpu_report_diff__write(const struct gpu_report_diff *d, FILE *f, size_t top,
			   double threshold_pct)
{
	struct metric *v = malloc((d->n ? d->n : 1) * sizeof(*v));
	double ns_floor = (double)GPU_REPORT_DIFF_MIN_NS;
	size_t shown = 0;
	int nreg = 0;

	if (!v)
		return -ENOMEM;
	memcpy(v, d->m, d->n * sizeof(*v));
	for (size_t i = 0; i < d->n; i++)
		if (!strncmp(v[i].name, "device ", 7) && strstr(v[i].name, " active") &&
		    v[i].b_med * FLOOR_OF_ACTIVE > ns_floor)
			ns_floor = v[i].b_med * FLOOR_OF_ACTIVE;
	for (size_t i = 0; i < d->n; i++) {
		v[i].regressed = regressed(&v[i], threshold_pct, ns_floor);
		nreg += v[i].regressed;
	}
	qsort(v, d->n, sizeof(*v), cmp_change);
	fprintf(f,
		"GPU reports: %zu run%s before, %zu after (medians; change of the before median)\n",
		d->nb, d->nb == 1 ? "" : "s", d->na);
	fprintf(f, "%11s %11s %8s  %s\n", "before", "after", "change", "figure");
	for (size_t i = 0; i < d->n && (!top || shown < top); i++) {
		char b[32], a[32], c[16];

		if (v[i].b_med == 0 && v[i].a_med == 0)
			continue;
		if (isinf(v[i].change_pct))
			snprintf(c, sizeof(c), "new");
		else
			snprintf(c, sizeof(c), "%+.1f%%", v[i].change_pct);
		fprintf(f, "%11s %11s %8s  %s%s\n", value(b, sizeof(b), v[i].b_med, v[i].bytes),
			value(a, sizeof(a), v[i].a_med, v[i].bytes), c, v[i].name,
			v[i].regressed ? "  REGRESSED" : "");
		shown++;
	}
	free(v);
	return ferror(f) ? -EIO : nreg;
}

bool gpu_report_diff__is_report(const char *path)
{
	const char *p = path;

	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n < 9 || strncmp(p + n - 9, ".gpu.json", 9))
			return false;
		p = end ? end + 1 : NULL;
	}
	return path && *path;
}
