// SPDX-License-Identifier: Apache-2.0
/*
 * The Chrome trace writer. The whole-profile trace is parsed back by Python's json module
 * (strict UTF-8) and checked structurally: every flow starts and ends inside a slice of its own
 * track, flow ids are unique, B/E slices nest, GPU work does not overlap on a stream, every
 * track is named, and GPU tracks live on pids no real process can have.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "output/model/json_string.h"
#include "output/chrome_trace.h"
#include "output/model/profile.h"
#include "tests/lib/test_files.h"
#include "tests/lib/test_gpu_fixture.h"

static char *run_checker(const char *trace_path)
{
	char cmd[512], *out = calloc(1, 4096);
	int status;
	FILE *p;
	size_t n;

	snprintf(cmd, sizeof(cmd), "python3 %s/lib/check_trace.py %s 2>&1", XSPROF_TEST_SOURCE_DIR,
		 trace_path);
	p = popen(cmd, "r");
	cr_assert(p, "popen: %s", strerror(errno));
	n = fread(out, 1, 4095, p);
	out[n] = 0;
	status = pclose(p);
	cr_assert_neq(WEXITSTATUS(status), 127, "python3 missing: apt-get install python3");
	cr_assert_eq(WEXITSTATUS(status), 0, "the trace failed the structural check:\n%s", out);
	return out;
}

static const char *write_trace(const struct profile_data *pd)
{
	static char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/xsprof-trace-%d.json", (int)getpid());
	f = fopen(path, "we");
	cr_assert(f);
	cr_assert_eq(chrome_trace__write_profile(pd, f, NULL), 0);
	cr_assert_eq(fclose(f), 0);
	return path;
}

Test(chrome_trace, whole_profile_is_structurally_sound)
{
	struct profile_data pd;
	const char *path;
	char *summary;

	fx_profile(&pd, GPU_MODE_MERGED, WEIGHT_US);
	path = write_trace(&pd);
	summary = run_checker(path);
	/*
	 * 8 joins -> 8 flows (3 from the one graph launch); 9 pieces of GPU work on 2 GPUs; 6 API
	 * records; 2 launches with no API record (pid 200's and the 7 ms one) as their own
	 * slices; sampled frames: 4 + 1 (matmul_cpu -> cudaLaunchKernel) + 1 ([unknown] after a
	 * gap) on thread 101, 3 on thread 102; 2 NVTX ranges.
	 */
	cr_expect_str_eq(summary, "flows=8 gpu=9 api=6 launch=2 samples=9 nvtx=2 gpus=2\n");
	free(summary);
	unlink(path);
}

Test(chrome_trace, flows_are_unique_across_processes_reusing_ids)
{
	struct profile_data pd;
	const char *path;
	char *text, *p;
	int s_count = 0;

	/* Both processes' launches have correlation id 1; their flows must not share an id. */
	fx_profile(&pd, GPU_MODE_MERGED, WEIGHT_US);
	path = write_trace(&pd);
	text = test_slurp(path);
	for (p = text; (p = strstr(p, "\"ph\":\"s\"")); p++)
		s_count++;
	cr_expect_eq(s_count, 8);
	cr_expect(strstr(text, "\"pid\":2130706432"), "GPU 0 is pid 0x7F000000");
	cr_expect(strstr(text, "\"pid\":2130706433"), "GPU 1 is pid 0x7F000001");
	cr_expect(strstr(text, "\"name\":\"stream 7 (other 200)\""));
	cr_expect(strstr(text, "\"name\":\"stream 7 (trainer 100)\""));
	cr_expect(strstr(text, "\"name\":\"loader\\t\\\"q\\\" (102)\""), "thread names escaped");
	free(text);
	unlink(path);
}

/* PyTorch backward: launches 0 and 1 (thread 101) ran work of one autograd node made at
 * 500 us; a third link names a launch the profile does not hold. One "autograd node" slice on
 * the thread's autograd track, a flow from it to each launch's GPU work, none for the third;
 * the structural check holds (every flow starts and ends inside a slice of its track). */
