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
#include "output/callgrind.h"
#include "output/chrome_trace.h"
#include "output/flamegraph.h"
#include "output/folded.h"
#include "output/gpu_report/gpu_report.h"
#include "output/gpu_timeline.h"
#include "output/job/job_parts.h"
#include "output/job/job_report.h"
#include "output/model/calltree.h"
#include "output/model/profile.h"
#include "output/otlp.h"
#include "output/output.h"
#include "output/pprof.h"
#include "output/xplane.h"

/* The profile's call tree (pd->mode, pd->unit) in a tree format. */
static int write_tree_of(const struct profile_data *pd, FILE *f, const struct output_meta *meta,
			 int (*write)(const struct calltree *t, FILE *f,
				      const struct output_meta *meta),
			 bool unit_line)
{
	struct output_meta m = {0};
	struct calltree *t = NULL;
	char mode[64];
	int err = profile__build_tree(pd, &t);

	if (err)
		return err;
	if (meta)
		m = *meta;
	m.unit = profile__unit_name(pd->unit);
	/* An off-CPU or wall profile says so ("offcpu", "merged+wall"), not "cpu". */
	if (m.cpu_mode && pd->mode != GPU_MODE_CPU)
		snprintf(mode, sizeof(mode), "%s+%s", profile__mode_name(pd->mode), m.cpu_mode);
	else
		snprintf(mode, sizeof(mode), "%s",
			 m.cpu_mode ? m.cpu_mode : profile__mode_name(pd->mode));
	/* Units must not be mixed up once GPU time is in: say which, on a comment line. */
	errno = 0;
	if (unit_line && (pd->mode != GPU_MODE_CPU || pd->unit != WEIGHT_SAMPLES) &&
	    fprintf(f, "# xsprof folded stacks: mode %s, weights in %s%s\n", mode, m.unit,
		    pd->unit == WEIGHT_SAMPLES ? " (GPU time as samples at the CPU sampling rate)"
					       : "") < 0)
		err = errno ? -errno : -EIO;
	if (!err)
		err = write(t, f, &m);
	calltree__free(t);
	return err;
}

static int folded_tree(const struct calltree *t, FILE *f, const struct output_meta *meta)
{
	(void)meta;
	return folded__write(t, f);
}

static int folded_profile(const struct profile_data *pd, FILE *f, const struct output_meta *meta)
{
	return write_tree_of(pd, f, meta, folded_tree, true);
}

static int svg_profile(const struct profile_data *pd, FILE *f, const struct output_meta *meta)
{
	return write_tree_of(pd, f, meta, flamegraph__write_svg, false);
}

static int callgrind_profile(const struct profile_data *pd, FILE *f, const struct output_meta *meta)
{
	return write_tree_of(pd, f, meta, callgrind__write, false);
}

static int timeline_profile(const struct profile_data *pd, FILE *f, const struct output_meta *meta)
{
	(void)meta;
	return gpu_timeline__write(pd, f);
}

/* The GPU report the mode layer built for this profile (meta->an), in fmt. */
static int report_profile(const struct output_meta *meta, FILE *f, enum output_format fmt)
{
	if (!meta || !meta->an || !meta->an->gpu)
		return -EINVAL;
	return output__format_info(fmt)->write_report(meta->an->gpu, f);
}

static int gpu_json_profile(const struct profile_data *pd, FILE *f, const struct output_meta *meta)
{
	(void)pd;
	return report_profile(meta, f, OUTPUT_GPU_REPORT);
}

static int gpu_text_profile(const struct profile_data *pd, FILE *f, const struct output_meta *meta)
{
	(void)pd;
	return report_profile(meta, f, OUTPUT_GPU_TEXT);
}

/* The job report the mode layer built for this profile (meta->an). */
static int job_built(const struct output_meta *meta, FILE *f,
		     int (*write)(const struct job_report *r, FILE *f))
{
	if (!meta || !meta->an || !meta->an->job)
		return -EINVAL;
	return write(meta->an->job, f);
}

