// SPDX-License-Identifier: Apache-2.0
#include "cupti_inject/encode.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_callbacks.h>
#include <cupti_version.h>

#include "cupti_inject/wire_encode.h"
#include "cupti_inject/xsprof_wire.h"

#if CUPTI_API_VERSION < 130000
#error "encode.c reads the CUDA 13 activity record versions (CUpti_ActivityKernel10, ...)"
#endif

/* The wire enums copy CUPTI's numbering; catch a renumbering at build time. */
_Static_assert((int)CUPTI_ACTIVITY_MEMCPY_KIND_PTOP == (int)XSPROF_COPY_PTOP, "copy kinds");
_Static_assert((int)CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC == (int)XSPROF_MEM_MANAGED_STATIC,
	       "memory kinds");
_Static_assert((int)CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE ==
		       (int)XSPROF_SYNC_CONTEXT,
	       "sync types");
_Static_assert((int)CUPTI_CB_DOMAIN_DRIVER_API == (int)XSPROF_API_DRIVER, "api domains");
_Static_assert((int)CUPTI_CB_DOMAIN_RUNTIME_API == (int)XSPROF_API_RUNTIME, "api domains");

struct open_range {
	uint32_t id;
	bool used;
	uint32_t tid;
	uint64_t start;
	char *name;
	char *domain;
};

/*
 * The open NVTX ranges (CUPTI's start markers waiting for their end), by id. A table of its own
 * rather than daemon/base/hashmap.c: this library is loaded into the user's processes and links
 * libc only (no symbols of ours that could clash with theirs, nothing of the daemon's base);
 * and it never grows: sized once for max_open ranges at most half full, so a marker costs no
 * allocation but its names' and a full table refuses (counted in nvtx_overflow).
 */
struct cupti_encoder {
	struct open_range *ranges; /* open addressing on id, at most half full */
	size_t nr_slots;	   /* power of two */
	size_t max_open;
	struct cupti_encoder_stats st;
};

struct cupti_encoder *cupti_encoder__new(unsigned max_open_ranges)
{
	struct cupti_encoder *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->max_open = max_open_ranges ? max_open_ranges : 1024;
	e->nr_slots = 2;
	while (e->nr_slots < 2 * e->max_open)
		e->nr_slots <<= 1;
	e->ranges = calloc(e->nr_slots, sizeof(*e->ranges));
	if (!e->ranges) {
		free(e);
		return NULL;
	}
	return e;
}

void cupti_encoder__free(struct cupti_encoder *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->nr_slots; i++) {
		free(e->ranges[i].name);
		free(e->ranges[i].domain);
	}
	free(e->ranges);
	free(e);
}

void cupti_encoder__stats(const struct cupti_encoder *e, struct cupti_encoder_stats *ret)
{
	*ret = e->st;
}

static bool bad_time(struct cupti_encoder *e, uint64_t start, uint64_t end)
{
	/* The daemon drops a whole connection over end < start: never send one. */
	if (end >= start)
		return false;
	e->st.bad_time++;
	return true;
}

/* The work fields (XSPROF_WIRE_WORK_FIELDS) from the CUPTI record c into the wire record w. */
#define WIRE_FROM_CUPTI(w, c, wire, cupti, act) (w)->wire = (c)->cupti;
#define PUT_WORK(w, c)				XSPROF_WIRE_WORK_FIELDS(WIRE_FROM_CUPTI, w, c)

static long encode_kernel(struct cupti_encoder *e, const CUpti_ActivityKernel10 *k, void *out,
			  size_t cap)
{
	struct xsprof_wire_kernel *w;
	bool trunc = false;
	uint32_t name_len = wire__string_len(k->name, &trunc);
	uint32_t len;

	if (bad_time(e, k->start, k->end))
		return 0;
	w = wire__start_record(out, cap, XSPROF_WIRE_KERNEL, sizeof(*w), name_len, &len);
	if (!w)
		return -ENOSPC;
	PUT_WORK(w, k);
	w->grid[0] = k->gridX;
	w->grid[1] = k->gridY;
	w->grid[2] = k->gridZ;
	w->block[0] = k->blockX;
	w->block[1] = k->blockY;
	w->block[2] = k->blockZ;
	w->graph_node_id = k->graphNodeId;
	w->registers_per_thread = k->registersPerThread;
	w->static_smem = (uint32_t)k->staticSharedMemory;
	w->dynamic_smem = (uint32_t)k->dynamicSharedMemory;
	w->name_len = (uint16_t)name_len;
	w->flags = (trunc ? XSPROF_WIRE_F_NAME_TRUNC : 0) |
		   (k->isDeviceLaunched ? XSPROF_WIRE_F_DEVICE_LAUNCH : 0);
	wire__put_string((uint8_t *)(w + 1), k->name, name_len);
	return len;
}

static uint8_t copy_kind(unsigned v)
{
	return v < XSPROF_COPY_KIND_END ? (uint8_t)v : XSPROF_COPY_UNKNOWN;
}

static uint8_t mem_kind(unsigned v)
{
	return v < XSPROF_MEM_KIND_END ? (uint8_t)v : XSPROF_MEM_UNKNOWN;
}

