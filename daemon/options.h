/* SPDX-License-Identifier: Apache-2.0 */
/* xsprofd's command line. */
#ifndef XSPROF_DAEMON_OPTIONS_H
#define XSPROF_DAEMON_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define XSPROFD_MAX_PIDS    1024
#define XSPROFD_MAX_OUTPUTS 8

struct xsprofd_output {
	const char *path; /* "-" is standard output (folded only) */
	int format;	  /* enum output_format */
};

struct xsprofd_opts {
	bool foreground;
	double duration_s; /* 0: until SIGINT/SIGTERM */
	unsigned int freq_hz;
	pid_t pids[XSPROFD_MAX_PIDS];
	int nr_pids;
	struct xsprofd_output outputs[XSPROFD_MAX_OUTPUTS];
	int nr_outputs;
	bool include_idle;
	bool no_demangle;
	uint32_t ring_buffer_bytes; /* 0: sized from the CPU count */
	unsigned int
		max_stacks; /* distinct raw stacks kept before merging into an overflow bucket */
	int verbose;
};

/*
 * Parse argv. Returns 0 to run, 1 when the work is done (--help, --version), or 2 after printing
 * an error that names the bad argument (the exit status to use).
 */
int xsprofd_opts__parse(struct xsprofd_opts *opts, int argc, char **argv);

#endif
