// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/base/fileio.h"
#include "daemon/base/keymap.h"
#include "daemon/base/utf8.h"
#include "daemon/base/vec.h"
#include "output/gpu_report/gpu_report.h"
#include "output/history/history_figures.h"

#define MAX_FRAMES     4096 /* deeper stacks are malformed input, as xsprof-diff reads them */
#define MAX_GPU_REPORT (1ul << 30) /* a bigger JSON file is no report xsprofd wrote */
#define FOLDED_FORM    "lines are 'frame;frame;...;leaf COUNT'"

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* ---- one profile's figures, summed by (kind, name) before they join the set */

struct agg_entry {
	const char *name; /* the index's copy */
	enum hist_kind kind;
	double value;
	size_t seen; /* the last stack counted in a total */
	size_t into; /* the set's figure + 1, while merging */
};

struct agg {
	struct keymap *ix; /* kind byte + name -> entry + 1 */
	struct agg_entry *e;
	size_t n, cap;
	char *key; /* scratch for the key */
	size_t key_cap;
};

static void agg__free(struct agg *a)
{
	keymap__free(a->ix);
	free(a->e);
	free(a->key);
}

static int agg__key(struct agg *a, enum hist_kind kind, const char *name, size_t *ret_len)
{
	size_t len = strlen(name);

	if (vec_reserve(&a->key, &a->key_cap, len + 2))
		return -ENOMEM;
	a->key[0] = (char)('a' + kind);
	memcpy(a->key + 1, name, len + 1);
	*ret_len = len + 1;
	return 0;
}

/* The entry of (kind, name), made when new; valid until the next call. */
static struct agg_entry *agg__entry(struct agg *a, enum hist_kind kind, const char *name)
{
	const void *copy;
	uintptr_t at;
	size_t len;

	if (agg__key(a, kind, name, &len) || (!a->ix && !(a->ix = keymap__new())))
		return NULL;
	at = (uintptr_t)keymap__get(a->ix, a->key, len);
	if (!at) {
		if (vec_reserve(&a->e, &a->cap, a->n + 1) ||
		    keymap__put(a->ix, a->key, len, (void *)(uintptr_t)(a->n + 1), &copy))
			return NULL;
		a->e[a->n] = (struct agg_entry){.name = (const char *)copy + 1, .kind = kind};
		at = ++a->n;
	}
	return &a->e[at - 1];
}

static int agg__add(struct agg *a, enum hist_kind kind, const char *name, double value)
{
	struct agg_entry *e = agg__entry(a, kind, name);

	if (!e)
		return -ENOMEM;
	e->value += value;
	return 0;
}

/* Adds the profile's figures to the set: all of them, or none on -ENOMEM. */
static int agg__merge(struct agg *a, struct hist_figures *f)
{
	char **names = NULL;
	size_t fresh = 0, j = 0, len;
	int err = 0;

	for (size_t i = 0; i < f->n && a->ix; i++) {
		uintptr_t at;

		if (agg__key(a, f->v[i].kind, f->v[i].name, &len))
			return -ENOMEM;
		at = (uintptr_t)keymap__get(a->ix, a->key, len);
		if (at)
			a->e[at - 1].into = i + 1;
	}
	for (size_t i = 0; i < a->n; i++)
		fresh += !a->e[i].into;
	if (fresh && (vec_reserve(&f->v, &f->alloc, f->n + fresh) ||
		      !(names = calloc(fresh, sizeof(*names)))))
		return -ENOMEM;
	for (size_t i = 0; i < a->n && !err; i++)
		if (!a->e[i].into && !(names[j++] = strdup(a->e[i].name)))
			err = -ENOMEM;
	if (err) {
		while (j)
			free(names[--j]);
		free(names);
		return err;
	}
	j = 0;
	for (size_t i = 0; i < a->n; i++) {
		struct agg_entry *e = &a->e[i];

		if (e->into)
			f->v[e->into - 1].value += e->value;
		else
			f->v[f->n++] = (struct hist_figure){
				.kind = e->kind, .name = names[j++], .value = e->value};
	}
	free(names);
	return 0;
}

/* ---- folded stacks */

/* The offset of the first byte of s (len bytes) that is not UTF-8, or len. */
static size_t utf8_bad_at(const char *s, size_t len)
{
	size_t i = 0, n;

	while (i < len && (n = utf8_seq_len((const unsigned char *)s + i)))
		i += n;
	return i < len ? i : len;
}

