// SPDX-License-Identifier: Apache-2.0
/*
 * xsprof-diff: compare two folded profiles (a differential flamegraph (SVG), a table of the
 * functions whose share changed most) or two sets of GPU reports (output/diff/gpu_report_diff.h),
 * with an exit status for CI.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/atomic_file.h"
#include "output/diff/diff.h"
#include "output/diff/gpu_report_diff.h"
#include "output/diff_svg.h"
#include "output/model/calltree.h"
#include "output/output.h"

#define EXIT_USAGE     2
#define EXIT_THRESHOLD 3

static const char usage[] =
	"Usage: xsprof-diff [OPTIONS] BEFORE.folded AFTER.folded\n"
	"       xsprof-diff [OPTIONS] BEFORE.gpu.json[,...] AFTER.gpu.json[,...]\n"
	"Compare two profiles by share of all samples (so their lengths may differ), or two\n"
	"sets of GPU reports (xsprofd -f -o X.gpu.json) by their figures: each\n"
	"device's active, busy and idle time by cause, each kernel's total time, the idle time\n"
	"blamed on each stack, the GPU memory peak. Several runs a side (a comma list): each\n"
	"figure is their median, and it regresses only past the runs' own spread.\n"
	"\n"
	"  -o, --output FILE      write a differential flamegraph (SVG): the shape of AFTER,\n"
	"                         red where a stack's share grew, blue where it shrank\n"
	"  -t, --threshold PCT    exit 3 when a function's share (self or total) grew by more\n"
	"                         than PCT percentage points; for GPU reports, when a figure\n"
	"                         grew by more than PCT percent (and 1 ms or 1 MiB), its best\n"
	"                         AFTER run worse than its worst BEFORE run by PCT percent\n"
	"  -n, --top N            rows of the table (default 20, 0 for all)\n"
	"      --title TEXT       title of the SVG\n"
	"  -q, --quiet            no table\n"
	"  -V, --version          print the version and exit\n"
	"  -h, --help             this help\n"
	"\n"
	"Exit status: 0 done, 1 error (unreadable or malformed input, cannot write), 2 bad\n"
	"usage, 3 a share grew past --threshold.\n"
	"\n"
	"Examples:\n"
	"  xsprof-diff base.folded new.folded -o diff.svg\n"
	"  xsprof-diff --threshold 2 --top 10 main.folded branch.folded || echo regression\n"
	"  xsprof-diff -t 5 base1.gpu.json,base2.gpu.json new1.gpu.json,new2.gpu.json\n";

static int bad(const char *opt, const char *arg, const char *why)
{
	fprintf(stderr, "xsprof-diff: %s '%s': %s\n", opt, arg, why);
	fprintf(stderr, "Try 'xsprof-diff --help' for more information.\n");
	return EXIT_USAGE;
}

static struct calltree *load(const char *path)
{
	struct calltree *t = calltree__new();
	size_t bad_line = 0;
	FILE *f;
	int err;

	if (!t) {
		fprintf(stderr, "xsprof-diff: out of memory\n");
		return NULL;
	}
	f = strcmp(path, "-") ? fopen(path, "re") : stdin;
	if (!f) {
		fprintf(stderr, "xsprof-diff: cannot open %s: %s\n", path, strerror(errno));
		calltree__free(t);
		return NULL;
	}
	err = diff__read_folded(f, t, &bad_line);
	if (f != stdin)
		fclose(f);
	if (err == -EINVAL) {
		fprintf(stderr,
			"xsprof-diff: %s:%zu: not a folded stack line (expected 'frame;frame;... "
			"COUNT')\n",
			path, bad_line);
	} else if (err) {
		fprintf(stderr, "xsprof-diff: reading %s: %s\n", path, strerror(-err));
	} else if (!calltree__total(t)) {
		fprintf(stderr, "xsprof-diff: %s has no samples: nothing to compare\n", path);
		err = -ENODATA;
	}
	if (err) {
		calltree__free(t);
		return NULL;
	}
	return t;
}

struct svg_args {
	const struct diff *d;
	const struct output_meta *meta;
};

static int write_svg(FILE *f, void *ctx)
{
	const struct svg_args *a = ctx;

	return diff__write_svg(a->d, f, a->meta);
}

/* "a,b,c" into its parts (in place); how many, at most max. */
static size_t split(char *list, const char **v, size_t max)
{
	size_t n = 0;

	for (char *save = NULL, *t = strtok_r(list, ",", &save); t && n < max;
	     t = strtok_r(NULL, ",", &save))
		v[n++] = t;
	return n;
}

/* BEFORE and AFTER as GPU reports: the table, and exit 3 past the threshold. */
static int gpu_reports(const char *before, const char *after, unsigned long top, double threshold,
		       int quiet)
{
	enum { MAX_RUNS = 64 };
	const char *b[MAX_RUNS], *a[MAX_RUNS];
	char *bl = strdup(before), *al = strdup(after);
	size_t nb = bl ? split(bl, b, MAX_RUNS) : 0, na = al ? split(al, a, MAX_RUNS) : 0;
	struct gpu_report_diff *d = NULL;
	int status = 1, n;
	FILE *sink;

	if (!bl || !al) {
		fprintf(stderr, "xsprof-diff: out of memory\n");
		goto out;
	}
	if (!nb || !na) {
		fprintf(stderr, "xsprof-diff: no GPU report to compare\n");
		status = EXIT_USAGE;
		goto out;
	}
	d = gpu_report_diff__new(b, nb, a, na, stderr);
	if (!d)
		goto out;
	sink = quiet ? fopen("/dev/null", "we") : stdout;
	n = sink ? gpu_report_diff__write(d, sink, top, threshold) : -errno;
	if (sink && sink != stdout)
		fclose(sink);
	if (n < 0) {
		fprintf(stderr, "xsprof-diff: writing the table: %s\n", strerror(-n));
		goto out;
	}
	status = 0;
	if (n > 0) {
		fprintf(stderr, "xsprof-diff: %d figure%s regressed by more than %.2f%%\n", n,
			n == 1 ? "" : "s", threshold);
		status = EXIT_THRESHOLD;
	}
out:
	gpu_report_diff__free(d);
	free(bl);
	free(al);
	return status;
}

