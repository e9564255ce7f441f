// SPDX-License-Identifier: Apache-2.0
/* xsprofd's flags: the getopt pass, each flag's handler, the defaults; one parser for the
 * command line and the config file (options_config.c). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/xsprof_events.h"
#include "daemon/base/flight_rule.h"
#include "daemon/options.h"
#include "daemon/options_internal.h"
#include "daemon/unwind/unwinder.h"
#include "output/output.h"
#include "output/model/profile.h"

#define DEFAULT_MAX_STACKS   1000000
#define DEFAULT_WINDOW_S     300
#define DEFAULT_STORE_MB     64
#define DEFAULT_MAX_RECORD_S 3600

enum {
	OPT_FORMAT = 0x100,
	OPT_LIST_FORMATS,
	OPT_LIST_TRIGGERS,
	OPT_CONTINUE_STOPPED,
	OPT_INCLUDE_IDLE,
	OPT_NO_CHILDREN,
	OPT_NO_DEMANGLE,
	OPT_RING_SIZE,
	OPT_MAX_STACKS,
	OPT_SOCKET,
	OPT_SOCKET_GROUP,
	OPT_LISTEN,
	OPT_TOKEN_FILE,
	OPT_TLS_CERT,
	OPT_TLS_KEY,
	OPT_TLS_CLIENT_CA,
	OPT_LISTEN_ALLOW_WRITES,
	OPT_WINDOW,
	OPT_STORE_MB,
	OPT_MAX_RECORD,
	OPT_WINDOW_GROUP_BY,
	OPT_EXPORT,
	OPT_EXPORT_LABEL,
	OPT_EXPORT_QUEUE_KB,
	OPT_WINDOW_RANGE_WAIT,
	OPT_FLIGHT_MB,
	OPT_FLIGHT_SECONDS,
	OPT_DUMP_DIR,
	OPT_DUMP_KEEP,
	OPT_DUMP_KEEP_MB,
	OPT_TRIGGER,
	OPT_CUPTI_SOCKET,
	OPT_DEBUG_DIR,
	OPT_DEBUGINFOD,
	OPT_SYMBOL_CACHE_MB,
	OPT_DEBUG_INFO,
	OPT_UNWIND,
	OPT_UNWIND_MB,
	OPT_NO_PYTHON,
	OPT_NO_AUTOGRAD,
	OPT_AUTOGRAD,
	OPT_WAKERS,
	OPT_MAX_CPU,
	/* GPU path (cuda_probes) */
	OPT_CUDA_LIB,
	OPT_NO_CUDA,
	OPT_LAUNCHES_OUTPUT,
	OPT_STATS,
	OPT_CORRELATE,
	OPT_CORRELATE_CHECK,
	OPT_GPU_STORE_MB,
	OPT_GPU_MODE,
	OPT_WEIGHT,
	OPT_MODE,
	OPT_MIN_BLOCK_US,
	OPT_REPORT,
	OPT_COMM,
	OPT_CGROUP,
	OPT_UNIT,
	OPT_TID,
	OPT_GROUP_BY,
	OPT_RANGE_DOMAIN,
	OPT_JOB,
	OPT_RANK,
};

