// SPDX-License-Identifier: Apache-2.0
/*
 * xsprofctl: the command-line client of xsprofd's control API (daemon/CLI.md): its global
 * options, its help and the one table of its commands.
 */
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "daemon/base/api_socket.h"
#include "daemon/ctl/client.h"
#include "daemon/ctl/commands.h"
#include "daemon/ctl/ctl.h"

#define DEFAULT_SOCKET XSPROF_API_SOCKET

static const char usage_text[] =
	"Usage: xsprofctl [--socket PATH] [--json] [--quiet] [--timeout S] COMMAND [ARGS]\n"
	"\n"
	"Talks to xsprofd, the always-on profiling service.\n"
	"\n"
	"Commands:\n"
	"  status                         version, uptime, frequency, counters, attachments,\n"
	"                                 GPU correlation per strategy, memory\n"
	"  attach PID [--freq HZ] [--no-children]\n"
	"                                 keep profiling PID and its descendants (CPU at HZ,\n"
	"                                 default 99; CUDA launches joined to GPU work) until\n"
	"                                 detached; fetch it with flamegraph --pid PID\n"
	"  attach PID --group-by range|outer-range [--range-domain DOMAIN] ...\n"
	"                                 the same, each sample and launch under the NVTX\n"
	"                                 range or xsprof scope it was made in (one slice,\n"
	"                                 10 s, late: a range is known once it ends)\n"
	"  detach PID                     end the attachment and free what it held\n"
	"  record [--pid PID[,PID...]]... [--duration S] [--freq HZ] -o FILE\n"
	"                                 record now (default 10 s at 99 Hz)\n"
	"  record [--job ID] [--rank LIST] ... -o FILE\n"
	"                                 only one training job's processes, or some ranks\n"
	"  record [--mode cpu|offcpu|wall] ... -o FILE\n"
	"                                 off-CPU time, or wall time (on and off the CPU,\n"
	"                                 GPU waits included), in us, instead of samples\n"
	"  record [--freq HZ] -o FILE -- CMD [ARGS...]\n"
	"                                 run CMD with the CUDA injection library and the\n"
	"                                 ITT collector preset, profile it and its\n"
	"                                 descendants until it exits, and\n"
	"                                 exit with its status (127: not found)\n"
	"  flamegraph [--since DURATION] [--pid PID] [--group-by G] -o FILE\n"
	"                                 the rolling window's last DURATION (90s, 5m, 1h;\n"
	"                                 default 5m), or with --pid, the attachment of PID's\n"
	"                                 (--group-by: as it was attached, or as xsprofd\n"
	"                                 groups the window, see xsprofd(8); without it,\n"
	"                                 ungrouped)\n"
	"  report [--since DURATION] [--pid PID] [-o FILE]\n"
	"                                 why the GPUs waited in the rolling window's last\n"
	"                                 DURATION (default 5m), or in PID's attachment: busy\n"
	"                                 and idle time, each idle stretch with its cause and\n"
	"                                 CPU stack, findings; as text on stdout, or into FILE\n"
	"                                 (.gpu.json: JSON, .gpu.txt: text)\n"
	"  top [--since DURATION] [--number N] [--pid PID] [--gpu-mode M] [--interval S]\n"
	"      [--once]                   the hottest N functions (default 20) by self and\n"
	"                                 total share, of the window or of PID's attachment;\n"
	"                                 on a terminal live: the last 10 s (or DURATION),\n"
	"                                 redrawn every S seconds (default 1) with samples/s,\n"
	"                                 xsprofd's cost and GPU busy, q quits; once (default\n"
	"                                 the last 5m) with --once or when stdout is not one\n"
	"  fleet [OPTIONS] -o FILE [HOST[:PORT]...]\n"
	"                                 ask many xsprofd hosts (serving TCP) at once, merge\n"
	"                                 their profiles under a host or label root; see\n"
	"                                 'xsprofctl fleet --help': --hosts --by --select\n"
	"                                 --token-file --cacert --cert --key --parallel\n"
	"                                 --host-timeout --deadline --comm\n"
	"  dump [--before D] [--after D] [--note TEXT] [--no-wait] [-o DIR]\n"
	"                                 save the flight recorder's last D (default 60s)\n"
	"                                 and the next D (default 0) as a dump: a Chrome\n"
	"                                 trace, the GPU report, pprof and folded stacks of\n"
	"                                 your processes with GPU work (root's: everyone's);\n"
	"                                 waits for it and prints its directory (-o DIR:\n"
	"                                 fetches its files there)\n"
	"  dump get NAME [-o DIR]         fetch dump NAME's files into DIR (default NAME)\n"
	"  dumps                          the dumps you may read, newest first: the\n"
	"                                 trigger that made each, its state and size\n"
	"  triggers [add SPEC | remove ID]\n"
	"                                 the triggers that save dumps, with how often each\n"
	"                                 tripped; root adds (SPEC as in xsprofd(8):\n"
	"                                 gpu-idle, slow-step, hang, death) and removes\n"
	"  ui [--port N]                  serve xsprofd's read-only web view to a browser on\n"
	"                                 this machine: a proxy on 127.0.0.1 (port N, default\n"
	"                                 a free one) that prints the address to open, with\n"
	"                                 its key; --history STORE adds xsprof-history's runs\n"
	"                                 (steps, trends, differential flamegraphs); Ctrl-C\n"
	"                                 stops; see 'xsprofctl ui --help'\n"
	"\n"
	"Record and flamegraph options:\n"
	"  -p, --pid PID[,PID...]  processes to record (repeatable); their descendants too\n"
	"      --no-children       only the named processes, not their descendants\n"
	"  -d, --duration S        seconds to record (default 10)\n"
	"  -F, --freq HZ           samples per second, 1..10000 (default 99; 999 with\n"
	"                          --mode wall)\n"
	"  -o, --output FILE       the format follows FILE's extension: .folded or .txt\n"
	"                          (folded stacks), .svg (flamegraph), .callgrind\n"
	"                          (KCachegrind), .json (Chrome trace; not for flamegraph),\n"
	"                          .pb.gz (pprof), record: .xplane.pb (TensorBoard,\n"
	"                          XProf), .job.json or .job.txt (the job report: which\n"
	"                          rank holds the job back); - for folded on stdout\n"
	"      --gpu-mode MODE     cpu, gpu or merged: which work the flamegraph shows\n"
	"                          (default: merged when GPU work was joined, else cpu)\n"
	"      --weight UNIT       samples or us (default samples)\n"
	"      --correlate NAME    how CUDA launches are joined to GPU work: auto, id,\n"
	"                          timestamp or stream (default auto)\n"
	"  -S, --since DURATION    flamegraph, report: how far back (default 5m)\n"
	"  -m, --mode MODE         record: cpu (samples, the default), offcpu (time off the\n"
	"                          CPU, in us) or wall (both, in us; GPU waits as [wait gpu])\n"
	"      --group-by WHAT     record: a root level above each process: unit (systemd\n"
	"                          unit), container, comm (the process name), rank or job\n"
	"                          (from its launcher's environment); range or\n"
	"                          outer-range: the innermost or outermost NVTX range each\n"
	"                          sample and launch was made in (-- CMD loads the NVTX\n"
	"                          injection; --mode cpu); attach, flamegraph: range or\n"
	"                          outer-range (the window: if xsprofd groups it)\n"
	"      --range-domain D    record, attach: only NVTX domain D's ranges (xsprof: the\n"
	"                          scopes)\n"
	"      --job ID            record: only the processes of training job ID (the id\n"
	"                          their launcher set: TORCHELASTIC_RUN_ID, SLURM_JOB_ID)\n"
	"      --rank LIST         record: only these ranks (RANK, SLURM_PROCID, ...), like\n"
	"                          0,2-3 (at most 64); with --job both must hold; processes\n"
	"                          that name no job or rank are left out\n"
	"\n"
	"Options:\n"
	"  -s, --socket PATH   xsprofd's socket (default " DEFAULT_SOCKET ", or $XSPROF_SOCKET)\n"
	"  -j, --json          print machine-readable results on stdout\n"
	"  -q, --quiet         no progress line\n"
	"  -t, --timeout S     give up on xsprofd after S seconds (default 30); waiting for a\n"
	"                      recording may take its duration on top, but not once xsprofd\n"
	"                      is gone or has been stopped (SIGSTOP) for S seconds\n"
	"  -h, --help          this text\n"
	"  -V, --version       print the version\n"
	"\n"
	"Examples:\n"
	"  xsprofctl status\n"
	"  xsprofctl record --pid 1234 --duration 30 -o app.svg\n"
	"  xsprofctl record --mode wall --pid 1234 -d 10 -o wall.svg   # where the time went\n"
	"  xsprofctl record --rank 0,3 -d 20 -o ranks03.pb.gz   # ranks 0 and 3 of the job here\n"
	"  xsprofctl flamegraph --since 10m -o last10m.svg\n"
	"  xsprofctl record --gpu-mode merged -o train.json -- python3 train.py\n"
	"  xsprofctl attach 1234; xsprofctl flamegraph --gpu-mode merged -o last5m.pb.gz\n"
	"  xsprofctl report --since 10m        # why the GPUs waited, the last 10 minutes\n"
	"  xsprofctl dump --before 2m -o incident   # the last 2 minutes, files in incident/\n"
	"  xsprofctl triggers add slow-step,range=step,factor=3\n"
	"  xsprofctl ui --port 8080     # then open the address it prints in a browser\n"
	"\n"
	"Exit status: 0 done; 1 the daemon reported an error; 2 usage error; 3 xsprofd is not\n"
	"running or cannot be reached (fleet: no host answered); 4 permission denied (join\n"
	"group xsprof, or use root); 5 fleet: only some hosts answered (partial profile);\n"
	"record -- CMD: CMD's own exit status once the profile is written; ui: 0 once stopped\n"
	"by Ctrl-C or SIGTERM, 1 when its port cannot be had.\n";

