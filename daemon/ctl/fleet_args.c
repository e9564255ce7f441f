// SPDX-License-Identifier: Apache-2.0
/* xsprofctl fleet's options and their checks, and its help. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/base/job_filter.h"
#include "daemon/ctl/fleet_internal.h"
#include "daemon/session/session_mode.h"
#include "output/output.h"
#include "output/model/profile.h"

static const char fleet_usage[] =
	"Usage: xsprofctl fleet [OPTIONS] -o FILE [HOST[:PORT]...]\n"
	"Ask every host's xsprofd (started with --listen) for a profile at once and merge them.\n"
	"  -f, --hosts FILE       hosts, one a line: HOST[:PORT] [key=value...] ('#' comments)\n"
	"  -o, --output FILE      merged profile: .folded/.txt, .svg, .json, .pb.gz\n"
	"  -d, --duration SECS    record this long on every host (default 10)\n"
	"      --since SECS       instead, each host's rolling window of the last SECS\n"
	"      --pid N / --comm NAME / --gpu-mode MODE   passed to every host\n"
	"      --group-by WHAT    each host's recording: unit, container, comm, rank, job,\n"
	"                         range or outer-range (NVTX), under the host root; with\n"
	"                         --since,\n"
	"                         range or outer-range of hosts started with\n"
	"                         --window-group-by\n"
	"      --range-domain D   with --group-by range or outer-range: only NVTX domain D's\n"
	"                         ranges (xsprof: the scopes) on every host's recording\n"
	"      --by host|KEY|none root frame: the host (default), a label's value, or none\n"
	"      --select KEY=VALUE only hosts with this label (repeatable: all must match)\n"
	"      --token-file FILE  bearer token for the hosts' --token-file\n"
	"      --cacert FILE      CA of the hosts' TLS certificates (implies https)\n"
	"      --cert FILE --key FILE   client certificate (implies https)\n"
	"      --parallel N       hosts asked at once (default 64)\n"
	"      --host-timeout SECS   per host (default: duration + 15)\n"
	"      --deadline SECS    the whole collection (default: duration + 30)\n"
	"      --dump SECS        instead, every host's flight recorder saves a dump of the\n"
	"                         same wall-clock moment (now) and the SECS before it; no -o:\n"
	"                         each host's dump name is printed (xsprofctl dump get on\n"
	"                         the host fetches it); hosts need --listen-allow-writes\n"
	"      --report gpu       each host's GPU report of the recording (with --since, of\n"
	"                         its window) instead (why its GPUs wait): a summary per\n"
	"                         host and merged on stdout, and with -o FILE.gpu.json\n"
	"                         every host's report and the merge\n"
	"      --report straggler each host's ranks of a training job (--job ID: of that job\n"
	"                         only) put on one clock and compared: which rank holds\n"
	"                         each collective back and why, on stdout; with -o\n"
	"                         FILE.job.json the report, and beside it FILE.trace.json\n"
	"                         (Perfetto: the ranks on one clock, collectives linked)\n"
	"                         and FILE.diff.svg (the straggler against the median rank)\n"
	"      --job ID / --rank LIST   only that job's processes, those ranks (0,2-3), on\n"
	"                         every host (and the job the straggler report compares)\n"
	"Exit status: 0 every host answered; 5 some did (the profile is partial); 3 none did;\n"
	"2 usage error.\n";

static bool parse_secs(const char *arg, double lo, double hi, double *ret)
{
	char *end;

	*ret = strtod(arg, &end);
	return end != arg && !*end && isfinite(*ret) && *ret >= lo && *ret <= hi;
}

/* "Authorization: Bearer TOKEN" from a file only its owner can read. */
static int read_token(struct fleet *f)
{
	char tok[512] = "";
	struct stat st;
	FILE *in = fopen(f->token_file, "re");
	size_t n;

	if (!in)
		return -errno;
	if (fstat(fileno(in), &st) || (st.st_mode & 0077)) {
		fclose(in);
		return -EPERM;
	}
	n = fread(tok, 1, sizeof(tok) - 1, in);
	fclose(in);
	while (n && (tok[n - 1] == '\n' || tok[n - 1] == '\r' || tok[n - 1] == ' '))
		tok[--n] = '\0';
	if (!n)
		return -EINVAL;
	if (asprintf(&f->auth, "Authorization: Bearer %s", tok) < 0)
		return -ENOMEM;
	return 0;
}

enum {
	FO_SINCE = 256,
	FO_PID,
	FO_COMM,
	FO_GPU_MODE,
	FO_BY,
	FO_SELECT,
	FO_TOKEN,
	FO_CACERT,
	FO_CERT,
	FO_KEY,
	FO_PARALLEL,
	FO_HOST_TIMEOUT,
	FO_DEADLINE,
	FO_GROUP_BY,
	FO_RANGE_DOMAIN,
	FO_REPORT,
	FO_DUMP,
	FO_JOB,
	FO_RANK,
};