Test(chrome_trace, backward_work_flows_from_its_forward_op)
{
	static const struct profile_fwd fwds[] = {
		{.launch_ns = 1 * FX_MS,
		 .fwd_ns = 500 * FX_US,
		 .pid = 100,
		 .tid = 101,
		 .fwd_tid = 101},
		{.launch_ns = 2 * FX_MS,
		 .fwd_ns = 500 * FX_US,
		 .pid = 100,
		 .tid = 101,
		 .fwd_tid = 101},
		{.launch_ns = 9 * FX_MS,
		 .fwd_ns = 600 * FX_US,
		 .pid = 100,
		 .tid = 101,
		 .fwd_tid = 101},
	};
	struct profile_data pd;
	const char *path;
	char *summary, *text, *p;
	int nodes = 0, starts = 0, ends = 0;

	fx_profile(&pd, GPU_MODE_MERGED, WEIGHT_US);
	pd.fwds = fwds;
	pd.nr_fwds = 3;
	path = write_trace(&pd);
	summary = run_checker(path);
	cr_expect_str_eq(summary, "flows=10 gpu=9 api=6 launch=2 samples=9 nvtx=2 gpus=2\n");
	text = test_slurp(path);
	for (p = text; (p = strstr(p, "\"name\":\"autograd node\"")); p++)
		nodes++;
	for (p = text; (p = strstr(p, "\"ph\":\"s\",\"pid\":100,\"tid\":4294967397,"
				      "\"name\":\"backward of\""));
	     p++)
		starts++;
	for (p = text; (p = strstr(p, "\"name\":\"backward of\"")); p++)
		ends++;
	cr_expect_eq(nodes, 1, "one slice per node made");
	cr_expect_eq(starts, 2, "a flow from the node to each of its launches' work");
	cr_expect_eq(ends, 4);
	cr_expect(strstr(text, "\"name\":\"autograd nodes (thread 101)\""), "the track named");
	free(text);
	free(summary);
	unlink(path);
}

Test(chrome_trace, cpu_only_profile)
{
	struct profile_data pd;
	const char *path;
	char *summary;

	fx_profile(&pd, GPU_MODE_CPU, WEIGHT_SAMPLES);
	pd.nr_gpu = pd.nr_joins = pd.nr_launches = 0;
	path = write_trace(&pd);
	summary = run_checker(path);
	cr_expect_str_eq(summary, "flows=0 gpu=0 api=0 launch=0 samples=9 nvtx=0 gpus=0\n");
	free(summary);
	unlink(path);
}

static char *to_string(int (*fn)(FILE *f, void *ctx), void *ctx)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert(f);
	cr_assert_eq(fn(f, ctx), 0);
	cr_assert_eq(fclose(f), 0);
	return buf;
}

static int put(FILE *f, void *ctx)
{
	return json__put_string(f, ctx);
}

Test(chrome_trace, string_escaping)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"plain", "\"plain\""},
		{"a\"b\\c", "\"a\\\"b\\\\c\""},
		{"tab\there\nnl\rcr", "\"tab\\there\\nnl\\rcr\""},
		{"\x01\x1f\x7f", "\"\\u0001\\u001f\x7f\""},
		{"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
		 "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\""},
		{"bad\xff", "\"bad\\ufffd\""},
		{"trunc\xc3", "\"trunc\\ufffd\""},
		{"\xc0\xaf overlong", "\"\\ufffd\\ufffd overlong\""},
		{"\xed\xa0\x80 surrogate", "\"\\ufffd\\ufffd\\ufffd surrogate\""},
		{"", "\"\""},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *s = to_string(put, (void *)cases[i].in);

		cr_expect_str_eq(s, cases[i].out, "case %zu", i);
		free(s);
	}
}