/* One stack: self to its leaf, total once to each function on it (recursion or not). */
static int folded_stack(struct agg *a, const char **frames, size_t n, double count, size_t lineno)
{
	int err = agg__add(a, HIST_FN_SELF, frames[n - 1], count);

	for (size_t i = 0; i < n && !err; i++) {
		struct agg_entry *e = agg__entry(a, HIST_FN_TOTAL, frames[i]);

		if (!e)
			return -ENOMEM;
		if (e->seen != lineno) {
			e->seen = lineno;
			e->value += count;
		}
	}
	return err ? err : agg__add(a, HIST_SAMPLES, "all", count);
}

/* One line (no newline): its frames and count to the figures, or a sentence in err. */
static int folded_line(struct agg *a, char *line, size_t len, size_t lineno, const char **frames,
		       const char *path, char *err, size_t errlen)
{
	size_t bad = utf8_bad_at(line, len), n = 0;
	char *sp = strrchr(line, ' '), *end = NULL, *p;
	unsigned long long count = 0;

	if (bad < len)
		return fail(err, errlen, -EINVAL,
			    "%s:%zu: byte %zu (0x%02x) is not UTF-8; folded stacks are UTF-8 text",
			    path, lineno, bad + 1, (unsigned char)line[bad]);
	if (!sp || sp == line)
		return fail(err, errlen, -EINVAL, "%s:%zu: no count at the end of the line; %s",
			    path, lineno, FOLDED_FORM);
	errno = 0;
	if (isdigit((unsigned char)sp[1]))
		count = strtoull(sp + 1, &end, 10);
	if (!end || *end || errno)
		return fail(err, errlen, -EINVAL,
			    "%s:%zu: the count \"%.40s\" is not a whole number of samples; %s",
			    path, lineno, sp + 1, FOLDED_FORM);
	*sp = 0;
	/* Empty frames are kept (as "[unknown]"), not skipped: stacks keep their depth. */
	for (p = line; p && n < MAX_FRAMES;) {
		char *semi = strchr(p, ';');

		if (semi)
			*semi = 0;
		frames[n++] = *p ? p : "[unknown]";
		p = semi ? semi + 1 : NULL;
	}
	if (p)
		return fail(err, errlen, -EINVAL, "%s:%zu: a stack deeper than %d frames", path,
			    lineno, MAX_FRAMES);
	return folded_stack(a, frames, n, (double)count, lineno) == -ENOMEM
		       ? fail(err, errlen, -ENOMEM, "reading %s: out of memory", path)
		       : 0;
}

static int read_folded(struct agg *a, FILE *fp, const char *path, char *err, size_t errlen)
{
	const char **frames = malloc(MAX_FRAMES * sizeof(*frames));
	size_t cap = 0, lineno = 0;
	char *line = NULL;
	ssize_t len;
	int ret = frames ? 0 : fail(err, errlen, -ENOMEM, "reading %s: out of memory", path);

	errno = 0;
	while (!ret && (len = getline(&line, &cap, fp)) >= 0) {
		lineno++;
		if (strlen(line) != (size_t)len) {
			ret = fail(err, errlen, -EINVAL,
				   "%s:%zu: a NUL byte: this is not folded stacks text", path,
				   lineno);
			break;
		}
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = 0;
		if (len && line[0] != '#')
			ret = folded_line(a, line, (size_t)len, lineno, frames, path, err, errlen);
	}
	if (!ret && ferror(fp))
		ret = fail(err, errlen, errno ? -errno : -EIO, "reading %s: %s", path,
			   strerror(errno ? errno : EIO));
	free(line);
	free(frames);
	return ret;
}

/* ---- GPU reports (output/gpu_report/gpu_report_json.c writes them) */

struct gpu_read {
	struct agg *a;
	const char *path;
	char *err;
	size_t errlen;
	char *name; /* scratch for a stack's name */
	size_t name_cap;
};

static struct json_object *member(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;

	return json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, k, &v)
		       ? v
		       : NULL;
}

/* The array at key (absent: none), or -EINVAL. */
static int array(struct gpu_read *g, struct json_object *o, const char *key,
		 struct json_object **ret, size_t *ret_n)
{
	struct json_object *v = member(o, key);

