// SPDX-License-Identifier: Apache-2.0
/*
 * libxsprof_cupti.so: CUDA loads it through CUDA_INJECTION64_PATH and calls InitializeInjection
 * from cuInit. It fires the USDT xsprof:launch at launch API entry (the correlation id BPF
 * joins on) and streams CUPTI activity records to xsprofd. Whatever fails, the application
 * runs on untouched: this file is the only one here that writes to stderr, once, to say why.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cupti_inject/cupti_api.h"
#include "cupti_inject/encode.h"
#include "cupti_inject/env.h"
#include "cupti_inject/inject.h"
#include "cupti_inject/transport.h"
#define XSPROF_USDT_DEFINE_SEMAPHORE
#include "cupti_inject/usdt.h"
#include "cupti_inject/xsprof_wire.h"
#include "daemon/base/clock.h"

#define ACT_BUF_SIZE (256u << 10)
#define ACT_BUF_MAX  32 /* CUPTI buffers in flight: 8 MiB at most; past it CUPTI drops, counted */
/* Encoded records copied into the transport at a time: lock is held for that copy only. */
#define ENC_BATCH_BYTES (16u << 10)

static const CUpti_CallbackId runtime_launch_cbids[] = {
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
	/* What nvcc turns <<<>>> into since CUDA 13, under cbids of its own. */
	CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
	CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToArrayAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToArrayAsync_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromArrayAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromArrayAsync_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DAsync_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DToArrayAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DToArrayAsync_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DFromArrayAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2DFromArrayAsync_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbolAsync_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbolAsync_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DAsync_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeerAsync_v4000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DPeerAsync_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_ptsz_v13000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DBatchAsync_v13000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3DBatchAsync_ptsz_v13000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemset3DAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemset3DAsync_ptsz_v7000,
};

static const CUpti_CallbackId driver_launch_cbids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoAAsync_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoAAsync_v2_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoHAsync_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyAtoHAsync_v2_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy2DAsync_v2_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DAsync_v2_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyPeerAsync_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeerAsync,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DPeerAsync_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpyBatchAsync_v2_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DBatchAsync_v2,
	CUPTI_DRIVER_TRACE_CBID_cuMemcpy3DBatchAsync_v2_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8Async,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D8Async_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16Async,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D16Async_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32Async,
	CUPTI_DRIVER_TRACE_CBID_cuMemsetD2D32Async_ptsz,
};

/* Kernel records are the point; the rest are enabled when this CUPTI can. */
/* Beside kernels: the work of the kernels policy, then what full adds. */
static const CUpti_ActivityKind work_kinds[] = {
	CUPTI_ACTIVITY_KIND_MEMCPY,
	CUPTI_ACTIVITY_KIND_MEMCPY2,
	CUPTI_ACTIVITY_KIND_MEMSET,
};
static const CUpti_ActivityKind full_kinds[] = {
	CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
	CUPTI_ACTIVITY_KIND_MARKER,
};

static struct {
	pthread_mutex_t lock; /* transport, encoder, scratch */
	struct cupti_api api;
	CUpti_SubscriberHandle sub;
	struct cupti_transport *tr;
	struct cupti_encoder *enc;
	bool active; /* CUPTI records */
	bool verbose;
	bool hooks;	   /* atfork and atexit registered */
	uint32_t clock_id; /* of the connection's hello */
	atomic_ulong nvtx_drops;
	bool graph_level;
	uint32_t policy; /* enum xsprof_wire_policy (XSPROF_CUPTI_POLICY) */
	bool api_filter; /* API records of the launch calls only, per call id */
	unsigned linger_ms;
	unsigned drain_ms; /* XSPROF_CUPTI_DRAIN_MS */
	uint64_t dropped_cupti;
	atomic_uint buffers_out;
	atomic_ulong buffers_refused;
	CUpti_ActivityKind enabled[16];
	unsigned nr_enabled;
	/* The encoder and a batch of encoded records, under enc_lock (taken before lock): a
	 * CUPTI buffer is encoded without holding lock, which the application's threads take for
	 * each NVTX range; only each batch's copy into the transport is under it. */
	pthread_mutex_t enc_lock;
	size_t batch_len;
	uint8_t batch[ENC_BATCH_BYTES + XSPROF_WIRE_RECORD_MAX];
} g = {.lock = PTHREAD_MUTEX_INITIALIZER, .enc_lock = PTHREAD_MUTEX_INITIALIZER};

