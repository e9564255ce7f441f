// SPDX-License-Identifier: Apache-2.0
/*
 * libxsprof_cupti.so as an NVTX injection library: the NVTX loader (in the application, or in
 * libnvtx3interop.so) opens it through NVTX_INJECTION64_PATH at the first NVTX call and asks it
 * for its handlers. Ranges (push/pop per thread and domain, start/end across threads) and
 * marks are timed on CLOCK_MONOTONIC, on the calling thread, and sent to xsprofd as
 * XSPROF_WIRE_NVTX records over the connection CUPTI's records use; no CUDA, CUPTI or GPU is
 * needed. While a daemon listens, a push or a start also sends the range's opening
 * (XSPROF_WIRE_F_OPEN), so a range that has not ended by the end of a recording is known. While
 * no daemon listens, a push only counts its depth and takes no time stamp, a pop sends nothing,
 * and a connection is tried again once a second; records are handed to the socket within 50 ms
 * of a later call, and at exit (when the exiting thread's ranges still open are closed and
 * sent).
 *
 * The ranges themselves, their caps and the connection are ranges.c's (ranges.h), which the ITT
 * collector (itt.c) shares; here are NVTX's names (attributes, wide strings, registered
 * strings) and its function tables.
 */
#define NVTX_NO_IMPL
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <wchar.h>

#include <nvtx3/nvToolsExt.h>

#include "cupti_inject/inject.h"
#include "cupti_inject/ranges.h"

/* A wide string as a name, converted as the locale says. */
static void copy_wide(char *dst, const void *src)
{
	const wchar_t *w = src, *p = w;
	mbstate_t st = {0};
	size_t len = w ? wcsrtombs(dst, &p, RANGES_NAME_MAX - 1, &st) : 0;

	if (len == (size_t)-1)
		len = 0;
	dst[len < RANGES_NAME_MAX ? len : RANGES_NAME_MAX - 1] = '\0';
}

/* The name an event's attributes carry. */
static void attr_name(char *dst, const void *src)
{
	const nvtxEventAttributes_t *a = src;

	if (!a || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof(a->message)) {
		dst[0] = '\0';
		return;
	}
	switch (a->messageType) {
	case NVTX_MESSAGE_TYPE_ASCII:
		ranges__copy_name(dst, a->message.ascii);
		break;
	case NVTX_MESSAGE_TYPE_UNICODE:
		copy_wide(dst, a->message.unicode);
		break;
	case NVTX_MESSAGE_TYPE_REGISTERED:
		/* Our handles are the copies DomainRegisterString made. */
		ranges__copy_name(dst, a->message.registered ? (const char *)a->message.registered
							     : "[registered]");
		break;
	default:
		dst[0] = '\0';
	}
}

static const char *domain_name(nvtxDomainHandle_t d)
{
	return (const char *)d; /* NULL: the default domain */
}

/* ---- push / pop ---- */

static int push_a(const char *m)
{
	return ranges__push(NULL, ranges__copy_name, m);
}

static int push_w(const wchar_t *m)
{
	return ranges__push(NULL, copy_wide, m);
}

static int push_ex(const nvtxEventAttributes_t *a)
{
	return ranges__push(NULL, attr_name, a);
}

static int pop_default(void)
{
	return ranges__pop(NULL);
}

static int domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	return ranges__push(domain_name(d), attr_name, a);
}

static int domain_pop(nvtxDomainHandle_t d)
{
	return ranges__pop(domain_name(d));
}

/* ---- start / end: may end on another thread ---- */

static nvtxRangeId_t start_a(const char *m)
{
	return ranges__start(NULL, ranges__copy_name, m);
}

static nvtxRangeId_t start_w(const wchar_t *m)
{
	return ranges__start(NULL, copy_wide, m);
}

static nvtxRangeId_t start_ex(const nvtxEventAttributes_t *a)
{
	return ranges__start(NULL, attr_name, a);
}

static nvtxRangeId_t domain_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	return ranges__start(domain_name(d), attr_name, a);
}

static void end(nvtxRangeId_t id)
{
	ranges__end(id);
}

static void domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
	(void)d;
	ranges__end(id);
}

/* ---- marks ---- */

