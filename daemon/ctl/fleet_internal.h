/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xsprofctl fleet's insides, shared by its parts: fleet.c asks the hosts and merges their
 * profiles, calling fleet_args.c (options), fleet_gpu.c and fleet_job.c (reports); all of them
 * call fleet_hosts.c. The tests reach these too (tests/daemon/ctl/test_ctl_fleet.c).
 */
#ifndef XSPROF_DAEMON_CTL_FLEET_INTERNAL_H
#define XSPROF_DAEMON_CTL_FLEET_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>

struct json_object;

#include "daemon/ctl/reply_buf.h"
#include "output/job/job_merge.h"

#define FLEET_MAX_HOSTS	   10000
#define FLEET_MAX_LABELS   16
#define FLEET_MAX_REPLY	   (64u << 20) /* one host's folded profile */
#define FLEET_MAX_FRAMES   512	       /* deeper stacks keep their outermost frames */
#define FLEET_MAX_PARALLEL 1024
#define FLEET_LINE_MAX	   4096

enum { FLEET_ALL = 0, FLEET_USAGE = 2, FLEET_NONE = 3, FLEET_SOME = 5 };

struct fleet_host {
	char *addr;
	char *labels[FLEET_MAX_LABELS]; /* "key=value" */
	int nr_labels;
	CURL *h;
	struct reply_buf reply;
	bool ok, started, done;
	double t0, secs;
	char why[CURL_ERROR_SIZE + 64];
	bool probed; /* its clock by a round trip (--report straggler) */
	bool merged; /* its job parts are in fleet.merge (its reply freed then) */
	struct job_clock_probe probe;
};

struct fleet {
	struct fleet_host *hosts;
	size_t nr, cap;
	const char *out, *by, *token_file, *cacert, *cert, *key, *pid, *comm, *gpu_mode, *group_by;
	const char *range_domain; /* --range-domain: URL-safe (checked) */
	bool gpu_report;	  /* --report gpu */
	bool straggler;		  /* --report straggler */
	const char *job;	  /* --job: that job's processes only, on every host */
	const char *rank;	  /* --rank LIST: those ranks only, on every host */
	double dump_before;	  /* --dump SECS: > 0, a dump on every host instead */
	double dump_at;		  /* its moment, CLOCK_REALTIME seconds (every host's the same) */
	char dump_body[160];
	const char *select[FLEET_MAX_LABELS];
	int nr_select;
	double duration, since, host_timeout, deadline;
	unsigned long parallel;
	char *auth;
	uint64_t lines_bad, frames_cut;
	/* --report straggler: each host's job parts merged as its answer comes, then freed, so
	 * that no more than the replies in flight are held at once. */
	struct job_merge *merge;
	int merge_err; /* -ENOMEM met while merging: no report */
};

/* fleet_hosts.c: a usage error's message; FLEET_USAGE. */
int fleet_usage_error(const char *msg, const char *arg);
/* A host and its labels from one line (spaces between); 0, 1 for an empty line, or -errno. */
int fleet__add_host_line(struct fleet *f, char *line);
/* Every host line of the file at path (said why not); 0 or -errno. */
int fleet__read_hosts(struct fleet *f, const char *path);
/* Drop hosts that --select leaves out. */
void fleet__apply_select(struct fleet *f);
/* The hosts and what they held; f itself is the caller's. */
void fleet__free(struct fleet *f);
/* The options every request to a host takes: timeouts, TLS, credentials (hdrs). */
void fleet__curl_common(const struct fleet *f, CURL *h, struct curl_slist *hdrs, long timeout_ms);
/* The scheme to put before h's address ("" when it has one). */
const char *fleet__scheme(const struct fleet *f, const struct fleet_host *h);
/* The value of h's label key, or NULL. */
const char *fleet__label_of(const struct fleet_host *h, const char *key);
/* The name of h in reports: its host label, else its address. */
const char *fleet__host_name(const struct fleet_host *h);

/* fleet_args.c: the options and host arguments into f, checked; 0, -1 once --help is printed,
 * or FLEET_USAGE (the usage error said). */
int fleet__parse(struct fleet *f, int argc, char **argv);

/* fleet.c: the URL asked of h, a recording of the next seconds or the rolling window. */
void fleet__host_url(const struct fleet *f, const struct fleet_host *h, char *url, size_t size);

/* --report gpu (fleet_gpu.c): one host's report r into merged (device times summed, findings
 * by kind with their hosts); every host's report and their merge, on stdout and into -o FILE
 * (0 or -errno). */
void fleet_gpu__merge(struct json_object *merged, struct json_object *r, const char *host);
int fleet_gpu__report(const struct fleet *f, size_t ok);

/* --report straggler (fleet_job.c): the option checks (0 or FLEET_USAGE); every host's clock
 * by a round trip; the hosts' job parts merged into the job report, its trace and diff. */
int fleet_job__checks(struct fleet *f);
void fleet_job__probe_clocks(struct fleet *f);
/* The merge the answers go into (before collecting), and one host's answer into it. 0 or
 * -errno. */
int fleet_job__begin(struct fleet *f);
void fleet_job__take(struct fleet *f, struct fleet_host *h);
int fleet_job__report(struct fleet *f, size_t ok);

#endif
