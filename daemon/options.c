// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bpf/xsprof_events.h"
#include "daemon/base/flight_rule.h"
#include "daemon/options.h"
#include "daemon/unwind/unwinder.h"
#include "output/output.h"
#include "output/profile.h"

#define DEFAULT_MAX_STACKS   1000000
#define DEFAULT_WINDOW_S     300
#define DEFAULT_STORE_MB     64
#define DEFAULT_MAX_RECORD_S 3600

static const char usage_head[] =
	"Usage: xsprofd [OPTIONS]                 run as the always-on profiling service\n"
	"       xsprofd --foreground --output FILE [--duration SECS] [OPTIONS]   profile once\n"
	"\n"
	"Samples the kernel and user stacks of every CPU with BPF. As a service it keeps a rolling\n"
	"window of profiles in memory and answers xsprofctl on a Unix socket; with --foreground it\n"
	"records once and writes the profile.\n"
	"\n"
	"One-shot mode:\n"
	"  -f, --foreground          profile once and exit\n"
	"  -d, --duration SECS       how long to sample (decimals allowed); default: until Ctrl-C\n"
	"  -o, --output FILE         write the profile here; repeat for several files; '-' writes\n"
	"                            folded stacks to stdout. The format follows the extension\n"
	"                            (the formats below)\n"
	"      --format FMT          force the format of every output (by name, below)\n"
	"      --list-formats        print the formats (name, file extensions, where each may be\n"
	"                            asked for: oneshot, recording, window, scrape, fleet) and exit\n";

/* The formats, from output.c's table: "  folded    .folded .txt   folded stacks ...". */
static void print_formats(FILE *f)
{
	const struct output_format_info *fi;
	size_t n;

	fi = output__formats(&n);
	fputs("Formats (--format NAME, or -o FILE by its extension):\n", f);
	for (size_t i = 0; i < n; i++) {
		char ext[40];

		snprintf(ext, sizeof(ext), "%s%s%s", fi[i].ext[0], fi[i].ext[1] ? " " : "",
			 fi[i].ext[1] ? fi[i].ext[1] : "");
		fprintf(f, "  %-12s %-16s %s\n", fi[i].name, ext, fi[i].summary);
	}
	fputs("\n", f);
}

/* --list-formats: one line a format, tab-separated: name, extensions, where allowed. */
static void list_formats(FILE *f)
{
	static const char *const where[] = {"oneshot", "recording", "window", "scrape", "fleet"};
	const struct output_format_info *fi;
	size_t n;

	fi = output__formats(&n);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%s\t%s%s%s\t", fi[i].name, fi[i].ext[0], fi[i].ext[1] ? "," : "",
			fi[i].ext[1] ? fi[i].ext[1] : "");
		for (size_t k = 0, any = 0; k < sizeof(where) / sizeof(where[0]); k++)
			if (fi[i].where & (1u << k))
				fprintf(f, "%s%s", any++ ? "," : "", where[k]);
		fprintf(f, "\t%s\n", fi[i].summary);
	}
}