	if (v && !json_object_is_type(v, json_type_array))
		return fail(g->err, g->errlen, -EINVAL, "%s: \"%s\" is not an array", g->path, key);
	*ret = v;
	*ret_n = v ? json_object_array_length(v) : 0;
	return 0;
}

static int number(struct gpu_read *g, struct json_object *o, const char *key, const char *where,
		  size_t i, double *ret)
{
	struct json_object *v = member(o, key);

	if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
		return fail(g->err, g->errlen, -EINVAL, "%s: %s[%zu].%s is not a number", g->path,
			    where, i, key);
	*ret = json_object_get_double(v);
	if (!isfinite(*ret))
		return fail(g->err, g->errlen, -EINVAL, "%s: %s[%zu].%s is not finite", g->path,
			    where, i, key);
	return 0;
}

static int string(struct gpu_read *g, struct json_object *o, const char *key, const char *where,
		  size_t i, const char **ret)
{
	struct json_object *v = member(o, key);

	if (!json_object_is_type(v, json_type_string))
		return fail(g->err, g->errlen, -EINVAL, "%s: %s[%zu].%s is not a string", g->path,
			    where, i, key);
	*ret = json_object_get_string(v);
	return 0;
}

static int nomem(struct gpu_read *g, int err)
{
	return err == -ENOMEM ? fail(g->err, g->errlen, err, "reading %s: out of memory", g->path)
			      : err;
}

/* Idle time by cause ("host_ns": ...), summed over devices. */
static int gpu_idle(struct gpu_read *g, struct json_object *r)
{
	struct json_object *devs;
	size_t n;
	int err = array(g, r, "devices", &devs, &n);

	for (size_t i = 0; i < n && !err; i++) {
		struct json_object *by =
			member(json_object_array_get_idx(devs, i), "idle_by_cause");

		if (!json_object_is_type(by, json_type_object))
			return fail(g->err, g->errlen, -EINVAL,
				    "%s: devices[%zu].idle_by_cause is not an object", g->path, i);
		json_object_object_foreach(by, key, v)
		{
			size_t len = strlen(key);
			char cause[64];

			if (len < 4 || len - 3 >= sizeof(cause) || strcmp(key + len - 3, "_ns"))
				continue;
			if (!json_object_is_type(v, json_type_int) &&
			    !json_object_is_type(v, json_type_double))
				return fail(g->err, g->errlen, -EINVAL,
					    "%s: devices[%zu].idle_by_cause.%s is not a number",
					    g->path, i, key);
			memcpy(cause, key, len - 3);
			cause[len - 3] = 0;
			err = agg__add(g->a, HIST_GPU_IDLE, cause, json_object_get_double(v));
			if (err)
				break;
		}
	}
	return nomem(g, err);
}

/* The frames of a stack joined with ';', in g->name; "" for none. */
static int stack_name(struct gpu_read *g, struct json_object *st, size_t i)
{
	size_t n = json_object_is_type(st, json_type_array) ? json_object_array_length(st) : 0,
	       len = 0;

	if (st && !json_object_is_type(st, json_type_array))
		return fail(g->err, g->errlen, -EINVAL, "%s: kernels[%zu].stack is not an array",
			    g->path, i);
	if (vec_reserve(&g->name, &g->name_cap, 1))
		return nomem(g, -ENOMEM);
	g->name[0] = 0;
	for (size_t k = 0; k < n; k++) {
		struct json_object *fr = json_object_array_get_idx(st, k);
		size_t flen;

		if (!json_object_is_type(fr, json_type_string))
			return fail(g->err, g->errlen, -EINVAL,
				    "%s: kernels[%zu].stack[%zu] is not a string", g->path, i, k);
		flen = (size_t)json_object_get_string_len(fr);
		if (vec_reserve(&g->name, &g->name_cap, len + flen + 2))
			return nomem(g, -ENOMEM);
		if (k)
			g->name[len++] = ';';
		memcpy(g->name + len, json_object_get_string(fr), flen + 1);
		len += flen;
	}
	return 0;
}

/*
 * GPU time per kernel, and per launching stack. The report names one stack per kernel, the one
 * that launched most of its time, and not that stack's share: the kernel's whole time goes to it.
 */