/* What a copy's record has of CUPTI's, a host copy's or a peer-to-peer one's alike. */
#define PUT_COPY(w, m)                                                                           \
	do {                                                                                     \
		PUT_WORK(w, m);                                                                  \
		(w)->bytes =                                                                     \
			(m)->bytes < XSPROF_WIRE_MAX_BYTES ? (m)->bytes : XSPROF_WIRE_MAX_BYTES; \
		(w)->graph_node_id = (m)->graphNodeId;                                           \
		(w)->copy_kind = copy_kind((m)->copyKind);                                       \
		(w)->src_kind = mem_kind((m)->srcKind);                                          \
		(w)->dst_kind = mem_kind((m)->dstKind);                                          \
	} while (0)

static long encode_memcpy(struct cupti_encoder *e, const CUpti_ActivityMemcpy6 *m, void *out,
			  size_t cap)
{
	struct xsprof_wire_memcpy *w;
	uint32_t len;

	if (bad_time(e, m->start, m->end))
		return 0;
	w = wire__start_record(out, cap, XSPROF_WIRE_MEMCPY, sizeof(*w), 0, &len);
	if (!w)
		return -ENOSPC;
	PUT_COPY(w, m);
	w->runtime_correlation_id = m->runtimeCorrelationId;
	w->src_device = XSPROF_WIRE_NO_DEVICE;
	w->dst_device = XSPROF_WIRE_NO_DEVICE;
	w->flags = ((m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? XSPROF_WIRE_F_ASYNC : 0) |
		   (m->isDeviceLaunched ? XSPROF_WIRE_F_DEVICE_LAUNCH : 0);
	return len;
}

static long encode_p2p(struct cupti_encoder *e, const CUpti_ActivityMemcpyPtoP4 *m, void *out,
		       size_t cap)
{
	struct xsprof_wire_memcpy *w;
	uint32_t len;

	if (bad_time(e, m->start, m->end))
		return 0;
	w = wire__start_record(out, cap, XSPROF_WIRE_MEMCPY, sizeof(*w), 0, &len);
	if (!w)
		return -ENOSPC;
	PUT_COPY(w, m);
	w->src_device = m->srcDeviceId;
	w->dst_device = m->dstDeviceId;
	w->flags = (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? XSPROF_WIRE_F_ASYNC : 0;
	return len;
}

static long encode_memset(struct cupti_encoder *e, const CUpti_ActivityMemset4 *m, void *out,
			  size_t cap)
{
	struct xsprof_wire_memset *w;
	uint32_t len;

	if (bad_time(e, m->start, m->end))
		return 0;
	w = wire__start_record(out, cap, XSPROF_WIRE_MEMSET, sizeof(*w), 0, &len);
	if (!w)
		return -ENOSPC;
	PUT_WORK(w, m);
	w->bytes = m->bytes < XSPROF_WIRE_MAX_BYTES ? m->bytes : XSPROF_WIRE_MAX_BYTES;
	w->value = m->value;
	w->graph_node_id = m->graphNodeId;
	w->mem_kind = mem_kind(m->memoryKind);
	w->flags = ((m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) ? XSPROF_WIRE_F_ASYNC : 0) |
		   (m->isDeviceLaunched ? XSPROF_WIRE_F_DEVICE_LAUNCH : 0);
	return len;
}

static long encode_api(struct cupti_encoder *e, const CUpti_ActivityAPI *a, uint8_t domain,
		       void *out, size_t cap)
{
	struct xsprof_wire_api *w;
	uint32_t len;

	if (bad_time(e, a->start, a->end))
		return 0;
	w = wire__start_record(out, cap, XSPROF_WIRE_API, sizeof(*w), 0, &len);
	if (!w)
		return -ENOSPC;
	w->start = a->start;
	w->end = a->end;
	w->tid = a->threadId;
	w->correlation_id = a->correlationId;
	w->cbid = a->cbid;
	w->return_value = a->returnValue;
	w->domain = domain;
	return len;
}

static long encode_sync(struct cupti_encoder *e, const CUpti_ActivitySynchronization2 *s, void *out,
			size_t cap)
{
	struct xsprof_wire_sync *w;
	uint32_t len;

	if (bad_time(e, s->start, s->end))
		return 0;
	w = wire__start_record(out, cap, XSPROF_WIRE_SYNC, sizeof(*w), 0, &len);
	if (!w)
		return -ENOSPC;
	w->start = s->start;
	w->end = s->end;
	w->context = s->contextId;
	w->stream = s->streamId;
	w->correlation_id = s->correlationId;
	w->cuda_event_id = s->cudaEventId;
	w->sync_type =
		(unsigned)s->type < XSPROF_SYNC_TYPE_END ? (uint8_t)s->type : XSPROF_SYNC_UNKNOWN;
	return len;
}

static long encode_graph(struct cupti_encoder *e, const CUpti_ActivityGraphTrace2 *g, void *out,
			 size_t cap)
{
	struct xsprof_wire_graph *w;
	uint32_t len;

	if (bad_time(e, g->start, g->end))
		return 0;
	w = wire__start_record(out, cap, XSPROF_WIRE_GRAPH, sizeof(*w), 0, &len);
	if (!w)
		return -ENOSPC;
	PUT_WORK(w, g);
	w->end_device = g->endDeviceId;
	return len;
}

static size_t slot_of(const struct cupti_encoder *e, uint32_t id)
{
	return (id * 2654435761u) & (e->nr_slots - 1);
}

static struct open_range *find_range(struct cupti_encoder *e, uint32_t id)
{
	for (size_t i = slot_of(e, id);; i = (i + 1) & (e->nr_slots - 1)) {
		if (!e->ranges[i].used)
			return NULL;
		if (e->ranges[i].id == id)
			return &e->ranges[i];
	}
}

/* Linear-probing delete by backward shift, so lookups never need tombstones. */
static void remove_range(struct cupti_encoder *e, struct open_range *r)
{
	size_t mask = e->nr_slots - 1;
	size_t hole = (size_t)(r - e->ranges);

	free(r->name);
	free(r->domain);
	for (size_t i = (hole + 1) & mask; e->ranges[i].used; i = (i + 1) & mask) {
		size_t home = slot_of(e, e->ranges[i].id);

		/* Move i into the hole unless its home lies cyclically in (hole, i]. */
		if (((i - home) & mask) >= ((i - hole) & mask)) {
			e->ranges[hole] = e->ranges[i];
			hole = i;
		}
	}
	memset(&e->ranges[hole], 0, sizeof(e->ranges[hole]));
	e->st.open_ranges--;
}

static char *dup_name(const char *s)
{
	return s ? strndup(s, XSPROF_WIRE_NAME_MAX - 1) : NULL;
}

static long encode_marker(struct cupti_encoder *e, const CUpti_ActivityMarker2 *m, void *out,
			  size_t cap)
{
	uint32_t tid = 0;
	struct open_range *r;
	long n;

	if (m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ||
	    m->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS)
		tid = m->objectId.pt.threadId;
	if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS)
		return cupti_encode__nvtx(out, cap, m->timestamp, m->timestamp, m->id, tid, m->name,
					  m->domain, XSPROF_WIRE_F_INSTANT);
	if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
		size_t i;

		if (find_range(e, m->id) || e->st.open_ranges >= e->max_open) {
			e->st.nvtx_overflow++;
			return 0;
		}
		for (i = slot_of(e, m->id); e->ranges[i].used; i = (i + 1) & (e->nr_slots - 1))
			;
		r = &e->ranges[i];
		r->used = true;
		r->id = m->id;
		r->tid = tid;
		r->start = m->timestamp;
		r->name = dup_name(m->name);
		r->domain = dup_name(m->domain);
		e->st.open_ranges++;
		return 0;
	}
	if (!(m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END))
		return 0; /* sync acquire/release markers: not ranges */
	r = find_range(e, m->id);
	if (!r) {
		e->st.nvtx_unpaired++;
		return 0;
	}
	if (bad_time(e, r->start, m->timestamp)) {
		remove_range(e, r);
		return 0;
	}
	n = cupti_encode__nvtx(out, cap, r->start, m->timestamp, m->id, r->tid, r->name,
			       r->domain ? r->domain : m->domain, 0);
	if (n < 0)
		return n; /* keep the range: the caller may retry with room */
	remove_range(e, r);
	return n;
}

