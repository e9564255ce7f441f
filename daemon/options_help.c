// SPDX-License-Identifier: Apache-2.0
/* xsprofd's --help text and --list-formats: what the flags are, and the output formats. */
#include <stdio.h>

#include "daemon/options.h"
#include "daemon/base/flight_rule.h"
#include "daemon/options_internal.h"
#include "output/output.h"

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
	"                            asked for: oneshot, recording, window, scrape, fleet) and exit\n"
	"      --list-triggers       print the flight recorder's trigger kinds (name, keys, an\n"
	"                            example, the event each watches) and exit\n";

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
void opts_help__list_formats(FILE *f)
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

/* --list-triggers: one line a kind, tab-separated: name, its own keys (the required ones
 * first; - for none), an example spec, the event it watches. */
void opts_help__list_triggers(FILE *f)
{
	for (enum flight_kind k = FLIGHT_GPU_IDLE; k < FLIGHT_NR_KINDS; k++) {
		const struct flight_kind_info *ki = flight_kind__info(k);

		fprintf(f, "%s\t%s", ki->name, ki->keys[0] ? "" : "-");
		for (size_t j = 0; j < FLIGHT_MAX_KIND_KEYS && ki->keys[j]; j++)
			fprintf(f, "%s%s", j ? "," : "", ki->keys[j]);
		fprintf(f, "\t%s\t%s\n", ki->example, ki->watches);
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
	"      --no-autograd         leave PyTorch's backward work where it ran: with -f, by\n"
	"                            default each autograd node's CPU samples and CUDA launches\n"
	"                            go under the Python line that made the node in forward,\n"
	"                            marked '[backward of] ' (probes on libtorch_cpu: about a\n"
	"                            probe trap per node made and run)\n"
	"      --autograd            the same in the service (off there by default)\n"
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
	"      --wakers              each stretch a thread was woken from goes under who woke\n"
	"                            it: '[woken by COMM TID]', the waker's stack where it woke\n"
	"                            it, and on to who woke the waker while it only passed the\n"
	"                            wakeup on (up to 8 hops); timers and interrupts blame no\n"
	"                            thread (a sched_waking probe: one more stack read a\n"
	"                            wakeup); with --report gpu, a launching thread's waits go\n"
	"                            to the samples of the thread at its chain's end, and\n"
	"                            --report job follows a straggler's waits the same way\n"
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
	"      --stats FILE          write the run's counters as JSON when it ends (a one-shot\n"
	"                            run at its end, the service as it stops), in the shape of\n"
	"                            the service's status (GET /v1/status): counters, unwind,\n"
	"                            symbolizer, python, cuda_probes, ... (-v logs them)\n"
	"  -v, --verbose             more detail on stderr: with -f, the whole end-of-run\n"
	"                            report (stack walks, unwind tables, own costs); the\n"
	"                            service logs its counters' lines as it stops\n"
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

void opts_help__print(FILE *f)
{
	fputs(usage_head, f);
	fputs("\n", f);
	print_formats(f);
	fputs(usage_tail, f);
}