static int gpu_kernels(struct gpu_read *g, struct json_object *r)
{
	struct json_object *ks;
	size_t n;
	int err = array(g, r, "kernels", &ks, &n);

	for (size_t i = 0; i < n && !err; i++) {
		struct json_object *k = json_object_array_get_idx(ks, i);
		const char *name = NULL;
		double ns = 0;

		err = string(g, k, "name", "kernels", i, &name);
		err = err ? err : number(g, k, "total_ns", "kernels", i, &ns);
		err = err ? err : stack_name(g, member(k, "stack"), i);
		err = err ? err : nomem(g, agg__add(g->a, HIST_KERNEL, name, ns));
		if (!err && g->name[0])
			err = nomem(g, agg__add(g->a, HIST_KERNEL_STACK, g->name, ns));
	}
	return err;
}

/* GPU time per NVTX range, named "domain: name" as the text report names it. */
static int gpu_ranges(struct gpu_read *g, struct json_object *r)
{
	struct json_object *rs;
	size_t n;
	int err = array(g, r, "ranges", &rs, &n);

	for (size_t i = 0; i < n && !err; i++) {
		struct json_object *x = json_object_array_get_idx(rs, i),
				   *dom = member(x, "domain");
		const char *name = NULL;
		double ns = 0;

		err = string(g, x, "name", "ranges", i, &name);
		err = err ? err : number(g, x, "gpu_ns", "ranges", i, &ns);
		if (err)
			break;
		if (json_object_is_type(dom, json_type_string)) {
			const char *d = json_object_get_string(dom);
			size_t len = strlen(d) + strlen(name) + 3;

			if (vec_reserve(&g->name, &g->name_cap, len))
				return nomem(g, -ENOMEM);
			snprintf(g->name, len, "%s: %s", d, name);
			name = g->name;
		}
		err = nomem(g, agg__add(g->a, HIST_RANGE, name, ns));
	}
	return err;
}

static size_t line_at(const char *buf, size_t off)
{
	size_t line = 1;

	for (size_t i = 0; i < off; i++)
		line += buf[i] == '\n';
	return line;
}

static int gpu_check(struct gpu_read *g, struct json_object *r)
{
	struct json_object *schema = member(r, "schema"), *version = member(r, "version");

	if (!json_object_is_type(schema, json_type_string) ||
	    strcmp(json_object_get_string(schema), GPU_REPORT_SCHEMA))
		return fail(g->err, g->errlen, -EINVAL,
			    "%s is JSON but not a GPU report (its \"schema\" is not \"%s\"): give "
			    "the .gpu.json of xsprofd --report gpu, or folded stacks",
			    g->path, GPU_REPORT_SCHEMA);
	if (!json_object_is_type(version, json_type_int) ||
	    json_object_get_int(version) != GPU_REPORT_VERSION)
		return fail(g->err, g->errlen, -EINVAL,
			    "%s is a GPU report of version %s; this xsprof reads version %d",
			    g->path, version ? json_object_get_string(version) : "(none)",
			    GPU_REPORT_VERSION);
	return 0;
}

static int read_gpu_report(struct agg *a, const char *buf, size_t len, const char *path, char *err,
			   size_t errlen)
{
	struct gpu_read g = {.a = a, .path = path, .err = err, .errlen = errlen};
	struct json_tokener *tok = json_tokener_new();
	struct json_object *r = NULL;
	enum json_tokener_error jerr;
	size_t bad = strlen(buf), end;
	int ret;

	if (!tok)
		return fail(err, errlen, -ENOMEM, "reading %s: out of memory", path);
	if (bad < len)
		ret = fail(err, errlen, -EINVAL, "%s:%zu: a NUL byte: this is not a GPU report",
			   path, line_at(buf, bad));
	else if ((bad = utf8_bad_at(buf, len)) < len)
		ret = fail(err, errlen, -EINVAL,
			   "%s:%zu: byte 0x%02x is not UTF-8; a GPU report is UTF-8 JSON", path,
			   line_at(buf, bad), (unsigned char)buf[bad]);
	else if (len > INT32_MAX)
		ret = fail(err, errlen, -EFBIG, "%s is too big for a GPU report", path);
	else {
		r = json_tokener_parse_ex(tok, buf, (int)len);
		jerr = json_tokener_get_error(tok);
		end = json_tokener_get_parse_end(tok);
		while (end < len && isspace((unsigned char)buf[end]))
			end++;
		if (!r || jerr != json_tokener_success)
			ret = fail(err, errlen, -EINVAL, "%s:%zu: not valid JSON: %s", path,
				   line_at(buf, end),
				   jerr == json_tokener_continue ? "the file ends inside it"
								 : json_tokener_error_desc(jerr));
		else if (end < len)
			ret = fail(err, errlen, -EINVAL, "%s:%zu: text after the JSON document",
				   path, line_at(buf, end));
		else
			ret = gpu_check(&g, r);
	}
	ret = ret ? ret : gpu_idle(&g, r);
	ret = ret ? ret : gpu_kernels(&g, r);
	ret = ret ? ret : gpu_ranges(&g, r);
	json_object_put(r);
	json_tokener_free(tok);
	free(g.name);
	return ret;
}

