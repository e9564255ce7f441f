// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/base/atomic_file.h"
#include "output/calltree.h"
#include "output/chrome_trace.h"
#include "output/flamegraph.h"
#include "output/folded.h"
#include "output/gpu_report.h"
#include "output/gpu_timeline.h"
#include "output/output.h"
#include "output/pprof.h"
#include "output/profile.h"

static const struct {
	const char *name;
	enum output_format fmt;
} formats[] = {
	{"folded", OUTPUT_FOLDED},	   {"svg", OUTPUT_SVG},
	{"json", OUTPUT_CHROME_JSON},	   {"chrome", OUTPUT_CHROME_JSON},
	{"pprof", OUTPUT_PPROF},	   {"timeline", OUTPUT_TIMELINE},
	{"gpu-report", OUTPUT_GPU_REPORT}, {"gpu-text", OUTPUT_GPU_TEXT},
};

static const struct {
	const char *ext;
	enum output_format fmt;
} extensions[] = {
	{".folded", OUTPUT_FOLDED},
	/* Before ".txt". */
	{".gpu.txt", OUTPUT_GPU_TEXT},
	{".txt", OUTPUT_FOLDED},
	{".svg", OUTPUT_SVG},
	/* Before ".json": the first suffix that matches wins. */
	{".timeline.json", OUTPUT_TIMELINE},
	{".gpu.json", OUTPUT_GPU_REPORT},
	{".json", OUTPUT_CHROME_JSON},
	{".pb.gz", OUTPUT_PPROF},
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

int output__format_from_path(const char *path, enum output_format *ret_fmt)
{
	const char *base, *dot;
	size_t i;

	if (!path || !ret_fmt)
		return -EINVAL;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	/* "dir/.svg" is a hidden file without an extension, not an SVG. */
	if (!dot || dot == base)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(extensions); i++) {
		size_t blen = strlen(base), elen = strlen(extensions[i].ext);

		/* Suffix, not last dot: ".pb.gz" has two; the name must have more than it. */
		if (blen > elen && !strcasecmp(base + blen - elen, extensions[i].ext)) {
			*ret_fmt = extensions[i].fmt;
			return 0;
		}
	}
	return -EINVAL;
}

int output__format_from_name(const char *name, enum output_format *ret_fmt)
{
	size_t i;

	if (!name || !ret_fmt)
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(formats); i++) {
		if (!strcmp(name, formats[i].name)) {
			*ret_fmt = formats[i].fmt;
			return 0;
		}
	}
	return -EINVAL;
}

/* NULL for a value that is not an enum output_format. */
const char *output__format_name(enum output_format fmt)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(formats); i++) {
		if (formats[i].fmt == fmt)
			return formats[i].name;
	}
	return NULL;
}

bool output__format_needs_timeline(enum output_format fmt)
{
	return fmt == OUTPUT_CHROME_JSON || fmt == OUTPUT_PPROF || fmt == OUTPUT_TIMELINE ||
	       fmt == OUTPUT_GPU_REPORT || fmt == OUTPUT_GPU_TEXT;
}

int output__write(const struct calltree *t, enum output_format fmt, FILE *f,
		  const struct output_meta *meta)
{
	switch (fmt) {
	case OUTPUT_FOLDED:
		return folded__write(t, f);
	case OUTPUT_SVG:
		return flamegraph__write_svg(t, f, meta);
	case OUTPUT_CHROME_JSON:
	case OUTPUT_PPROF:
	case OUTPUT_TIMELINE:
	case OUTPUT_GPU_REPORT:
	case OUTPUT_GPU_TEXT:
		return -ENOTSUP;
	}
	return -EINVAL;
}

static int write_gpu_report(const struct profile_data *pd, bool text, FILE *f)
{
	struct gpu_report *r;
	int err = gpu_report__build(pd, &r);

	if (err)
		return err;
	err = text ? gpu_report__write_text(r, f) : gpu_report__write_json(r, f);
	gpu_report__free(r);
	return err;
}

int output__write_profile(const struct profile_data *pd, enum output_format fmt, FILE *f,
			  const struct output_meta *meta)
{
	struct output_meta m = {0};
	struct calltree *t = NULL;
	int err;

	if (!pd || !f)
		return -EINVAL;
	switch (fmt) {
	case OUTPUT_CHROME_JSON:
		return chrome_trace__write_profile(pd, f, meta);
	case OUTPUT_PPROF:
		return pprof__write(pd, f, meta);
	case OUTPUT_TIMELINE:
		return gpu_timeline__write(pd, f);
	case OUTPUT_GPU_REPORT:
	case OUTPUT_GPU_TEXT:
		return write_gpu_report(pd, fmt == OUTPUT_GPU_TEXT, f);
	case OUTPUT_FOLDED:
	case OUTPUT_SVG:
		break;
	default:
		return -EINVAL;
	}
	err = profile__build_tree(pd, &t);
	if (err)
		return err;
	if (meta)
		m = *meta;
	m.unit = profile__unit_name(pd->unit);
	if (fmt == OUTPUT_SVG) {
		err = flamegraph__write_svg(t, f, &m);
	} else {
		/* Units must not be mixed up once GPU time is in: say which, on a comment line. */
		errno = 0;
		if ((pd->mode != GPU_MODE_CPU || pd->unit != WEIGHT_SAMPLES) &&
		    fprintf(f, "# xsprof folded stacks: mode %s, weights in %s%s\n",
			    profile__mode_name(pd->mode), m.unit,
			    pd->unit == WEIGHT_SAMPLES
				    ? " (GPU time as samples at the CPU sampling rate)"
				    : "") < 0)
			err = errno ? -errno : -EIO;
		if (!err)
			err = folded__write(t, f);
	}
	calltree__free(t);
	return err;
}

struct write_args {
	const struct calltree *t;
	const struct profile_data *pd;
	enum output_format fmt;
	const struct output_meta *meta;
};

static int write_one(FILE *f, void *ctx)
{
	const struct write_args *a = ctx;

	return a->t ? output__write(a->t, a->fmt, f, a->meta)
		    : output__write_profile(a->pd, a->fmt, f, a->meta);
}

int output__write_file(const struct calltree *t, enum output_format fmt, const char *path,
		       const struct output_meta *meta)
{
	struct write_args a = {.t = t, .fmt = fmt, .meta = meta};

	if (!t || !path || !*path || !output__format_name(fmt))
		return -EINVAL;
	/* Before creating anything, so no temporary file is left to clean up. */
	if (output__format_needs_timeline(fmt))
		return -ENOTSUP;
	return atomic_file__write(path, write_one, &a);
}

int output__write_profile_file(const struct profile_data *pd, enum output_format fmt,
			       const char *path, const struct output_meta *meta)
{
	struct write_args a = {.pd = pd, .fmt = fmt, .meta = meta};

	if (!pd || !path || !*path || !output__format_name(fmt))
		return -EINVAL;
	return atomic_file__write(path, write_one, &a);
}
