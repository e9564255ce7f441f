// SPDX-License-Identifier: Apache-2.0
/*
 * xs_job_merge_bench FILE...: each FILE (job parts, output/job/job_parts.h) read and added to one
 * merge as a host of its own, the merge built, its report, trace and diff written to
 * /dev/null (the report to $XS_JOB_MERGE_REPORT too); prints the seconds of each phase, the records merged and the peak RSS.
 * bench/job_merge.sh runs it on made-up parts of growing sizes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "daemon/base/clock.h"
#include "output/chrome_trace.h"
#include "output/diff_svg.h"
#include "output/job/job_merge.h"
#include "output/job/job_report.h"
#include "output/model/profile.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n) {
		buf[n] = '\0';
		*len = (size_t)n;
	} else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

int main(int argc, char **argv)
{
	struct job_merge *m = job_merge__new(NULL);
	FILE *null = fopen("/dev/null", "w");
	double t0 = clock__mono_s(), t_add, t_build, t_write;
	size_t bytes = 0;
	struct rusage ru;
	struct job_merge_straggler st = {0};

	if (argc < 2 || !m || !null) {
		fprintf(stderr, "usage: %s FILE...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		char why[200] = "", name[32];
		size_t len = 0;
		char *json = slurp(argv[i], &len);
		int err;

		if (!json) {
			fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		snprintf(name, sizeof(name), "host%d", i);
		err = job_merge__add(m, name, json, len, NULL, why, sizeof(why));
		free(json);
		bytes += len;
		if (err) {
			fprintf(stderr, "%s: %s (%s)\n", argv[i], strerror(-err), why);
			return 1;
		}
	}
	t_add = clock__mono_s();
	if (job_merge__build(m, NULL)) {
		fprintf(stderr, "build failed\n");
		return 1;
	}
	t_build = clock__mono_s();
	job_report__write_json(job_merge__report(m), null);
	/* XS_JOB_MERGE_REPORT=FILE: the report itself, to compare builds. */
	if (getenv("XS_JOB_MERGE_REPORT")) {
		FILE *rf = fopen(getenv("XS_JOB_MERGE_REPORT"), "w");

		if (rf) {
			job_report__write_json(job_merge__report(m), rf);
			fclose(rf);
		}
	}
	chrome_trace__write_profile(job_merge__profile(m), null, NULL);
	if (job_merge__straggler(m, &st) == 0)
		diff__write_svg(st.diff, null, NULL);
	job_merge_straggler__release(&st);
	t_write = clock__mono_s();
	getrusage(RUSAGE_SELF, &ru);
	printf("bytes %zu hosts %zu processes %zu gpu %zu launches %zu samples %zu read_s %.3f "
	       "build_s %.3f write_s %.3f total_s %.3f rss_mib %.1f\n",
	       bytes, job_merge__hosts(m), job_merge__processes(m), job_merge__profile(m)->nr_gpu,
	       job_merge__profile(m)->nr_launches, job_merge__profile(m)->nr_samples, t_add - t0,
	       t_build - t_add, t_write - t_build, t_write - t0, ru.ru_maxrss / 1024.0);
	job_merge__free(m);
	fclose(null);
	return 0;
}
