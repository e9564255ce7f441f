// SPDX-License-Identifier: Apache-2.0
/* The launch store and the launches fold: pure data, no BPF. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon/cuda/cuda_api.h"
#include "daemon/cuda/launch_fold.h"
#include "daemon/cuda/launch_store.h"
#include "daemon/symbolize/symbolizer.h"
#include "output/model/calltree.h"
#include "output/folded.h"

static struct xsprof_cuda_call call(__u32 tgid, __u16 api, const char *comm, int n, __u64 first_ip)
{
	struct xsprof_cuda_call r;

	memset(&r, 0, sizeof(r));
	r.type = XSPROF_REC_CUDA_CALL;
	r.tgid = tgid;
	r.tid = tgid + 1;
	r.api = api;
	r.time_ns = 1000 + first_ip;
	r.stream = 0x5000 + api;
	strncpy(r.comm, comm, sizeof(r.comm));
	r.nr_user = n;
	for (int i = 0; i < n; i++)
		r.ips[i] = first_ip + 0x100 * i;
	return r;
}

Test(launch_store, same_stack_counts_once_and_every_call_is_an_event)
{
	struct launch_store *ls = launch_store__new(0, 0);
	struct xsprof_cuda_call a = call(10, XSPROF_CUDA_cudaLaunchKernel, "app", 3, 0x1000);
	struct xsprof_cuda_call b = call(10, XSPROF_CUDA_cudaMemcpyAsync, "app", 3, 0x1000);
	struct launch_store_stats st;
	struct launch_stack s;
	const struct launch_event *ev;

	cr_assert(ls);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(launch_store__add_call(ls, &a), 0);
	cr_assert_eq(launch_store__add_call(ls, &b), 0);
	/* Same frames, another API: another stack. */
	cr_assert_eq(launch_store__nr_stacks(ls), 2);
	cr_assert_eq(launch_store__stack(ls, 0, &s), 0);
	cr_expect_eq(s.count, 5);
	cr_expect_eq(s.api, XSPROF_CUDA_cudaLaunchKernel);
	cr_expect_eq(s.nr_user, 3);
	cr_expect_eq(s.ips[2], 0x1200);
	cr_expect_eq(launch_store__stack(ls, 2, &s), -ERANGE);
	cr_assert_eq(launch_store__nr_events(ls), 6);
	ev = launch_store__events(ls);
	cr_expect_eq(ev[5].api, XSPROF_CUDA_cudaMemcpyAsync);
	cr_expect_eq(ev[5].arg, 0x5000 + XSPROF_CUDA_cudaMemcpyAsync);
	cr_expect_eq(ev[5].stack, 1);
	cr_expect_eq(ev[0].tid, 11);
	launch_store__stats(ls, &st);
	cr_expect_eq(st.calls, 6);
	cr_expect_eq(st.distinct, 2);
	launch_store__free(ls);
}

static struct xsprof_launch_reuse reuse(__u32 tgid, __u32 tid, __u16 kind, __u32 api, __u64 arg)
{
	return (struct xsprof_launch_reuse){.type = XSPROF_REC_LAUNCH_REUSE,
					    .tgid = tgid,
					    .tid = tid,
					    .kind = kind,
					    .time_ns = 5000 + arg,
					    .arg = arg,
					    .api = api};
}