static const char usage_tail[] =
	"Sampling (also config keys, e.g. 'freq = 49'):\n"
	"  -F, --freq HZ             samples per second per CPU, at most 10000 (default 99 in\n"
	"                            one-shot mode, 19 as a service: cheap enough to leave on)\n"
	"  -p, --pid PID             only these processes (repeat, or a comma list) and their\n"
	"                            descendants (those running, and those forked later,\n"
	"                            followed in the kernel at fork); default: all\n"
	"      --no-children         with --pid or a command: not their descendants\n"
	"      --include-idle        keep samples of idle CPUs (the swapper task)\n"
	"      --no-demangle         keep C++ symbol names mangled\n"
	"      --debug-dir DIR       look for separate debug files here (repeat; default\n"
	"                            /usr/lib/debug): .build-id/xx/rest.debug and debuglink names\n"
	"      --debuginfod          ask DEBUGINFOD_URLS' servers for missing debug files (off)\n"
	"      --symbol-cache-mb N   memory for symbol tables and mappings (default 256 in\n"
	"                            one-shot mode, 8 as a service: within its 64 MiB); a\n"
	"                            service keeps a file read again within 30 s of being\n"
	"                            dropped past it for 2 min, up to 256 MiB in all\n"
	"      --debug-info          add source file:line and inlined frames from DWARF (slower;\n"
	"                            off by default)\n"
	"      --ring-buffer-size MB BPF ring buffer size in MiB, a power of two (default: 128 KiB\n"
	"                            per CPU, at least 1); raise it if drops are reported\n"
	"      --max-stacks N        distinct stacks kept before further new ones are counted in\n"
	"                            one overflow bucket per process (default 1000000)\n"
	"      --unwind HOW          walk user stacks with unwind tables compiled from each\n"
	"                            file's .eh_frame (cfi), frame pointers (fp), or tables where\n"
	"                            present and frame pointers elsewhere (auto, the default);\n"
	"                            a file's table is built when a stack first runs in it\n"
	"      --unwind-mb N         kernel memory for the unwind tables (default 64, 4..4096):\n"
	"                            past it the tables used least recently are dropped\n"
	"      --no-python           leave CPython processes' stacks native: no interpreter\n"
	"                            frames ('module.qualname (file.py:line)') in place of\n"
	"                            _PyEval_EvalFrameDefault (walked by default, 3.9-3.13)\n"
	"      --max-cpu PERCENT     cap xsprofd's cost (its CPU plus its BPF programs' time) at\n"
	"                            PERCENT of the whole machine (all CPUs; off by default): over\n"
	"                            it, work is shed a step at a time, in this order: the\n"
	"                            sampling rate (to 1/8), Python walks, launch stacks (1 in\n"
	"                            16), off-CPU stacks, CUDA calls (counted only), the rate again\n"
	"                            (to 1/64); restored when well under. Samples and launches\n"
	"                            taken meanwhile count for those shed; reports say what was\n"
	"                            shed and how long\n"
	"\n"
	"Service (also config keys):\n"
	"  -c, --config FILE         config file (default " XSPROFD_DEFAULT_CONFIG
	", if present);\n"
	"                            'key = value' lines, keys are these long flags; flags win\n"
	"      --socket PATH         control socket (default " XSPROFD_DEFAULT_SOCKET ")\n"
	"      --socket-group NAME   group that may use the socket (default xsprof)\n"
	"      --continue-stopped    continue the processes the service of --socket had stopped\n"
	"                            for its probes when it died, and exit (the unit's\n"
	"                            ExecStopPost; a starting service does the same)\n"
	"      --listen ADDR:PORT    also serve the API on TCP for fleet collection (off by\n"
	"                            default; needs --token-file)\n"
	"      --token-file FILE     bearer token that TCP clients must send (a root-only file)\n"
	"      --tls-cert FILE       serve the TCP API over TLS with this PEM certificate\n"
	"      --tls-key FILE        and this PEM private key (both or neither)\n"
	"      --tls-client-ca FILE  a client certificate signed by this PEM CA also authenticates\n"
	"                            (for go tool pprof -tls_cert); needs --tls-cert\n"
	"      --listen-allow-writes TCP clients may also attach, detach and start recordings\n"
	"                            (default: only GET, i.e. read profiles and scrape)\n"
	"      --window SECS         rolling window kept in memory (default 300)\n"
	"      --store-mb N          memory cap of the rolling window (default 64); the oldest data\n"
	"                            is dropped, and counted, when it is hit\n"
	"      --max-record SECS     longest recording a request may ask for (default 3600)\n"
	"      --window-group-by G   group the rolling window by NVTX range or xsprof scope:\n"
	"                            range (innermost) or outer-range (off by default). Costs\n"
	"                            memory: each slice's samples are kept one by one (24 bytes\n"
	"                            each, at most 512 Ki a slice, the rest counted) while they\n"
	"                            wait for their ranges to end, with the GPU records\n"
	"                            they need; set at start (a reload keeps it)\n"
	"      --window-range-wait SECS\n"
	"                            how long past its end a grouped window slice's samples\n"
	"                            wait for their ranges to end (default 9, at most 600): a\n"
	"                            range longer than about this and a slice loses its first\n"
	"                            samples to [no range]; more holds more samples (a reload\n"
	"                            applies it)\n"
	"      --cupti-socket PATH   where CUDA processes send GPU timing (default\n"
	"                            " XSPROFD_DEFAULT_CUPTI_SOCKET ")\n"
	"      --export SPEC         push each closed window slice to a profile store (up to 4):\n"
	"                            FORMAT,url=URL[,period=S][,name=APP][,ca-file=F]\n"
	"                            [,cert=F,key=F][,token-file=F|basic-auth-file=F]\n"
	"                            [,tenant-file=F]; FORMAT otlp (OTLP/HTTP to URL),\n"
	"                            pyroscope (URL/ingest) or parca (URL/profiles/writeraw);\n"
	"                            period: one push every S s at most (default 10);\n"
	"                            credentials from files only; e.g. --export\n"
	"                            otlp,url=http://127.0.0.1:4318/v1development/profiles\n"
	"      --export-label KEY=VALUE\n"
	"                            a label on everything exported (up to 16)\n"
	"      --export-queue-kb N   memory for slices waiting for their store, in KiB\n"
	"                            (default 65536, at least 16); past it the oldest of\n"
	"                            the sink holding the most go, counted in status\n"
	"      --flight-mb N         the flight recorder: memory for the recent past at full\n"
	"                            fidelity (every sample in time, CUDA launch with its stack,\n"
	"                            GPU record, wait and NVTX range of the processes with GPU\n"
	"                            work), default 256, 0 turns it off; past it the user\n"
	"                            holding the most loses their oldest slice, counted\n"
	"      --flight-seconds S    how far back it reaches (default 120, 20..3600)\n"
	"      --dump-dir DIR        where its dumps go (default " XSPROFD_DEFAULT_DUMP_DIR "):\n"
	"                            xsprofd's own, written by no other user\n"
	"      --dump-keep N         dumps kept per user, the oldest removed (default 20)\n"
	"      --dump-keep-mb N      and at most this many MiB of them (default 1024); one\n"
	"                            dump past it while written is cut short (partial)\n"
	"      --trigger SPEC        save a dump when SPEC trips (up to 8; a reload keeps the\n"
	"                            ones the service started with; xsprofctl triggers adds):\n"
	"                            gpu-idle,percent=P,seconds=S: a process's GPU idle more\n"
	"                            than P%% over S s; slow-step,range=NAME,factor=K: an NVTX\n"
	"                            range or xsprof scope NAME K times its median;\n"
	"                            hang,seconds=S[,range=NAME]: a CUDA call that waits for\n"
	"                            the GPU (or range NAME) not done after S s; death: a\n"
	"                            process with GPU work killed by a signal. Each also takes\n"
	"                            before=S, after=S (the span kept), cooldown=S (300) and\n"
	"                            per-hour=N (6), both per user\n"
	"\n"
	/* GPU path (cuda_probes) */
	"GPU path (CUDA calls; --cuda-lib and --no-cuda are also config keys):\n"
	"  -- CMD [ARGS]             with --foreground: run CMD (and profile it and its children\n"
	"                            only) with the CUPTI injection library and the ITT\n"
	"                            collector preset (INTEL_LIBITTNOTIFY64: ITT tasks are\n"
	"                            ranges); the profile ends when CMD exits, and xsprofd\n"
	"                            exits with CMD's status\n"
	"      --cuda-lib PATH       probe the CUDA calls of every process through this file\n"
	"                            (libcudart.so*, libcuda.so*, an executable with the runtime\n"
	"                            linked in, libxsprof_cupti.so); repeat for several. --pid\n"
	"                            and command mode find the libraries of their processes\n"
	"                            themselves\n"
	"      --no-cuda             no CUDA probes\n"
	"      --launches-output FILE  write the CPU stacks that called CUDA, one count per\n"
	"                            call, with a leaf per API ([cuda] cudaLaunchKernel): .folded\n"
	"                            or .svg, '-' for folded on stdout (one-shot only)\n"
	"      --correlate HOW       join GPU work to launches by id, timestamp, stream or auto\n"
	"                            (default auto: the most exact the data allows)\n"
	"      --gpu-store-mb N      memory for the GPU records received (kernels, copies, API\n"
	"                            calls, NVTX ranges): default 1024 in one-shot mode, 64 as\n"
	"                            a service; past it the oldest are dropped and counted\n"
	"      --correlate-check     also join the same run with each of id, timestamp and\n"
	"                            stream and report how far they agree (keeps the launch\n"
	"                            uprobes beside xsprof:launch: two probes a launch)\n"
	"      --gpu-mode MODE       what the flamegraphs show: cpu, gpu or merged (default merged\n"
	"                            when GPU records arrived, else cpu)\n"
	"      --weight UNIT         weights in samples or us (default samples)\n"
	"\n"
	"Off-CPU and wall time (one-shot):\n"
	"      --mode MODE           cpu: samples of running threads (default); offcpu: the time\n"
	"                            threads spent off the CPU (blocked, sleeping, or waiting for\n"
	"                            a CPU), in us, under the stack they left it from; wall: both,\n"
	"                            in us, so each thread adds up to its wall time (sampled at\n"
	"                            999 Hz unless --freq says otherwise); time in CUDA calls\n"
	"                            that wait for the GPU shows as [wait gpu] (and with\n"
	"                            --gpu-mode merged)\n"
	"      --min-block-us N      off-CPU stretches shorter than N us are ignored (default 10)\n"
	"      --report [cpu|gpu|job] print a report on stdout: cpu (the default), the top\n"
	"                            functions by self and total share; gpu, why the GPU\n"
	"                            waits: busy and idle time per device, each idle stretch\n"
	"                            explained with the CPU stack to blame, kernels, copies\n"
	"                            and findings (-o FILE.gpu.json writes it as JSON); job,\n"
	"                            the ranks of a training job on this host (RANK, ... in\n"
	"                            their environment): which rank arrives last at each\n"
	"                            NCCL collective and why, per step (an NVTX range or\n"
	"                            xsprof scope named step) (-o FILE.job.json: JSON)\n"
	"      --comm NAME           only processes of this name (as ps -o comm shows it, at\n"
	"                            most 15 characters)\n"
	"      --cgroup PATH         only processes in this cgroup v2 directory and below (a\n"
	"                            container): absolute, or relative to the cgroup2 mount\n"
	"      --unit NAME           only the processes of this systemd unit (nginx.service)\n"
	"      --tid TID             only these threads (repeat, or a comma list)\n"
	"      --group-by WHAT       a root level above the process in the flamegraph and\n"
	"                            folded outputs: unit (systemd unit), container, comm,\n"
	"                            rank or job (from the launcher's environment: torchrun,\n"
	"                            Slurm, Open MPI, PMI);\n"
	"                            range or outer-range: the innermost or outermost NVTX or\n"
	"                            ITT range each sample and launch was made in (--mode cpu;\n"
	"                            command mode loads the NVTX injection and the ITT\n"
	"                            collector; pprof: the label range)\n"
	"      --range-domain NAME   with --group-by range: only this NVTX domain's ranges\n"
	"                            (default: NVTX's default domain without a name)\n"
	"      --job ID              keep only the processes of training job ID in every\n"
	"                            output and report (the id their launcher set:\n"
	"                            TORCHELASTIC_RUN_ID, SLURM_JOB_ID); the log says how many\n"
	"                            processes were kept and left out\n"
	"      --rank LIST           keep only these ranks (RANK, SLURM_PROCID, ...): ranks\n"
	"                            and ranges by commas, like 0,2-3 (at most 64); with --job,\n"
	"                            both must hold. A process whose environment names no job\n"
	"                            or rank is left out\n"
	"\n"
	"  -v, --verbose             more detail on stderr: with -f, the whole end-of-run\n"
	"                            report (stack walks, unwind tables, own costs)\n"
	"  -h, --help                this text\n"
	"  -V, --version             print the version\n"
	"\n"
	"Examples:\n"
	"  xsprofd --foreground --duration 10 --output profile.svg --output profile.folded\n"
	"  xsprofd -f -d 30 -F 999 -p 1234 -o app.svg     # one process, 30 s at 999 Hz\n"
	"  xsprofd -f -o - | flamegraph.pl > fg.svg       # until Ctrl-C, folded to stdout\n"
	"  xsprofd -f -o cpu.svg --launches-output gpu.svg -- python train.py   # command mode\n"
	"  xsprofd -f -d 10 -p 1234 --mode wall -o wall.svg --report   # where the time went\n"
	"  xsprofd -f --mode wall --group-by unit -o wall.svg -- python train.py  # GPU waits too\n"
	"  xsprofd -f -d 20 --rank 0,3 -o r03.svg -- torchrun --nproc-per-node 4 train.py\n"
	"  xsprofd -f -F 999 --max-cpu 1 -o cpu.svg -- ./server  # never over 1% of the machine\n"
	"  systemctl start xsprofd; xsprofctl flamegraph --since 5m -o last5m.svg\n"
	"\n"
	"Needs root (or CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE) and a kernel with BTF.\n"
	"Ctrl-C ends a recording early; the profile is still written. The service reloads its\n"
	"config on SIGHUP and stops cleanly on SIGTERM.\n";

