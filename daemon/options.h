/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xsprofd's settings: command-line flags and the config file, which uses the same names
 * (every config key is a long flag without its dashes) and is parsed by the same code.
 */
#ifndef XSPROF_DAEMON_OPTIONS_H
#define XSPROF_DAEMON_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "cupti_inject/xsprof_wire.h"
#include "daemon/base/api_socket.h"
#include "daemon/base/job_filter.h"
#include "daemon/session/session_mode.h"

#define XSPROFD_MAX_PIDS	  1024
#define XSPROFD_MAX_TIDS	  1024
#define XSPROFD_MAX_OUTPUTS	  8
#define XSPROFD_MAX_STRINGS	  64
#define XSPROFD_MAX_TRIGGERS	  8
#define XSPROFD_MAX_EXPORTS	  4
#define XSPROFD_MAX_EXPORT_LABELS 16

/* GPU path (cuda_probes) */
#define XSPROFD_MAX_CUDA_LIBS 8

#define XSPROFD_DEFAULT_CONFIG	     "/etc/xsprof/xsprofd.conf"
#define XSPROFD_DEFAULT_SOCKET	     XSPROF_API_SOCKET
#define XSPROFD_DEFAULT_CUPTI_SOCKET XSPROF_WIRE_DEFAULT_SOCKET
#define XSPROFD_DEFAULT_DUMP_DIR     "/var/lib/xsprof/dumps"
/* One-shot default: off 100 Hz so sampling does not run in lockstep with timer ticks. */
#define XSPROFD_ONESHOT_FREQ 99
/* Wall mode's default: its on-CPU part is sampled, its off-CPU part exact; at 999 Hz a part
 * computing 20% of a 3 s thread is within a point of its share (tests/bpf/test_offcpu.c). */
#define XSPROFD_WALL_FREQ 999
/*
 * Always-on default: 19 Hz per CPU costs ~30 us of CPU per second per CPU (0.003%) at our
 * measured per-sample cost, stays off-beat with 10 ms timers, and still gives over a thousand
 * samples per CPU per minute, enough for minute-scale flamegraphs.
 */
#define XSPROFD_SERVICE_FREQ 19
/*
 * The service's symbol cache: the snapshots of processes that ended stay until the cache
 * is full, so its size is what the always-on RSS settles at; 8 MiB keeps the service under
 * 64 MiB with a stream of short-lived processes (bench/soak.sh: flat ~46 MiB at 8 MiB, ~63
 * MiB with a 70 MiB peak at 16, growing to 80 MiB in 10 min at the one-shot default of 256).
 */
#define XSPROFD_SERVICE_SYMBOL_CACHE_MB 8
/* A service keeps files read again soon after trim dropped them past the cache, up to this
 * (MiB) in all: PyTorch's libraries have symbol tables larger than the whole cache. */
#define XSPROFD_SERVICE_SYMBOL_HOT_MB 256
/* The service's record of where frame names came from (pprof addresses): emptied when full. */
#define XSPROFD_SERVICE_SITES_BYTES (8ull << 20)

struct xsprofd_output {
	const char *path; /* "-" is standard output (folded only) */
	int format;	  /* enum output_format */
};

struct xsprofd_opts {
	/* Mode and one-shot settings (command line only). */
	bool foreground;
	bool continue_stopped; /* --continue-stopped: the dead service's stops, then exit */
	double duration_s;     /* 0: until SIGINT/SIGTERM */
	struct xsprofd_output outputs[XSPROFD_MAX_OUTPUTS];
	int nr_outputs;
	const char *config_path; /* NULL: the default, which may be absent */

	/* Sampling. */
	unsigned int freq_hz;
	bool freq_set;
	pid_t pids[XSPROFD_MAX_PIDS];
	int nr_pids;
	bool include_idle;
	bool no_children; /* --pid and a command: their descendants are left out */
	bool no_demangle;
	uint32_t ring_buffer_bytes; /* 0: sized from the CPU count */
	unsigned int
		max_stacks; /* distinct raw stacks kept before merging into an overflow bucket */
	int verbose;