Test(launch_store, reuse_records_count_under_their_threads_last_stack)
{
	struct launch_store *ls = launch_store__new(0, 0);
	struct xsprof_cuda_call a = call(10, XSPROF_CUDA_cudaLaunchKernel, "app", 3, 0x1000);
	struct xsprof_cuda_call b = call(10, XSPROF_CUDA_cudaLaunchKernel, "app", 4, 0x2000);
	struct xsprof_launch_reuse r;
	struct launch_store_stats st;
	struct launch_stack s;
	const struct launch_event *ev;

	cr_assert(ls);
	b.tid = 12; /* another thread of the same process */
	cr_assert_eq(launch_store__add_call(ls, &a), 0);
	cr_assert_eq(launch_store__add_call(ls, &b), 0);
	/* Thread 11 twice, thread 12 once: each under its own last stack. */
	r = reuse(10, 11, XSPROF_LAUNCH_CALL, XSPROF_CUDA_cudaLaunchKernel, 1);
	cr_assert_eq(launch_store__add_reuse(ls, &r), 0);
	cr_assert_eq(launch_store__add_reuse(ls, &r), 0);
	r = reuse(10, 12, XSPROF_LAUNCH_CALL, XSPROF_CUDA_cudaLaunchKernel, 2);
	cr_assert_eq(launch_store__add_reuse(ls, &r), 0);
	cr_assert_eq(launch_store__nr_stacks(ls), 2);
	cr_assert_eq(launch_store__stack(ls, 0, &s), 0);
	cr_expect_eq(s.count, 3);
	cr_assert_eq(launch_store__stack(ls, 1, &s), 0);
	cr_expect_eq(s.count, 2);
	/* Every reuse is an event with its own time and argument. */
	cr_assert_eq(launch_store__nr_events(ls), 5);
	ev = launch_store__events(ls);
	cr_expect_eq(ev[4].stack, 1);
	cr_expect_eq(ev[4].arg, 2);
	cr_expect_eq(ev[4].tid, 12);
	cr_expect_eq(ev[4].time_ns, 5002);
	/* Another API from the same place: the same frames under that API. */
	r = reuse(10, 11, XSPROF_LAUNCH_CALL, XSPROF_CUDA_cudaMemcpyAsync, 3);
	cr_assert_eq(launch_store__add_reuse(ls, &r), 0);
	cr_assert_eq(launch_store__nr_stacks(ls), 3);
	cr_assert_eq(launch_store__stack(ls, 2, &s), 0);
	cr_expect_eq(s.api, XSPROF_CUDA_cudaMemcpyAsync);
	cr_expect_eq(s.nr_user, 3);
	cr_expect_eq(s.ips[2], 0x1200);
	/* No stack of that kind (USDT), of that thread, or of that process: refused, counted. */
	r = reuse(10, 11, XSPROF_LAUNCH_USDT, 2u << 16 | 211, 4);
	cr_expect_eq(launch_store__add_reuse(ls, &r), -ENOENT);
	r = reuse(10, 99, XSPROF_LAUNCH_CALL, XSPROF_CUDA_cudaLaunchKernel, 5);
	cr_expect_eq(launch_store__add_reuse(ls, &r), -ENOENT);
	r = reuse(77, 11, XSPROF_LAUNCH_CALL, XSPROF_CUDA_cudaLaunchKernel, 6);
	cr_expect_eq(launch_store__add_reuse(ls, &r), -ENOENT);
	launch_store__stats(ls, &st);
	cr_expect_eq(st.reused, 4);
	cr_expect_eq(st.reuse_orphans, 3);
	cr_expect_eq(st.calls, 6);
	launch_store__free(ls);
}

/* --max-cpu walks launch stacks 1 in N: a walked launch (and its reuses) counts for N in its
 * stack, each is still one event and one call; back to 1, counts grow by 1 again. */
Test(launch_store, a_weight_counts_a_walked_launch_for_the_ones_not_walked)
{
	struct launch_store *ls = launch_store__new(0, 0);
	struct xsprof_cuda_call a = call(10, XSPROF_CUDA_cudaLaunchKernel, "app", 3, 0x1000);
	struct xsprof_launch_reuse r =
		reuse(10, 11, XSPROF_LAUNCH_CALL, XSPROF_CUDA_cudaLaunchKernel, 1);
	struct launch_store_stats st;
	struct launch_stack s;

	cr_assert(ls);
	launch_store__set_weight(ls, 16);
	cr_assert_eq(launch_store__add_call(ls, &a), 0);
	cr_assert_eq(launch_store__add_reuse(ls, &r), 0);
	launch_store__set_weight(ls, 0); /* 0 is 1 */
	cr_assert_eq(launch_store__add_call(ls, &a), 0);
	cr_assert_eq(launch_store__stack(ls, 0, &s), 0);
	cr_expect_eq(s.count, 16 + 16 + 1);
	cr_expect_eq(launch_store__nr_events(ls), 3);
	launch_store__stats(ls, &st);
	cr_expect_eq(st.calls, 3);
	cr_expect_eq(st.weighted, 2);
	launch_store__free(ls);
}

