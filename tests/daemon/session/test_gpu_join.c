// SPDX-License-Identifier: Apache-2.0
/*
 * The join a session makes at its end (daemon/session/gpu_join.c): the launches of a launch
 * store and the records of a GPU store, converted, fed in time order to the strategy named
 * ("id", "timestamp", "stream", "auto"), and handed over as a profile_data's launches, gpu and
 * joins. Each launch here has a stack of its own, so a join reads as "kernel<-s<stack index>";
 * the tests state which kernel each launch must get, what a scope leaves out, and what is
 * counted unmatched. Last, a window slice's GPU tree (gpu_slice__tree), named from a fake /proc.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cupti_inject/xsprof_wire.h"
#include "daemon/cuda/launch_store.h"
#include "daemon/gpu/gpu_records.h"
#include "daemon/session/profile.h"
#include "daemon/session/slice.h"
#include "daemon/session/source.h"
#include "daemon/session/gpu_join.h"
#include "daemon/session/ranges.h"
#include "daemon/session/stack_names.h"
#include "tests/lib/fake_proc.h"
#include "tests/lib/gpu_records_add.h"
#include "output/model/calltree.h"
#include "output/model/profile.h"

#define US 1000ull
#define MS (1000 * US)

#define APP   100
#define OTHER 200

/* cudaLaunchKernel as CUPTI's runtime domain numbers it (what xsprof:launch reports). */
#define CUPTI_LAUNCH ((2u << 16) | 211)

static struct launch_store *ls;
static struct gpu_store *gs;
static struct gpu_join *j;
static struct profile_data pd;
static struct correlate_stats cs;

static void setup(void)
{
	ls = launch_store__new(0, 0);
	gs = gpu_store__new(NULL);
	j = gpu_join__new();
	cr_assert(ls && gs && j);
	memset(&pd, 0, sizeof(pd));
	memset(&cs, 0, sizeof(cs));
}

static void teardown(void)
{
	gpu_join__free(j);
	gpu_store__free(gs);
	launch_store__free(ls);
}

/* What an uprobe's and an xsprof:launch firing's records share: a one-frame stack ip (one stack
 * per ip, in order of first use), thread pid + 1. */
#define LAUNCH_FIELDS(pid_, t_, ip_)                                                     \
	.tgid = (pid_), .tid = (pid_) + 1, .time_ns = (t_), .comm = "app", .nr_user = 1, \
	.ips = {(ip_)}

/* A launch: an uprobe's (arg is the stream) or an xsprof:launch firing's (the correlation id). */
static void launch(bool fired_usdt, uint32_t pid, uint32_t api, uint64_t t, uint64_t arg,
		   uint64_t ip)
{
	struct xsprof_usdt_launch u = {.type = XSPROF_REC_USDT_LAUNCH,
				       .api = api,
				       .corr_id = arg,
				       LAUNCH_FIELDS(pid, t, ip)};
	struct xsprof_cuda_call c = {.type = XSPROF_REC_CUDA_CALL,
				     .api = (uint16_t)api,
				     .stream = arg,
				     LAUNCH_FIELDS(pid, t, ip)};

	cr_assert_eq(
		fired_usdt ? launch_store__add_usdt(ls, &u, 0) : launch_store__add_call(ls, &c), 0);
}

static void uprobe(uint32_t pid, uint16_t api, uint64_t t, uint64_t stream, uint64_t ip)
{
	launch(false, pid, api, t, stream, ip);
}

static void usdt(uint32_t pid, uint32_t corr, uint64_t t, uint64_t ip)
{
	launch(true, pid, CUPTI_LAUNCH, t, corr, ip);
}

static void gpu(uint8_t kind, uint32_t pid, uint32_t stream, uint32_t corr, uint64_t start,
		uint64_t end, const char *name)
{
	struct gpu_activity a = {
		.kind = kind,
		.pid = pid,
		.stream = stream,
		.correlation_id = corr,
		.start_ns = start,
		.end_ns = end,
		.name = name,
	};

	cr_assert_eq(gpu_store__add(gs, &a), 0);
}

