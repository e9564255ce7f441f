// SPDX-License-Identifier: Apache-2.0
/*
 * A stand-in libcupti for machines without a GPU: the functions libxsprof_cupti.so opens,
 * behaving as FAKE_CUPTI_* variables say, plus fake_cupti_* hooks a test calls to play the
 * driver (API callbacks, activity buffers). Loaded through XSPROF_CUPTI_LIBRARY.
 */
#include <stdlib.h>
#include <string.h>
#include <cupti.h>

#define EXPORT __attribute__((visibility("default")))

static CUpti_CallbackFunc api_cb;
static void *api_userdata;
static CUpti_TimestampCallbackFunc ts_cb;
static CUpti_BuffersCallbackRequestFunc buf_req;
static CUpti_BuffersCallbackCompleteFunc buf_done;
static unsigned enabled_kinds;	/* bit per CUpti_ActivityKind below 32 */
static unsigned enabled_cbs[3]; /* per domain (driver 1, runtime 2) */
static int api_records[3];	/* calls whose API records are on, per domain */
static int subscribed, unsubscribed;
static uint8_t *pending;
static size_t pending_size, pending_used;

static const char *env(const char *name)
{
	const char *s = getenv(name);

	return s ? s : "";
}

EXPORT CUptiResult cuptiGetVersion(uint32_t *version)
{
	const char *v = env("FAKE_CUPTI_VERSION");

	*version = *v ? (uint32_t)strtoul(v, NULL, 10) : CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
	switch (result) {
	case CUPTI_ERROR_NOT_INITIALIZED:
		*str = "CUPTI_ERROR_NOT_INITIALIZED";
		break;
	case CUPTI_ERROR_NOT_COMPATIBLE:
		*str = "CUPTI_ERROR_NOT_COMPATIBLE";
		break;
	default:
		*str = "CUPTI_ERROR_FAKE";
	}
	return CUPTI_SUCCESS;
}

static CUptiResult subscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb, void *ud)
{
	if (!strcmp(env("FAKE_CUPTI_SUBSCRIBE"), "multiple"))
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	if (!strcmp(env("FAKE_CUPTI_SUBSCRIBE"), "fail"))
		return CUPTI_ERROR_NOT_INITIALIZED;
	api_cb = cb;
	api_userdata = ud;
	subscribed = 1;
	*sub = (CUpti_SubscriberHandle)&api_cb;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb, void *ud)
{
	return subscribe(sub, cb, ud);
}

EXPORT CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb, void *ud,
				     CUpti_SubscriberParams *p)
{
	CUptiResult r = subscribe(sub, cb, ud);

	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && p && p->oldSubscriberName &&
	    p->oldSubscriberSize > 10)
		strcpy(p->oldSubscriberName, "fake-nsys");
	return r;
}

EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle sub)
{
	subscribed = 0;
	unsubscribed++;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle sub,
				       CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	if (domain == CUPTI_CB_DOMAIN_DRIVER_API || domain == CUPTI_CB_DOMAIN_RUNTIME_API)
		enabled_cbs[domain] += enable ? 1 : 0;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType type)
{
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc fn)
{
	ts_cb = fn;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
						  CUpti_BuffersCallbackCompleteFunc done)
{
	buf_req = req;
	buf_done = done;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
	if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && *env("FAKE_CUPTI_KERNEL_FAIL"))
		return CUPTI_ERROR_NOT_COMPATIBLE;
	if (kind < 32)
		enabled_kinds |= 1u << kind;
	return CUPTI_SUCCESS;
}

/* Per-call API records; FAKE_CUPTI_NO_API_FILTER=1 plays a libcupti that cannot choose. */
static CUptiResult api_record(int domain, uint8_t enable)
{
	if (*env("FAKE_CUPTI_NO_API_FILTER"))
		return CUPTI_ERROR_NOT_SUPPORTED;
	api_records[domain] += enable ? 1 : -1;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable)
{
	return api_record(2, enable);
}

EXPORT CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable)
{
	return api_record(1, enable);
}

/* How many calls of domain (driver 1, runtime 2) have their API records on. */
EXPORT int fake_cupti_api_records(int domain)
{
	return domain == 1 || domain == 2 ? api_records[domain] : 0;
}

EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
	if (kind < 32)
		enabled_kinds &= ~(1u << kind);
	return CUPTI_SUCCESS;
}

static size_t record_size(const CUpti_Activity *r)
{
	switch (r->kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		return sizeof(CUpti_ActivityKernel10);
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
		return sizeof(CUpti_ActivityAPI);
	default:
		abort();
	}
}

static void (*record_hook)(void *);
static void *record_hook_arg;
static int record_hook_at, records_handed;

/* Call fn(arg) as the at-th record is handed over (while the client is inside a buffer). */
EXPORT void fake_cupti_set_record_hook(int at, void (*fn)(void *), void *arg)
{
	record_hook_at = at;
	record_hook_arg = arg;
	records_handed = 0;
	record_hook = fn;
}

EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
					      CUpti_Activity **record)
{
	uint8_t *next = *record ? (uint8_t *)*record + record_size(*record) : buffer;

	if (next >= buffer + valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*record = (CUpti_Activity *)next;
	if (record_hook && ++records_handed == record_hook_at)
		record_hook(record_hook_arg);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream,
						     size_t *dropped)
{
	*dropped = 0;
	return CUPTI_SUCCESS;
}

/* Hand the pending buffer to the client, as CUPTI's worker does. */
EXPORT void fake_cupti_complete(void)
{
	if (!pending)
		return;
	buf_done(NULL, 0, pending, pending_size, pending_used);
	pending = NULL;
	pending_used = 0;
}

EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	fake_cupti_complete();
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityFlushPeriod(uint32_t ms)
{
	return CUPTI_SUCCESS;
}

/* Bits: 1 subscribed, 2 timestamp callback set, 4 kernel activity enabled, 8 unsubscribed. */
EXPORT int fake_cupti_state(void)
{
	return (subscribed ? 1 : 0) | (ts_cb ? 2 : 0) |
	       ((enabled_kinds & (1u << CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) ? 4 : 0) |
	       (unsubscribed ? 8 : 0);
}

EXPORT unsigned fake_cupti_enabled_kinds(void)
{
	return enabled_kinds;
}

EXPORT unsigned fake_cupti_enabled_callbacks(int domain)
{
	return domain == 1 || domain == 2 ? enabled_cbs[domain] : 0;
}

static void *reserve(size_t size)
{
	size_t max_records;
	void *p;

	if (!pending) {
		buf_req(&pending, &pending_size, &max_records);
		if (!pending)
			return NULL;
	}
	if (pending_used + size > pending_size)
		return NULL;
	p = pending + pending_used;
	pending_used += size;
	return p;
}

static uint64_t now(void)
{
	return ts_cb ? ts_cb() : 0;
}

/* Queue one kernel (name must outlive the buffer) timed by the client's clock. */
EXPORT int fake_cupti_add_kernel(const char *name, uint32_t corr)
{
	CUpti_ActivityKernel10 *k = reserve(sizeof(*k));

	if (!k)
		return -1;
	memset(k, 0, sizeof(*k));
	k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k->start = now();
	k->end = now() + 1000;
	k->correlationId = corr;
	k->gridX = k->gridY = k->gridZ = 1;
	k->blockX = 128;
	k->blockY = k->blockZ = 1;
	k->name = name;
	return 0;
}

EXPORT int fake_cupti_add_api(int runtime, uint32_t cbid, uint32_t corr, uint32_t tid)
{
	CUpti_ActivityAPI *a = reserve(sizeof(*a));

	if (!a)
		return -1;
	memset(a, 0, sizeof(*a));
	a->kind = runtime ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER;
	a->cbid = cbid;
	a->start = now();
	a->end = a->start + 10;
	a->threadId = tid;
	a->correlationId = corr;
	return 0;
}

/* Play an API callback as the driver would around a call. */
EXPORT void fake_cupti_api_callback(int domain, uint32_t cbid, uint32_t corr, int exit)
{
	CUpti_CallbackData d = {
		.callbackSite = exit ? CUPTI_API_EXIT : CUPTI_API_ENTER,
		.functionName = "fake",
		.correlationId = corr,
	};

	if (api_cb)
		api_cb(api_userdata, (CUpti_CallbackDomain)domain, cbid, &d);
}