enum {
	OPT_FORMAT = 0x100,
	OPT_LIST_FORMATS,
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
	OPT_MAX_CPU,
	/* GPU path (cuda_probes) */
	OPT_CUDA_LIB,
	OPT_NO_CUDA,
	OPT_LAUNCHES_OUTPUT,
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

static const struct option long_opts[] = {
	{"foreground", no_argument, NULL, 'f'},
	{"duration", required_argument, NULL, 'd'},
	{"freq", required_argument, NULL, 'F'},
	{"pid", required_argument, NULL, 'p'},
	{"output", required_argument, NULL, 'o'},
	{"format", required_argument, NULL, OPT_FORMAT},
	{"list-formats", no_argument, NULL, OPT_LIST_FORMATS},
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
	{"max-cpu", required_argument, NULL, OPT_MAX_CPU},
	/* GPU path (cuda_probes) */
	{"cuda-lib", required_argument, NULL, OPT_CUDA_LIB},
	{"no-cuda", no_argument, NULL, OPT_NO_CUDA},
	{"launches-output", required_argument, NULL, OPT_LAUNCHES_OUTPUT},
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
static const char *errp(void)
{
	return getenv("JOURNAL_STREAM") ? "<3>" : "";
}

/* Where the option being parsed came from: NULL for the command line, else "FILE:LINE". */
static const char *origin;

/* The lists (pid, tid, cuda-lib, debug-dir) the command line has started: a flag wins over the
 * config file, so its first one replaces what the file listed. */
enum { LIST_PIDS = 1, LIST_TIDS = 2, LIST_CUDA_LIBS = 4, LIST_DEBUG_DIRS = 8 };
static unsigned lists_from_flags;

static void list_entry(unsigned list, int *n)
{
	if (origin || (lists_from_flags & list))
		return;
	lists_from_flags |= list;
	*n = 0;
}

static int bad(const char *flag, const char *arg, const char *why)
{
	if (origin) {
		fprintf(stderr, "%sxsprofd: %s: %s '%s': %s\n", errp(), origin,
			!strncmp(flag, "--", 2) ? flag + 2 : flag, arg, why);
		return 2;
	}
	fprintf(stderr, "%sxsprofd: %s '%s': %s\n", errp(), flag, arg, why);
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
		return bad(flag, "...", "list too long");
	strcpy(buf, arg);
	/* strtok would skip empty items: "1,,2" and "1," are typing mistakes, said so. */
	for (tok = buf; tok; tok = next) {
		next = strchr(tok, ',');
		if (next)
			*next++ = '\0';
		if (!*tok)
			return bad("--pid", arg, "an empty item in the list");
		if (!parse_ulong(tok, 1, INT_MAX, &v))
			return bad(flag, tok,
				   !strcmp(flag, "--tid") ? "not a thread id" : "not a process id");
		if (*n == XSPROFD_MAX_PIDS)
			return bad(flag, tok, "too many ids (at most 1024)");
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
		return bad(flag, arg, why);
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
			return bad("--cuda-lib", arg, "too many libraries (at most 8)");
		if (!*arg)
			return bad("--cuda-lib", arg, "empty path");
		o->cuda_libs[o->nr_cuda_libs++] = arg;
		return 0;
	case OPT_NO_CUDA:
		o->no_cuda = true;
		return 0;
	case OPT_LAUNCHES_OUTPUT:
		if (origin)
			return bad("--launches-output", arg,
				   "only a command-line flag, not a config key");
		if (!*arg)
			return bad("--launches-output", arg, "empty file name");
		o->launch_output = arg;
		return 0;
	case OPT_CORRELATE:
		if (!correlate__find(arg))
			return bad("--correlate", arg, "use id, timestamp, stream or auto");
		o->correlate = arg;
		return 0;
	case OPT_GPU_STORE_MB:
		return unsigned_opt("--gpu-store-mb", arg, 16, 65536, &o->gpu_store_mb);
	case OPT_CORRELATE_CHECK:
		if (origin)
			return bad("--correlate-check", "",
				   "only a command-line flag, not a config key");
		o->correlate_check = true;
		return 0;
	case OPT_GPU_MODE:
		if (profile__mode_from_name(arg, &mode))
			return bad("--gpu-mode", arg, "use cpu, gpu or merged");
		o->gpu_mode = mode;
		o->gpu_mode_set = true;
		return 0;
	case OPT_WEIGHT:
		if (profile__unit_from_name(arg, &unit))
			return bad("--weight", arg, "use samples or us");
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

	if (origin)
		return bad(flag, arg ? arg : "", "only a command-line flag, not a config key");
	switch (c) {
	case OPT_MODE:
		if (session_mode__from_name(arg, &o->mode))
			return bad(flag, arg, "use cpu, offcpu or wall");
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
			return bad(flag, arg, "use cpu (the default), gpu or job");
		return 0;
	case OPT_COMM:
		if (!*arg || strlen(arg) > 15)
			return bad(flag, arg,
				   "a process name of 1 to 15 characters (the kernel's "
				   "comm)");
		o->comm = arg;
		return 0;
	case OPT_CGROUP:
	case OPT_UNIT:
		if (!*arg || strstr(arg, ".."))
			return bad(flag, arg, "empty, or with '..'");
		if (o->cgroup || o->unit)
			return bad(flag, arg, "one of --cgroup and --unit, once");
		*(c == OPT_CGROUP ? &o->cgroup : &o->unit) = arg;
		return 0;
	case OPT_TID:
		list_entry(LIST_TIDS, &o->nr_tids);
		return add_ids(flag, arg, o->tids, &o->nr_tids);
	case OPT_GROUP_BY:
		if (session_group__from_name(arg, &o->group_by))
			return bad(flag, arg,
				   "use unit, container, comm, rank, job, range or outer-range");
		return 0;
	case OPT_RANGE_DOMAIN:
		if (!*arg)
			return bad(flag, arg,
				   "a domain's name, or default for NVTX's default domain");
		o->range_domain = arg;
		return 0;
	case OPT_JOB:
		if (job_filter__set_job(&o->job_filter, arg))
			return bad(flag, arg, JOB_FILTER_JOB_HELP);
		o->job = arg;
		return 0;
	case OPT_RANK:
		if (job_filter__set_ranks(&o->job_filter, arg))
			return bad(flag, arg, JOB_FILTER_RANK_HELP);
		o->rank = arg;
		return 0;
	}
	return 0;
}

/* Words left after the flags: a command only after "--" on the command line. */
static int gpu_command(struct xsprofd_opts *o, int argc, char **argv)
{
	if (origin || optind == 0 || strcmp(argv[optind - 1], "--"))
		return bad("argument", argv[optind],
			   "unexpected; options take the forms shown in --help (a command to "
			   "run goes after --)");
	o->command = argv + optind;
	o->nr_command = argc - optind;
	return 0;
}

static int gpu_finish(struct xsprofd_opts *o)
{
	enum output_format fmt;

	if (o->nr_command && !o->foreground)
		return bad("--", o->command[0],
			   "running a command needs --foreground (one-shot mode)");
	if (o->launch_output && !o->foreground)
		return bad("--launches-output", o->launch_output, "only with --foreground");
	if (o->correlate_check && (!o->foreground || o->no_cuda))
		return bad("--correlate-check", "",
			   o->no_cuda ? "conflicts with --no-cuda" : "only with --foreground");
	/* A call tree of launches: no timeline for a Chrome trace, pprof or the GPU timeline. */
	if (o->launch_output && strcmp(o->launch_output, "-") &&
	    (output__format_from_path(o->launch_output, &fmt) ||
	     output__format_needs_timeline(fmt)))
		return bad("--launches-output", o->launch_output,
			   "the launches are a call tree: name it .folded, .txt or .svg");
	if (o->no_cuda && (o->launch_output || o->nr_cuda_libs))
		return bad("--no-cuda", "",
			   o->launch_output ? "conflicts with --launches-output"
					    : "conflicts with --cuda-lib");
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
	case 'd':
		errno = 0;
		o->duration_s = strtod(arg, &end);
		if (errno || *end || !*arg || !isfinite(o->duration_s) || o->duration_s <= 0 ||
		    o->duration_s > 31 * 24 * 3600.0)
			return bad("--duration", arg, "expected seconds > 0, e.g. 10 or 0.5");
		return 0;
	case 'o':
		if (o->nr_outputs == XSPROFD_MAX_OUTPUTS)
			return bad("--output", arg, "too many outputs (at most 8)");
		if (!*arg)
			return bad("--output", arg, "empty file name");
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
			return bad("--format", arg, msg);
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
			return bad("--freq", arg, "expected 1..10000 samples per second");
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
			return bad("--ring-buffer-size", arg,
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
			return bad("--unwind", arg, "use auto, fp or cfi");
		return 0;
	case OPT_UNWIND_MB:
		return unsigned_opt("--unwind-mb", arg, UNWINDER_MIN_MB, UNWINDER_MAX_MB,
				    &o->unwind_mb);
	case OPT_NO_PYTHON:
		o->no_python = true;
		return 0;
	case OPT_MAX_CPU: {
		char *end;
		double pct = strtod(arg, &end);

		if (end == arg || *end || !(pct >= 0.01 && pct <= 100))
			return bad("--max-cpu", arg,
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
	if (!origin && !o->flight_flag) {
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
			return bad(c == OPT_SOCKET ? "--socket" : "--cupti-socket", arg,
				   "expected an absolute path under 108 bytes");
		*(c == OPT_SOCKET ? &o->socket_path : &o->cupti_socket) = arg;
		return 0;
	case OPT_SOCKET_GROUP:
		if (!*arg)
			return bad("--socket-group", arg, "empty group name");
		o->socket_group = arg;
		return 0;
	case OPT_LISTEN:
		if (!strchr(arg, ':'))
			return bad("--listen", arg, "expected ADDR:PORT, e.g. 127.0.0.1:7717");
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
			return bad("--export", arg, "at most 4 sinks");
		o->exports[o->nr_exports++] = arg;
		return 0;
	case OPT_EXPORT_LABEL:
		if (o->nr_export_labels == XSPROFD_MAX_EXPORT_LABELS)
			return bad("--export-label", arg, "at most 16 labels");
		if (!strchr(arg, '=') || arg[0] == '=')
			return bad("--export-label", arg, "expected KEY=VALUE");
		o->export_labels[o->nr_export_labels++] = arg;
		return 0;
	case OPT_EXPORT_QUEUE_KB:
		return unsigned_opt("--export-queue-kb", arg, 16, 4 << 20, &o->export_queue_kb);
	case OPT_WINDOW_GROUP_BY:
		if (session_group__from_name(arg, &o->window_group_by) ||
		    !session_group__is_range(o->window_group_by))
			return bad("--window-group-by", arg, "use range or outer-range");
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
			return bad("--dump-dir", arg, "expected an absolute path");
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
			return bad("--trigger", arg, "at most 8 triggers");
		if (flight_rule__parse(arg, &r, why, sizeof(why)))
			return bad("--trigger", arg, why);
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
			return bad("--debug-dir", arg, "at most 16 debug directories");
		if (arg[0] != '/')
			return bad("--debug-dir", arg, "expected an absolute path");
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
		fputs(usage_head, stdout);
		fputs("\n", stdout);
		print_formats(stdout);
		fputs(usage_tail, stdout);
		return 1;
	case OPT_LIST_FORMATS:
		list_formats(stdout);
		return 1;
	case 'V':
		printf("xsprofd %s\n", XSPROF_VERSION);
		return 1;
	case ':':
		if (origin)
			return bad(argv[optind - 1], "", "needs a value");
		fprintf(stderr, "%sxsprofd: %s needs a value\n", errp(), argv[optind - 1]);
		fprintf(stderr, "Try 'xsprofd --help' for more information.\n");
		return 2;
	}
	if (origin)
		return bad(argv[optind - 1], "", "unknown key");
	fprintf(stderr, "%sxsprofd: unknown option '%s'\n", errp(), argv[optind - 1]);
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
static int apply(struct xsprofd_opts *o, int argc, char **argv, const char **force_format)
{
	int c, err;

	opterr = 0;
	optind = 0; /* glibc: 0 re-initialises getopt, so it can run again (config, reload) */
	while ((c = getopt_long(argc, argv, ":fd:F:p:o:c:vhV", long_opts, NULL)) != -1) {
		if (origin && c > 0 && c < 256 && strchr("fdochV", c))
			return bad(argv[optind - (optarg ? 2 : 1)], optarg ? optarg : "",
				   "only a command-line flag, not a config key");
		if (origin && (c == OPT_FORMAT || c == OPT_LIST_FORMATS))
			return bad(c == OPT_FORMAT ? "--format" : "--list-formats",
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

static bool is_false(const char *v)
{
	return !strcasecmp(v, "no") || !strcasecmp(v, "false") || !strcmp(v, "0") ||
	       !strcasecmp(v, "off");
}

static bool is_true(const char *v)
{
	return !strcasecmp(v, "yes") || !strcasecmp(v, "true") || !strcmp(v, "1") ||
	       !strcasecmp(v, "on");
}

/* "key = value" lines; '#' starts a comment. A missing file is fine unless it was asked for. */
static int load_config(struct xsprofd_opts *o, const char *path, bool required)
{
	char line[1024], where[512], key[128];
	const char *force_format = NULL;
	FILE *f = fopen(path, "re");
	int lineno = 0, err = 0;

	if (!f) {
		if (!required && errno == ENOENT)
			return 0;
		fprintf(stderr, "%sxsprofd: cannot read config %s: %s\n", errp(), path,
			strerror(errno));
		return 2;
	}
	while (!err && fgets(line, sizeof(line), f)) {
		char *p = line, *eq, *k, *v, *e;
		const struct option *opt;
		char *argv[4];

		lineno++;
		snprintf(where, sizeof(where), "%s:%d", path, lineno);
		origin = where;
		if (!strchr(line, '\n') && !feof(f)) {
			err = bad("line", "...", "longer than 1023 bytes");
			break;
		}
		if ((e = strchr(p, '#')))
			*e = '\0';
		while (isspace((unsigned char)*p))
			p++;
		for (e = p + strlen(p); e > p && isspace((unsigned char)e[-1]); e--)
			e[-1] = '\0'; /* the newline too: a message quotes the line on one line */
		if (!*p)
			continue;
		eq = strchr(p, '=');
		if (!eq) {
			err = bad("line", p, "expected 'key = value'");
			break;
		}
		*eq = '\0';
		k = p;
		v = eq + 1;
		for (e = eq; e > k && isspace((unsigned char)e[-1]); e--)
			e[-1] = '\0';
		while (isspace((unsigned char)*v))
			v++;
		for (e = v + strlen(v); e > v && isspace((unsigned char)e[-1]); e--)
			e[-1] = '\0';
		for (opt = long_opts; opt->name && strcmp(opt->name, k); opt++)
			;
		if (!opt->name) {
			err = bad(k, v, "unknown key (keys are xsprofd's long flags, see --help)");
			break;
		}
		snprintf(key, sizeof(key), "--%.120s", k);
		argv[0] = "xsprofd";
		argv[1] = key;
		argv[2] = NULL;
		argv[3] = NULL;
		if (opt->has_arg == no_argument) {
			if (is_false(v))
				continue;
			if (!is_true(v)) {
				err = bad(k, v, "expected yes or no");
				break;
			}
			err = apply(o, 2, argv, &force_format);
			continue;
		}
		if (o->nr_owned == XSPROFD_MAX_STRINGS) {
			err = bad(k, v, "too many settings");
			break;
		}
		argv[2] = o->owned[o->nr_owned++] = strdup(v);
		if (!argv[2]) {
			err = bad(k, v, "out of memory");
			break;
		}
		err = apply(o, 3, argv, &force_format);
	}
	origin = NULL;
	fclose(f);
	return err;
}

/* Whether argv asks for one-shot mode (-f, --foreground, or -f inside a cluster like -fv). */
static bool xsprofd_argv_has_foreground(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--"))
			break;
		if (!strcmp(a, "--foreground"))
			return true;
		if (a[0] == '-' && a[1] != '-' && a[1] && strspn(a + 1, "fv") == strlen(a + 1) &&
		    strchr(a + 1, 'f'))
			return true;
	}
	return false;
}

/* The --config value, looked up before the full parse so the file can be read first. */
static const char *find_config_flag(int argc, char **argv)
{
	const char *path = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if ((!strcmp(argv[i], "--config") || !strcmp(argv[i], "-c")) && i + 1 < argc)
			path = argv[++i];
		else if (!strncmp(argv[i], "--config=", 9))
			path = argv[i] + 9;
	}
	return path;
}

/* The first one-shot-only flag set (mode, report, filters), with its value; NULL if none. */
static const char *oneshot_only_flag(const struct xsprofd_opts *o, const char **ret_arg)
{
	*ret_arg = "";
	if (o->mode != SESSION_MODE_CPU) {
		*ret_arg = session_mode__name(o->mode);
		return "--mode";
	}
	if (o->report || o->report_gpu || o->report_job) {
		*ret_arg = o->report_gpu ? "gpu" : o->report_job ? "job" : "";
		return "--report";
	}
	if (o->nr_tids)
		return "--tid";
	if (o->group_by)
		return "--group-by";
	if (o->range_domain) {
		*ret_arg = o->range_domain;
		return "--range-domain";
	}
	if (o->job || o->rank) {
		*ret_arg = o->job ? o->job : o->rank;
		return o->job ? "--job" : "--rank";
	}
	*ret_arg = o->comm ? o->comm : o->cgroup ? o->cgroup : o->unit;
	return o->comm ? "--comm" : o->cgroup ? "--cgroup" : o->unit ? "--unit" : NULL;
}

/* Checks across flags, once everything is read. */
static int finish(struct xsprofd_opts *o, const char *force_format)
{
	const char *flag, *arg;
	enum output_format fmt;
	int err;

	if (!o->freq_set)
		o->freq_hz = !o->foreground		    ? XSPROFD_SERVICE_FREQ
			     : o->mode == SESSION_MODE_WALL ? XSPROFD_WALL_FREQ
							    : XSPROFD_ONESHOT_FREQ;
	err = gpu_finish(o); /* GPU path (cuda_probes) */
	if (err)
		return err;
	if (!o->min_block_us)
		o->min_block_us = 10;
	if (!o->foreground && (flag = oneshot_only_flag(o, &arg)))
		return bad(flag, arg, "only with --foreground");
	if (o->foreground && o->flight_flag)
		return bad(
			o->flight_flag, o->flight_arg,
			"only as a service: the flight recorder, its triggers and dumps keep the "
			"service's recent past; a one-shot run writes its files (-o)");
	if (o->foreground && o->nr_exports)
		return bad("--export", o->exports[0],
			   "the service exports its window slices; a one-shot run writes files "
			   "(-o FILE.otlp.pb)");
	if (!o->foreground) {
		if (o->nr_outputs || o->duration_s > 0)
			return bad(o->nr_outputs ? "--output" : "--duration",
				   o->nr_outputs ? o->outputs[0].path : "...",
				   "only with --foreground; the service writes profiles when asked "
				   "(xsprofctl record / flamegraph)");
		if (o->listen_addr && !o->token_file)
			return bad("--listen", o->listen_addr,
				   "needs --token-file: the TCP API always requires a token");
		if (!o->tls_cert != !o->tls_key)
			return bad(o->tls_cert ? "--tls-cert" : "--tls-key",
				   o->tls_cert ? o->tls_cert : o->tls_key,
				   "give both --tls-cert and --tls-key");
		if (o->tls_client_ca && !o->tls_cert)
			return bad("--tls-client-ca", o->tls_client_ca,
				   "needs --tls-cert and --tls-key");
		if (o->window_group_by && o->no_cuda)
			return bad("--window-group-by", session_group__name(o->window_group_by),
				   "needs the CUPTI socket the NVTX ranges come on (and the CUDA "
				   "probes for scopes): not with --no-cuda");
		return 0;
	}
	/* The ranges come as NVTX records over the CUPTI socket, and are matched sample by sample. */
	if (session_group__is_range(o->group_by) && o->mode != SESSION_MODE_CPU)
		return bad("--group-by", session_group__name(o->group_by),
			   "works with --mode cpu (samples)");
	if (o->range_domain && !session_group__is_range(o->group_by))
		return bad("--range-domain", o->range_domain,
			   "only with --group-by range or outer-range");
	if (session_group__is_range(o->group_by) && o->no_cuda)
		return bad("--group-by", session_group__name(o->group_by),
			   "needs the CUPTI socket the NVTX ranges come on: not with --no-cuda");
	if (o->report_job && o->no_cuda)
		return bad("--report", "job", "needs the GPU records: not with --no-cuda");
	if (o->report_gpu && o->no_cuda)
		return bad("--report", "gpu",
			   "needs the GPU records of the CUPTI socket: not with --no-cuda");
	/* GPU path: --launches-output alone; --report alone prints and writes nothing */
	if (!o->nr_outputs && !o->launch_output && !o->report && !o->report_gpu && !o->report_job) {
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
		if (err) {
			char list[256], msg[400];

			snprintf(msg, sizeof(msg),
				 "cannot tell the format from the extension; name it %s, or pass "
				 "--format",
				 output__format_list(OUTPUT_IN_ONESHOT, true, list, sizeof(list)));
			return bad("--output", out->path, msg);
		}
		if (!strcmp(out->path, "-") && fmt != OUTPUT_FOLDED)
			return bad("--output", out->path, "only folded stacks go to stdout");
		out->format = fmt;
	}
	return 0;
}

int xsprofd_opts__parse(struct xsprofd_opts *o, int argc, char **argv)
{
	const char *force_format = NULL, *config;
	int err;

	defaults(o);
	config = find_config_flag(argc, argv);
	/* One-shot runs read no config unless asked: a config file describes the service. */
	if (config || !xsprofd_argv_has_foreground(argc, argv)) {
		err = load_config(o, config ? config : XSPROFD_DEFAULT_CONFIG, config != NULL);
		if (err)
			return err;
		o->config_path = config ? config : XSPROFD_DEFAULT_CONFIG;
	}
	lists_from_flags = 0;
	err = apply(o, argc, argv, &force_format);
	if (err)
		return err;
	return finish(o, force_format);
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