static int low_level(FILE *f, void *ctx)
{
	struct chrome_trace *t = chrome_trace__begin(f);
	struct chrome_arg args[] = {
		{.key = "n", .type = CHROME_ARG_INT, .i = -3},
		{.key = "u", .type = CHROME_ARG_UINT, .u = 18446744073709551615ull},
		{.key = "d", .type = CHROME_ARG_DOUBLE, .d = 0.5},
		{.key = "s", .type = CHROME_ARG_STR, .s = "x\"y"},
	};
	struct chrome_arg bad_series = {.key = "s", .type = CHROME_ARG_STR, .s = "no"};
	static const char *const kv[] = {"k", "v"};
	uint64_t id;

	cr_assert(t);
	cr_expect_eq(chrome_trace__process_name(t, 1, "p"), 0);
	cr_expect_eq(chrome_trace__thread_name(t, 1, 2, "t"), 0);
	cr_expect_eq(chrome_trace__complete(t, 1, 2, "x", "c", 1234567, 1001, args, 4), 0);
	cr_expect_eq(chrome_trace__slice_begin(t, 1, 2, "b", NULL, 1234567, NULL, 0), 0);
	cr_expect_eq(chrome_trace__slice_end(t, 1, 2, "b", 1234999), 0);
	cr_expect_eq(chrome_trace__instant(t, 1, 2, "i", NULL, 5, NULL, 0), 0);
	cr_expect_eq(chrome_trace__counter(t, 1, "c", 6, args, 1), 0);
	id = chrome_trace__new_id(t);
	cr_expect_eq(chrome_trace__new_id(t), id + 1);
	cr_expect_eq(chrome_trace__flow(t, CHROME_FLOW_START, id, 1, 2, "f", NULL, 1234600), 0);
	cr_expect_eq(chrome_trace__flow(t, CHROME_FLOW_END, id, 1, 2, "f", NULL, 1234700), 0);
	cr_expect_eq(chrome_trace__async_begin(t, 9, 1, 2, "a", "nvtx", 7, NULL, 0), 0);
	cr_expect_eq(chrome_trace__async_end(t, 9, 1, 2, "a", "nvtx", 8), 0);
	/* A counter of strings is refused, and the error sticks. */
	cr_expect_eq(chrome_trace__counter(t, 1, "c", 6, &bad_series, 1), -EINVAL);
	cr_expect_eq(chrome_trace__instant(t, 1, 2, "i", NULL, 5, NULL, 0), -EINVAL);
	cr_expect_eq(chrome_trace__end(t, kv, 1), -EINVAL);
	return 0;
}

Test(chrome_trace, low_level_events)
{
	char *s = to_string(low_level, NULL);

	cr_expect(strstr(s, "{\"ph\":\"X\",\"pid\":1,\"tid\":2,\"name\":\"x\",\"cat\":\"c\","
			    "\"ts\":1234.567,\"dur\":1.001,\"args\":{\"n\":-3,"
			    "\"u\":18446744073709551615,\"d\":0.5,\"s\":\"x\\\"y\"}}"),
		  "%s", s);
	cr_expect(strstr(s, "{\"ph\":\"E\",\"pid\":1,\"tid\":2,\"name\":\"b\",\"ts\":1234.999}"));
	cr_expect(strstr(s, "{\"ph\":\"f\",\"pid\":1,\"tid\":2,\"name\":\"f\",\"cat\":\"flow\","
			    "\"ts\":1234.700,\"id\":1,\"bp\":\"e\"}"),
		  "%s", s);
	cr_expect(strstr(s, "\"ph\":\"i\""));
	cr_expect(strstr(s, "\"s\":\"t\""));
	free(s);

	cr_expect_eq(chrome_trace__gpu_pid(0), 0x7F000000);
	cr_expect_eq(chrome_trace__gpu_pid(3), 0x7F000003);
	cr_expect_gt(chrome_trace__samples_tid(4194303), 4194304);
	errno = 0;
	cr_expect_null(chrome_trace__begin(NULL));
	cr_expect_eq(errno, EINVAL);
}

Test(chrome_trace, bad_profile_is_refused)
{
	struct profile_data pd;
	struct corr_gpu_rec broken[FX_NGPU];
	FILE *f = fopen("/dev/null", "w");

	fx_profile(&pd, GPU_MODE_MERGED, WEIGHT_US);
	memcpy(broken, fx_gpu, sizeof(broken));
	broken[FX_K0].end_ns = broken[FX_K0].start_ns - 1;
	pd.gpu = broken;
	cr_expect_eq(chrome_trace__write_profile(&pd, f, NULL), -EINVAL);
	pd.gpu = NULL;
	cr_expect_eq(chrome_trace__write_profile(&pd, f, NULL), -EINVAL);
	fclose(f);
}

Test(chrome_trace, write_error_is_reported)
{
	struct profile_data pd;
	FILE *f = fopen("/dev/full", "w");

	cr_assert(f);
	setvbuf(f, NULL, _IONBF, 0);
	fx_profile(&pd, GPU_MODE_MERGED, WEIGHT_US);
	cr_expect_eq(chrome_trace__write_profile(&pd, f, NULL), -ENOSPC);
	fclose(f);
}