static void mark_a(const char *m)
{
	ranges__mark(NULL, ranges__copy_name, m);
}

static void mark_w(const wchar_t *m)
{
	ranges__mark(NULL, copy_wide, m);
}

static void mark_ex(const nvtxEventAttributes_t *a)
{
	ranges__mark(NULL, attr_name, a);
}

static void domain_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	ranges__mark(domain_name(d), attr_name, a);
}

/* ---- domains and registered strings: copies kept for the process's life ---- */

static nvtxDomainHandle_t domain_create(const char *name)
{
	return (nvtxDomainHandle_t)ranges__domain(name);
}

static nvtxDomainHandle_t domain_create_w(const wchar_t *w)
{
	char name[RANGES_NAME_MAX];

	copy_wide(name, w);
	return domain_create(name);
}

static nvtxStringHandle_t register_string(nvtxDomainHandle_t d, const char *s)
{
	(void)d;
	return (nvtxStringHandle_t)ranges__string(s);
}

static nvtxStringHandle_t register_string_w(nvtxDomainHandle_t d, const wchar_t *w)
{
	char name[RANGES_NAME_MAX];

	copy_wide(name, w);
	return register_string(d, name);
}

/* ---- the entry ---- */

typedef void (*fnptr)(void);

static void set(NvtxFunctionTable table, unsigned size, unsigned id, fnptr f)
{
	if (table && id < size && table[id])
		*table[id] = f;
}

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
	const NvtxExportTableCallbacks *cb =
		get ? (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS) : NULL;
	NvtxFunctionTable core = NULL, core2 = NULL;
	unsigned core_n = 0, core2_n = 0;

	if (!cb || cb->struct_size < sizeof(*cb) || !cb->GetModuleFunctionTable)
		return 0;
	if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_n) ||
	    !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_n))
		return 0;
	if (ranges__init())
		return 0;
	set(core, core_n, NVTX_CBID_CORE_MarkEx, (fnptr)mark_ex);
	set(core, core_n, NVTX_CBID_CORE_MarkA, (fnptr)mark_a);
	set(core, core_n, NVTX_CBID_CORE_MarkW, (fnptr)mark_w);
	set(core, core_n, NVTX_CBID_CORE_RangeStartEx, (fnptr)start_ex);
	set(core, core_n, NVTX_CBID_CORE_RangeStartA, (fnptr)start_a);
	set(core, core_n, NVTX_CBID_CORE_RangeStartW, (fnptr)start_w);
	set(core, core_n, NVTX_CBID_CORE_RangeEnd, (fnptr)end);
	set(core, core_n, NVTX_CBID_CORE_RangePushEx, (fnptr)push_ex);
	set(core, core_n, NVTX_CBID_CORE_RangePushA, (fnptr)push_a);
	set(core, core_n, NVTX_CBID_CORE_RangePushW, (fnptr)push_w);
	set(core, core_n, NVTX_CBID_CORE_RangePop, (fnptr)pop_default);
	set(core2, core2_n, NVTX_CBID_CORE2_DomainMarkEx, (fnptr)domain_mark_ex);
	set(core2, core2_n, NVTX_CBID_CORE2_DomainRangeStartEx, (fnptr)domain_start_ex);
	set(core2, core2_n, NVTX_CBID_CORE2_DomainRangeEnd, (fnptr)domain_end);
	set(core2, core2_n, NVTX_CBID_CORE2_DomainRangePushEx, (fnptr)domain_push_ex);
	set(core2, core2_n, NVTX_CBID_CORE2_DomainRangePop, (fnptr)domain_pop);
	set(core2, core2_n, NVTX_CBID_CORE2_DomainRegisterStringA, (fnptr)register_string);
	set(core2, core2_n, NVTX_CBID_CORE2_DomainRegisterStringW, (fnptr)register_string_w);
	set(core2, core2_n, NVTX_CBID_CORE2_DomainCreateA, (fnptr)domain_create);
	set(core2, core2_n, NVTX_CBID_CORE2_DomainCreateW, (fnptr)domain_create_w);
	if (inject__verbose())
		inject__say("NVTX ranges go to xsprofd (%s)",
			    ranges__sending() ? "connected" : "not listening yet");
	return 1;
}