static int job_json_profile(const struct profile_data *pd, FILE *f, const struct output_meta *meta)
{
	(void)pd;
	return job_built(meta, f, job_report__write_json);
}

static int job_text_profile(const struct profile_data *pd, FILE *f, const struct output_meta *meta)
{
	(void)pd;
	return job_built(meta, f, job_report__write_text);
}

#define EVERYWHERE                                                                       \
	(OUTPUT_IN_ONESHOT | OUTPUT_IN_RECORDING | OUTPUT_IN_WINDOW | OUTPUT_IN_SCRAPE | \
	 OUTPUT_IN_FLEET)

/* The formats: a new one is a row here, its writer and its test. */
static const struct output_format_info formats[] = {
	{
		.fmt = OUTPUT_FOLDED,
		.name = "folded",
		.ext = {".folded", ".txt"},
		.content_type = "text/plain; charset=utf-8",
		.where = EVERYWHERE,
		.summary = "folded stacks (flamegraph.pl, inferno, speedscope)",
		.write_tree = folded_tree,
		.write_profile = folded_profile,
	},
	{
		.fmt = OUTPUT_SVG,
		.name = "svg",
		.ext = {".svg"},
		.content_type = "image/svg+xml",
		.where = EVERYWHERE,
		.summary = "an interactive flamegraph",
		.write_tree = flamegraph__write_svg,
		.write_profile = svg_profile,
	},
	{
		.fmt = OUTPUT_CALLGRIND,
		.name = "callgrind",
		.ext = {".callgrind"},
		.content_type = "text/plain; charset=utf-8",
		.where = EVERYWHERE,
		.summary = "callgrind (KCachegrind): functions by file and line, their calls",
		.write_tree = callgrind__write,
		.write_profile = callgrind_profile,
	},
	{
		.fmt = OUTPUT_CHROME_JSON,
		.name = "json",
		.alias = "chrome",
		.ext = {".json"},
		.content_type = "application/json",
		.needs = OUTPUT_NEEDS_SAMPLES | OUTPUT_NEEDS_LABELS,
		.where = OUTPUT_IN_ONESHOT | OUTPUT_IN_RECORDING,
		.summary = "a Chrome trace (Perfetto): samples, launches, GPU work, flows",
		.write_profile = chrome_trace__write_profile,
	},
	{
		.fmt = OUTPUT_PPROF,
		.name = "pprof",
		.ext = {".pb.gz"},
		.content_type = "application/octet-stream",
		.needs = OUTPUT_NEEDS_PROFILE | OUTPUT_NEEDS_LABELS,
		.where = EVERYWHERE,
		.summary = "pprof (profile.proto, gzipped)",
		.write_profile = pprof__write,
	},
	{
		.fmt = OUTPUT_OTLP,
		.name = "otlp",
		.ext = {".otlp.pb"},
		.content_type = "application/x-protobuf",
		/* Its gpu_idle profile is the GPU report's idle time under the stacks blamed. */
		.needs = OUTPUT_NEEDS_PROFILE | OUTPUT_NEEDS_SAMPLES | OUTPUT_NEEDS_LABELS |
			 OUTPUT_NEEDS_GPU_REPORT,
		.where = OUTPUT_IN_ONESHOT | OUTPUT_IN_RECORDING,
		.summary = "OTLP profiles (v1development ExportProfilesServiceRequest)",
		.write_profile = otlp__write,
	},
	{
		.fmt = OUTPUT_XPLANE,
		.name = "xplane",
		.ext = {".xplane.pb"},
		.content_type = "application/x-protobuf",
		.needs = OUTPUT_NEEDS_SAMPLES | OUTPUT_NEEDS_LABELS,
		.where = OUTPUT_IN_ONESHOT | OUTPUT_IN_RECORDING,
		.summary = "XPlane (TensorBoard, XProf): threads, GPU streams, stacks",
		.write_profile = xplane__write,
	},
	{
		.fmt = OUTPUT_TIMELINE,
		.name = "timeline",
		.ext = {".timeline.json"},
		.content_type = "application/json",
		.needs = OUTPUT_NEEDS_SAMPLES,
		.where = OUTPUT_IN_ONESHOT | OUTPUT_IN_RECORDING | OUTPUT_IN_SCRAPE,
		.summary = "the GPU timeline (JSON: each kernel with its launching stack)",
		.write_profile = timeline_profile,
	},
	{
		.fmt = OUTPUT_GPU_REPORT,
		.name = "gpu-report",
		.ext = {".gpu.json"},
		.content_type = "application/json",
		.needs = OUTPUT_NEEDS_SAMPLES | OUTPUT_NEEDS_GPU_REPORT,
		/* xsprofctl fleet --report gpu -o FILE.gpu.json merges the hosts' reports. */
		.where = OUTPUT_IN_ONESHOT | OUTPUT_IN_RECORDING | OUTPUT_IN_WINDOW |
			 OUTPUT_IN_SCRAPE,
		.summary =
			"the GPU report: why the GPU waits (JSON, output/gpu_report/GPU_REPORT.md)",
		.write_profile = gpu_json_profile,
		.write_report = gpu_report__write_json,
	},
	{
		.fmt = OUTPUT_GPU_TEXT,
		.name = "gpu-text",
		.ext = {".gpu.txt"},
		.content_type = "text/plain; charset=utf-8",
		.needs = OUTPUT_NEEDS_SAMPLES | OUTPUT_NEEDS_GPU_REPORT,
		.where = OUTPUT_IN_ONESHOT | OUTPUT_IN_RECORDING | OUTPUT_IN_WINDOW |
			 OUTPUT_IN_SCRAPE,
		.summary = "the GPU report as text for a person (80 columns)",
		.write_profile = gpu_text_profile,
		.write_report = gpu_report__write_text,
	},
	{
		.fmt = OUTPUT_JOB_REPORT,
		.name = "job-report",
		.ext = {".job.json"},
		.content_type = "application/json",
		/* The ranks come from each process's environment, read while it runs. */
		.needs = OUTPUT_NEEDS_PROFILE | OUTPUT_NEEDS_SAMPLES | OUTPUT_NEEDS_LABELS |
			 OUTPUT_NEEDS_JOB_REPORT,
		.where = OUTPUT_IN_ONESHOT | OUTPUT_IN_RECORDING,
		.summary = "the job report: which rank holds each collective back, and why "
			   "(JSON, output/job/JOB_REPORT.md)",
		.write_profile = job_json_profile,
	},
	{
		.fmt = OUTPUT_JOB_TEXT,
		.name = "job-text",
		.ext = {".job.txt"},
		.content_type = "text/plain; charset=utf-8",
		.needs = OUTPUT_NEEDS_PROFILE | OUTPUT_NEEDS_SAMPLES | OUTPUT_NEEDS_LABELS |
			 OUTPUT_NEEDS_JOB_REPORT,
		.where = OUTPUT_IN_ONESHOT | OUTPUT_IN_RECORDING,
		.summary = "the job report as text for a person (80 columns)",
		.write_profile = job_text_profile,
	},
	{
		.fmt = OUTPUT_JOB_PARTS,
		.name = "job-parts",
		.ext = {".parts.json"},
		.content_type = "application/json",
		.needs = OUTPUT_NEEDS_PROFILE | OUTPUT_NEEDS_SAMPLES | OUTPUT_NEEDS_LABELS,
		.where = OUTPUT_IN_ONESHOT | OUTPUT_IN_RECORDING | OUTPUT_IN_SCRAPE,
		.summary = "this host's ranks of a job, for a job report across hosts "
			   "(xsprofctl fleet --report straggler)",
		.write_profile = job_parts__write,
	},
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

const struct output_format_info *output__formats(size_t *ret_n)
{
	*ret_n = ARRAY_SIZE(formats);
	return formats;
}

const struct output_format_info *output__format_info(enum output_format fmt)
{
	for (size_t i = 0; i < ARRAY_SIZE(formats); i++)
		if (formats[i].fmt == fmt)
			return &formats[i];
	return NULL;
}

int output__format_from_path(const char *path, enum output_format *ret_fmt)
{
	const char *base, *dot;
	size_t best = 0, blen;

	if (!path || !ret_fmt)
		return -EINVAL;
	base = strrchr(path, '/');
	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	/* "dir/.svg" is a hidden file without an extension, not an SVG. */
	if (!dot || dot == base)
		return -EINVAL;
	blen = strlen(base);
	/* The longest suffix that matches wins (".gpu.json" over ".json"), not the last dot:
	 * ".pb.gz" has two; the name must have more than it. */
	for (size_t i = 0; i < ARRAY_SIZE(formats); i++)
		for (size_t k = 0; k < ARRAY_SIZE(formats[i].ext) && formats[i].ext[k]; k++) {
			size_t elen = strlen(formats[i].ext[k]);

			if (blen > elen && elen > best &&
			    !strcasecmp(base + blen - elen, formats[i].ext[k])) {
				best = elen;
				*ret_fmt = formats[i].fmt;
			}
		}
	return best ? 0 : -EINVAL;
}

int output__format_from_name(const char *name, enum output_format *ret_fmt)
{
	if (!name || !ret_fmt)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(formats); i++) {
		if (!strcmp(name, formats[i].name) ||
		    (formats[i].alias && !strcmp(name, formats[i].alias))) {
			*ret_fmt = formats[i].fmt;
			return 0;
		}
	}
	return -EINVAL;
}