/* One subcommand: its name and what runs it (argv[0] is the name). */
struct ctl_command {
	const char *name;
	int (*handler)(int argc, char **argv);
};

/* The one list of commands: the dispatch and the errors that name them read it. */
static const struct ctl_command ctl_commands[] = {
	{.name = "status", .handler = ctl_status},
	{.name = "attach", .handler = ctl_attach},
	{.name = "detach", .handler = ctl_detach},
	{.name = "record", .handler = ctl_record},
	{.name = "flamegraph", .handler = ctl_flamegraph},
	{.name = "report", .handler = ctl_report},
	{.name = "top", .handler = ctl_top},
	{.name = "fleet", .handler = ctl_fleet},
	{.name = "dump", .handler = ctl_dump},
	{.name = "dumps", .handler = ctl_dumps},
	{.name = "triggers", .handler = ctl_triggers},
	{.name = "ui", .handler = ctl_ui},
};

#define NR_COMMANDS (sizeof(ctl_commands) / sizeof(ctl_commands[0]))

const char *ctl_command_name(size_t i)
{
	return i < NR_COMMANDS ? ctl_commands[i].name : NULL;
}

/* "status, attach, ...": the commands' names, as the errors list them. */
static void command_names(char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < NR_COMMANDS && len < size; i++)
		len += snprintf(buf + len, size - len, "%s%s", i ? ", " : "", ctl_commands[i].name);
}