/* ---- the set */

int hist_figures__add(struct hist_figures *f, enum hist_kind kind, const char *name, double value)
{
	char *copy;

	if (!f || (unsigned)kind >= HIST_KIND_COUNT || !name || !isfinite(value))
		return -EINVAL;
	for (size_t i = 0; i < f->n; i++)
		if (f->v[i].kind == kind && !strcmp(f->v[i].name, name)) {
			f->v[i].value += value;
			return 0;
		}
	if (vec_reserve(&f->v, &f->alloc, f->n + 1) || !(copy = strdup(name)))
		return -ENOMEM;
	f->v[f->n++] = (struct hist_figure){.kind = kind, .name = copy, .value = value};
	return 0;
}

/* A JSON object is a GPU report; anything else is read as folded stacks. */
static int read_by_content(struct agg *a, FILE *fp, const char *path, char *err, size_t errlen)
{
	size_t len;
	char *buf;
	int c, ret;

	while ((c = getc(fp)) != EOF && isspace(c))
		;
	if (c != '{') {
		rewind(fp);
		return read_folded(a, fp, path, err, errlen);
	}
	ret = file__read_all(path, MAX_GPU_REPORT, &buf, &len);
	if (ret)
		return fail(err, errlen, ret, "cannot read %s: %s", path,
			    ret == -EFBIG ? "bigger than 1 GiB, no GPU report" : strerror(-ret));
	ret = read_gpu_report(a, buf, len, path, err, errlen);
	free(buf);
	return ret;
}

int hist_figures__read(struct hist_figures *f, const char *path, char *err, size_t errlen)
{
	struct agg a = {0};
	FILE *fp;
	int ret;

	if (!f || !path)
		return fail(err, errlen, -EINVAL, "no profile to read");
	fp = fopen(path, "re");
	if (!fp)
		return fail(err, errlen, -errno, "cannot read %s: %s", path, strerror(errno));
	ret = read_by_content(&a, fp, path, err, errlen);
	fclose(fp);
	if (!ret && agg__merge(&a, f))
		ret = fail(err, errlen, -ENOMEM, "reading %s: out of memory", path);
	agg__free(&a);
	if (!ret)
		hist_figures__trim(f);
	return ret;
}

/* Kind by kind, the largest first (then by name, so equal values keep one order). */
static int cmp_figure(const void *x, const void *y)
{
	const struct hist_figure *a = x, *b = y;

	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->value != b->value)
		return a->value > b->value ? -1 : 1;
	return strcmp(a->name, b->name);
}

void hist_figures__trim(struct hist_figures *f)
{
	size_t cap, kept = 0, run = 0;

	if (!f || !f->n)
		return;
	cap = f->cap ? f->cap : HIST_FIGURES_CAP_DEFAULT;
	qsort(f->v, f->n, sizeof(*f->v), cmp_figure);
	for (size_t i = 0; i < f->n; i++) {
		if (i && f->v[i].kind != f->v[i - 1].kind)
			run = 0;
		if (run++ < cap) {
			f->v[kept++] = f->v[i];
		} else {
			f->dropped[f->v[i].kind]++;
			free((char *)f->v[i].name);
		}
	}
	f->n = kept;
}

void hist_figures__free(struct hist_figures *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++)
		free((char *)f->v[i].name);
	free(f->v);
	f->v = NULL;
	f->n = f->alloc = 0;
}