/* Launch APIs this thread is inside: only the outermost fires the probe. */
static __thread unsigned launch_depth;

void inject__say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	env_vsay("xsprof-cupti", fmt, ap);
	va_end(ap);
}

#define say inject__say

bool inject__verbose(void)
{
	return g.verbose;
}

void inject__lock(void)
{
	pthread_mutex_lock(&g.lock);
}

void inject__unlock(void)
{
	pthread_mutex_unlock(&g.lock);
}

void inject__count_nvtx_drops(uint64_t n)
{
	atomic_fetch_add(&g.nvtx_drops, n);
}

/*
 * The GPU timing policy: XSPROF_CUPTI_POLICY, else XSPROF_CUPTI_APIS=all (its older spelling
 * of "all"), else kernels, the cheapest that still says which stack launched which kernel
 * (the launch callback's correlation id beside the kernel's). xsprofd -f sets full for the
 * command it profiles. An unknown value is said once and the default kept.
 */
static uint32_t policy_from_env(void)
{
	const char *s = getenv("XSPROF_CUPTI_POLICY"), *apis = getenv("XSPROF_CUPTI_APIS");

	if (s && *s) {
		/* ranges is the ITT collector's, not a CUPTI policy. */
		for (uint32_t p = XSPROF_WIRE_POLICY_LAUNCH; p <= XSPROF_WIRE_POLICY_ALL; p++) {
			if (strcmp(s, xsprof_wire_policy_name(p)) == 0)
				return p;
		}
		say("XSPROF_CUPTI_POLICY=%s is not one of launch, kernels, full, all: using "
		    "kernels",
		    s);
		return XSPROF_WIRE_POLICY_KERNELS;
	}
	if (apis && strcmp(apis, "all") == 0)
		return XSPROF_WIRE_POLICY_ALL;
	return XSPROF_WIRE_POLICY_KERNELS;
}

/* CUPTI's timestamp callback: the daemon's clock (daemon/base/clock.h). */
static uint64_t CUPTIAPI monotonic_ns(void)
{
	return clock__mono_ns();
}

static void CUPTIAPI on_api(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
			    const void *cbdata)
{
	const CUpti_CallbackData *cb = cbdata;

	if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API)
		return;
	if (cb->callbackSite == CUPTI_API_ENTER) {
		/* The runtime call and the driver call inside it are one launch. */
		if (launch_depth++ == 0 && XSPROF_USDT_LAUNCH_ENABLED())
			XSPROF_USDT_LAUNCH(cb->correlationId, XSPROF_USDT_API(domain, cbid));
	} else if (launch_depth > 0) {
		launch_depth--;
	}
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	void *p = NULL;

	*buffer = NULL;
	*size = 0;
	*max_records = 0;
	if (atomic_fetch_add(&g.buffers_out, 1) >= ACT_BUF_MAX ||
	    posix_memalign(&p, 8, ACT_BUF_SIZE) != 0) {
		/* Declining makes CUPTI drop records and count them: bounded memory wins. */
		atomic_fetch_sub(&g.buffers_out, 1);
		atomic_fetch_add(&g.buffers_refused, 1);
		return;
	}
	*buffer = p;
	*size = ACT_BUF_SIZE;
}

/* Called with g.lock held. */
static void report_drops(void)
{
	struct cupti_encoder_stats es = {0};
	size_t dropped = 0;

	if (g.active && g.api.cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS)
		g.dropped_cupti += dropped;
	if (g.enc)
		cupti_encoder__stats(g.enc, &es);
	cupti_transport__set_drops(g.tr, g.dropped_cupti,
				   es.bad_time + es.nvtx_unpaired + es.nvtx_overflow +
					   atomic_load(&g.nvtx_drops));
}

/* With enc_lock held: the batch into the transport, under lock for the copy. */
static void send_batch(bool last)
{
	pthread_mutex_lock(&g.lock);
	for (size_t off = 0; off + sizeof(struct xsprof_wire_hdr) <= g.batch_len;) {
		struct xsprof_wire_hdr h;

		memcpy(&h, g.batch + off, sizeof(h));
		cupti_transport__append(g.tr, g.batch + off, h.length);
		off += h.length;
	}
	g.batch_len = 0;
	if (last)
		report_drops();
	/* Each batch goes as it is made: the daemon reads while the rest is encoded. */
	cupti_transport__flush(g.tr, 0);
	pthread_mutex_unlock(&g.lock);
}