/* NULL for a value that is not an enum output_format. */
const char *output__format_name(enum output_format fmt)
{
	const struct output_format_info *fi = output__format_info(fmt);

	return fi ? fi->name : NULL;
}

bool output__format_needs_timeline(enum output_format fmt)
{
	const struct output_format_info *fi = output__format_info(fmt);

	return fi && fi->needs;
}

bool output__format_allowed(enum output_format fmt, unsigned int where)
{
	const struct output_format_info *fi = output__format_info(fmt);

	return fi && (fi->where & where) == where;
}

const char *output__format_list(unsigned int where, bool extensions, char *buf, size_t size)
{
	const char *item[2 * ARRAY_SIZE(formats)];
	size_t n = 0, len = 0;

	for (size_t i = 0; i < ARRAY_SIZE(formats); i++) {
		if ((formats[i].where & where) != where)
			continue;
		if (!extensions)
			item[n++] = formats[i].name;
		for (size_t k = 0; extensions && k < ARRAY_SIZE(formats[i].ext); k++)
			if (formats[i].ext[k])
				item[n++] = formats[i].ext[k];
	}
	buf[0] = '\0';
	for (size_t i = 0; i < n && len < size; i++)
		len += snprintf(buf + len, size - len, "%s%s",
				!i	    ? ""
				: i + 1 < n ? ", "
					    : " or ",
				item[i]);
	return buf;
}

int output__write(const struct calltree *t, enum output_format fmt, FILE *f,
		  const struct output_meta *meta)
{
	const struct output_format_info *fi = output__format_info(fmt);

	if (!fi)
		return -EINVAL;
	return fi->write_tree ? fi->write_tree(t, f, meta) : -ENOTSUP;
}

int output__write_profile(const struct profile_data *pd, enum output_format fmt, FILE *f,
			  const struct output_meta *meta)
{
	const struct output_format_info *fi = output__format_info(fmt);

	if (!pd || !f || !fi)
		return -EINVAL;
	return fi->write_profile(pd, f, meta);
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

int output__write_profile_file_capped(const struct profile_data *pd, enum output_format fmt,
				      const char *path, const struct output_meta *meta,
				      uint64_t max_bytes)
{
	struct write_args a = {.pd = pd, .fmt = fmt, .meta = meta};

	if (!pd || !path || !*path || !output__format_name(fmt))
		return -EINVAL;
	return atomic_file__write_capped(path, write_one, &a, max_bytes);
}