/* A CUDA runtime API record of pid's launching thread. */
static void api(uint32_t pid, uint32_t corr, uint64_t start, uint64_t end)
{
	struct gpu_activity a = {
		.kind = GPU_ACT_API,
		.api_domain = 2,
		.api_cbid = 211,
		.pid = pid,
		.tid = pid + 1,
		.correlation_id = corr,
		.start_ns = start,
		.end_ns = end,
		.name = "cudaLaunchKernel",
	};

	cr_assert_eq(gpu_store__add(gs, &a), 0);
}

/* Each GPU activity of pd in time order as "name<-s<launch stack index>" (or "<-none"). */
static const char *joins(void)
{
	static char buf[1024];
	size_t len = 0;

	buf[0] = '\0';
	for (size_t g = 0; g < pd.nr_gpu; g++) {
		const struct corr_cpu_rec *l = NULL;

		if (!corr_gpu_kind__is_activity(pd.gpu[g].kind))
			continue;
		for (size_t k = 0; k < pd.nr_joins; k++)
			if (pd.joins[k].gpu == g) {
				cr_assert_null(l, "%s joined twice", pd.gpu[g].name);
				cr_assert_lt(pd.joins[k].launch, pd.nr_launches);
				l = &pd.launches[pd.joins[k].launch];
			}
		if (l)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s<-s%u ",
						pd.gpu[g].name, l->stack_id & ~STACK_NAMES_LAUNCH);
		else
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s<-none ",
						pd.gpu[g].name);
	}
	return buf;
}

/* Both sides in time order, each record's cookie its index (what the writers look up). */
static void expect_ordered(void)
{
	for (size_t i = 0; i < pd.nr_launches; i++) {
		cr_expect_eq(pd.launches[i].user, i);
		if (i)
			cr_expect_leq(pd.launches[i - 1].time_ns, pd.launches[i].time_ns);
	}
	for (size_t i = 0; i < pd.nr_gpu; i++) {
		cr_expect_eq(pd.gpu[i].user, i);
		if (i)
			cr_expect_leq(pd.gpu[i - 1].start_ns, pd.gpu[i].start_ns);
	}
}

Test(gpu_join, id_joins_each_launch_to_the_work_with_its_correlation_id, .init = setup,
     .fini = teardown)
{
	usdt(APP, 1, 1 * MS, 0xa0);
	usdt(APP, 2, 2 * MS, 0xb0);
	usdt(APP, 3, 2500 * US, 0xc0);
	/* Received out of time order, as CUPTI buffers from two streams can be. */
	gpu(GPU_ACT_KERNEL, APP, 7, 2, 2100 * US, 2900 * US, "relu");
	gpu(GPU_ACT_KERNEL, APP, 8, 1, 1100 * US, 1600 * US, "gemm");
	gpu(GPU_ACT_MEMSET, APP, 8, 3, 2950 * US, 2960 * US, "memset");
	cr_assert_eq(gpu_join__run(j, ls, gs, NULL, "id", &pd, &cs), 0);
	cr_expect_str_eq(joins(), "gemm<-s0 relu<-s1 memset<-s2 ");
	cr_assert_eq(pd.nr_launches, 3);
	cr_assert_eq(pd.nr_gpu, 3);
	cr_expect_eq(pd.nr_joins, 3);
	expect_ordered();
	/* The launch as the writers read it. */
	cr_expect_eq(pd.launches[0].kind, CORR_CPU_USDT);
	cr_expect_eq(pd.launches[0].corr_id, 1);
	cr_expect_eq(pd.launches[0].pid, APP);
	cr_expect_eq(pd.launches[0].tid, APP + 1);
	cr_expect_eq(pd.launches[0].api_kind, CORR_API_KERNEL);
	cr_expect_str_eq(pd.launches[0].api_name, "cudaLaunchKernel");
	cr_expect_eq(pd.launches[1].stack_id, STACK_NAMES_LAUNCH | 1);
	cr_expect_eq(cs.cpu_in, 3);
	cr_expect_eq(cs.gpu_in, 3);
	cr_expect_eq(cs.matched, 3);
	cr_expect_eq(cs.unmatched_cpu + cs.unmatched_gpu, 0);
}