const struct option opts__long_opts[] = {
	{"foreground", no_argument, NULL, 'f'},
	{"duration", required_argument, NULL, 'd'},
	{"freq", required_argument, NULL, 'F'},
	{"pid", required_argument, NULL, 'p'},
	{"output", required_argument, NULL, 'o'},
	{"format", required_argument, NULL, OPT_FORMAT},
	{"list-formats", no_argument, NULL, OPT_LIST_FORMATS},
	{"list-triggers", no_argument, NULL, OPT_LIST_TRIGGERS},
	{"continue-stopped", no_argument, NULL, OPT_CONTINUE_STOPPED},
	{"config", required_argument, NULL, 'c'},
	{"include-idle", no_argument, NULL, OPT_INCLUDE_IDLE},
	{"no-children", no_argument, NULL, OPT_NO_CHILDREN},
	{"no-demangle", no_argument, NULL, OPT_NO_DEMANGLE},
	{"ring-buffer-size", required_argument, NULL, OPT_RING_SIZE},
	{"max-stacks", required_argument, NULL, OPT_MAX_STACKS},
	{"socket", required_argument, NULL, OPT_SOCKET},
	{"socket-group", required_argument, NULL, OPT_SOCKET_GROUP},
	{"listen", required_argument, NULL, OPT_LISTEN},
	{"token-file", required_argument, NULL, OPT_TOKEN_FILE},
	{"tls-cert", required_argument, NULL, OPT_TLS_CERT},
	{"tls-key", required_argument, NULL, OPT_TLS_KEY},
	{"tls-client-ca", required_argument, NULL, OPT_TLS_CLIENT_CA},
	{"listen-allow-writes", no_argument, NULL, OPT_LISTEN_ALLOW_WRITES},
	{"window", required_argument, NULL, OPT_WINDOW},
	{"store-mb", required_argument, NULL, OPT_STORE_MB},
	{"max-record", required_argument, NULL, OPT_MAX_RECORD},
	{"window-group-by", required_argument, NULL, OPT_WINDOW_GROUP_BY},
	{"export", required_argument, NULL, OPT_EXPORT},
	{"export-label", required_argument, NULL, OPT_EXPORT_LABEL},
	{"export-queue-kb", required_argument, NULL, OPT_EXPORT_QUEUE_KB},
	{"window-range-wait", required_argument, NULL, OPT_WINDOW_RANGE_WAIT},
	{"flight-mb", required_argument, NULL, OPT_FLIGHT_MB},
	{"flight-seconds", required_argument, NULL, OPT_FLIGHT_SECONDS},
	{"dump-dir", required_argument, NULL, OPT_DUMP_DIR},
	{"dump-keep", required_argument, NULL, OPT_DUMP_KEEP},
	{"dump-keep-mb", required_argument, NULL, OPT_DUMP_KEEP_MB},
	{"trigger", required_argument, NULL, OPT_TRIGGER},
	{"cupti-socket", required_argument, NULL, OPT_CUPTI_SOCKET},
	{"debug-dir", required_argument, NULL, OPT_DEBUG_DIR},
	{"debuginfod", no_argument, NULL, OPT_DEBUGINFOD},
	{"symbol-cache-mb", required_argument, NULL, OPT_SYMBOL_CACHE_MB},
	{"debug-info", no_argument, NULL, OPT_DEBUG_INFO},
	{"unwind", required_argument, NULL, OPT_UNWIND},
	{"unwind-mb", required_argument, NULL, OPT_UNWIND_MB},
	{"no-python", no_argument, NULL, OPT_NO_PYTHON},
	{"no-autograd", no_argument, NULL, OPT_NO_AUTOGRAD},
	{"autograd", no_argument, NULL, OPT_AUTOGRAD},
	{"wakers", no_argument, NULL, OPT_WAKERS},
	{"max-cpu", required_argument, NULL, OPT_MAX_CPU},
	/* GPU path (cuda_probes) */
	{"cuda-lib", required_argument, NULL, OPT_CUDA_LIB},
	{"no-cuda", no_argument, NULL, OPT_NO_CUDA},
	{"launches-output", required_argument, NULL, OPT_LAUNCHES_OUTPUT},
	{"stats", required_argument, NULL, OPT_STATS},
	{"correlate", required_argument, NULL, OPT_CORRELATE},
	{"correlate-check", no_argument, NULL, OPT_CORRELATE_CHECK},
	{"gpu-store-mb", required_argument, NULL, OPT_GPU_STORE_MB},
	{"gpu-mode", required_argument, NULL, OPT_GPU_MODE},
	{"weight", required_argument, NULL, OPT_WEIGHT},
	{"mode", required_argument, NULL, OPT_MODE},
	{"min-block-us", required_argument, NULL, OPT_MIN_BLOCK_US},
	{"report", optional_argument, NULL, OPT_REPORT},
	{"comm", required_argument, NULL, OPT_COMM},
	{"cgroup", required_argument, NULL, OPT_CGROUP},
	{"unit", required_argument, NULL, OPT_UNIT},
	{"tid", required_argument, NULL, OPT_TID},
	{"group-by", required_argument, NULL, OPT_GROUP_BY},
	{"range-domain", required_argument, NULL, OPT_RANGE_DOMAIN},
	{"job", required_argument, NULL, OPT_JOB},
	{"rank", required_argument, NULL, OPT_RANK},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{},
};