/*
 * After a buffer, while records remain queued (a socket takes ~200 KiB, a CUPTI buffer of
 * PyTorch's kernels is more), wait for the daemon to read them, up to drain_ms: sent only when
 * the next buffer came, the queue outgrew 4 MiB at 100,000 records a second and dropped a third
 * of them. On CUPTI's thread, and outside lock: the application's NVTX ranges never wait.
 */
static void drain(void)
{
	uint64_t deadline = clock__mono_ns() + (uint64_t)g.drain_ms * 1000000ull, now;

	for (;;) {
		struct cupti_transport_stats ts;
		int fd, err;

		pthread_mutex_lock(&g.lock);
		err = cupti_transport__flush(g.tr, 0);
		cupti_transport__stats(g.tr, &ts);
		fd = cupti_transport__fd(g.tr);
		pthread_mutex_unlock(&g.lock);
		now = clock__mono_ns();
		if (err != -EAGAIN || !ts.buffered || fd < 0 || now >= deadline)
			return;
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		if (poll(&p, 1, (int)((deadline - now + 999999) / 1000000)) < 0 && errno != EINTR)
			return;
	}
}

/*
 * A buffer of CUPTI's, encoded in batches. The application's threads take lock for every NVTX
 * range they send: held over a whole buffer (thousands of records, milliseconds), it stalled
 * them behind it.
 */
static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
				      size_t valid)
{
	CUpti_Activity *rec = NULL;

	pthread_mutex_lock(&g.enc_lock);
	while (valid > 0 &&
	       g.api.cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
		long n = cupti_encoder__encode(g.enc, rec, g.batch + g.batch_len,
					       sizeof(g.batch) - g.batch_len);

		if (n > 0)
			g.batch_len += (size_t)n;
		if (g.batch_len >= ENC_BATCH_BYTES)
			send_batch(false);
	}
	send_batch(true);
	pthread_mutex_unlock(&g.enc_lock);
	if (g.drain_ms)
		drain();
	free(buffer);
	atomic_fetch_sub(&g.buffers_out, 1);
}

static void at_exit(void)
{
	struct cupti_encoder_stats es = {0};
	struct cupti_transport_stats ts;

	/* Hands every pending buffer to buffer_completed on this thread. */
	if (g.active)
		g.api.cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	pthread_mutex_lock(&g.enc_lock); /* the encoder's counts: no buffer half done */
	pthread_mutex_lock(&g.lock);
	if (!g.tr) {
		pthread_mutex_unlock(&g.lock);
		pthread_mutex_unlock(&g.enc_lock);
		return;
	}
	report_drops();
	cupti_transport__flush(g.tr, (int)g.linger_ms);
	cupti_transport__stats(g.tr, &ts);
	if (g.enc)
		cupti_encoder__stats(g.enc, &es);
	pthread_mutex_unlock(&g.lock);
	pthread_mutex_unlock(&g.enc_lock);
	/* A daemon that never ran is a choice, not a fault: only a lossy session is reported. */
	if (g.verbose || (ts.connects && (ts.dropped_full || g.dropped_cupti)))
		say("sent %llu records, dropped %llu (daemon absent or slow) and %llu (CUPTI "
		    "buffers), %zu bytes unsent",
		    (unsigned long long)ts.sent, (unsigned long long)ts.dropped_full,
		    (unsigned long long)g.dropped_cupti, ts.buffered);
	if (g.verbose && g.active)
		say("CUPTI handed over %llu kernels, %llu copies and %llu memsets",
		    (unsigned long long)es.kernels, (unsigned long long)es.copies,
		    (unsigned long long)es.memsets);
}

static void fork_prepare(void)
{
	pthread_mutex_lock(&g.enc_lock);
	pthread_mutex_lock(&g.lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&g.lock);
	pthread_mutex_unlock(&g.enc_lock);
}

static void fork_child(void)
{
	/* The parent's queued records and connection are not the child's to send. */
	if (g.tr)
		cupti_transport__after_fork(g.tr, (uint32_t)getpid());
	g.dropped_cupti = 0;
	g.batch_len = 0;
	pthread_mutex_unlock(&g.lock);
	pthread_mutex_unlock(&g.enc_lock);
}