Test(gpu_join, timestamp_joins_uprobes_through_their_threads_api_records, .init = setup,
     .fini = teardown)
{
	uprobe(APP, XSPROF_CUDA_cudaLaunchKernel, 1 * MS, 0, 0xa0);
	uprobe(APP, XSPROF_CUDA_cudaLaunchKernel, 2 * MS, 0, 0xb0);
	api(APP, 7, 1 * MS + 1 * US, 1 * MS + 20 * US);
	api(APP, 8, 2 * MS + 1 * US, 2 * MS + 20 * US);
	/* The second launch's kernel ran first: the time order alone would swap them. */
	gpu(GPU_ACT_KERNEL, APP, 7, 8, 2100 * US, 2200 * US, "second");
	gpu(GPU_ACT_KERNEL, APP, 9, 7, 2300 * US, 2400 * US, "first");
	cr_assert_eq(gpu_join__run(j, ls, gs, NULL, "timestamp", &pd, &cs), 0);
	cr_expect_str_eq(joins(), "second<-s1 first<-s0 ");
	cr_expect_eq(pd.nr_gpu, 4, "API records are handed over too (the Chrome trace shows them)");
	cr_expect_eq(pd.launches[0].kind, CORR_CPU_UPROBE);
	expect_ordered();
	cr_expect_eq(cs.unmatched_cpu, 0);
}

Test(gpu_join, stream_pairs_each_streams_launches_with_its_work_in_order, .init = setup,
     .fini = teardown)
{
	/* Two streams (handles 0x5000 and 0x6000, CUPTI ids 9 and 10); no API records. */
	uprobe(OTHER, XSPROF_CUDA_cudaLaunchKernel, 1000 * US, 0x5000, 0xa0);
	uprobe(OTHER, XSPROF_CUDA_cudaLaunchKernel, 1200 * US, 0x6000, 0xc0);
	uprobe(OTHER, XSPROF_CUDA_cudaLaunchKernel, 2000 * US, 0x5000, 0xb0);
	gpu(GPU_ACT_KERNEL, OTHER, 9, 0, 1500 * US, 1900 * US, "a");
	gpu(GPU_ACT_KERNEL, OTHER, 9, 0, 2500 * US, 2900 * US, "b");
	gpu(GPU_ACT_KERNEL, OTHER, 10, 0, 3000 * US, 3100 * US, "c");
	cr_assert_eq(gpu_join__run(j, ls, gs, NULL, "stream", &pd, &cs), 0);
	/* By time alone b would go to the launch on the other stream. */
	cr_expect_str_eq(joins(), "a<-s0 b<-s2 c<-s1 ");
	cr_expect_eq(pd.launches[1].stream, 0x6000);
	cr_expect_eq(cs.matched, 3);
}

Test(gpu_join, auto_joins_each_process_by_what_its_data_allows, .init = setup, .fini = teardown)
{
	/* APP has xsprof:launch (by id), OTHER only uprobes (by stream); the ids collide. */
	usdt(APP, 1, 1 * MS, 0xa0);
	uprobe(OTHER, XSPROF_CUDA_cudaLaunchKernel, 1100 * US, 0x5000, 0xb0);
	gpu(GPU_ACT_KERNEL, OTHER, 9, 1, 1150 * US, 1300 * US, "other_k");
	gpu(GPU_ACT_KERNEL, APP, 7, 1, 1200 * US, 1400 * US, "app_k");
	cr_assert_eq(gpu_join__run(j, ls, gs, NULL, "auto", &pd, &cs), 0);
	cr_expect_str_eq(joins(), "other_k<-s1 app_k<-s0 ");
	cr_expect_eq(cs.matched, 2);
	/* No strategy named: auto. */
	memset(&pd, 0, sizeof(pd));
	cr_assert_eq(gpu_join__run(j, ls, gs, NULL, NULL, &pd, &cs), 0);
	cr_expect_str_eq(joins(), "other_k<-s1 app_k<-s0 ");
	cr_expect_eq(cs.matched, 4, "counters are added to, run after run");
}

static bool only_app(void *ctx, uint32_t pid)
{
	(*(int *)ctx)++;
	return pid == APP;
}