static int fleet_opt(struct fleet *f, int c, const char *arg)
{
	struct job_filter jf = {0};
	char *end;

	switch (c) {
	case 'f':
		return fleet__read_hosts(f, arg) ? FLEET_USAGE : 0;
	case 'o':
		f->out = arg;
		return 0;
	case 'd':
		return parse_secs(arg, 1, 3600, &f->duration)
			       ? 0
			       : fleet_usage_error("--duration: expected 1..3600 seconds", arg);
	case FO_SINCE:
		return parse_secs(arg, 1, 7 * 24 * 3600, &f->since)
			       ? 0
			       : fleet_usage_error("--since: expected 1..604800 seconds", arg);
	case FO_HOST_TIMEOUT:
	case FO_DEADLINE:
		return parse_secs(arg, 0.1, 86400,
				  c == FO_DEADLINE ? &f->deadline : &f->host_timeout)
			       ? 0
			       : fleet_usage_error("expected 0.1..86400 seconds", arg);
	case FO_PARALLEL:
		f->parallel = strtoul(arg, &end, 10);
		return *end || !f->parallel || f->parallel > FLEET_MAX_PARALLEL
			       ? fleet_usage_error("--parallel: expected 1..1024", arg)
			       : 0;
	case FO_SELECT:
		if (!strchr(arg, '=') || f->nr_select == FLEET_MAX_LABELS)
			return fleet_usage_error("--select: expected KEY=VALUE (at most 16)", arg);
		f->select[f->nr_select++] = arg;
		return 0;
	case FO_GPU_MODE: {
		enum gpu_mode mode;

		if (profile__mode_from_name(arg, &mode))
			return fleet_usage_error("--gpu-mode: expected cpu, gpu or merged", arg);
		f->gpu_mode = arg;
		return 0;
	}
	case FO_PID:
		return strspn(arg, "0123456789,") != strlen(arg) || !*arg
			       ? fleet_usage_error("--pid: expected N[,N...]", arg)
			       : (f->pid = arg, 0);
	case FO_COMM:
		return strspn(arg,
			      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
					       strlen(arg) ||
				       !*arg || strlen(arg) > 15
			       ? fleet_usage_error("--comm: expected a process name (letters, "
						   "digits, . _ -; at most 15)",
						   arg)
			       : (f->comm = arg, 0);
	case FO_BY:
		f->by = arg;
		return 0;
	case FO_GROUP_BY:
		if (session_group__from_name(arg, &(enum session_group){0}))
			return fleet_usage_error(
				"--group-by: expected unit, container, comm, rank, "
				"job, range or outer-range",
				arg);
		f->group_by = arg;
		return 0;
	case FO_RANGE_DOMAIN:
		/* Into a URL as it is: what a domain name needs, nothing to escape. */
		if (!*arg || strlen(arg) > 63 ||
		    strspn(arg,
			   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-:") !=
			    strlen(arg))
			return fleet_usage_error("--range-domain: expected an NVTX domain's name "
						 "(letters, digits, . _ - :; at most 63)",
						 arg);
		f->range_domain = arg;
		return 0;
	case FO_DUMP:
		return parse_secs(arg, 1, 3600, &f->dump_before)
			       ? 0
			       : fleet_usage_error("--dump: expected 1..3600 seconds before", arg);
	case FO_REPORT:
		if (strcmp(arg, "gpu") && strcmp(arg, "straggler"))
			return fleet_usage_error("--report: expected gpu or straggler", arg);
		f->gpu_report = !strcmp(arg, "gpu");
		f->straggler = !f->gpu_report;
		return 0;
	case FO_JOB:
		if (job_filter__set_job(&jf, arg))
			return fleet_usage_error("--job: expected " JOB_FILTER_JOB_HELP, arg);
		f->job = arg;
		return 0;
	case FO_RANK:
		if (job_filter__set_ranks(&jf, arg))
			return fleet_usage_error("--rank: expected " JOB_FILTER_RANK_HELP, arg);
		f->rank = arg;
		return 0;
	case FO_TOKEN:
		f->token_file = arg;
		return 0;
	case FO_CACERT:
		f->cacert = arg;
		return 0;
	case FO_CERT:
		f->cert = arg;
		return 0;
	case FO_KEY:
		f->key = arg;
		return 0;
	case 'h':
		fputs(fleet_usage, stdout);
		return -1;
	default:
		return fleet_usage_error("unknown option or missing value", NULL);
	}
}

/* --report gpu: every host's recording, or with --since its window's reports; no grouping. */
static int gpu_report_checks(struct fleet *f)
{
	enum output_format fmt;

	if (f->out && (output__format_from_path(f->out, &fmt) || fmt != OUTPUT_GPU_REPORT))
		return fleet_usage_error("--report gpu writes its hosts' reports to FILE.gpu.json",
					 f->out);
	if (f->group_by || f->gpu_mode)
		return fleet_usage_error("--report gpu takes no --group-by or --gpu-mode", NULL);
	return 0;
}

int fleet__parse(struct fleet *f, int argc, char **argv)
{
	static const struct option lo[] = {
		{"hosts", required_argument, NULL, 'f'},
		{"output", required_argument, NULL, 'o'},
		{"duration", required_argument, NULL, 'd'},
		{"since", required_argument, NULL, FO_SINCE},
		{"pid", required_argument, NULL, FO_PID},
		{"comm", required_argument, NULL, FO_COMM},
		{"gpu-mode", required_argument, NULL, FO_GPU_MODE},
		{"group-by", required_argument, NULL, FO_GROUP_BY},
		{"range-domain", required_argument, NULL, FO_RANGE_DOMAIN},
		{"by", required_argument, NULL, FO_BY},
		{"select", required_argument, NULL, FO_SELECT},
		{"token-file", required_argument, NULL, FO_TOKEN},
		{"cacert", required_argument, NULL, FO_CACERT},
		{"cert", required_argument, NULL, FO_CERT},
		{"key", required_argument, NULL, FO_KEY},
		{"parallel", required_argument, NULL, FO_PARALLEL},
		{"host-timeout", required_argument, NULL, FO_HOST_TIMEOUT},
		{"deadline", required_argument, NULL, FO_DEADLINE},
		{"report", required_argument, NULL, FO_REPORT},
		{"dump", required_argument, NULL, FO_DUMP},
		{"job", required_argument, NULL, FO_JOB},
		{"rank", required_argument, NULL, FO_RANK},
		{"help", no_argument, NULL, 'h'},
		{}};
	enum output_format fmt;
	int c, st;

	optind = 0; /* glibc: 0 re-initialises getopt (main stopped at the command with "+") */
	while ((c = getopt_long(argc, argv, "f:o:d:h", lo, NULL)) != -1)
		if ((st = fleet_opt(f, c, optarg)))
			return st;
	for (int i = optind; i < argc; i++) {
		char line[FLEET_LINE_MAX];

		snprintf(line, sizeof(line), "%s", argv[i]);
		if (strchr(line, ' ') || fleet__add_host_line(f, line))
			return fleet_usage_error("bad host", argv[i]);
	}
	if (!f->nr)
		return fleet_usage_error("no hosts: give HOST[:PORT] arguments or --hosts FILE",
					 NULL);
	if (f->gpu_report && (st = gpu_report_checks(f)))
		return st;
	if (f->straggler && (st = fleet_job__checks(f)))
		return st;
	if (f->dump_before > 0 && (f->out || f->gpu_report || f->straggler || f->since > 0 ||
				   f->pid || f->comm || f->group_by || f->gpu_mode))
		return fleet_usage_error("--dump asks each host's flight recorder for a dump: no "
					 "-o, --report, --since, --pid, --comm, --group-by or "
					 "--gpu-mode",
					 NULL);
	if (f->dump_before > 0)
		goto credentials;
	if (!f->out && !f->gpu_report && !f->straggler)
		return fleet_usage_error("--output FILE is needed", NULL);
	if (!f->gpu_report && !f->straggler &&
	    (output__format_from_path(f->out, &fmt) ||
	     !output__format_allowed(fmt, OUTPUT_IN_FLEET)) &&
	    !(strlen(f->out) > 5 && !strcmp(f->out + strlen(f->out) - 5, ".json"))) {
		char list[160], msg[200];

		snprintf(msg, sizeof(msg), "--output: use %s (or .json: every host's stacks)",
			 output__format_list(OUTPUT_IN_FLEET, true, list, sizeof(list)));
		return fleet_usage_error(msg, f->out);
	}
	if (!f->cert != !f->key)
		return fleet_usage_error("--cert and --key go together", NULL);
	if (f->since > 0 && f->pid)
		return fleet_usage_error("--since reads the machine's window: no --pid", NULL);
	/* A window groups by range only (xsprofd --window-group-by), all domains. */
	if (f->since > 0 && f->group_by && strcmp(f->group_by, "range") &&
	    strcmp(f->group_by, "outer-range"))
		return fleet_usage_error(
			"--group-by unit, container, comm, rank or job groups a recording "
			"(--duration): the machine's window (--since) groups by "
			"range or outer-range only",
			NULL);
	if (f->range_domain &&
	    (!f->group_by || (strcmp(f->group_by, "range") && strcmp(f->group_by, "outer-range"))))
		return fleet_usage_error("--range-domain goes with --group-by range or outer-range",
					 NULL);
	if (f->range_domain && f->since > 0)
		return fleet_usage_error("--range-domain keeps one domain of a recording "
					 "(--duration): a window groups by all of them",
					 NULL);
credentials:
	if (f->token_file) {
		st = read_token(f);
		if (st) {
			fprintf(stderr, "xsprofctl fleet: --token-file %s: %s\n", f->token_file,
				st == -EPERM ? "readable by others: chmod 600 it" : strerror(-st));
			return FLEET_USAGE;
		}
	}
	return 0;
}