Test(launch_store, a_new_store_keeps_the_last_stacks_for_reuse_records_in_flight)
{
	struct launch_store *old = launch_store__new(0, 0), *fresh = launch_store__new(0, 0);
	struct xsprof_cuda_call a = call(10, XSPROF_CUDA_cudaLaunchKernel, "app", 3, 0x1000);
	struct xsprof_launch_reuse r =
		reuse(10, 11, XSPROF_LAUNCH_CALL, XSPROF_CUDA_cudaLaunchKernel, 1);
	struct launch_stack s;

	cr_assert(old && fresh);
	cr_assert_eq(launch_store__add_call(old, &a), 0);
	cr_assert_eq(launch_store__carry_last(fresh, old), 0);
	launch_store__free(old); /* the slice is gone; its threads' last stacks are not */
	cr_expect_eq(launch_store__nr_stacks(fresh), 0, "carried stacks are not counted stacks");
	cr_assert_eq(launch_store__add_reuse(fresh, &r), 0);
	cr_assert_eq(launch_store__add_reuse(fresh, &r), 0);
	cr_assert_eq(launch_store__nr_stacks(fresh), 1);
	cr_assert_eq(launch_store__stack(fresh, 0, &s), 0);
	cr_expect_eq(s.count, 2);
	cr_expect_eq(s.nr_user, 3);
	cr_expect_eq(s.ips[1], 0x1100);
	cr_expect_eq(s.tgid, 10);
	launch_store__free(fresh);
}

Test(launch_store, caps_count_what_they_turn_away)
{
	struct launch_store *ls = launch_store__new(2, 3);
	struct launch_store_stats st;
	struct launch_stack s;
	uint64_t total = 0;

	for (int i = 0; i < 10; i++) {
		struct xsprof_cuda_call r = call(7, XSPROF_CUDA_cudaLaunchKernel, "app", 2, i * 8);

		cr_assert_eq(launch_store__add_call(ls, &r), 0);
	}
	launch_store__stats(ls, &st);
	/* Two stacks kept, the other eight calls in one bucket for (process, API). */
	cr_expect_eq(st.distinct, 2);
	cr_expect_eq(st.overflowed, 8);
	cr_expect_eq(launch_store__nr_stacks(ls), 3);
	cr_expect_eq(launch_store__nr_events(ls), 3);
	cr_expect_eq(st.events_dropped, 7);
	for (size_t i = 0; i < launch_store__nr_stacks(ls); i++) {
		cr_assert_eq(launch_store__stack(ls, i, &s), 0);
		total += s.count;
		if (s.flags & LAUNCH_STACK_F_OVERFLOW)
			cr_expect_eq(s.nr_user, 0);
	}
	cr_expect_eq(total, 10, "every call is counted");
	launch_store__free(ls);
}

Test(launch_store, usdt_skip_drops_innermost_frames)
{
	struct launch_store *ls = launch_store__new(0, 0);
	struct xsprof_usdt_launch u;
	struct launch_stack s;

	memset(&u, 0, sizeof(u));
	u.type = XSPROF_REC_USDT_LAUNCH;
	u.tgid = 3;
	u.api = (2u << 16) | 211;
	u.corr_id = 42;
	u.nr_user = 4;
	for (int i = 0; i < 4; i++)
		u.ips[i] = 0x10 * (i + 1);
	cr_assert_eq(launch_store__add_usdt(ls, &u, 2), 0);
	cr_assert_eq(launch_store__add_usdt(ls, &u, 0), 0);
	cr_assert_eq(launch_store__stack(ls, 0, &s), 0);
	cr_expect_eq(s.nr_user, 2);
	cr_expect_eq(s.ips[0], 0x30);
	cr_expect(!(s.flags & LAUNCH_STACK_F_PC_FIRST), "trimmed: ips[0] is a return address");
	cr_assert_eq(launch_store__stack(ls, 1, &s), 0);
	cr_expect_eq(s.nr_user, 4);
	cr_expect(s.flags & LAUNCH_STACK_F_PC_FIRST);
	cr_expect_eq(launch_store__events(ls)[0].arg, 42);
	launch_store__free(ls);
}

