// SPDX-License-Identifier: Apache-2.0
/*
 * The injection library's encoder, fed real CUPTI activity structs built here (no GPU), and
 * checked through the daemon's own parser: what one side writes, the other accepts as is.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#include "cupti_inject/encode.h"
#include "cupti_inject/xsprof_wire.h"
#include "daemon/gpu/cupti_wire.h"

static uint8_t out[XSPROF_WIRE_RECORD_MAX];
static struct cupti_encoder *enc;

static void setup(void)
{
	enc = cupti_encoder__new(0);
	cr_assert_not_null(enc);
}

static void teardown(void)
{
	cupti_encoder__free(enc);
}

TestSuite(cupti_encode, .init = setup, .fini = teardown);

/* Encode, then parse back with the daemon's validator. */
static struct cupti_wire_item round_trip(const void *activity)
{
	struct cupti_wire_item it;
	const char *why = NULL;
	long n, m;

	memset(out, 0xa5, sizeof(out)); /* stale bytes must not leak into padding */
	n = cupti_encoder__encode(enc, activity, out, sizeof(out));
	cr_assert_gt(n, 0, "encode: %ld", n);
	cr_assert_eq(n % XSPROF_WIRE_ALIGN, 0);
	m = cupti_wire__parse_record(out, (size_t)n, &it, &why);
	cr_assert_eq(m, n, "parse: %ld (%s)", m, why ? why : "");
	return it;
}

Test(cupti_encode, kernel)
{
	CUpti_ActivityKernel10 k = {
		.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
		.start = 1000,
		.end = 1500,
		.deviceId = 1,
		.contextId = 2,
		.streamId = 13,
		.gridX = 128,
		.gridY = 2,
		.gridZ = 1,
		.blockX = 256,
		.blockY = 1,
		.blockZ = 1,
		.registersPerThread = 32,
		.staticSharedMemory = 1024,
		.dynamicSharedMemory = 2048,
		.correlationId = 4711,
		.name = "_Z6vecAddPKfS0_Pfi",
		.graphId = 3,
		.graphNodeId = 99,
	};
	struct cupti_wire_item it = round_trip(&k);
	struct xsprof_wire_kernel w;

	cr_assert_eq(it.type, XSPROF_WIRE_KERNEL);
	cr_assert_eq(it.act.start_ns, 1000);
	cr_assert_eq(it.act.end_ns, 1500);
	cr_assert_eq(it.act.device, 1);
	cr_assert_eq(it.act.context, 2);
	cr_assert_eq(it.act.stream, 13);
	cr_assert_eq(it.act.correlation_id, 4711);
	cr_assert_eq(it.act.grid[0], 128);
	cr_assert_eq(it.act.grid[1], 2);
	cr_assert_eq(it.act.block[0], 256);
	cr_assert_eq(it.act.graph_id, 3);
	cr_assert_eq(it.act.graph_node_id, 99);
	cr_assert_str_eq(it.act.name, "_Z6vecAddPKfS0_Pfi");
	memcpy(&w, out, sizeof(w));
	cr_assert_eq(w.registers_per_thread, 32);
	cr_assert_eq(w.dynamic_smem, 2048);

	k.kind = CUPTI_ACTIVITY_KIND_KERNEL; /* the serializing kind has the same layout */
	k.name = NULL;
	it = round_trip(&k);
	cr_assert_null(it.act.name);
}

Test(cupti_encode, long_kernel_name_is_cut_and_flagged)
{
	char *name = malloc(10000);
	CUpti_ActivityKernel10 k = {.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, .end = 1};
	struct cupti_wire_item it;

	memset(name, 'T', 9999);
	name[9999] = '\0';
	k.name = name;
	it = round_trip(&k);
	cr_assert_eq(strlen(it.act.name), XSPROF_WIRE_NAME_MAX - 1);
	cr_assert(it.act.flags & XSPROF_WIRE_F_NAME_TRUNC);
	free(name);
}

