/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A training job's ranks and which one holds each collective back, and why: from a profile of
 * several ranks on one host (one daemon). Each process says its job and rank in its
 * environment (daemon/base/proc_env.h, given here as the profile's process labels); its NCCL
 * kernels (output/job/nccl.h) are numbered per stream and kind, so that rank 0's k-th all-reduce
 * meets rank 3's k-th; for each such meeting, when each rank arrived (when its collective
 * could have started: the end of its GPU work before it, or the collective's launch when the
 * host launched it later), which arrived last and by how much, and for a late rank the cause
 * (its GPU computed longer, it waited for the host, launches, the thread blocked) against the
 * median rank, with kernels and CPU stacks; per step (an NVTX range or xsprof scope, "step"
 * by default, else the collectives' repeating pattern) the rank that held it back. Findings
 * with severity, figures and a stack. Text (80 columns) or JSON (output/job/JOB_REPORT.md: the
 * schema, versioned, and every threshold).
 */
#ifndef XSPROF_OUTPUT_JOB_REPORT_H
#define XSPROF_OUTPUT_JOB_REPORT_H

#include <stdint.h>
#include <stdio.h>

struct job_report;
struct profile_data;

#define JOB_REPORT_SCHEMA  "xsprof.job_report"
#define JOB_REPORT_VERSION 1
/* The name of the NVTX range or xsprof scope that is a step, unless told another. */
#define JOB_REPORT_STEP_NAME "step"
/* A rank is late at a collective when it arrived last, this much or more after the median rank
 * and JOB_REPORT_LATE_SHARE of the median rank's time from its previous collective. */
#define JOB_REPORT_LATE_NS    100000ull
#define JOB_REPORT_LATE_SHARE 0.02
/* A rank late at this share of the collectives it took part in or more is a straggler. */
#define JOB_REPORT_STRAGGLER_SHARE 0.5
/* A collective whose time after its last rank arrived is this many times its kind's median
 * and JOB_REPORT_LINK_NS longer: the link was slow. */
#define JOB_REPORT_LINK_FACTOR 2.0
#define JOB_REPORT_LINK_NS     1000000ull

/* Why a rank arrived late; the order of the JSON's causes. */
enum job_cause {
	JOB_CAUSE_COMPUTE = 0, /* its GPU computed longer than the median rank's */
	JOB_CAUSE_HOST,	       /* its GPU waited for the host: the launching thread was busy */
	JOB_CAUSE_LAUNCH,      /* its GPU waited between launches shorter than 100 us */
	JOB_CAUSE_BLOCKED,     /* its GPU waited for a launching thread that was off the CPU */
	JOB_CAUSE_LINK,	       /* every rank arrived and the collective took longer */
	JOB_CAUSE_UNKNOWN,     /* none of these says it */
	JOB_CAUSE_NR,
};

/*
 * A report across hosts (output/job/job_merge.h) tells processes of different hosts apart by
 * their pid's high bits: the host's index << JOB_REPORT_PID_BITS | its pid there (Linux pids
 * are below 2^22). The report writes the host's pid, and the host from the label host.name.
 */
#define JOB_REPORT_PID_BITS 22
#define JOB_REPORT_PID_MASK ((1u << JOB_REPORT_PID_BITS) - 1)

/* How a host's clock was put on the job's (a report across hosts). */
struct job_report_clock {
	const char *host;
	int64_t offset_ns;  /* the host's time + this = the reference host's time */
	int64_t error_ns;   /* the most it may be off; -1: not known */
	const char *method; /* "reference", "collectives", "round trip", "wall clock" */
	size_t collectives; /* the collectives the estimate used */
};

/* "compute", "host", "launch", "blocked", "link", "unknown". */
const char *job_report__cause_name(enum job_cause c);

/*
 * The report of pd (its GPU work, launches, joins, samples, NVTX ranges and, for the ranks,
 * pd->process_labels: job.id, job.rank, job.world_size); step: the range that is a step (NULL:
 * JOB_REPORT_STEP_NAME). It points at pd's strings: use it while pd lives. 0 or -ENOMEM.
 */
int job_report__build(const struct profile_data *pd, const char *step, struct job_report **ret);
void job_report__free(struct job_report *r);
/* The hosts' clocks to write with r (kept by the caller while r is written), and the wall
 * time (CLOCK_REALTIME) of the report's time 0: a report across hosts counts from there. */
void job_report__set_clocks(struct job_report *r, const struct job_report_clock *clocks, size_t n,
			    int64_t epoch_realtime_ns);

/* Text for a person, at most 80 columns a line. 0 or -EIO. */
int job_report__write_text(const struct job_report *r, FILE *f);
/* The JSON document (JOB_REPORT_SCHEMA, JOB_REPORT_VERSION). 0 or -EIO. */
int job_report__write_json(const struct job_report *r, FILE *f);

#endif