	/* Service mode. */
	const char *socket_path;
	const char *socket_group; /* group allowed on the socket (and to profile its own uid) */
	const char *listen_addr;  /* "ADDR:PORT" for fleet collection; NULL: off */
	const char *token_file;	  /* bearer token required on the TCP listener */
	const char *tls_cert, *tls_key; /* PEM: the TCP listener speaks TLS */
	/* --export sinks, --export-label, --export-queue-kb (daemon/service/export.h) */
	const char *exports[XSPROFD_MAX_EXPORTS];
	int nr_exports;
	const char *export_labels[XSPROFD_MAX_EXPORT_LABELS];
	int nr_export_labels;
	unsigned int export_queue_kb;
	const char *tls_client_ca; /* PEM: client certificates it signed authenticate */
	bool listen_allow_writes;  /* TCP clients may also attach, record, detach */
	unsigned int window_s;	   /* rolling window kept in memory */
	unsigned int store_mb;	   /* memory cap of the rolling window */
	unsigned int max_record_s; /* longest recording a request may ask for */
	/* --window-group-by: the rolling window grouped by range or outer-range (none: off) */
	enum session_group window_group_by;
	unsigned int window_range_wait_s; /* a grouped slice's samples wait this long (default 9) */
	/* The flight recorder (daemon/service/flight.h): its ring, dumps and triggers. */
	unsigned int flight_mb;			    /* --flight-mb: the ring's cap; 0: off */
	unsigned int flight_s;			    /* --flight-seconds: how far back it reaches */
	const char *dump_dir;			    /* --dump-dir */
	unsigned int dump_keep;			    /* --dump-keep: dumps kept */
	unsigned int dump_keep_mb;		    /* --dump-keep-mb: and their MiB */
	const char *triggers[XSPROFD_MAX_TRIGGERS]; /* --trigger SPEC (base/flight_rule.h) */
	int nr_triggers;
	const char *flight_flag,
		*flight_arg; /* the first flight recorder flag given (service only) */

	/* GPU path. */
	const char *cupti_socket;

	/* Symbolization. */
	const char *debug_dirs[16];
	int nr_debug_dirs;
	bool debuginfod;
	unsigned int symbol_cache_mb; /* 0: the symbolizer's default */
	bool debug_info;	      /* DWARF source lines and inlined frames */
	unsigned int unwind;	      /* --unwind: enum xsprof_unwind_mode (default auto) */
	unsigned int unwind_mb;	      /* --unwind-mb: table memory; 0: the default */
	bool no_python;		      /* --no-python: no interpreter frames */
	bool no_autograd;	      /* --no-autograd: backward work not joined to its forward */
	bool autograd;		      /* --autograd: joined in the service too (-f: by default) */
	double max_cpu_pct; /* --max-cpu: ceiling on xsprofd's cost, percent of all CPUs; 0: none */

	/* Strings from the config file, owned here. */
	char *owned[XSPROFD_MAX_STRINGS];
	int nr_owned;

	/* GPU path (cuda_probes) */
	char **command; /* argv after "--": command mode (one-shot only) */
	int nr_command;
	const char *cuda_libs[XSPROFD_MAX_CUDA_LIBS]; /* --cuda-lib: system-wide, by path */
	int nr_cuda_libs;
	bool no_cuda;		   /* --no-cuda: no CUDA probes at all */
	const char *launch_output; /* --launches-output: GPU-only folded launch stacks */
	const char *stats_path;	   /* --stats: the run's counters as JSON */
	const char *correlate;	   /* --correlate: strategy name (default "auto") */
	bool correlate_check;	   /* --correlate-check: every strategy on the run, compared */
	unsigned int gpu_store_mb; /* --gpu-store-mb: 0 for the mode's default */
	int gpu_mode;		   /* --gpu-mode: enum gpu_mode, when gpu_mode_set */
	bool gpu_mode_set;
	int weight; /* --weight: enum weight_unit */

	/* What the profile weighs (one-shot): on-CPU samples, off-CPU time, or both. */
	enum session_mode mode;	   /* --mode */
	unsigned int min_block_us; /* --min-block-us: shorter off-CPU blocks are ignored */
	bool wakers;		   /* --wakers: each off-CPU stretch under who woke it */
	bool report;		   /* --report (cpu): the top functions, on stdout */
	bool report_gpu;	   /* --report gpu: why the GPU waits, on stdout */
	bool report_job;	   /* --report job: which rank holds the job back, on stdout */
	/* In-kernel filters (one-shot): process name, cgroup v2 directory, systemd unit. */
	const char *comm;
	const char *cgroup;
	const char *unit;
	pid_t tids[XSPROFD_MAX_TIDS]; /* --tid: only these threads */
	int nr_tids;
	enum session_group group_by; /* --group-by: a root level above the process, or none */
	const char *range_domain;    /* --range-domain: only this NVTX domain's ranges */
	/* --job, --rank: only the processes of that job and ranks (their text, and parsed) */
	const char *job, *rank;
	struct job_filter job_filter;
};

/*
 * Parse argv (and the config file it names, or the default one when it exists). Returns 0 to
 * run, 1 when the work is done (--help, --version), or 2 after printing an error that names
 * the bad argument or config line (the exit status to use).
 */
int xsprofd_opts__parse(struct xsprofd_opts *opts, int argc, char **argv);

/*
 * Re-read the config file for a reload: fresh settings from the file, then the command line
 * again (flags still win). 0, or 2 after logging what is wrong (then *opts is unchanged).
 */
int xsprofd_opts__reload(struct xsprofd_opts *opts, int argc, char **argv);

void xsprofd_opts__free(struct xsprofd_opts *opts);

#endif
