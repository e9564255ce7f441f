// SPDX-License-Identifier: Apache-2.0
/*
 * pprof output, read back by the real reader: `go tool pprof` (Debian: golang-go), which
 * works offline. Its -top and -tags outputs are checked against the fixture's numbers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "output/calltree.h"
#include "output/output.h"
#include "output/pprof.h"
#include "output/profile.h"
#include "test_gpu_fixture.h"

static char dir[] = "/tmp/xsprof-pprof-XXXXXX";

static void setup(void)
{
	cr_assert(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)!system(cmd);
}

TestSuite(pprof, .init = setup, .fini = teardown);

static const char *write_profile(const struct profile_data *pd, const char *name)
{
	static char path[128];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_eq(output__write_profile_file(pd, OUTPUT_PPROF, path, NULL), 0);
	return path;
}

/* Output of `go tool pprof ARGS path`; fails the test when it does not run. */
static char *pprof(const char *args, const char *path)
{
	char cmd[512], *out = calloc(1, 65536);
	size_t n;
	FILE *p;
	int status;

	/* go wants a cache and a home even for a prebuilt tool; ctest may give it neither. */
	snprintf(cmd, sizeof(cmd), "HOME=%s GOCACHE=%s/gocache go tool pprof %s %s 2>&1", dir, dir,
		 args, path);
	p = popen(cmd, "r");
	cr_assert(p);
	n = fread(out, 1, 65535, p);
	out[n] = 0;
	status = pclose(p);
	cr_assert_neq(WEXITSTATUS(status), 127, "go missing: apt-get install golang-go");
	cr_assert_eq(WEXITSTATUS(status), 0, "go tool pprof %s failed:\n%s", args, out);
	return out;
}

/* pprof aligns -tags with tabs or spaces depending on the column: one space for any run. */
static char *squeeze(char *s)
{
	char *r = s, *w = s;

	for (; *r; r++) {
		if (*r == '\t')
			*r = ' ';
		if (*r == ' ' && w > s && w[-1] == ' ')
			continue;
		*w++ = *r;
	}
	*w = 0;
	return s;
}

/* The flat value of the -top row for name (-1 when absent). */
static long long flat_of(const char *top, const char *name)
{
	const char *line = top;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line), nlen = strlen(name);
		long long v;

		if (len > nlen + 2 && !strncmp(line + len - nlen, name, nlen) &&
		    line[len - nlen - 1] == ' ' && sscanf(line, " %lld", &v) == 1)
			return v;
		line = nl ? nl + 1 : NULL;
	}
	return -1;
}

Test(pprof, gpu_time_under_launching_stacks)
{
	struct profile_data pd;
	const char *path;
	char *top;

	fx_profile(&pd, GPU_MODE_MERGED, WEIGHT_US);
	path = write_profile(&pd, "p.pb.gz");
	top = pprof("-top -unit=ns -sample_index=gpu", path);
	cr_expect(strstr(top, "Type: gpu"), "%s", top);
	cr_expect(strstr(top, "Total samples = 2900000ns"), "%s", top);
	cr_expect_eq(flat_of(top, "[gpu] relu"), 800000, "%s", top);
	cr_expect_eq(flat_of(top, "[gpu] gemm"), 500000, "pprof shortens gemm<float>:\n%s", top);
	cr_expect_eq(flat_of(top, "[gpu] memcpy HtoD"), 300000);
	cr_expect_eq(flat_of(top, "[gpu] sync"), 400000);
	cr_expect_eq(flat_of(top, "[gpu] g3"), 200000);
	cr_expect_eq(flat_of(top, "[gpu] conv"), 300000);
	free(top);

	/* Cumulative: the graph launch holds its three kernels. */
	top = pprof("-top -cum -unit=ns -sample_index=gpu", path);
	cr_expect(strstr(top, "400000ns 13.79%  cudaGraphLaunch"), "%s", top);
	free(top);
}

