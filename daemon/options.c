// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/options.h"
#include "output/output.h"

#define DEFAULT_FREQ_HZ	   99 /* off 100 Hz so sampling does not run in lockstep with timer ticks */
#define DEFAULT_MAX_STACKS 1000000

static const char usage_text[] =
	"Usage: xsprofd --foreground [--duration SECS] [--freq HZ] [--pid PID]... --output FILE...\n"
	"\n"
	"Samples the kernel and user stacks of every CPU with BPF and writes a profile.\n"
	"\n"
	"  -f, --foreground          profile once and exit (one-shot mode)\n"
	"  -d, --duration SECS       how long to sample (decimals allowed); default: until Ctrl-C\n"
	"  -F, --freq HZ             samples per second per CPU (default 99, at most 10000)\n"
	"  -p, --pid PID             only these processes (repeat, or a comma list); default: all\n"
	"  -o, --output FILE         write the profile here; repeat for several files. The format\n"
	"                            follows the extension: .folded (or .txt) folded stacks, .svg an\n"
	"                            interactive flamegraph; '-' writes folded stacks to stdout\n"
	"      --format FMT          force the format of every output: folded | svg\n"
	"      --include-idle        keep samples of idle CPUs (the swapper task)\n"
	"      --no-demangle         keep C++ symbol names mangled\n"
	"      --ring-buffer-size MB BPF ring buffer size in MiB, a power of two (default: 128 KiB\n"
	"                            per CPU, at least 1); raise it if drops are reported\n"
	"      --max-stacks N        distinct stacks kept before further new ones are counted in\n"
	"                            one overflow bucket per process (default 1000000)\n"
	"  -v, --verbose             more detail on stderr\n"
	"  -h, --help                this text\n"
	"  -V, --version             print the version\n"
	"\n"
	"Examples:\n"
	"  xsprofd --foreground --duration 10 --output profile.svg --output profile.folded\n"
	"  xsprofd -f -d 30 -F 999 -p 1234 -o app.svg     # one process, 30 s at 999 Hz\n"
	"  xsprofd -f -o - | flamegraph.pl > fg.svg       # until Ctrl-C, folded to stdout\n"
	"\n"
	"Needs root (or CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE) and a kernel with BTF.\n"
	"Ctrl-C ends a recording early; the profile is still written.\n";

enum {
	OPT_FORMAT = 0x100,
	OPT_INCLUDE_IDLE,
	OPT_NO_DEMANGLE,
	OPT_RING_SIZE,
	OPT_MAX_STACKS,
};

static const struct option long_opts[] = {
	{"foreground", no_argument, NULL, 'f'},
	{"duration", required_argument, NULL, 'd'},
	{"freq", required_argument, NULL, 'F'},
	{"pid", required_argument, NULL, 'p'},
	{"output", required_argument, NULL, 'o'},
	{"format", required_argument, NULL, OPT_FORMAT},
	{"include-idle", no_argument, NULL, OPT_INCLUDE_IDLE},
	{"no-demangle", no_argument, NULL, OPT_NO_DEMANGLE},
	{"ring-buffer-size", required_argument, NULL, OPT_RING_SIZE},
	{"max-stacks", required_argument, NULL, OPT_MAX_STACKS},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{},
};

static int bad(const char *flag, const char *arg, const char *why)
{
	fprintf(stderr, "xsprofd: %s '%s': %s\n", flag, arg, why);
	fprintf(stderr, "Try 'xsprofd --help' for more information.\n");
	return 2;
}

/* Whole-string unsigned parse; false on junk, overflow or out of [min, max]. */
static bool parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *ret)
{
	char *end;
	unsigned long v;

	if (!*s || *s == '-' || *s == '+')
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*ret = v;
	return true;
}

static int add_pids(struct xsprofd_opts *o, const char *arg)
{
	char buf[4096], *tok, *save = NULL;
	unsigned long v;

	if (strlen(arg) >= sizeof(buf))
		return bad("--pid", "...", "list too long");
	strcpy(buf, arg);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!parse_ulong(tok, 1, INT_MAX, &v))
			return bad("--pid", tok, "not a process id");
		if (o->nr_pids == XSPROFD_MAX_PIDS)
			return bad("--pid", tok, "too many pids (at most 1024)");
		o->pids[o->nr_pids++] = (pid_t)v;
	}
	return 0;
}