long cupti_encoder__encode(struct cupti_encoder *e, const CUpti_Activity *rec, void *out,
			   size_t cap)
{
	long n;

	switch (rec->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		e->st.kernels++;
		n = encode_kernel(e, (const CUpti_ActivityKernel10 *)rec, out, cap);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		e->st.copies++;
		n = encode_memcpy(e, (const CUpti_ActivityMemcpy6 *)rec, out, cap);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY2:
		e->st.copies++;
		n = encode_p2p(e, (const CUpti_ActivityMemcpyPtoP4 *)rec, out, cap);
		break;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		e->st.memsets++;
		n = encode_memset(e, (const CUpti_ActivityMemset4 *)rec, out, cap);
		break;
	case CUPTI_ACTIVITY_KIND_DRIVER:
		n = encode_api(e, (const CUpti_ActivityAPI *)rec, XSPROF_API_DRIVER, out, cap);
		break;
	case CUPTI_ACTIVITY_KIND_RUNTIME:
		n = encode_api(e, (const CUpti_ActivityAPI *)rec, XSPROF_API_RUNTIME, out, cap);
		break;
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		n = encode_sync(e, (const CUpti_ActivitySynchronization2 *)rec, out, cap);
		break;
	case CUPTI_ACTIVITY_KIND_MARKER:
		n = encode_marker(e, (const CUpti_ActivityMarker2 *)rec, out, cap);
		break;
	case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
		n = encode_graph(e, (const CUpti_ActivityGraphTrace2 *)rec, out, cap);
		break;
	default:
		e->st.skipped_kind++;
		return 0;
	}
	if (n > 0)
		e->st.encoded++;
	return n;
}