Test(gpu_join, a_scope_takes_its_processes_work_ending_since_its_start, .init = setup,
     .fini = teardown)
{
	struct gpu_join_scope scope = {.accept_pid = only_app, .since_ns = 2 * MS};
	int asked = 0;

	scope.ctx = &asked;
	usdt(APP, 1, 1 * MS, 0xa0);
	usdt(APP, 2, 1500 * US, 0xb0);
	gpu(GPU_ACT_KERNEL, APP, 7, 1, 1100 * US, 2 * MS - 1, "ended_before");
	gpu(GPU_ACT_KERNEL, APP, 7, 2, 1600 * US, 2 * MS, "ends_at_start");
	gpu(GPU_ACT_KERNEL, OTHER, 7, 2, 2100 * US, 2500 * US, "other_process");
	cr_assert_eq(gpu_join__run(j, ls, gs, &scope, "id", &pd, &cs), 0);
	cr_expect_str_eq(joins(), "ends_at_start<-s1 ");
	cr_expect_gt(asked, 0, "accept_pid was never asked");
	/* The launches are the session's own already: all of them are kept. */
	cr_expect_eq(pd.nr_launches, 2);
	cr_expect_eq(cs.gpu_in, 1);
	cr_expect_eq(cs.unmatched_cpu, 1);
	/* No scope: everything. */
	memset(&pd, 0, sizeof(pd));
	cr_assert_eq(gpu_join__run(j, ls, gs, NULL, "id", &pd, &cs), 0);
	cr_expect_str_eq(joins(), "ended_before<-s0 ends_at_start<-s1 other_process<-none ");
}

/* A lasting profile's slices take records by arrival: one that ended long before the slice
 * but arrived after the last slice's join is this slice's; one seen already is not. */
Test(gpu_join, by_arrival_a_slice_takes_each_record_once_however_late, .init = setup,
     .fini = teardown)
{
	struct gpu_join_scope scope = {.by_arrival = true, .since_ns = 10 * MS};
	uint64_t seen;

	cr_assert_eq(gpu_store__last_seq(gs), 0);
	usdt(APP, 1, 1 * MS, 0xa0);
	usdt(APP, 2, 1500 * US, 0xb0);
	gpu(GPU_ACT_KERNEL, APP, 7, 1, 1100 * US, 1200 * US, "seen_before");
	seen = gpu_store__last_seq(gs);
	cr_assert_eq(seen, 1);
	gpu(GPU_ACT_KERNEL, APP, 7, 2, 1600 * US, 1700 * US, "arrived_late");
	cr_assert_eq(gpu_store__last_seq(gs), 2);
	scope.after_seq = seen;
	cr_assert_eq(gpu_join__run(j, ls, gs, &scope, "id", &pd, &cs), 0);
	cr_expect_str_eq(joins(), "arrived_late<-s1 ", "ended before since_ns, taken by arrival");
	scope.after_seq = gpu_store__last_seq(gs);
	memset(&pd, 0, sizeof(pd));
	cr_assert_eq(gpu_join__run(j, ls, gs, &scope, "id", &pd, &cs), 0);
	cr_expect_str_eq(joins(), "", "every record was taken by a join before");
}

static void nvtx_rec(uint32_t pid, uint32_t tid, uint64_t start, uint64_t end, const char *name,
		     uint16_t flags)
{
	cr_assert_eq(test_add_nvtx(gs, pid, tid, start, end, name, flags), 0);
}

/* An NVTX range still open at the session's end (its opening arrived, its end not) is a range
 * ending there, flagged, with until_ns; without it, left out. The grouping then finds it. */