Test(pprof, cpu_samples_and_default_type)
{
	struct profile_data pd;
	const char *path;
	char *top;

	fx_profile(&pd, GPU_MODE_MERGED, WEIGHT_US);
	path = write_profile(&pd, "c.pb.gz");
	top = pprof("-top -unit=ns", path);
	cr_expect(strstr(top, "Type: cpu"), "cpu is the default type:\n%s", top);
	cr_expect(strstr(top, "Total samples = 500000ns"), "%s", top);
	cr_expect_eq(flat_of(top, "matmul_cpu"), 200000, "%s", top);
	cr_expect_eq(flat_of(top, "decode"), 100000);
	free(top);
	top = pprof("-top -sample_index=samples", path);
	cr_expect_eq(flat_of(top, "matmul_cpu"), 2, "%s", top);
	free(top);
}

Test(pprof, labels)
{
	struct profile_data pd;
	const char *path;
	char *tags;

	fx_profile(&pd, GPU_MODE_GPU, WEIGHT_US);
	path = write_profile(&pd, "l.pb.gz");
	tags = squeeze(pprof("-tags -sample_index=gpu", path));
	/* Two processes, two GPUs, three streams; kernels by name. */
	cr_expect(strstr(tags, "pid:"), "%s", tags);
	cr_expect(strstr(tags, "2.6ms (89.66%): 100"), "%s", tags);
	cr_expect(strstr(tags, "300.0us (10.34%): 200"), "%s", tags);
	cr_expect(strstr(tags, "device:"), "%s", tags);
	cr_expect(strstr(tags, "2.5ms (86.21%): 0"), "%s", tags);
	cr_expect(strstr(tags, "400.0us (13.79%): 1"), "%s", tags);
	cr_expect(strstr(tags, "stream:"));
	cr_expect(strstr(tags, "2.2ms (75.86%): 7"), "%s", tags);
	cr_expect(strstr(tags, "kernel:"));
	cr_expect(strstr(tags, "800.0us (27.59%): relu"), "%s", tags);
	cr_expect(strstr(tags, "thread:"));
	free(tags);
}

Test(pprof, modes_and_the_tree_only_profile)
{
	struct profile_data pd;
	struct calltree *t = calltree__new();
	const char *frames[] = {"app", "main", "spin"};
	const char *path;
	char *top;

	/* gpu mode leaves CPU samples out. */
	fx_profile(&pd, GPU_MODE_GPU, WEIGHT_US);
	path = write_profile(&pd, "g.pb.gz");
	top = pprof("-top -sample_index=cpu", path);
	cr_expect(strstr(top, "Total samples = 0"), "%s", top);
	free(top);

	/* A daemon with only the aggregated CPU tree. */
	cr_assert_eq(calltree__add(t, frames, 3, 42), 0);
	memset(&pd, 0, sizeof(pd));
	pd.cpu_tree = t;
	pd.sample_period_ns = 10000000;
	path = write_profile(&pd, "t.pb.gz");
	top = pprof("-top -sample_index=samples", path);
	cr_expect_eq(flat_of(top, "spin"), 42, "%s", top);
	free(top);
	/* The process name is a sample label, not a frame. */
	top = pprof("-raw", path);
	cr_expect(strstr(top, "process:[app]"), "%s", top);
	cr_expect(!strstr(top, ": app "), "%s", top);
	free(top);
	calltree__free(t);
}

Test(pprof, errors)
{
	struct profile_data pd;
	FILE *f = fopen("/dev/full", "w");

	cr_assert(f);
	setvbuf(f, NULL, _IONBF, 0);
	fx_profile(&pd, GPU_MODE_MERGED, WEIGHT_US);
	cr_expect_eq(pprof__write(&pd, f, NULL), -ENOSPC);
	pd.joins = NULL;
	cr_expect_eq(pprof__write(&pd, f, NULL), -EINVAL);
	cr_expect_eq(pprof__write(NULL, f, NULL), -EINVAL);
	fclose(f);
}
