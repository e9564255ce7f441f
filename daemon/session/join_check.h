/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --correlate-check: the three strategies on one session's data, side by side. With the entry
 * uprobes kept beside xsprof:launch, each launch is seen twice: by the USDT record (with
 * CUPTI's correlation id) and by the uprobe on the API it called (with its stream). id joins
 * the GPU work to the USDT records; timestamp and stream join it to the uprobes alone, as they
 * would in a process without the injection library's probe. A uprobe and the USDT record of
 * one call are paired (same thread, the USDT fires inside the call: the latest unpaired uprobe
 * of the same kind before it; or, where none came before, the first after it and before the
 * thread's next USDT record: a CUDA runtime linked into a library calls the probed public
 * driver function from inside the call CUPTI reports), and a strategy agrees with id on a
 * piece of work when it chose the uprobe paired with id's launch.
 */
#ifndef XSPROF_DAEMON_SESSION_JOIN_CHECK_H
#define XSPROF_DAEMON_SESSION_JOIN_CHECK_H

#include <stdint.h>

struct profile_data;

#define JOIN_CHECK_APIS 8

struct join_check_counts {
	uint64_t joined; /* GPU work this strategy joined */
	uint64_t agree;	 /* ... to the same call as id */
	uint64_t differ; /* ... to another call, or where id joined nothing */
	/* The work id joined that this strategy did not join to the same call, by the API of
	 * id's launch (the first JOIN_CHECK_APIS names met; the rest under NULL). */
	struct {
		const char *api;
		uint64_t n;
	} miss[JOIN_CHECK_APIS + 1];
};

struct join_check {
	uint64_t work;	  /* kernels, copies, memsets, graphs received */
	uint64_t usdt;	  /* launch records from xsprof:launch */
	uint64_t uprobes; /* launch records from entry uprobes (kernel, graph, copy, memset) */
	uint64_t paired;  /* uprobes paired with the xsprof:launch of the same call */
	struct join_check_counts id, timestamp, stream;
};

/*
 * Joins pd's launches (sorted by time, as gpu_join__run leaves them) to pd's GPU records with
 * each strategy and compares. pd is not changed. 0 or -errno.
 */
int join_check__run(const struct profile_data *pd, struct join_check *ret);

#endif