Test(gpu_join, open_ranges_end_at_the_sessions_end, .init = setup, .fini = teardown)
{
	struct gpu_join_scope scope = {.until_ns = 10 * MS};
	struct ranges *rg;
	size_t open = 0;

	nvtx_rec(APP, 7, 1 * MS, 1 * MS, "epoch", XSPROF_WIRE_F_OPEN);
	nvtx_rec(APP, 7, 2 * MS, 2 * MS, "step", XSPROF_WIRE_F_OPEN);
	nvtx_rec(APP, 7, 2 * MS, 3 * MS, "step", 0);
	nvtx_rec(APP, 7, 11 * MS, 11 * MS, "after the end", XSPROF_WIRE_F_OPEN);
	cr_assert_eq(gpu_join__run(j, NULL, gs, NULL, "id", &pd, &cs), 0);
	cr_expect_eq(pd.nr_gpu, 1, "no until_ns: the open range is not known");
	memset(&pd, 0, sizeof(pd));
	cr_assert_eq(gpu_join__run(j, NULL, gs, &scope, "id", &pd, &cs), 0);
	cr_assert_eq(pd.nr_gpu, 2);
	for (size_t i = 0; i < pd.nr_gpu; i++) {
		if (!(pd.gpu[i].flags & CORR_GPU_F_OPEN))
			continue;
		open++;
		cr_expect_str_eq(pd.gpu[i].name, "epoch");
		cr_expect_eq(pd.gpu[i].end_ns, 10 * MS);
	}
	cr_expect_eq(open, 1);
	rg = ranges__new(pd.gpu, pd.nr_gpu, false, NULL);
	cr_assert_not_null(rg);
	cr_expect_str_eq(ranges__at(rg, APP, 7, 2500 * US), "step");
	cr_expect_str_eq(ranges__at(rg, APP, 7, 5 * MS), "epoch",
			 "in no inner range: the open one");
	cr_expect_str_eq(ranges__at(rg, APP, 7, 500 * US), RANGES_NONE);
	ranges__free(rg);
	rg = ranges__new(pd.gpu, pd.nr_gpu, true, NULL);
	cr_assert_not_null(rg);
	cr_expect_str_eq(ranges__at(rg, APP, 7, 2500 * US), "epoch",
			 "the outermost is the open one");
	ranges__free(rg);
}

Test(gpu_join, records_without_a_partner_are_counted_unmatched, .init = setup, .fini = teardown)
{
	cs.matched = 10; /* added to, not overwritten */
	usdt(APP, 1, 1 * MS, 0xa0);
	usdt(APP, 3, 2 * MS, 0xb0);
	gpu(GPU_ACT_KERNEL, APP, 7, 1, 1100 * US, 1200 * US, "k1");
	gpu(GPU_ACT_KERNEL, APP, 7, 2, 2100 * US, 2200 * US, "k2");
	cr_assert_eq(gpu_join__run(j, ls, gs, NULL, "id", &pd, &cs), 0);
	cr_expect_str_eq(joins(), "k1<-s0 k2<-none ");
	cr_expect_eq(pd.nr_launches, 2, "an unmatched launch is still handed over");
	cr_expect_eq(cs.matched, 11);
	cr_expect_eq(cs.unmatched_cpu, 1);
	cr_expect_eq(cs.unmatched_gpu, 1);
	cr_expect_eq(cs.pending_cpu + cs.pending_gpu, 0, "the end of a session holds nothing");
}

Test(gpu_join, launches_and_records_are_converted_kind_by_kind, .init = setup, .fini = teardown)
{
	uprobe(APP, XSPROF_CUDA_cudaMemcpyAsync, 1 * MS, 0x5000, 0xa0);
	uprobe(APP, XSPROF_CUDA_cudaLaunchKernel_ptsz, 2 * MS, 0, 0xb0);
	uprobe(APP, XSPROF_CUDA_cudaGraphLaunch, 3 * MS, 0x5000, 0xc0);
	uprobe(APP, XSPROF_CUDA_cudaStreamSynchronize, 4 * MS, 0x5000, 0xd0);
	gpu(GPU_ACT_MEMSET, APP, 7, 0, 1 * MS, 1 * MS + 1, NULL);
	gpu(GPU_ACT_SYNC, APP, 7, 0, 2 * MS, 2 * MS + 1, NULL);
	gpu(GPU_ACT_GRAPH, APP, 7, 0, 3 * MS, 3 * MS + 1, NULL);
	gpu(GPU_ACT_NVTX, APP, 0, 0, 4 * MS, 4 * MS + 1, "epoch");
	gpu(99, APP, 7, 0, 5 * MS, 5 * MS + 1, "not a kind"); /* a newer producer's: left out */
	cr_assert_eq(gpu_store__add(gs, &(struct gpu_activity){.kind = GPU_ACT_API,
							       .api_domain = 1,
							       .api_cbid = 307,
							       .pid = APP,
							       .start_ns = 6 * MS,
							       .end_ns = 6 * MS + 1}),
		     0);
	cr_assert_eq(gpu_join__run(j, ls, gs, NULL, "stream", &pd, &cs), 0);
	cr_assert_eq(pd.nr_launches, 4);
	cr_expect_eq(pd.launches[0].api_kind, CORR_API_MEMCPY);
	cr_expect_eq(pd.launches[0].stream, 0x5000);
	cr_expect_eq(pd.launches[0].corr_id, 0);
	cr_expect_eq(pd.launches[0].flags, 0);
	cr_expect_eq(pd.launches[1].api_kind, CORR_API_KERNEL);
	cr_expect_eq(pd.launches[1].flags, CORR_CPU_F_PTSZ, "the per-thread default stream");
	cr_expect_eq(pd.launches[2].api_kind, CORR_API_GRAPH);
	cr_expect_eq(pd.launches[3].api_kind, CORR_API_SYNC);
	cr_expect_str_eq(pd.launches[3].api_name, "cudaStreamSynchronize");
	cr_assert_eq(pd.nr_gpu, 5);
	cr_expect_eq(pd.gpu[0].kind, CORR_GPU_MEMSET);
	cr_expect_eq(pd.gpu[1].kind, CORR_GPU_SYNC);
	cr_expect_eq(pd.gpu[2].kind, CORR_GPU_GRAPH);
	cr_expect_eq(pd.gpu[3].kind, CORR_GPU_NVTX);
	cr_expect_str_eq(pd.gpu[3].name, "epoch");
	cr_expect_eq(pd.gpu[4].kind, CORR_GPU_DRIVER_API);
	cr_expect_eq(pd.gpu[4].cbid, 307);
}