Test(cupti_encode, memcpy_p2p_memset)
{
	CUpti_ActivityMemcpy6 m = {
		.kind = CUPTI_ACTIVITY_KIND_MEMCPY,
		.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH,
		.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
		.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
		.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC,
		.bytes = 1 << 20,
		.start = 5,
		.end = 9,
		.streamId = 4,
		.correlationId = 8,
		.runtimeCorrelationId = 7,
	};
	CUpti_ActivityMemcpyPtoP4 p = {
		.kind = CUPTI_ACTIVITY_KIND_MEMCPY2,
		.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP,
		.bytes = 4096,
		.start = 1,
		.end = 2,
		.srcDeviceId = 0,
		.dstDeviceId = 1,
	};
	CUpti_ActivityMemset4 s = {
		.kind = CUPTI_ACTIVITY_KIND_MEMSET,
		.value = 0xff,
		.bytes = 512,
		.start = 3,
		.end = 4,
		.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
		.isDeviceLaunched = 1,
	};
	struct cupti_wire_item it;
	struct xsprof_wire_memcpy w;

	it = round_trip(&m);
	cr_assert_eq(it.act.kind, GPU_ACT_MEMCPY);
	cr_assert_eq(it.act.copy_kind, XSPROF_COPY_DTOH);
	cr_assert_eq(it.act.src_kind, XSPROF_MEM_DEVICE);
	cr_assert_eq(it.act.dst_kind, XSPROF_MEM_PINNED);
	cr_assert_eq(it.act.bytes, 1 << 20);
	cr_assert_eq(it.act.flags, XSPROF_WIRE_F_ASYNC);
	cr_assert_eq(it.act.correlation_id, 8);
	cr_assert_eq(it.act.runtime_correlation_id, 7);

	it = round_trip(&p);
	cr_assert_eq(it.act.copy_kind, XSPROF_COPY_PTOP);
	memcpy(&w, out, sizeof(w));
	cr_assert_eq(w.src_device, 0);
	cr_assert_eq(w.dst_device, 1);

	it = round_trip(&s);
	cr_assert_eq(it.act.kind, GPU_ACT_MEMSET);
	cr_assert_eq(it.act.bytes, 512);
	cr_assert_eq(it.act.flags, XSPROF_WIRE_F_DEVICE_LAUNCH);

	m.copyKind = 200; /* a kind newer than us travels as unknown, not as a lie */
	it = round_trip(&m);
	cr_assert_eq(it.act.copy_kind, XSPROF_COPY_UNKNOWN);
}