/* Turns the per-call API records of the launch calls on (enable 1) or off. */
static CUptiResult api_records(uint8_t enable)
{
	CUptiResult res = CUPTI_SUCCESS;

	for (size_t i = 0; i < sizeof(runtime_launch_cbids) / sizeof(runtime_launch_cbids[0]) &&
			   res == CUPTI_SUCCESS;
	     i++)
		res = g.api.cuptiActivityEnableRuntimeApi(runtime_launch_cbids[i], enable);
	for (size_t i = 0; i < sizeof(driver_launch_cbids) / sizeof(driver_launch_cbids[0]) &&
			   res == CUPTI_SUCCESS;
	     i++)
		res = g.api.cuptiActivityEnableDriverApi(driver_launch_cbids[i], enable);
	return res;
}

static void stop_cupti(void)
{
	for (unsigned i = 0; i < g.nr_enabled; i++)
		g.api.cuptiActivityDisable(g.enabled[i]);
	g.nr_enabled = 0;
	if (g.api_filter)
		api_records(0);
	g.api_filter = false;
	if (g.sub)
		g.api.cuptiUnsubscribe(g.sub);
	g.sub = NULL;
}

static CUptiResult enable_kind(CUpti_ActivityKind kind)
{
	CUptiResult res = g.api.cuptiActivityEnable(kind);

	if (res == CUPTI_SUCCESS && g.nr_enabled < sizeof(g.enabled) / sizeof(g.enabled[0]))
		g.enabled[g.nr_enabled++] = kind;
	return res;
}

static int subscribe(void)
{
	CUptiResult res;
	char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = "";

#ifdef CUpti_SubscriberParams_STRUCT_SIZE
	if (g.api.cuptiSubscribe_v2) {
		CUpti_SubscriberParams p = {
			.structSize = CUpti_SubscriberParams_STRUCT_SIZE,
			.subscriberName = "xsprof",
			.oldSubscriberName = holder,
			.oldSubscriberSize = CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN,
		};
		res = g.api.cuptiSubscribe_v2(&g.sub, on_api, NULL, &p);
	} else
#endif
		res = g.api.cuptiSubscribe(&g.sub, on_api, NULL);
	if (res == CUPTI_SUCCESS)
		return 0;
	g.sub = NULL;
	if (res == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
		say("another CUPTI tool%s%s%s already profiles this process; xsprof leaves it alone "
		    "and records no GPU activity here",
		    holder[0] ? " (" : "", holder, holder[0] ? ")" : "");
		return -EBUSY;
	}
	say("CUPTI is not usable here (%s); GPU activity is not recorded, the application is "
	    "not affected",
	    cupti_api__strerror(&g.api, res));
	return -ENODEV;
}

static void enable_launch_callbacks(void)
{
	for (size_t i = 0; i < sizeof(runtime_launch_cbids) / sizeof(runtime_launch_cbids[0]); i++)
		g.api.cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_RUNTIME_API,
					  runtime_launch_cbids[i]);
	for (size_t i = 0; i < sizeof(driver_launch_cbids) / sizeof(driver_launch_cbids[0]); i++)
		g.api.cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_DRIVER_API,
					  driver_launch_cbids[i]);
}

/*
 * API records (thread, [start, end], correlation id: what the timestamp strategy and the GPU
 * report's time in launch calls need) of the launch calls only. The activity kinds RUNTIME
 * and DRIVER record every call, and PyTorch makes several cheap ones per kernel
 * (cudaGetDevice, cudaGetLastError, ...): on an H100 they made 15 records per kernel and
 * cost a small model 78% of its step time (tests/gpu/RESULTS.md). Every call is recorded
 * with XSPROF_CUPTI_APIS=all, or where this libcupti cannot choose calls.
 */