Test(gpu_join, an_unknown_strategy_is_refused_and_the_profile_untouched, .init = setup,
     .fini = teardown)
{
	usdt(APP, 1, 1 * MS, 0xa0);
	gpu(GPU_ACT_KERNEL, APP, 7, 1, 1100 * US, 1200 * US, "k1");
	cr_expect_eq(gpu_join__run(j, ls, gs, NULL, "telepathy", &pd, &cs), -ENOENT);
	cr_expect_eq(pd.nr_launches + pd.nr_gpu + pd.nr_joins, 0);
	cr_expect_null(pd.launches);
	cr_expect_eq(cs.matched, 0);
}

Test(gpu_join, a_second_run_replaces_the_first, .init = setup, .fini = teardown)
{
	usdt(APP, 1, 1 * MS, 0xa0);
	gpu(GPU_ACT_KERNEL, APP, 7, 1, 1100 * US, 1200 * US, "k1");
	cr_assert_eq(gpu_join__run(j, ls, gs, NULL, "id", &pd, &cs), 0);
	cr_expect_str_eq(joins(), "k1<-s0 ");
	/* The next slice: one more launch and kernel, the same join object. */
	usdt(APP, 2, 2 * MS, 0xb0);
	gpu(GPU_ACT_KERNEL, APP, 7, 2, 2100 * US, 2200 * US, "k2");
	memset(&pd, 0, sizeof(pd));
	cr_assert_eq(gpu_join__run(j, ls, gs, NULL, "id", &pd, &cs), 0);
	cr_expect_str_eq(joins(), "k1<-s0 k2<-s1 ");
	cr_expect_eq(pd.nr_launches, 2);
	cr_expect_eq(pd.nr_joins, 2);
}

/* ---- a window slice's GPU work, named ---- */

