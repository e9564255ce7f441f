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

#include "output/model/calltree.h"
#include "output/model/frame_sites.h"
#include "output/output.h"
#include "output/pprof.h"
#include "output/protobuf.h"
#include "output/model/profile.h"
#include "tests/lib/test_files.h"
#include "tests/lib/test_gpu_fixture.h"

TEST_SCRATCH_SUITE(pprof, "/tmp/xsprof-pprof-XXXXXX");

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

/* The lines of text between the line starting with from and the one starting with to. */
static char *section(char *raw, const char *from, const char *to)
{
	char *a = strstr(raw, from), *b;

	cr_assert(a, "no %s in:\n%s", from, raw);
	b = to ? strstr(a, to) : NULL;
	if (b)
		*b = 0;
	return a;
}

/*
 * Frames with sites: a file's mapping (path, build id, segment) and addresses, lines and an
 * inlined function sharing its caller's location, the kernel's mapping, a [gpu] leaf, and a
 * frame with no site by name only.
 */
Test(pprof, addresses_files_lines_and_inlined_frames)
{
	const char *stack1[] = {"app", "main (work.c:20)", "hot (work.c:11)", "inner (work.c:6)",
				"do_syscall_64_[k]"};
	const char *stack2[] = {"app", "main (work.c:20)", "[python] step", "[gpu] relu"};
	struct frame_map exe = {.path = "/opt/app/work",
				.build_id = "a3cf1444",
				.start = 0x1000,
				.limit = 0x2000,
				.offset = 0x1000};
	struct frame_map kernel = {.path = FRAME_SITES_KERNEL,
				   .start = 0xffffffff81000000ull,
				   .limit = 0xffffffff81000001ull};
	struct frame_sites *fs = frame_sites__new(0);
	struct calltree *t = calltree__new();
	struct profile_data pd = {.cpu_tree = t, .sample_period_ns = 10000000};
	char src[160], *raw, *locs, *maps, *out;
	const char *path;
	FILE *f;

	cr_assert(fs && t);
	snprintf(src, sizeof(src), "%s/work.c", dir);
	cr_assert_eq(frame_sites__add(
			     fs, "main (work.c:20)",
			     &(struct frame_site){
				     .addr = 0x1089, .function = "main", .file = src, .line = 20},
			     &exe),
		     0);
	cr_assert_eq(frame_sites__add(fs, "main (work.c:20)", &(struct frame_site){0}, NULL), 0,
		     "a name recorded again keeps its first site");
	cr_assert_eq(frame_sites__add(
			     fs, "hot (work.c:11)",
			     &(struct frame_site){
				     .addr = 0x11c0, .function = "hot", .file = src, .line = 11},
			     &exe),
		     0);
	cr_assert_eq(frame_sites__add(fs, "inner (work.c:6)",
				      &(struct frame_site){.addr = 0x11dc,
							   .function = "inner",
							   .file = src,
							   .line = 6,
							   .inlined = true},
				      &exe),
		     0);
	cr_assert_eq(frame_sites__add(fs, "do_syscall_64_[k]",
				      &(struct frame_site){.addr = 0xffffffff81000000ull,
							   .system_name = "do_syscall_64"},
				      &kernel),
		     0);
	kernel.start = kernel.limit = 0xffffffff81000400ull;
	kernel.limit++;
	cr_assert_eq(frame_sites__add(fs, "entry_SYSCALL_64_[k]",
				      &(struct frame_site){.addr = kernel.start}, &kernel),
		     0);
	cr_assert_eq(frame_sites__nr_maps(fs), 2, "one mapping per file");
	cr_assert_eq(frame_sites__map_at(fs, 2)->limit, 0xffffffff81000401ull,
		     "the kernel's mapping grows to hold its addresses");
	cr_assert_eq(calltree__add(t, stack1, 5, 7), 0);
	cr_assert_eq(calltree__add(t, stack2, 4, 3), 0);
	pd.sites = fs;

	/* The source -list reads. */
	f = fopen(src, "w");
	cr_assert(f);
	for (int i = 1; i <= 22; i++)
		fprintf(f, "line_%d_of_work_c\n", i);
	fclose(f);

	path = write_profile(&pd, "s.pb.gz");
	raw = pprof("-raw", path);
	maps = strdup(section(raw, "Mappings", NULL));
	locs = section(raw, "Locations", "Mappings");
	cr_expect(strstr(maps, "0x1000/0x2000/0x1000 /opt/app/work a3cf1444 [FN][FL][LN][IN]"),
		  "%s", maps);
	cr_expect(strstr(maps, "0xffffffff81000000/0xffffffff81000401/0x0 [kernel.kallsyms]"), "%s",
		  maps);
	cr_expect(strstr(maps, "[gpu]"), "%s", maps);
	/* inner was inlined into hot: one location at inner's address, innermost line first. */
	snprintf(src, sizeof(src), "0x11dc M=1 inner %s/work.c:6 s=0\n hot %s/work.c:11", dir, dir);
	cr_expect(strstr(squeeze(locs), src), "%s\nwants\n%s", locs, src);
	snprintf(src, sizeof(src), "0x1089 M=1 main %s/work.c:20", dir);
	cr_expect(strstr(locs, src), "%s", locs);
	/* (pprof numbers the mappings again as it reads them.) */
	cr_expect(strstr(locs, "0xffffffff81000000 M="), "%s", locs);
	cr_expect(strstr(locs, " do_syscall_64_[k] :0 s=0(do_syscall_64)"), "%s", locs);
	cr_expect(strstr(locs, "0x1 M=") && strstr(locs, " [gpu] relu :0"), "%s", locs);
	cr_expect(strstr(locs, "0x0 [python] step"), "a frame without a site has no address:\n%s",
		  locs);
	free(maps);
	free(raw);

	/* -list reads the lines from the source file; -lines shows them in -top. */
	out = pprof("-list hot", path);
	cr_expect(strstr(out, "ROUTINE ======================== hot in"), "%s", out);
	cr_expect(strstr(squeeze(out), ". 70ms 11:line_11_of_work_c"), "%s", out);
	free(out);
	out = pprof("-top -lines", path);
	cr_expect(strstr(out, "inner ") && strstr(out, "work.c:6 (inline)"), "%s", out);
	free(out);
	calltree__free(t);
	frame_sites__free(fs);
}