/* A fold with no mappings: frames are [unknown]; the shape, leaves and counts are checked. */
Test(launch_fold, usdt_counts_launches_and_uprobes_only_what_it_does_not_report)
{
	struct symbolizer_opts so = {.proc_root = "/nonexistent", .kallsyms_path = "/dev/null"};
	struct symbolizer *sym = symbolizer__new(&so);
	struct launch_store *ls = launch_store__new(0, 0);
	struct xsprof_cuda_call a = call(100, XSPROF_CUDA___cudaLaunchKernel, "app", 1, 0x1000);
	struct xsprof_cuda_call sync =
		call(100, XSPROF_CUDA_cudaStreamSynchronize, "app", 1, 0x1000);
	struct xsprof_cuda_call other = call(300, XSPROF_CUDA_cudaLaunchKernel, "app", 1, 0x1000);
	struct xsprof_usdt_launch u;
	struct launch_fold_stats fs;
	struct calltree *tree = calltree__new();
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	cr_assert(sym && ls && tree);
	memset(&u, 0, sizeof(u));
	u.type = XSPROF_REC_USDT_LAUNCH;
	u.nr_user = 1;
	u.ips[0] = 0x2000;
	strcpy(u.comm, "app");
	/* Process 100: its uprobes saw 3 launches (before they were trimmed) and a synchronize,
	 * which xsprof:launch does not report; the USDT saw the first launch. */
	for (int i = 0; i < 3; i++)
		cr_assert_eq(launch_store__add_call(ls, &a), 0);
	cr_assert_eq(launch_store__add_call(ls, &sync), 0);
	u.tgid = 100;
	u.api = (2u << 16) | 211;
	cr_assert_eq(launch_store__add_usdt(ls, &u, 0), 0);
	u.tgid = 200; /* another, seen only by the USDT */
	cr_assert_eq(launch_store__add_usdt(ls, &u, 0), 0);
	cr_assert_eq(launch_store__add_usdt(ls, &u, 0), 0);
	u.api = (1u << 16) | 9999; /* a callback xsprof has no name for */
	cr_assert_eq(launch_store__add_usdt(ls, &u, 0), 0);
	/* Process 300 has no injection library: its uprobes are all it has. */
	cr_assert_eq(launch_store__add_call(ls, &other), 0);

	cr_assert_eq(launch_fold(ls, sym, tree, NULL, NULL, &fs), 0);
	cr_expect_eq(fs.launches, 6);
	cr_expect_eq(fs.uprobe_left_out, 3);
	f = open_memstream(&buf, &len);
	cr_assert_eq(folded__write(tree, f), 0);
	fclose(f);
	cr_expect(strstr(buf, "app;[unknown];[cuda] cudaLaunchKernel 4\n"), "%s", buf);
	cr_expect(strstr(buf, "app;[unknown];[cuda] cudaStreamSynchronize 1\n"), "%s", buf);
	cr_expect(strstr(buf, "app;[unknown];[cuda] cupti driver cbid 9999 1\n"), "%s", buf);
	cr_expect(!strstr(buf, "__cudaLaunchKernel"), "%s", buf);
	free(buf);
	calltree__free(tree);
	launch_store__free(ls);
	symbolizer__free(sym);
}

Test(cuda_api, usdt_covers_the_launch_apis_only)
{
	cr_expect(cuda_api__usdt_covers(XSPROF_CUDA_cudaLaunchKernel));
	cr_expect(cuda_api__usdt_covers(XSPROF_CUDA___cudaLaunchKernel_ptsz));
	cr_expect(cuda_api__usdt_covers(XSPROF_CUDA_cuLaunchKernelEx));
	cr_expect(cuda_api__usdt_covers(XSPROF_CUDA_cudaMemcpyAsync));
	cr_expect_not(cuda_api__usdt_covers(XSPROF_CUDA_cudaStreamSynchronize));
	cr_expect_not(cuda_api__usdt_covers(XSPROF_CUDA_cudaLaunchHostFunc));
	cr_expect_not(cuda_api__usdt_covers(XSPROF_CUDA_API_MAX + 5));
}

Test(cuda_api, names)
{
	cr_expect_str_eq(cuda_api__name(XSPROF_CUDA_cudaLaunchKernel), "cudaLaunchKernel");
	cr_expect_str_eq(cuda_api__name(XSPROF_CUDA_cuMemcpyHtoDAsync_v2), "cuMemcpyHtoDAsync_v2");
	cr_expect_null(cuda_api__name(XSPROF_CUDA_LIB_MAPPED));
	cr_expect_str_eq(cuda_api__name(63), "cudaMemcpyToArray");
	cr_expect_null(cuda_api__name(127));
	cr_expect_str_eq(cuda_api__name(120), "cuMemRelease");
	cr_expect_str_eq(cupti_api__name((2u << 16) | 505), "__cudaLaunchKernel");
	cr_expect_str_eq(cupti_api__name((1u << 16) | 307), "cuLaunchKernel");
	cr_expect_null(cupti_api__name((2u << 16) | 307));
}