Test(gpu_slice, each_kernel_under_its_uid_process_and_launching_stack, .init = setup,
     .fini = teardown)
{
	/* Our own pid, so the uid the slice reads from /proc is known: ours. */
	int me = getpid();
	struct fake_proc fp;
	struct symbolizer *sym;
	struct calltree *tree = NULL;
	struct xsprof_usdt_launch u;
	struct corr_gpu_rec nv;
	struct ranges *rg;
	char want[512];

	fake_proc__init(&fp);
	fake_proc__add(&fp, me, "7f1000000000-7f1000001000 r-xp 00000000 00:00 0 \n",
		       "7f1000000000 100 main\n7f1000000100 100 train_step\n");
	sym = fake_proc__symbolizer(&fp);
	/* A launch in train_step called from main, the kernel it ran for 500 us, and one that
	 * nothing launched. */
	memset(&u, 0, sizeof(u));
	u.type = XSPROF_REC_USDT_LAUNCH;
	u.tgid = u.tid = (uint32_t)me;
	u.api = CUPTI_LAUNCH;
	u.time_ns = 1 * MS;
	u.corr_id = 1;
	snprintf(u.comm, sizeof(u.comm), "python3");
	u.nr_user = 2;
	u.ips[0] = 0x7f1000000121; /* the probe site, in train_step */
	u.ips[1] = 0x7f1000000031; /* its return address, in main */
	cr_assert_eq(launch_store__add_usdt(ls, &u, 0), 0);
	gpu(GPU_ACT_KERNEL, (uint32_t)me, 7, 1, 1100 * US, 1600 * US, "gemm");
	gpu(GPU_ACT_KERNEL, (uint32_t)me, 7, 9, 1700 * US, 1900 * US, "orphan");
	cr_assert_eq(gpu_slice__tree(ls, gs, NULL, sym, "auto", 19, NULL, &tree, &cs), 0);
	cr_assert_not_null(tree);
	snprintf(want, sizeof(want),
		 "uid:%u;python3;[no launch stack];[gpu] orphan 200\n"
		 "uid:%u;python3;main;train_step;[gpu] gemm 500\n",
		 getuid(), getuid());
	cr_expect_str_eq(fake_proc__folded(tree), want);
	cr_expect_eq(cs.matched, 1);
	calltree__free(tree);
	/* A recording of the same launches and records makes the same GPU profile (the same
	 * builder), only without the window's uid roots. */
	{
		struct session_source src = {.ls = ls, .gs = gs};
		struct session_view v = {.mode = GPU_MODE_GPU,
					 .mode_set = true,
					 .unit = WEIGHT_US,
					 .freq_hz = 19,
					 .strategy = "auto",
					 .cpu_mode = SESSION_MODE_CPU};
		struct session_profile sp;

		cr_assert_eq(session_profile__build(&sp, &src, sym, NULL, &v, &cs), 0);
		cr_assert_eq(profile__build_tree(&sp.pd, &tree), 0);
		cr_expect_str_eq(fake_proc__folded(tree),
				 "python3;[no launch stack];[gpu] orphan 200\n"
				 "python3;main;train_step;[gpu] gemm 500\n");
		calltree__free(tree);
		session_profile__release(&sp);
	}
	/* Grouped by range: the launch was made in "forward" (its thread, 0.5-1.5 ms); nothing
	 * launched the orphan, in no range. */
	nv = (struct corr_gpu_rec){.kind = CORR_GPU_NVTX,
				   .pid = (uint32_t)me,
				   .tid = (uint32_t)me,
				   .start_ns = MS / 2,
				   .end_ns = 3 * MS / 2,
				   .name = "forward"};
	rg = ranges__new(&nv, 1, false, NULL);
	cr_assert_not_null(rg);
	cr_assert_eq(gpu_slice__tree(ls, gs, NULL, sym, "auto", 19, rg, &tree, &cs), 0);
	snprintf(want, sizeof(want),
		 "uid:%u;[no range];python3;[no launch stack];[gpu] orphan 200\n"
		 "uid:%u;forward;python3;main;train_step;[gpu] gemm 500\n",
		 getuid(), getuid());
	cr_expect_str_eq(fake_proc__folded(tree), want);
	calltree__free(tree);
	ranges__free(rg);
	/* No GPU work: no tree. */
	gpu_store__forget(gs, (uint32_t)me);
	cr_assert_eq(gpu_slice__tree(ls, gs, NULL, sym, "auto", 19, NULL, &tree, &cs), 0);
	cr_expect_null(tree);
	fake_proc__remove(&fp);
}

Test(gpu_join, launches_without_gpu_records_are_handed_over, .init = setup, .fini = teardown)
{
	usdt(APP, 1, 1 * MS, 0xa0);
	uprobe(APP, XSPROF_CUDA_cudaLaunchKernel, 2 * MS, 0, 0xb0);
	cr_assert_eq(gpu_join__run(j, ls, gs, NULL, "auto", &pd, &cs), 0);
	cr_expect_eq(cs.cpu_in, 2);
	cr_expect_eq(cs.unmatched_cpu, 2);
	cr_expect_eq(pd.nr_launches, 2, "the launches are not in the profile");
	memset(&pd, 0, sizeof(pd));
	cr_assert_eq(gpu_join__run(j, ls, NULL, NULL, "auto", &pd, &cs), 0);
	cr_expect_eq(pd.nr_launches, 2, "the launches are not in the profile (no GPU store)");
}