Test(cupti_encode, api_sync_graph)
{
	CUpti_ActivityAPI rt = {
		.kind = CUPTI_ACTIVITY_KIND_RUNTIME,
		.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
		.start = 10,
		.end = 20,
		.processId = 1,
		.threadId = 4242,
		.correlationId = 77,
	};
	CUpti_ActivityAPI drv = rt;
	CUpti_ActivitySynchronization2 sy = {
		.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
		.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE,
		.start = 30,
		.end = 90,
		.contextId = 1,
		.streamId = 13,
		.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE,
	};
	CUpti_ActivityGraphTrace2 g = {
		.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE,
		.correlationId = 5,
		.start = 100,
		.end = 900,
		.graphId = 12,
		.streamId = 3,
	};
	struct cupti_wire_item it;

	it = round_trip(&rt);
	cr_assert_eq(it.act.kind, GPU_ACT_API);
	cr_assert_eq(it.act.api_domain, XSPROF_API_RUNTIME);
	cr_assert_eq(it.act.api_cbid, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
	cr_assert_eq(it.act.tid, 4242);
	cr_assert_eq(it.act.correlation_id, 77);

	drv.kind = CUPTI_ACTIVITY_KIND_DRIVER;
	drv.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
	it = round_trip(&drv);
	cr_assert_eq(it.act.api_domain, XSPROF_API_DRIVER);

	it = round_trip(&sy);
	cr_assert_eq(it.act.kind, GPU_ACT_SYNC);
	cr_assert_eq(it.act.sync_type, XSPROF_SYNC_STREAM);
	cr_assert_eq(it.act.stream, 13);

	it = round_trip(&g);
	cr_assert_eq(it.act.kind, GPU_ACT_GRAPH);
	cr_assert_eq(it.act.graph_id, 12);
	cr_assert_eq(it.act.correlation_id, 5);
}

static CUpti_ActivityMarker2 marker(uint32_t id, CUpti_ActivityFlag flags, uint64_t ts,
				    const char *name, const char *domain)
{
	CUpti_ActivityMarker2 m = {
		.kind = CUPTI_ACTIVITY_KIND_MARKER,
		.flags = flags,
		.timestamp = ts,
		.id = id,
		.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD,
		.name = name,
		.domain = domain,
	};

	m.objectId.pt.processId = 1;
	m.objectId.pt.threadId = 555;
	return m;
}

static long encode(const void *activity)
{
	return cupti_encoder__encode(enc, activity, out, sizeof(out));
}

Test(cupti_encode, nvtx_ranges_are_paired)
{
	CUpti_ActivityMarker2 outer =
		marker(1, CUPTI_ACTIVITY_FLAG_MARKER_START, 100, "epoch", NULL);
	CUpti_ActivityMarker2 inner =
		marker(2, CUPTI_ACTIVITY_FLAG_MARKER_START, 150, "step", "dl");
	CUpti_ActivityMarker2 e;
	struct cupti_encoder_stats st;
	struct cupti_wire_item it;

	cr_assert_eq(encode(&outer), 0, "a start is held until its end");
	cr_assert_eq(encode(&inner), 0);
	e = marker(2, CUPTI_ACTIVITY_FLAG_MARKER_END, 180, NULL, NULL);
	it = round_trip(&e);
	cr_assert_eq(it.act.kind, GPU_ACT_NVTX);
	cr_assert_str_eq(it.act.name, "step");
	cr_assert_str_eq(it.act.domain, "dl");
	cr_assert_eq(it.act.start_ns, 150);
	cr_assert_eq(it.act.end_ns, 180);
	cr_assert_eq(it.act.tid, 555);
	e = marker(1, CUPTI_ACTIVITY_FLAG_MARKER_END, 300, NULL, NULL);
	it = round_trip(&e);
	cr_assert_str_eq(it.act.name, "epoch");
	cr_assert_null(it.act.domain);
	cr_assert_eq(it.act.end_ns - it.act.start_ns, 200);

	e = marker(3, CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 400, "checkpoint", NULL);
	it = round_trip(&e);
	cr_assert(it.act.flags & XSPROF_WIRE_F_INSTANT);
	cr_assert_eq(it.act.start_ns, it.act.end_ns);

	e = marker(9, CUPTI_ACTIVITY_FLAG_MARKER_END, 500, NULL, NULL);
	cr_assert_eq(encode(&e), 0, "an end without a start is dropped and counted");
	cupti_encoder__stats(enc, &st);
	cr_assert_eq(st.nvtx_unpaired, 1);
	cr_assert_eq(st.open_ranges, 0);
}

Test(cupti_encode, nvtx_open_ranges_are_capped)
{
	struct cupti_encoder *small = cupti_encoder__new(4);
	struct cupti_encoder_stats st;

	for (uint32_t id = 1; id <= 10; id++) {
		CUpti_ActivityMarker2 m =
			marker(id, CUPTI_ACTIVITY_FLAG_MARKER_START, id, "r", NULL);

		cr_assert_eq(cupti_encoder__encode(small, (CUpti_Activity *)&m, out, sizeof(out)),
			     0);
	}
	cupti_encoder__stats(small, &st);
	cr_assert_eq(st.open_ranges, 4);
	cr_assert_eq(st.nvtx_overflow, 6);
	/* Closing in any order finds every held range (probe chains survive deletion). */
	for (uint32_t id = 4; id >= 1; id--) {
		CUpti_ActivityMarker2 m =
			marker(id, CUPTI_ACTIVITY_FLAG_MARKER_END, 100, NULL, NULL);

		cr_assert_gt(cupti_encoder__encode(small, (CUpti_Activity *)&m, out, sizeof(out)),
			     0, "range %u", id);
	}
	cupti_encoder__stats(small, &st);
	cr_assert_eq(st.open_ranges, 0);
	cupti_encoder__free(small);
}

Test(cupti_encode, never_sends_what_the_daemon_would_reject)
{
	CUpti_ActivityKernel10 k = {.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
				    .start = 500,
				    .end = 100,
				    .name = "backwards"};
	CUpti_ActivityMemcpy6 m = {
		.kind = CUPTI_ACTIVITY_KIND_MEMCPY, .bytes = UINT64_MAX, .end = 1};
	CUpti_Activity ctx = {.kind = CUPTI_ACTIVITY_KIND_CONTEXT};
	struct cupti_encoder_stats st;
	struct cupti_wire_item it;

	cr_assert_eq(encode(&k), 0);
	it = round_trip(&m);
	cr_assert_eq(it.act.bytes, XSPROF_WIRE_MAX_BYTES, "sizes are clamped to the cap");
	cr_assert_eq(encode(&ctx), 0, "kinds we do not forward are skipped");
	cupti_encoder__stats(enc, &st);
	cr_assert_eq(st.bad_time, 1);
	cr_assert_eq(st.skipped_kind, 1);
}

Test(cupti_encode, too_small_a_buffer)
{
	CUpti_ActivityKernel10 k = {.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, .name = "k"};

	cr_assert_eq(cupti_encoder__encode(enc, (CUpti_Activity *)&k, out, 64), -ENOSPC);
}