/* The table keeps within its cap by starting over, and counts what it could not keep. */
Test(pprof, frame_sites_cap)
{
	struct frame_sites *fs = frame_sites__new(64 << 10);
	struct frame_map m = {.path = "/lib/x.so", .build_id = "", .start = 0, .limit = 16};
	struct frame_sites_stats st;
	char name[64], big[5000];

	cr_assert(fs);
	for (int i = 0; i < 2000; i++) {
		snprintf(name, sizeof(name), "function_%d", i);
		cr_assert_eq(
			frame_sites__add(fs, name, &(struct frame_site){.addr = (uint64_t)i}, &m),
			0);
		cr_assert(frame_sites__get(fs, name), "the name just added is there");
		cr_assert_eq(frame_sites__get(fs, name)->addr, (uint64_t)i);
	}
	frame_sites__stats(fs, &st);
	cr_expect_gt(st.resets, 0, "64 KiB holds fewer than 2000 names");
	cr_expect_leq(st.bytes, 64 << 10);
	cr_expect_lt(st.names, 2000);
	cr_expect(!frame_sites__get(fs, "function_0"), "emptied when full");
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	cr_expect_eq(frame_sites__add(fs, big, &(struct frame_site){0}, NULL), -ENAMETOOLONG);
	frame_sites__stats(fs, &st);
	cr_expect_eq(st.refused, 1);
	/* Another segment of the same file is another mapping. */
	m.offset = 0x5000;
	cr_assert_eq(frame_sites__add(fs, "data_fn", &(struct frame_site){0}, &m), 0);
	cr_expect_eq(frame_sites__get(fs, "data_fn")->map, frame_sites__nr_maps(fs));
	cr_expect_eq(frame_sites__map_at(fs, frame_sites__get(fs, "data_fn")->map)->offset, 0x5000);
	frame_sites__free(fs);
}

/* Protobuf string fields must be UTF-8 (protoc and OTLP collectors refuse the message): a name
 * from a profiled process that is not is repaired, byte by byte, as it is interned; the same
 * bytes intern to the same string. */
Test(pprof, interned_strings_are_valid_utf8)
{
	struct strtab t = {0};
	int64_t a = pb_intern(&t, "ok"), b = pb_intern(&t, "k\xff\xfe_\xe2\x82"),
		c = pb_intern(&t, "k\xff\xfe_\xe2\x82"), d = pb_intern(&t, "caf\xc3\xa9");
	char longname[600];

	cr_assert(a >= 0 && b > a && c == b && d > b);
	cr_assert_str_eq(t.s[b], "k??_??");
	cr_assert_str_eq(t.s[d], "caf\xc3\xa9", "valid UTF-8 is kept");
	memset(longname, '\xff', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	cr_assert_gt(pb_intern(&t, longname), d, "past the small buffer");
	cr_assert_eq(strspn(t.s[t.n - 1], "?"), sizeof(longname) - 1);
	pb_strtab_free(&t);
}