/* What the command line asks for. */
struct diff_args {
	const char *out, *title;
	double threshold; /* < 0: none */
	unsigned long top;
	int quiet;
	const char *before, *after;
};

/* What parse_args returns when there is work to do (else the exit status). */
#define GO_ON (-1)

/* argv into *a: GO_ON, or the exit status once done (--help, --version) or on bad usage. */
static int parse_args(int argc, char **argv, struct diff_args *a)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"threshold", required_argument, NULL, 't'},
		{"top", required_argument, NULL, 'n'},
		{"title", required_argument, NULL, 'T'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0},
	};
	char *end;
	int opt;

	*a = (struct diff_args){.threshold = -1, .top = 20};
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":o:t:n:qhV", longopts, NULL)) != -1) {
		switch (opt) {
		case 'o':
			a->out = optarg;
			break;
		case 't':
			errno = 0;
			a->threshold = strtod(optarg, &end);
			if (errno || end == optarg || *end || a->threshold < 0 ||
			    a->threshold > 100)
				return bad("--threshold", optarg,
					   "expected percentage points from 0 to 100");
			break;
		case 'n':
			errno = 0;
			a->top = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-')
				return bad("--top", optarg, "expected a number of rows");
			break;
		case 'T':
			a->title = optarg;
			break;
		case 'q':
			a->quiet = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'V':
			printf("xsprof-diff %s\n", XSPROF_VERSION);
			return 0;
		case ':':
			fprintf(stderr, "xsprof-diff: %s needs a value\n", argv[optind - 1]);
			fprintf(stderr, "Try 'xsprof-diff --help' for more information.\n");
			return EXIT_USAGE;
		default:
			fprintf(stderr, "xsprof-diff: unknown option '%s'\n", argv[optind - 1]);
			fprintf(stderr, "Try 'xsprof-diff --help' for more information.\n");
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "xsprof-diff: expected two profiles, BEFORE and AFTER, got %d\n",
			argc - optind);
		fprintf(stderr, "Try 'xsprof-diff --help' for more information.\n");
		return EXIT_USAGE;
	}
	a->before = argv[optind];
	a->after = argv[optind + 1];
	return GO_ON;
}

/* The differential flamegraph, written whole or not at all: 0, or 1 after saying why. */
static int write_diff_svg(const struct diff *d, const struct diff_args *a)
{
	char subtitle[512];
	struct output_meta meta = {
		.title = a->title ? a->title : "Differential flame graph",
		.subtitle = subtitle,
		.unit = "samples",
	};
	struct svg_args sa = {.d = d, .meta = &meta};
	int err;

	snprintf(subtitle, sizeof(subtitle), "%s -> %s", a->before, a->after);
	err = atomic_file__write(a->out, write_svg, &sa);
	if (err) {
		fprintf(stderr, "xsprof-diff: writing %s: %s\n", a->out, strerror(-err));
		return 1;
	}
	return 0;
}

/* BEFORE and AFTER as folded profiles: the table, the SVG, and exit 3 past the threshold. */
static int folded_profiles(const struct diff_args *a)
{
	struct calltree *before, *after;
	const char *grew = NULL;
	struct diff *d = NULL;
	int status = 1;
	double growth;

	before = load(a->before);
	after = before ? load(a->after) : NULL;
	if (!after)
		goto out;
	d = diff__new(before, after);
	if (!d) {
		fprintf(stderr, "xsprof-diff: comparing: %s\n", strerror(errno));
		goto out;
	}
	if (!a->quiet && diff__write_table(d, stdout, a->top)) {
		fprintf(stderr, "xsprof-diff: writing the table: %s\n", strerror(errno));
		goto out;
	}
	if (a->out && write_diff_svg(d, a))
		goto out;
	status = 0;
	growth = diff__max_growth(d, &grew);
	if (a->threshold >= 0 && growth > a->threshold) {
		fprintf(stderr,
			"xsprof-diff: %s grew by %.2f percentage points, more than the threshold of "
			"%.2f\n",
			grew, growth, a->threshold);
		status = EXIT_THRESHOLD;
	}
out:
	diff__free(d);
	calltree__free(before);
	calltree__free(after);
	return status;
}

int main(int argc, char **argv)
{
	struct diff_args a;
	int status = parse_args(argc, argv, &a);

	if (status != GO_ON)
		return status;
	if (gpu_report_diff__is_report(a.before) || gpu_report_diff__is_report(a.after)) {
		if (!gpu_report_diff__is_report(a.before) || !gpu_report_diff__is_report(a.after))
			return bad("argument", a.before,
				   "GPU reports (.gpu.json) compare with GPU reports only");
		if (a.out)
			return bad("--output", a.out, "GPU reports compare as a table, not an SVG");
		return gpu_reports(a.before, a.after, a.top, a.threshold, a.quiet);
	}
	if (a.out) {
		enum output_format fmt;

		if (output__format_from_path(a.out, &fmt) || fmt != OUTPUT_SVG)
			return bad("--output", a.out,
				   "the differential flamegraph is an SVG: name it .svg");
	}
	return folded_profiles(&a);
}
