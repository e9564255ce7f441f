// SPDX-License-Identifier: Apache-2.0
/*
 * The XPlane writer (output/xplane.h) on the GPU fixture, read back by tests/lib/xplane_read.py
 * (protoc's Python module of the vendored xplane.proto, strict about UTF-8): the planes, every
 * GPU activity, API call and NVTX range once, names that are not UTF-8 repaired, metadata
 * complete, streams apart and frames nested; a record that ends before it starts refused; a
 * write error reported.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "output/model/profile.h"
#include "output/xplane.h"
#include "tests/lib/test_gpu_fixture.h"

static char *read_back(const struct profile_data *pd)
{
	char path[64], cmd[512], *out = calloc(1, 65536);
	int status;
	size_t n;
	FILE *f, *p;

	cr_assert(out);
	snprintf(path, sizeof(path), "/tmp/xsprof-xplane-%d.pb", (int)getpid());
	f = fopen(path, "we");
	cr_assert(f);
	cr_assert_eq(xplane__write(pd, f, NULL), 0);
	cr_assert_eq(fclose(f), 0);
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/lib/xplane_read.py %s 2>&1",
		 XSPROF_TEST_SOURCE_DIR, path);
	p = popen(cmd, "r");
	cr_assert(p);
	n = fread(out, 1, 65535, p);
	out[n] = 0;
	status = pclose(p);
	unlink(path);
	cr_assert_eq(WEXITSTATUS(status), 0, "xplane_read.py (needs protoc, python3-protobuf):\n%s",
		     out);
	return out;
}

/* The fixture's clock starts at 0: as if it ran just now. */
static void fixture(struct profile_data *pd)
{
	struct timespec ts;

	fx_profile(pd, GPU_MODE_MERGED, WEIGHT_US);
	clock_gettime(CLOCK_REALTIME, &ts);
	pd->realtime_offset_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The events of the "event PLANE KIND NAME COUNT TOTAL_PS" lines that start with prefix (a
 * name may hold spaces: COUNT is the next to last field). */
static int count(const char *out, const char *prefix)
{
	size_t len = strlen(prefix);
	int n = 0;

	for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		const char *end = strchr(p, '\n'), *sp;

		if (!end || strncmp(p, prefix, len))
			continue;
		sp = end;
		while (sp > p && *--sp != ' ')
			;
		while (sp > p && *--sp != ' ')
			;
		n += atoi(sp + 1);
	}
	return n;
}

Test(xplane, fixture_reads_back_whole)
{
	struct profile_data pd;
	char *out;

	fixture(&pd);
	out = read_back(&pd);
	cr_expect(strstr(out, "plane /host:CPU ") && strstr(out, "plane /device:GPU:0 ") &&
			  strstr(out, "plane /device:GPU:1 "),
		  "%s", out);
	/* 9 pieces of GPU work, 6 API records, 2 NVTX ranges, as the Chrome trace has them. */
	cr_expect_eq(count(out, "event /device:GPU:0 gpu "), 6, "%s", out);
	cr_expect_eq(count(out, "event /device:GPU:1 gpu "), 3, "%s", out);
	cr_expect_eq(count(out, "event /host:CPU api "), 6, "%s", out);
	cr_expect_eq(count(out, "event /host:CPU nvtx "), 2, "%s", out);
	/* Repaired, not dropped: the decoder is strict about UTF-8. */
	cr_expect(strstr(out, "event /device:GPU:0 gpu orphan"), "%s", out);
	cr_expect(strstr(out, "stack /device:GPU:0 gemm<float> "), "no launch stack: %s", out);
	free(out);
}

Test(xplane, bad_profile_is_refused)
{
	struct profile_data pd;
	struct corr_gpu_rec broken[FX_NGPU];
	FILE *f = fopen("/dev/null", "w");

	cr_assert(f);
	fixture(&pd);
	memcpy(broken, fx_gpu, sizeof(broken));
	broken[FX_K0].end_ns = broken[FX_K0].start_ns - 1;
	pd.gpu = broken;
	cr_expect_eq(xplane__write(&pd, f, NULL), -EINVAL);
	pd.gpu = NULL;
	cr_expect_eq(xplane__write(&pd, f, NULL), -EINVAL);
	fclose(f);
}

Test(xplane, write_error_is_reported)
{
	struct profile_data pd;
	FILE *f = fopen("/dev/full", "w");

	cr_assert(f);
	setvbuf(f, NULL, _IONBF, 0);
	fixture(&pd);
	cr_expect_eq(xplane__write(&pd, f, NULL), -ENOSPC);
	fclose(f);
}
