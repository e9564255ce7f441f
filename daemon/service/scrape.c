/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The scrape endpoint, GET /debug/pprof/profile?seconds=N: what `go tool pprof URL`, Parca and
 * Pyroscope ask a pprof source for (job=ID&rank=LIST: one job's processes, some ranks). Each
 * request is a recording of the next N seconds, started and rendered exactly as
 * POST /v1/recordings does it (GPU joins included), with the connection parked until it ends;
 * a GET, so a read-only network client may make it.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "daemon/log.h"
#include "daemon/options.h"
#include "daemon/service/http.h"
#include "daemon/service/internal.h"
#include "daemon/session/profile.h"
#include "daemon/session/session_mode.h"
#include "output/output.h"
#include "output/model/profile.h"

#define SCRAPE_DEFAULT_S 30 /* what Go's net/http/pprof records when not told */

/* A whole number in [lo, hi] from digits only, or false. */
static bool parse_uint(const char *str, unsigned long lo, unsigned long hi, unsigned long *ret)
{
	char *end;

	if (!str || !*str || strspn(str, "0123456789") != strlen(str) || strlen(str) > 9)
		return false;
	*ret = strtoul(str, &end, 10);
	return *ret >= lo && *ret <= hi;
}

/* pid=N[,N...] into r. 0, or -EINVAL with msg. */
static int scrape_pids(const char *arg, struct svc_recording *r, char *msg, size_t size)
{
	char buf[MAX_REQUEST_PIDS * 12], *save = NULL, *tok;
	unsigned long pid;

	if (strlen(arg) >= sizeof(buf)) {
		snprintf(msg, size, "pid lists at most %d process ids", MAX_REQUEST_PIDS);
		return -EINVAL;
	}
	strcpy(buf, arg);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!parse_uint(tok, 1, INT32_MAX, &pid) || r->nr_pids == MAX_REQUEST_PIDS) {
			snprintf(msg, size, "pid must be up to %d positive process ids, by commas",
				 MAX_REQUEST_PIDS);
			return -EINVAL;
		}
		r->pids[r->nr_pids++] = (pid_t)pid;
	}
	return 0;
}

/* comm=NAME: the processes of that name now, into r. 0, -ENOENT for none, -E2BIG past the cap. */
static int scrape_comm(const char *comm, struct svc_recording *r)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int err = -ENOENT;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char path[64], name[64] = "";
		unsigned long pid;
		FILE *f;

		if (!parse_uint(de->d_name, 1, INT32_MAX, &pid))
			continue;
		snprintf(path, sizeof(path), "/proc/%lu/comm", pid);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f))
			name[strcspn(name, "\n")] = '\0';
		fclose(f);
		if (strcmp(name, comm))
			continue;
		if (r->nr_pids == MAX_REQUEST_PIDS) {
			err = -E2BIG;
			break;
		}
		r->pids[r->nr_pids++] = (pid_t)pid;
		err = 0;
	}
	closedir(d);
	return err;
}

/* The query into r: seconds, pid or comm, gpu_mode, weight, hz, format, group_by,
 * range_domain, job, rank. 0 or -EINVAL. */
static int parse_scrape(struct service *s, struct MHD_Connection *c, struct svc_recording *r,
			char *msg, size_t size)
{
#define ARG(k) MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k)
	const char *secs = ARG("seconds"), *pid = ARG("pid"), *comm = ARG("comm");
	const char *mode = ARG("gpu_mode"), *weight = ARG("weight"), *hz = ARG("hz");
	const char *fmt = ARG("format"), *group = ARG("group_by"), *domain = ARG("range_domain");
	const char *job = ARG("job"), *rank = ARG("rank");
#undef ARG
	unsigned long v;
	int err;

	r->pidfd = -1;
	r->format = OUTPUT_PPROF;
	r->freq_hz = XSPROFD_ONESHOT_FREQ;
	r->duration_s =
		SCRAPE_DEFAULT_S < s->opts->max_record_s ? SCRAPE_DEFAULT_S : s->opts->max_record_s;
	r->children = true;
	r->view.strategy = "auto";
	if (secs) {
		if (!parse_uint(secs, 1, s->opts->max_record_s, &v)) {
			snprintf(msg, size, "seconds must be a whole number in [1, %u]",
				 s->opts->max_record_s);
			return -EINVAL;
		}
		r->duration_s = (double)v;
	}
	if (hz) {
		if (!parse_uint(hz, 1, 10000, &v)) {
			snprintf(msg, size, "hz must be 1..10000");
			return -EINVAL;
		}
		r->freq_hz = (unsigned int)v;
	}
	r->view.freq_hz = r->freq_hz;
	if (mode) {
		if (profile__mode_from_name(mode, &r->view.mode)) {
			snprintf(msg, size, "gpu_mode must be cpu, gpu or merged");
			return -EINVAL;
		}
		r->view.mode_set = true;
	}
	if (weight && profile__unit_from_name(weight, &r->view.unit)) {
		snprintf(msg, size, "weight must be samples or us");
		return -EINVAL;
	}
	if (fmt && (output__format_from_name(fmt, &r->format) ||
		    !output__format_allowed(r->format, OUTPUT_IN_SCRAPE))) {
		char list[160];

		snprintf(msg, size, "format must be %s",
			 output__format_list(OUTPUT_IN_SCRAPE, false, list, sizeof(list)));
		return -EINVAL;
	}
	if (group && session_group__from_name(group, &r->view.group_by)) {
		snprintf(msg, size,
			 "group_by must be unit, container, comm, rank, job, range or outer-range");
		return -EINVAL;
	}
	if (domain && recordings__set_range_domain(r, domain, msg, size))
		return -EINVAL;
	if (recordings__set_job_filter(r, job, rank, msg, size))
		return -EINVAL;
	if (pid && comm) {
		snprintf(msg, size, "give pid or comm, not both");
		return -EINVAL;
	}
	if (pid)
		return scrape_pids(pid, r, msg, size);
	if (comm) {
		err = strlen(comm) < 16 ? scrape_comm(comm, r) : -ENOENT;
		if (err == -E2BIG)
			snprintf(msg, size, "more than %d processes are named %s", MAX_REQUEST_PIDS,
				 comm);
		else if (err)
			snprintf(msg, size, "no process is named %.40s", comm);
		return err ? -EINVAL : 0;
	}
	return 0;
}

enum MHD_Result scrape__api(struct service *s, struct req *q, struct MHD_Connection *c)
{
	struct svc_recording *r = calloc(1, sizeof(*r));
	struct recording_ctx *rc = calloc(1, sizeof(*rc));
	enum MHD_Result ret;
	char msg[200];

	if (!r || !rc) {
		ret = reply__error(c, 500, "out of memory", NULL);
		goto out;
	}
	if (parse_scrape(s, c, r, msg, sizeof(msg))) {
		ret = reply__error(c, 400, msg,
				   "e.g. /debug/pprof/profile?seconds=10&pid=1234 (or comm=NAME)");
		goto out;
	}
	if (!recordings__admit(s, q, c, r, rc, false, &ret))
		goto out;
	rc = NULL;
	log_info("scrape: recording %u, %g s at %u Hz", r->id, r->duration_s, r->freq_hz);
	/* Parked until it ends, as GET /v1/recordings/ID is; the result goes with the fetch. */
	recordings__park(q, c, r);
	return MHD_YES;
out:
	recordings__discard(r, rc);
	return ret;
}