Test(gpu_join, copies_keep_their_direction, .init = setup, .fini = teardown)
{
	/* CUPTI's (the wire's) copy kinds: HtoD 1, DtoH 2, HtoA 3 (an array is device memory), DtoD 8,
	 * HtoH 9, PtoP 10. */
	static const struct {
		uint8_t wire;
		const char *leaf;
	} copies[] = {
		{1, "[gpu] memcpy HtoD"}, {2, "[gpu] memcpy DtoH"},  {8, "[gpu] memcpy DtoD"},
		{9, "[gpu] memcpy HtoH"}, {10, "[gpu] memcpy PtoP"}, {3, "[gpu] memcpy HtoD"},
	};
	char leaf[64];

	for (size_t i = 0; i < sizeof(copies) / sizeof(copies[0]); i++)
		cr_assert_eq(gpu_store__add(gs, &(struct gpu_activity){.kind = GPU_ACT_MEMCPY,
								       .copy_kind = copies[i].wire,
								       .pid = APP,
								       .start_ns = (i + 1) * MS,
								       .end_ns = (i + 1) * MS + 1}),
			     0);
	cr_assert_eq(gpu_join__run(j, ls, gs, NULL, "auto", &pd, &cs), 0);
	cr_assert_eq(pd.nr_gpu, sizeof(copies) / sizeof(copies[0]));
	for (size_t i = 0; i < pd.nr_gpu; i++)
		cr_expect_str_eq(profile__gpu_leaf(&pd.gpu[i], leaf, sizeof(leaf)), copies[i].leaf,
				 "CUPTI copy kind %u", copies[i].wire);
}

/* GPU work with no launch at all (a process CUPTI reports but no probe saw): every record
 * unmatched, counted as the strategies count work no launch can join, out of order sorted, in
 * the profile all the same; the same counts whichever strategy, and with an API record among
 * them (which goes through the strategy). */
Test(gpu_join, work_without_any_launch_is_counted_unmatched, .init = setup, .fini = teardown)
{
	static const char *const strategies[] = {"id", "timestamp", "stream", "auto"};

	gpu(GPU_ACT_KERNEL, APP, 7, 1, 2 * MS, 3 * MS, "second");
	gpu(GPU_ACT_KERNEL, APP, 7, 2, 1 * MS, 2 * MS - 1, "first");
	gpu(GPU_ACT_MEMCPY, OTHER, 8, 3, 4 * MS, 5 * MS, NULL);
	for (size_t i = 0; i < sizeof(strategies) / sizeof(strategies[0]); i++) {
		memset(&pd, 0, sizeof(pd));
		memset(&cs, 0, sizeof(cs));
		cr_assert_eq(gpu_join__run(j, ls, gs, NULL, strategies[i], &pd, &cs), 0);
		cr_expect_eq(pd.nr_gpu, 3, "%s", strategies[i]);
		cr_expect_eq(pd.nr_joins, 0);
		cr_expect_eq(pd.gpu[0].start_ns, 1 * MS, "sorted by start");
		cr_expect_eq(pd.gpu[0].user, 0);
		cr_expect_eq(pd.gpu[1].user, 1);
		cr_expect_eq(cs.gpu_in, 3, "%s: %llu in", strategies[i],
			     (unsigned long long)cs.gpu_in);
		cr_expect_eq(cs.unmatched_gpu, 3);
		cr_expect_eq(cs.cpu_in + cs.unmatched_cpu + cs.matched, 0);
	}
	api(APP, 9, 6 * MS, 6 * MS + 10 * US);
	memset(&pd, 0, sizeof(pd));
	memset(&cs, 0, sizeof(cs));
	cr_assert_eq(gpu_join__run(j, ls, gs, NULL, "auto", &pd, &cs), 0);
	cr_expect_eq(pd.nr_gpu, 4);
	cr_expect_geq(cs.unmatched_gpu, 3, "the work, as without the API record");
	cr_expect_eq(cs.matched, 0);
}