static void enable_api_records(void)
{
	CUptiResult res = CUPTI_ERROR_NOT_SUPPORTED;

	if (g.policy != XSPROF_WIRE_POLICY_ALL && g.api.cuptiActivityEnableRuntimeApi &&
	    g.api.cuptiActivityEnableDriverApi) {
		res = api_records(1);
		g.api_filter = res == CUPTI_SUCCESS;
		if (res != CUPTI_SUCCESS)
			api_records(0);
	}
	if (g.api_filter)
		return;
	if (g.policy != XSPROF_WIRE_POLICY_ALL && g.verbose)
		say("this libcupti cannot record chosen calls (%s): recording every runtime and "
		    "driver call",
		    cupti_api__strerror(&g.api, res));
	enable_kind(CUPTI_ACTIVITY_KIND_RUNTIME);
	enable_kind(CUPTI_ACTIVITY_KIND_DRIVER);
}

static void enable_optional(const CUpti_ActivityKind *kinds, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		CUptiResult res = enable_kind(kinds[i]);

		if (res != CUPTI_SUCCESS && g.verbose)
			say("activity kind %d not recorded: %s", (int)kinds[i],
			    cupti_api__strerror(&g.api, res));
	}
}

static int enable_activities(void)
{
	CUptiResult res;

	if (g.graph_level) {
		/* One record per graph launch instead of one per node; cheaper for big graphs. */
		res = enable_kind(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
		if (res != CUPTI_SUCCESS)
			say("graph-level tracing unavailable (%s); graph nodes are traced one by one",
			    cupti_api__strerror(&g.api, res));
	}
	res = enable_kind(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	if (res != CUPTI_SUCCESS) {
		say("CUPTI cannot record kernels (%s); GPU activity is not recorded, the "
		    "application is not affected",
		    cupti_api__strerror(&g.api, res));
		return -ENODEV;
	}
	enable_optional(work_kinds, sizeof(work_kinds) / sizeof(work_kinds[0]));
	if (g.policy < XSPROF_WIRE_POLICY_FULL)
		return 0;
	enable_optional(full_kinds, sizeof(full_kinds) / sizeof(full_kinds[0]));
	enable_api_records();
	return 0;
}

/* With g.lock held: the connection, its at-fork and at-exit hooks registered once. */
static struct cupti_transport *make_transport(uint32_t clock_id, uint32_t cupti_version)
{
	const char *sock = getenv(XSPROF_WIRE_SOCKET_ENV);
	struct cupti_transport_opts topts = {
		.socket_path = sock && *sock ? sock : XSPROF_WIRE_DEFAULT_SOCKET,
		.policy = g.policy,
		.max_buffered = (size_t)env_uint("XSPROF_CUPTI_BUFFER_KB", 4096, 64, 1u << 20)
				<< 10,
		.reconnect_ms = env_uint("XSPROF_CUPTI_RECONNECT_MS", 1000, 0, 600000),
		.clock_id = clock_id,
		.cupti_version = cupti_version,
	};

	g.tr = cupti_transport__new(&topts);
	if (!g.tr) {
		say("cannot set up (%s, socket %s); nothing is sent to xsprofd",
		    strerror(errno ? errno : ENOMEM), topts.socket_path);
		return NULL;
	}
	g.clock_id = clock_id;
	if (!g.hooks) {
		pthread_atfork(fork_prepare, fork_parent, fork_child);
		atexit(at_exit);
		g.hooks = true;
	}
	return g.tr;
}

struct cupti_transport *inject__transport_locked(void)
{
	if (g.tr)
		return g.tr;
	if (env_true("XSPROF_CUPTI_DISABLE"))
		return NULL;
	g.verbose = env_true("XSPROF_CUPTI_VERBOSE");
	g.linger_ms = env_uint("XSPROF_CUPTI_EXIT_LINGER_MS", 200, 0, 10000);
	if (!g.policy)
		g.policy = policy_from_env();
	return make_transport(CLOCK_MONOTONIC, 0);
}

static void init_once(void)
{
	const char *graphs = getenv("XSPROF_CUPTI_GRAPHS");
	uint32_t version = 0, clock_id;
	char err[256] = "";
	CUptiResult res;
	int r;

	if (env_true("XSPROF_CUPTI_DISABLE"))
		return;
	g.verbose = env_true("XSPROF_CUPTI_VERBOSE");
	g.graph_level = graphs && strcmp(graphs, "graph") == 0;
	pthread_mutex_lock(&g.lock); /* NVTX's first range may be reading it */
	if (!g.policy)
		g.policy = policy_from_env();
	pthread_mutex_unlock(&g.lock);
	g.linger_ms = env_uint("XSPROF_CUPTI_EXIT_LINGER_MS", 200, 0, 10000);
	g.drain_ms = env_uint("XSPROF_CUPTI_DRAIN_MS", 100, 0, 5000);

	r = cupti_api__open(&g.api, getenv("XSPROF_CUPTI_LIBRARY"), XSPROF_CUPTI_FALLBACK_PATH, err,
			    sizeof(err));
	if (r < 0) {
		say("cannot load libcupti (%s); set XSPROF_CUPTI_LIBRARY=/path/to/libcupti.so.%d. "
		    "GPU activity is not recorded, the application is not affected",
		    err, CUPTI_API_VERSION / 10000);
		return;
	}
	if (g.api.cuptiGetVersion(&version) == CUPTI_SUCCESS &&
	    version / 10000 != CUPTI_API_VERSION / 10000) {
		say("%s is CUPTI API %u, this library was built for %d.x; GPU activity is not "
		    "recorded",
		    g.api.path, version, CUPTI_API_VERSION / 10000);
		return;
	}
	if (subscribe() < 0)
		return;

	/* gettid() thread ids and CLOCK_MONOTONIC times: what BPF records, so the two join. */
	g.api.cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
	res = g.api.cuptiActivityRegisterTimestampCallback(monotonic_ns);
	clock_id = res == CUPTI_SUCCESS ? CLOCK_MONOTONIC : CLOCK_REALTIME;
	if (res != CUPTI_SUCCESS)
		say("CUPTI keeps its own clock (%s); the daemon converts, with less precision",
		    cupti_api__strerror(&g.api, res));

	pthread_mutex_lock(&g.lock);
	/* NVTX may have connected first, on the monotonic clock: CUPTI's times must match it. */
	if (g.tr && g.clock_id != clock_id) {
		pthread_mutex_unlock(&g.lock);
		say("NVTX ranges go to xsprofd with monotonic times, CUPTI's clock is another; GPU "
		    "activity is not recorded");
		goto fail;
	}
	if (!g.tr)
		make_transport(clock_id, version);
	g.enc = cupti_encoder__new(0);
	pthread_mutex_unlock(&g.lock);
	if (!g.tr || !g.enc) {
		say("cannot set up (%s); GPU activity is not recorded",
		    strerror(errno ? errno : ENOMEM));
		goto fail;
	}
	if (g.policy == XSPROF_WIRE_POLICY_LAUNCH) {
		/* Launch stacks with their correlation ids, and no GPU timing at all. */
		enable_launch_callbacks();
		pthread_mutex_lock(&g.lock);
		cupti_transport__flush(g.tr, 0);
		pthread_mutex_unlock(&g.lock);
		if (g.verbose)
			say("policy launch: launch callbacks only, no GPU activity recorded");
		return;
	}
	res = g.api.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
	if (res != CUPTI_SUCCESS) {
		say("CUPTI refused activity buffers (%s); GPU activity is not recorded",
		    cupti_api__strerror(&g.api, res));
		goto fail;
	}
	if (enable_activities() < 0)
		goto fail;
	enable_launch_callbacks();
	g.api.cuptiActivityFlushPeriod(env_uint("XSPROF_CUPTI_FLUSH_MS", 250, 10, 60000));

	g.active = true;
	/* Connect now so a daemon sees the process before its first kernel completes. */
	pthread_mutex_lock(&g.lock);
	cupti_transport__flush(g.tr, 0);
	pthread_mutex_unlock(&g.lock);
	if (g.verbose)
		say("recording GPU activity (policy %s, %s clock; API records of %s)",
		    xsprof_wire_policy_name(g.policy),
		    clock_id == CLOCK_MONOTONIC ? "monotonic" : "realtime",
		    g.policy < XSPROF_WIRE_POLICY_FULL ? "no call"
		    : g.api_filter		       ? "the launch calls"
						       : "every call");
	return;

fail:
	/* The connection stays for NVTX's ranges, if it made one. */
	stop_cupti();
	pthread_mutex_lock(&g.lock);
	cupti_encoder__free(g.enc);
	g.enc = NULL;
	pthread_mutex_unlock(&g.lock);
}

__attribute__((visibility("default"))) int InitializeInjection(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, init_once);
	/* Always success: failing here could make CUDA refuse to start the application. */
	return 1;
}