int xsprofd_opts__parse(struct xsprofd_opts *o, int argc, char **argv)
{
	const char *force_format = NULL;
	enum output_format fmt;
	unsigned long v;
	char *end;
	int c, err;

	memset(o, 0, sizeof(*o));
	o->freq_hz = DEFAULT_FREQ_HZ;
	o->max_stacks = DEFAULT_MAX_STACKS;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":fd:F:p:o:vhV", long_opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			o->foreground = true;
			break;
		case 'd':
			errno = 0;
			o->duration_s = strtod(optarg, &end);
			if (errno || *end || !*optarg || !isfinite(o->duration_s) ||
			    o->duration_s <= 0 || o->duration_s > 31 * 24 * 3600.0)
				return bad("--duration", optarg,
					   "expected seconds > 0, e.g. 10 or 0.5");
			break;
		case 'F':
			if (!parse_ulong(optarg, 1, 10000, &v))
				return bad("--freq", optarg,
					   "expected 1..10000 samples per second");
			o->freq_hz = v;
			break;
		case 'p':
			err = add_pids(o, optarg);
			if (err)
				return err;
			break;
		case 'o':
			if (o->nr_outputs == XSPROFD_MAX_OUTPUTS)
				return bad("--output", optarg, "too many outputs (at most 8)");
			if (!*optarg)
				return bad("--output", optarg, "empty file name");
			o->outputs[o->nr_outputs++].path = optarg;
			break;
		case OPT_FORMAT:
			if (output__format_from_name(optarg, &fmt))
				return bad("--format", optarg, "expected folded or svg");
			force_format = optarg;
			break;
		case OPT_INCLUDE_IDLE:
			o->include_idle = true;
			break;
		case OPT_NO_DEMANGLE:
			o->no_demangle = true;
			break;
		case OPT_RING_SIZE:
			if (!parse_ulong(optarg, 1, 1024, &v) || (v & (v - 1)))
				return bad("--ring-buffer-size", optarg,
					   "expected a power of two in MiB, 1..1024");
			o->ring_buffer_bytes = (uint32_t)(v << 20);
			break;
		case OPT_MAX_STACKS:
			if (!parse_ulong(optarg, 1, 100000000, &v))
				return bad("--max-stacks", optarg, "expected 1..100000000");
			o->max_stacks = v;
			break;
		case 'v':
			o->verbose++;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 1;
		case 'V':
			printf("xsprofd %s\n", XSPROF_VERSION);
			return 1;
		case ':':
			fprintf(stderr, "xsprofd: %s needs a value\n", argv[optind - 1]);
			fprintf(stderr, "Try 'xsprofd --help' for more information.\n");
			return 2;
		default:
			fprintf(stderr, "xsprofd: unknown option '%s'\n", argv[optind - 1]);
			fprintf(stderr, "Try 'xsprofd --help' for more information.\n");
			return 2;
		}
	}
	if (optind < argc)
		return bad("argument", argv[optind],
			   "unexpected; options take the forms shown in --help");

	if (!o->foreground) {
		fprintf(stderr,
			"xsprofd: the always-on service mode is not built yet; run a one-shot "
			"profile with --foreground --output FILE [--duration SECS]\n");
		return 2;
	}
	if (!o->nr_outputs) {
		fprintf(stderr,
			"xsprofd: --foreground needs --output FILE (.folded or .svg; '-' for "
			"folded stacks on stdout)\n");
		return 2;
	}
	for (int i = 0; i < o->nr_outputs; i++) {
		struct xsprofd_output *out = &o->outputs[i];

		if (force_format)
			err = output__format_from_name(force_format, &fmt);
		else if (!strcmp(out->path, "-"))
			err = output__format_from_name("folded", &fmt);
		else
			err = output__format_from_path(out->path, &fmt);
		if (err)
			return bad("--output", out->path,
				   "cannot tell the format from the extension; name it .folded or "
				   ".svg, or pass --format");
		if (!strcmp(out->path, "-") && fmt != OUTPUT_FOLDED)
			return bad("--output", out->path, "only folded stacks go to stdout");
		out->format = fmt;
	}
	return 0;
}