/* Under the journal, errors need their priority (a reload's bad config must show as an error). */
const char *opts__errp(void)
{
	return getenv("JOURNAL_STREAM") ? "<3>" : "";
}

const char *opts__origin;

/* The lists (pid, tid, cuda-lib, debug-dir) the command line has started: a flag wins over the
 * config file, so its first one replaces what the file listed. */
enum { LIST_PIDS = 1, LIST_TIDS = 2, LIST_CUDA_LIBS = 4, LIST_DEBUG_DIRS = 8 };
static unsigned lists_from_flags;

static void list_entry(unsigned list, int *n)
{
	if (opts__origin || (lists_from_flags & list))
		return;
	lists_from_flags |= list;
	*n = 0;
}

int opts__bad(const char *flag, const char *arg, const char *why)
{
	if (opts__origin) {
		fprintf(stderr, "%sxsprofd: %s: %s '%s': %s\n", opts__errp(), opts__origin,
			!strncmp(flag, "--", 2) ? flag + 2 : flag, arg, why);
		return 2;
	}
	fprintf(stderr, "%sxsprofd: %s '%s': %s\n", opts__errp(), flag, arg, why);
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

/* A comma list of ids (--pid, --tid) appended to ids[*n], at most 1024. */
static int add_ids(const char *flag, const char *arg, pid_t *ids, int *n)
{
	char buf[4096], *tok, *next;
	unsigned long v;

	if (strlen(arg) >= sizeof(buf))
		return opts__bad(flag, "...", "list too long");
	strcpy(buf, arg);
	/* strtok would skip empty items: "1,,2" and "1," are typing mistakes, said so. */
	for (tok = buf; tok; tok = next) {
		next = strchr(tok, ',');
		if (next)
			*next++ = '\0';
		if (!*tok)
			return opts__bad("--pid", arg, "an empty item in the list");
		if (!parse_ulong(tok, 1, INT_MAX, &v))
			return opts__bad(flag, tok,
					 !strcmp(flag, "--tid") ? "not a thread id"
								: "not a process id");
		if (*n == XSPROFD_MAX_PIDS)
			return opts__bad(flag, tok, "too many ids (at most 1024)");
		ids[(*n)++] = (pid_t)v;
	}
	return 0;
}

static int add_pids(struct xsprofd_opts *o, const char *arg)
{
	list_entry(LIST_PIDS, &o->nr_pids);
	return add_ids("--pid", arg, o->pids, &o->nr_pids);
}

static void defaults(struct xsprofd_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_stacks = DEFAULT_MAX_STACKS;
	o->socket_path = XSPROFD_DEFAULT_SOCKET;
	o->socket_group = "xsprof";
	o->window_s = DEFAULT_WINDOW_S;
	o->window_range_wait_s = 9;
	o->store_mb = DEFAULT_STORE_MB;
	o->export_queue_kb = 64 * 1024;
	o->flight_mb = 256;
	o->flight_s = 120;
	o->dump_dir = XSPROFD_DEFAULT_DUMP_DIR;
	o->dump_keep = 20;
	o->dump_keep_mb = 1024;
	o->max_record_s = DEFAULT_MAX_RECORD_S;
	o->cupti_socket = XSPROFD_DEFAULT_CUPTI_SOCKET;
	o->correlate = "auto";
	o->unwind = XSPROF_UNWIND_AUTO;
}

static int unsigned_opt(const char *flag, const char *arg, unsigned long min, unsigned long max,
			unsigned int *ret)
{
	unsigned long v;
	char why[96];

	if (!parse_ulong(arg, min, max, &v)) {
		snprintf(why, sizeof(why), "expected a whole number in %lu..%lu", min, max);
		return opts__bad(flag, arg, why);
	}
	*ret = (unsigned int)v;
	return 0;
}

/* GPU path (cuda_probes): its flags, the command after "--", and their checks. */
static int gpu_option(struct xsprofd_opts *o, int c, const char *arg)
{
	enum weight_unit unit;
	enum gpu_mode mode;

	switch (c) {
	case OPT_CUDA_LIB:
		list_entry(LIST_CUDA_LIBS, &o->nr_cuda_libs);
		if (o->nr_cuda_libs == XSPROFD_MAX_CUDA_LIBS)
			return opts__bad("--cuda-lib", arg, "too many libraries (at most 8)");
		if (!*arg)
			return opts__bad("--cuda-lib", arg, "empty path");
		o->cuda_libs[o->nr_cuda_libs++] = arg;
		return 0;
	case OPT_NO_CUDA:
		o->no_cuda = true;
		return 0;
	case OPT_LAUNCHES_OUTPUT:
		if (opts__origin)
			return opts__bad("--launches-output", arg,
					 "only a command-line flag, not a config key");
		if (!*arg)
			return opts__bad("--launches-output", arg, "empty file name");
		o->launch_output = arg;
		return 0;
	case OPT_CORRELATE:
		if (!correlate__find(arg))
			return opts__bad("--correlate", arg, "use id, timestamp, stream or auto");
		o->correlate = arg;
		return 0;
	case OPT_GPU_STORE_MB:
		return unsigned_opt("--gpu-store-mb", arg, 16, 65536, &o->gpu_store_mb);
	case OPT_CORRELATE_CHECK:
		if (opts__origin)
			return opts__bad("--correlate-check", "",
					 "only a command-line flag, not a config key");
		o->correlate_check = true;
		return 0;
	case OPT_GPU_MODE:
		if (profile__mode_from_name(arg, &mode))
			return opts__bad("--gpu-mode", arg, "use cpu, gpu or merged");
		o->gpu_mode = mode;
		o->gpu_mode_set = true;
		return 0;
	case OPT_WEIGHT:
		if (profile__unit_from_name(arg, &unit))
			return opts__bad("--weight", arg, "use samples or us");
		o->weight = unit;
		return 0;
	}
	return 0;
}

/* --mode, --min-block-us, --report: one-shot flags only. */
static int mode_option(struct xsprofd_opts *o, int c, const char *arg)
{
	static const char *const names[] = {
		"--mode", "--min-block-us", "--report",	      "--comm", "--cgroup", "--unit",
		"--tid",  "--group-by",	    "--range-domain", "--job",	"--rank"};
	const char *flag = names[c - OPT_MODE];

	if (opts__origin)
		return opts__bad(flag, arg ? arg : "",
				 "only a command-line flag, not a config key");
	switch (c) {
	case OPT_MODE:
		if (session_mode__from_name(arg, &o->mode))
			return opts__bad(flag, arg, "use cpu, offcpu or wall");
		return 0;
	case OPT_MIN_BLOCK_US:
		return unsigned_opt(flag, arg, 1, 60 * 1000 * 1000, &o->min_block_us);
	case OPT_REPORT:
		if (arg && !strcmp(arg, "gpu"))
			o->report_gpu = true;
		else if (arg && !strcmp(arg, "job"))
			o->report_job = true;
		else if (!arg || !strcmp(arg, "cpu"))
			o->report = true;
		else
			return opts__bad(flag, arg, "use cpu (the default), gpu or job");
		return 0;
	case OPT_COMM:
		if (!*arg || strlen(arg) > 15)
			return opts__bad(flag, arg,
					 "a process name of 1 to 15 characters (the kernel's "
					 "comm)");
		o->comm = arg;
		return 0;
	case OPT_CGROUP:
	case OPT_UNIT:
		if (!*arg || strstr(arg, ".."))
			return opts__bad(flag, arg, "empty, or with '..'");
		if (o->cgroup || o->unit)
			return opts__bad(flag, arg, "one of --cgroup and --unit, once");
		*(c == OPT_CGROUP ? &o->cgroup : &o->unit) = arg;
		return 0;
	case OPT_TID:
		list_entry(LIST_TIDS, &o->nr_tids);
		return add_ids(flag, arg, o->tids, &o->nr_tids);
	case OPT_GROUP_BY:
		if (session_group__from_name(arg, &o->group_by))
			return opts__bad(
				flag, arg,
				"use unit, container, comm, rank, job, range or outer-range");
		return 0;
	case OPT_RANGE_DOMAIN:
		if (!*arg)
			return opts__bad(flag, arg,
					 "a domain's name, or default for NVTX's default domain");
		o->range_domain = arg;
		return 0;
	case OPT_JOB:
		if (job_filter__set_job(&o->job_filter, arg))
			return opts__bad(flag, arg, JOB_FILTER_JOB_HELP);
		o->job = arg;
		return 0;
	case OPT_RANK:
		if (job_filter__set_ranks(&o->job_filter, arg))
			return opts__bad(flag, arg, JOB_FILTER_RANK_HELP);
		o->rank = arg;
		return 0;
	}
	return 0;
}

/* Words left after the flags: a command only after "--" on the command line. */
static int gpu_command(struct xsprofd_opts *o, int argc, char **argv)
{
	if (opts__origin || optind == 0 || strcmp(argv[optind - 1], "--"))
		return opts__bad("argument", argv[optind],
				 "unexpected; options take the forms shown in --help (a command to "
				 "run goes after --)");
	o->command = argv + optind;
	o->nr_command = argc - optind;
	return 0;
}

/* ---- */

/* What an option handler returns for a flag that is not its own. */
#define NOT_MINE (-1)

/* -f, -d, -o, --format, -c: one-shot and command-line flags. */
static int oneshot_option(struct xsprofd_opts *o, int c, char *arg, const char **force_format)
{
	enum output_format fmt;
	char *end;

	switch (c) {
	case 'f':
		o->foreground = true;
		return 0;
	case OPT_STATS:
		if (opts__origin)
			return opts__bad("--stats", arg,
					 "only a command-line flag, not a config key");
		if (!*arg)
			return opts__bad("--stats", arg, "empty file name");
		o->stats_path = arg;
		return 0;
	case 'd':
		errno = 0;
		o->duration_s = strtod(arg, &end);
		if (errno || *end || !*arg || !isfinite(o->duration_s) || o->duration_s <= 0 ||
		    o->duration_s > 31 * 24 * 3600.0)
			return opts__bad("--duration", arg, "expected seconds > 0, e.g. 10 or 0.5");
		return 0;
	case 'o':
		if (o->nr_outputs == XSPROFD_MAX_OUTPUTS)
			return opts__bad("--output", arg, "too many outputs (at most 8)");
		if (!*arg)
			return opts__bad("--output", arg, "empty file name");
		o->outputs[o->nr_outputs++].path = arg;
		return 0;
	case 'c':
		o->config_path = arg; /* read before this pass */
		return 0;
	case OPT_FORMAT:
		if (output__format_from_name(arg, &fmt) ||
		    !output__format_allowed(fmt, OUTPUT_IN_ONESHOT)) {
			char list[256], msg[300];

			snprintf(msg, sizeof(msg), "expected %s",
				 output__format_list(OUTPUT_IN_ONESHOT, false, list, sizeof(list)));
			return opts__bad("--format", arg, msg);
		}
		*force_format = arg;
		return 0;
	}
	return NOT_MINE;
}

/* What is sampled and how: frequency, pids, idle, buffers, caps, unwinding. */
static int sampling_option(struct xsprofd_opts *o, int c, const char *arg)
{
	unsigned long v;

	switch (c) {
	case 'F':
		if (!parse_ulong(arg, 1, 10000, &v))
			return opts__bad("--freq", arg, "expected 1..10000 samples per second");
		o->freq_hz = v;
		o->freq_set = true;
		return 0;
	case 'p':
		return add_pids(o, arg);
	case OPT_INCLUDE_IDLE:
		o->include_idle = true;
		return 0;
	case OPT_NO_CHILDREN:
		o->no_children = true;
		return 0;
	case OPT_RING_SIZE:
		if (!parse_ulong(arg, 1, 1024, &v) || (v & (v - 1)))
			return opts__bad("--ring-buffer-size", arg,
					 "expected a power of two in MiB, 1..1024");
		o->ring_buffer_bytes = (uint32_t)(v << 20);
		return 0;
	case OPT_MAX_STACKS:
		return unsigned_opt("--max-stacks", arg, 1, 100000000, &o->max_stacks);
	case OPT_UNWIND:
		if (!strcmp(arg, "auto"))
			o->unwind = XSPROF_UNWIND_AUTO;
		else if (!strcmp(arg, "fp"))
			o->unwind = XSPROF_UNWIND_FP;
		else if (!strcmp(arg, "cfi"))
			o->unwind = XSPROF_UNWIND_CFI;
		else
			return opts__bad("--unwind", arg, "use auto, fp or cfi");
		return 0;
	case OPT_UNWIND_MB:
		return unsigned_opt("--unwind-mb", arg, UNWINDER_MIN_MB, UNWINDER_MAX_MB,
				    &o->unwind_mb);
	case OPT_NO_PYTHON:
		o->no_python = true;
		return 0;
	case OPT_NO_AUTOGRAD:
		o->no_autograd = true;
		o->autograd = false;
		return 0;
	case OPT_AUTOGRAD:
		o->autograd = true;
		o->no_autograd = false;
		return 0;
	case OPT_WAKERS:
		o->wakers = true;
		return 0;
	case OPT_MAX_CPU: {
		char *end;
		double pct = strtod(arg, &end);

		if (end == arg || *end || !(pct >= 0.01 && pct <= 100))
			return opts__bad(
				"--max-cpu", arg,
				"expected a percent of the whole machine, 0.01..100 (e.g. 1)");
		o->max_cpu_pct = pct;
		return 0;
	}
	}
	return NOT_MINE;
}

/* The flight recorder is the service's: a one-shot run given one of its flags on the command
 * line says so (a config file describes the service: its keys are the service's to use). */
static void flight_flag(struct xsprofd_opts *o, const char *flag, const char *arg)
{
	if (!opts__origin && !o->flight_flag) {
		o->flight_flag = flag;
		o->flight_arg = arg;
	}
}

/* The service: sockets, network listener, window, recordings. */
static int service_option(struct xsprofd_opts *o, int c, const char *arg)
{
	switch (c) {
	case OPT_CONTINUE_STOPPED:
		o->continue_stopped = true;
		return 0;
	case OPT_SOCKET:
	case OPT_CUPTI_SOCKET:
		if (arg[0] != '/' || strlen(arg) >= 108)
			return opts__bad(c == OPT_SOCKET ? "--socket" : "--cupti-socket", arg,
					 "expected an absolute path under 108 bytes");
		*(c == OPT_SOCKET ? &o->socket_path : &o->cupti_socket) = arg;
		return 0;
	case OPT_SOCKET_GROUP:
		if (!*arg)
			return opts__bad("--socket-group", arg, "empty group name");
		o->socket_group = arg;
		return 0;
	case OPT_LISTEN:
		if (!strchr(arg, ':'))
			return opts__bad("--listen", arg,
					 "expected ADDR:PORT, e.g. 127.0.0.1:7717");
		o->listen_addr = arg;
		return 0;
	case OPT_TOKEN_FILE:
		o->token_file = arg;
		return 0;
	case OPT_TLS_CERT:
		o->tls_cert = arg;
		return 0;
	case OPT_TLS_KEY:
		o->tls_key = arg;
		return 0;
	case OPT_TLS_CLIENT_CA:
		o->tls_client_ca = arg;
		return 0;
	case OPT_LISTEN_ALLOW_WRITES:
		o->listen_allow_writes = true;
		return 0;
	case OPT_WINDOW:
		return unsigned_opt("--window", arg, 10, 7 * 24 * 3600, &o->window_s);
	case OPT_STORE_MB:
		return unsigned_opt("--store-mb", arg, 1, 1 << 20, &o->store_mb);
	case OPT_MAX_RECORD:
		return unsigned_opt("--max-record", arg, 1, 7 * 24 * 3600, &o->max_record_s);
	case OPT_EXPORT:
		if (o->nr_exports == XSPROFD_MAX_EXPORTS)
			return opts__bad("--export", arg, "at most 4 sinks");
		o->exports[o->nr_exports++] = arg;
		return 0;
	case OPT_EXPORT_LABEL:
		if (o->nr_export_labels == XSPROFD_MAX_EXPORT_LABELS)
			return opts__bad("--export-label", arg, "at most 16 labels");
		if (!strchr(arg, '=') || arg[0] == '=')
			return opts__bad("--export-label", arg, "expected KEY=VALUE");
		o->export_labels[o->nr_export_labels++] = arg;
		return 0;
	case OPT_EXPORT_QUEUE_KB:
		return unsigned_opt("--export-queue-kb", arg, 16, 4 << 20, &o->export_queue_kb);
	case OPT_WINDOW_GROUP_BY:
		if (session_group__from_name(arg, &o->window_group_by) ||
		    !session_group__is_range(o->window_group_by))
			return opts__bad("--window-group-by", arg, "use range or outer-range");
		return 0;
	case OPT_WINDOW_RANGE_WAIT:
		return unsigned_opt("--window-range-wait", arg, 1, 600, &o->window_range_wait_s);
	case OPT_FLIGHT_MB:
		flight_flag(o, "--flight-mb", arg);
		return unsigned_opt("--flight-mb", arg, 0, 65536, &o->flight_mb);
	case OPT_FLIGHT_SECONDS:
		flight_flag(o, "--flight-seconds", arg);
		return unsigned_opt("--flight-seconds", arg, 20, 3600, &o->flight_s);
	case OPT_DUMP_DIR:
		flight_flag(o, "--dump-dir", arg);
		if (arg[0] != '/')
			return opts__bad("--dump-dir", arg, "expected an absolute path");
		o->dump_dir = arg;
		return 0;
	case OPT_DUMP_KEEP:
		flight_flag(o, "--dump-keep", arg);
		return unsigned_opt("--dump-keep", arg, 1, 10000, &o->dump_keep);
	case OPT_DUMP_KEEP_MB:
		flight_flag(o, "--dump-keep-mb", arg);
		return unsigned_opt("--dump-keep-mb", arg, 1, 1 << 20, &o->dump_keep_mb);
	case OPT_TRIGGER: {
		struct flight_rule r;
		char why[200];

		if (o->nr_triggers == XSPROFD_MAX_TRIGGERS)
			return opts__bad("--trigger", arg, "at most 8 triggers");
		if (flight_rule__parse(arg, &r, why, sizeof(why)))
			return opts__bad("--trigger", arg, why);
		flight_flag(o, "--trigger", arg);
		o->triggers[o->nr_triggers++] = arg;
		return 0;
	}
	}
	return NOT_MINE;
}

/* Naming: demangling, debug files, debuginfod, the symbol cache, source lines. */
static int symbol_option(struct xsprofd_opts *o, int c, const char *arg)
{
	switch (c) {
	case OPT_NO_DEMANGLE:
		o->no_demangle = true;
		return 0;
	case OPT_DEBUG_DIR:
		list_entry(LIST_DEBUG_DIRS, &o->nr_debug_dirs);
		if (o->nr_debug_dirs == 16)
			return opts__bad("--debug-dir", arg, "at most 16 debug directories");
		if (arg[0] != '/')
			return opts__bad("--debug-dir", arg, "expected an absolute path");
		o->debug_dirs[o->nr_debug_dirs++] = arg;
		return 0;
	case OPT_DEBUGINFOD:
		o->debuginfod = true;
		return 0;
	case OPT_SYMBOL_CACHE_MB:
		return unsigned_opt("--symbol-cache-mb", arg, 1, 1 << 20, &o->symbol_cache_mb);
	case OPT_DEBUG_INFO:
		o->debug_info = true;
		return 0;
	}
	return NOT_MINE;
}

/* -v, -h, -V and getopt's complaints: 1 to stop (help, version), 2 for a bad flag. */
static int meta_option(struct xsprofd_opts *o, int c, char **argv)
{
	switch (c) {
	case 'v':
		o->verbose++;
		return 0;
	case 'h':
		opts_help__print(stdout);
		return 1;
	case OPT_LIST_FORMATS:
		opts_help__list_formats(stdout);
		return 1;
	case OPT_LIST_TRIGGERS:
		opts_help__list_triggers(stdout);
		return 1;
	case 'V':
		printf("xsprofd %s\n", XSPROF_VERSION);
		return 1;
	case ':':
		if (opts__origin)
			return opts__bad(argv[optind - 1], "", "needs a value");
		fprintf(stderr, "%sxsprofd: %s needs a value\n", opts__errp(), argv[optind - 1]);
		fprintf(stderr, "Try 'xsprofd --help' for more information.\n");
		return 2;
	}
	if (opts__origin)
		return opts__bad(argv[optind - 1], "", "unknown key");
	fprintf(stderr, "%sxsprofd: unknown option '%s'\n", opts__errp(), argv[optind - 1]);
	fprintf(stderr, "Try 'xsprofd --help' for more information.\n");
	return 2;
}

static bool is_gpu_option(int c)
{
	return c == OPT_CUDA_LIB || c == OPT_NO_CUDA || c == OPT_LAUNCHES_OUTPUT ||
	       c == OPT_CORRELATE || c == OPT_CORRELATE_CHECK || c == OPT_GPU_STORE_MB ||
	       c == OPT_GPU_MODE || c == OPT_WEIGHT;
}

static bool is_mode_option(int c)
{
	return c >= OPT_MODE && c <= OPT_RANK;
}

/*
 * One pass of getopt over argv. From the config file, the one-shot and meta flags are refused:
 * a config file describes the service.
 */
int opts__apply(struct xsprofd_opts *o, int argc, char **argv, const char **force_format)
{
	int c, err;

	opterr = 0;
	optind = 0; /* glibc: 0 re-initialises getopt, so it can run again (config, reload) */
	while ((c = getopt_long(argc, argv, ":fd:F:p:o:c:vhV", opts__long_opts, NULL)) != -1) {
		if (opts__origin && c > 0 && c < 256 && strchr("fdochV", c))
			return opts__bad(argv[optind - (optarg ? 2 : 1)], optarg ? optarg : "",
					 "only a command-line flag, not a config key");
		if (opts__origin &&
		    (c == OPT_FORMAT || c == OPT_LIST_FORMATS || c == OPT_LIST_TRIGGERS))
			return opts__bad(c == OPT_FORMAT	 ? "--format"
					 : c == OPT_LIST_FORMATS ? "--list-formats"
								 : "--list-triggers",
					 optarg ? optarg : "",
					 "only a command-line flag, not a config key");
		/* "--report gpu" as well as "--report=gpu": its value is optional. */
		if (c == OPT_REPORT && !optarg && optind < argc &&
		    (!strcmp(argv[optind], "gpu") || !strcmp(argv[optind], "cpu") ||
		     !strcmp(argv[optind], "job")))
			optarg = argv[optind++];
		if (is_gpu_option(c))
			err = gpu_option(o, c, optarg);
		else if (is_mode_option(c))
			err = mode_option(o, c, optarg);
		else
			err = oneshot_option(o, c, optarg, force_format);
		if (err == NOT_MINE)
			err = sampling_option(o, c, optarg);
		if (err == NOT_MINE)
			err = service_option(o, c, optarg);
		if (err == NOT_MINE)
			err = symbol_option(o, c, optarg);
		if (err == NOT_MINE)
			err = meta_option(o, c, argv);
		if (err)
			return err;
	}
	if (optind < argc)
		return gpu_command(o, argc, argv); /* GPU path (cuda_probes) */
	return 0;
}

int xsprofd_opts__parse(struct xsprofd_opts *o, int argc, char **argv)
{
	const char *force_format = NULL;
	int err;

	defaults(o);
	err = opts_config__read(o, argc, argv);
	if (err)
		return err;
	lists_from_flags = 0;
	err = opts__apply(o, argc, argv, &force_format);
	if (err)
		return err;
	return opts_check__finish(o, force_format);
}

int xsprofd_opts__reload(struct xsprofd_opts *o, int argc, char **argv)
{
	struct xsprofd_opts *n = malloc(sizeof(*n));
	int err;

	if (!n)
		return 2;
	err = xsprofd_opts__parse(n, argc, argv);
	if (err) {
		xsprofd_opts__free(n);
		free(n);
		return 2;
	}
	xsprofd_opts__free(o);
	*o = *n;
	free(n);
	return 0;
}

void xsprofd_opts__free(struct xsprofd_opts *o)
{
	for (int i = 0; i < o->nr_owned; i++)
		free(o->owned[i]);
	o->nr_owned = 0;
}