/* argv[0]'s command run with its arguments, or the usage error that lists them. */
static int command_select(int argc, char **argv)
{
	char names[256], fmt[320];

	for (size_t i = 0; i < NR_COMMANDS; i++)
		if (!strcmp(argv[0], ctl_commands[i].name))
			return ctl_commands[i].handler(argc, argv);
	command_names(names, sizeof(names));
	snprintf(fmt, sizeof(fmt), "unknown command '%%s' (%s)", names);
	return ctl_usage_error(fmt, argv[0]);
}

int ctl_main(int argc, char **argv)
{
	static const struct option lo[] = {{"socket", required_argument, NULL, 's'},
					   {"json", no_argument, NULL, 'j'},
					   {"quiet", no_argument, NULL, 'q'},
					   {"help", no_argument, NULL, 'h'},
					   {"timeout", required_argument, NULL, 't'},
					   {"version", no_argument, NULL, 'V'},
					   {}};
	struct ctl_opts *o = ctl_opts();
	char names[256];
	int c, st;

	/* Each call a fresh start (the tests call it many times). */
	*o = (struct ctl_opts){.sock_path = getenv("XSPROF_SOCKET") ? getenv("XSPROF_SOCKET")
								    : DEFAULT_SOCKET,
			       .timeout_s = CTL_DEFAULT_TIMEOUT_S};
	opterr = 0;
	/* Stop at the command: its own options follow. */
	while ((c = getopt_long(argc, argv, "+s:jqt:hV", lo, NULL)) != -1) {
		char *end;

		switch (c) {
		case 's':
			o->sock_path = optarg;
			break;
		case 'j':
			o->json_out = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 't':
			o->timeout_s = strtod(optarg, &end);
			if (end == optarg || *end || !isfinite(o->timeout_s) ||
			    o->timeout_s < 0.1 || o->timeout_s > 86400)
				return ctl_usage_error(
					"--timeout '%s': expected seconds, 0.1 to 86400", optarg);
			break;
		case 'h':
			fputs(usage_text, stdout);
			return EXIT_OK;
		case 'V':
			printf("xsprofctl %s\n", XSPROF_VERSION);
			return EXIT_OK;
		default:
			if (optopt == 't' || optopt == 's')
				return ctl_usage_error("option '%s' needs a value",
						       argv[optind - 1]);
			return ctl_usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc) {
		command_names(names, sizeof(names));
		return ctl_usage_error("a command is needed: %s", names);
	}
	opterr = 0;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	st = command_select(argc - optind, argv + optind);
	curl_global_cleanup();
	return st;
}
