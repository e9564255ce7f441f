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
 * Bounded: 64 open push/pop ranges per thread (deeper ones are counted, not sent), names cut
 * at 120 bytes, 128 domains, 4096 registered strings, 4096 open start/end ranges; whatever a
 * cap refuses is counted and reported to the daemon as the sender's drops.
 */
#define NVTX_NO_IMPL
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>
#include <sys/syscall.h>

#include <nvtx3/nvToolsExt.h>

#include "daemon/base/clock.h"
#include "cupti_inject/encode.h"
#include "cupti_inject/inject.h"
#include "cupti_inject/transport.h"
#include "cupti_inject/xsprof_wire.h"

#define MAX_DEPTH	    64
#define NAME_MAX_BYTES	    120
#define MAX_DOMAINS	    128
#define MAX_STRINGS	    4096
#define MAX_STARTED	    4096 /* open start/end ranges, a power of two */
#define FLUSH_EVERY_NS	    (50 * 1000000ull)
#define RECONNECT_EVERY_NS  (1000 * 1000000ull)
#define FLUSH_BUFFERED_HIGH (64u << 10)

struct open_range {
	uint64_t start; /* 0: opened while nothing listened (not sent) */
	const char *domain;
	char name[NAME_MAX_BYTES];
};

/* A thread's push/pop ranges, innermost last; allocated at its first push. */
struct thread_ranges {
	unsigned depth; /* may pass MAX_DEPTH: those levels are counted only */
	uint32_t tid;
	struct open_range r[MAX_DEPTH];
};

struct started {
	uint64_t id; /* 0: free */
	uint64_t start;
	uint32_t tid;
	const char *domain;
	char name[NAME_MAX_BYTES];
};

static struct {
	pthread_mutex_t lock; /* domains, strings, started */
	pthread_key_t key;
	char *domains[MAX_DOMAINS];
	unsigned nr_domains;
	char *strings[MAX_STRINGS];
	unsigned nr_strings;
	struct started started[MAX_STARTED];
	atomic_uint_fast64_t next_id;
	/* Whether a daemon took the last flush, and when a call may try again (monotonic ns). */
	atomic_bool sending;
	atomic_uint_fast64_t next_try_ns;
	atomic_uint_fast64_t last_flush_ns;
} n = {.lock = PTHREAD_MUTEX_INITIALIZER, .next_id = 1};

/* The default domain (NULL handle) and one for names past the cap. */
static const char overflow_domain[] = "[xsprof: too many domains]";

static uint32_t gettid32(void)
{
	static __thread uint32_t tid;

	if (!tid)
		tid = (uint32_t)syscall(SYS_gettid);
	return tid;
}

/* Flush when due; with no daemon, only try again once a second. Whether records may go. */
static bool connection_check(uint64_t now)
{
	struct cupti_transport *tr;
	struct cupti_transport_stats ts;
	bool sending = atomic_load_explicit(&n.sending, memory_order_relaxed);

	if (sending ? now < atomic_load_explicit(&n.last_flush_ns, memory_order_relaxed) +
				      FLUSH_EVERY_NS
		    : now < atomic_load_explicit(&n.next_try_ns, memory_order_relaxed))
		return sending;
	inject__lock();
	tr = inject__transport_locked();
	if (tr) {
		cupti_transport__flush(tr, 0);
		cupti_transport__stats(tr, &ts);
		sending = ts.connected;
	} else {
		sending = false;
	}
	inject__unlock();
	atomic_store(&n.sending, sending);
	atomic_store(&n.last_flush_ns, now);
	if (!sending)
		atomic_store(&n.next_try_ns, now + RECONNECT_EVERY_NS);
	return sending;
}

static void send_range(uint64_t start, uint64_t end, uint32_t id, uint32_t tid, const char *name,
		       const char *domain, uint16_t flags)
{
	uint8_t rec[sizeof(struct xsprof_wire_nvtx) + 2 * NAME_MAX_BYTES + 16];
	struct cupti_transport *tr;
	struct cupti_transport_stats ts;
	long len = cupti_encode__nvtx(rec, sizeof(rec), start, end, id, tid, name, domain, flags);

	if (len <= 0) {
		inject__count_nvtx_drops(1);
		return;
	}
	inject__lock();
	tr = inject__transport_locked();
	if (tr && cupti_transport__append(tr, rec, (size_t)len) == 0) {
		cupti_transport__stats(tr, &ts);
		if (ts.buffered > FLUSH_BUFFERED_HIGH)
			cupti_transport__flush(tr, 0);
	}
	inject__unlock();
}

/* Up to NAME_MAX_BYTES - 1 bytes of s into dst (a wide string converted as the locale says). */
static void copy_name(char *dst, const char *s)
{
	size_t len = s ? strnlen(s, NAME_MAX_BYTES - 1) : 0;

	memcpy(dst, s ? s : "", len);
	dst[len] = '\0';
}

static void copy_wide(char *dst, const wchar_t *w)
{
	mbstate_t st = {0};
	const wchar_t *p = w;
	size_t len = w ? wcsrtombs(dst, &p, NAME_MAX_BYTES - 1, &st) : 0;

	if (len == (size_t)-1)
		len = 0;
	dst[len < NAME_MAX_BYTES ? len : NAME_MAX_BYTES - 1] = '\0';
}

/* The name an event's attributes carry. */
static void attr_name(char *dst, const nvtxEventAttributes_t *a)
{
	if (!a || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof(a->message)) {
		dst[0] = '\0';
		return;
	}
	switch (a->messageType) {
	case NVTX_MESSAGE_TYPE_ASCII:
		copy_name(dst, a->message.ascii);
		break;
	case NVTX_MESSAGE_TYPE_UNICODE:
		copy_wide(dst, a->message.unicode);
		break;
	case NVTX_MESSAGE_TYPE_REGISTERED:
		/* Our handles are the copies DomainRegisterString made. */
		copy_name(dst, a->message.registered ? (const char *)a->message.registered
						     : "[registered]");
		break;
	default:
		dst[0] = '\0';
	}
}

static void free_thread(void *p)
{
	free(p);
}

/* This thread's ranges: made at its first push; a pop or the exit only looks. */
static __thread struct thread_ranges *tls_ranges;

static struct thread_ranges *thread_ranges(void)
{
	struct thread_ranges *t = tls_ranges;

	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return NULL;
		t->tid = gettid32();
		pthread_setspecific(n.key, t);
		tls_ranges = t;
	}
	return t;
}

static const char *domain_name(nvtxDomainHandle_t d)
{
	return (const char *)d; /* NULL: the default domain */
}

/* ---- push / pop ---- */

static int push(const char *domain, const char *ascii, const nvtxEventAttributes_t *a,
		const wchar_t *wide)
{
	struct thread_ranges *t = thread_ranges();
	struct open_range *r;

	if (!t)
		return -1;
	if (t->depth >= MAX_DEPTH) {
		inject__count_nvtx_drops(1);
		return (int)t->depth++;
	}
	r = &t->r[t->depth];
	r->start = 0;
	r->domain = domain;
	if (connection_check(clock__coarse_ns())) {
		if (a)
			attr_name(r->name, a);
		else if (wide)
			copy_wide(r->name, wide);
		else
			copy_name(r->name, ascii);
		/* The range starts when the call returns, whatever a flush above took. */
		r->start = clock__mono_ns();
		send_range(r->start, r->start, 0, t->tid, r->name, domain, XSPROF_WIRE_F_OPEN);
	}
	return (int)t->depth++;
}

static int pop(const char *domain)
{
	struct thread_ranges *t = tls_ranges;
	int i;

	if (!t || !t->depth) {
		inject__count_nvtx_drops(1);
		return -1;
	}
	if (t->depth > MAX_DEPTH)
		return (int)--t->depth;
	/* The innermost range of this domain (NVTX keeps a stack per domain). */
	for (i = (int)t->depth - 1; i >= 0 && t->r[i].domain != domain; i--)
		;
	if (i < 0) {
		inject__count_nvtx_drops(1);
		return -1;
	}
	if (t->r[i].start) {
		/* First: the range ends when the call is made; sending and flushing come after. */
		uint64_t t_end = clock__mono_ns();

		send_range(t->r[i].start, t_end, 0, t->tid, t->r[i].name, domain, 0);
		connection_check(t_end);
	}
	memmove(&t->r[i], &t->r[i + 1], (t->depth - 1 - (unsigned)i) * sizeof(t->r[0]));
	return (int)--t->depth;
}

static int push_a(const char *m)
{
	return push(NULL, m, NULL, NULL);
}

static int push_w(const wchar_t *m)
{
	return push(NULL, NULL, NULL, m);
}

static int push_ex(const nvtxEventAttributes_t *a)
{
	return push(NULL, NULL, a, NULL);
}

static int pop_default(void)
{
	return pop(NULL);
}

static int domain_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	return push(domain_name(d), NULL, a, NULL);
}

static int domain_pop(nvtxDomainHandle_t d)
{
	return pop(domain_name(d));
}

/* ---- start / end: may end on another thread ---- */

static nvtxRangeId_t start(const char *domain, const char *ascii, const nvtxEventAttributes_t *a,
			   const wchar_t *wide)
{
	uint64_t id = atomic_fetch_add(&n.next_id, 1);
	struct started *s = NULL, opened;

	if (!connection_check(clock__coarse_ns()))
		return id;
	pthread_mutex_lock(&n.lock);
	for (unsigned k = 0; k < MAX_STARTED && !s; k++) {
		struct started *c = &n.started[(id + k) & (MAX_STARTED - 1)];

		if (!c->id)
			s = c;
	}
	if (s) {
		s->id = id;
		s->start = clock__mono_ns();
		s->tid = gettid32();
		s->domain = domain;
		if (a)
			attr_name(s->name, a);
		else if (wide)
			copy_wide(s->name, wide);
		else
			copy_name(s->name, ascii);
		opened = *s; /* an end on another thread may free the slot once unlocked */
	}
	pthread_mutex_unlock(&n.lock);
	if (!s)
		inject__count_nvtx_drops(1);
	else
		send_range(opened.start, opened.start, (uint32_t)id, opened.tid, opened.name,
			   domain, XSPROF_WIRE_F_OPEN);
	return id;
}

static void end(nvtxRangeId_t id)
{
	struct started s = {0};

	pthread_mutex_lock(&n.lock);
	for (unsigned k = 0; k < MAX_STARTED; k++) {
		struct started *c = &n.started[(id + k) & (MAX_STARTED - 1)];

		if (c->id == id) {
			s = *c;
			c->id = 0;
			break;
		}
	}
	pthread_mutex_unlock(&n.lock);
	/* Not found: started while nothing listened, or never started (counted by neither). */
	if (s.id)
		send_range(s.start, clock__mono_ns(), (uint32_t)id, s.tid, s.name, s.domain, 0);
}

static nvtxRangeId_t start_a(const char *m)
{
	return start(NULL, m, NULL, NULL);
}

static nvtxRangeId_t start_w(const wchar_t *m)
{
	return start(NULL, NULL, NULL, m);
}

static nvtxRangeId_t start_ex(const nvtxEventAttributes_t *a)
{
	return start(NULL, NULL, a, NULL);
}

static nvtxRangeId_t domain_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	return start(domain_name(d), NULL, a, NULL);
}

static void domain_end(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
	(void)d;
	end(id);
}

/* ---- marks ---- */

static void mark(const char *domain, const char *ascii, const nvtxEventAttributes_t *a,
		 const wchar_t *wide)
{
	uint64_t now = clock__mono_ns();
	char name[NAME_MAX_BYTES];

	if (!connection_check(clock__coarse_ns()))
		return;
	if (a)
		attr_name(name, a);
	else if (wide)
		copy_wide(name, wide);
	else
		copy_name(name, ascii);
	send_range(now, now, 0, gettid32(), name, domain, XSPROF_WIRE_F_INSTANT);
}

static void mark_a(const char *m)
{
	mark(NULL, m, NULL, NULL);
}

static void mark_w(const wchar_t *m)
{
	mark(NULL, NULL, NULL, m);
}

static void mark_ex(const nvtxEventAttributes_t *a)
{
	mark(NULL, NULL, a, NULL);
}

static void domain_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	mark(domain_name(d), NULL, a, NULL);
}

/* ---- domains and registered strings: copies kept for the process's life ---- */

static nvtxDomainHandle_t domain_create(const char *name)
{
	char *found = NULL;

	pthread_mutex_lock(&n.lock);
	for (unsigned i = 0; i < n.nr_domains && !found; i++)
		if (!strcmp(n.domains[i], name ? name : ""))
			found = n.domains[i];
	if (!found && n.nr_domains < MAX_DOMAINS) {
		found = strndup(name ? name : "", NAME_MAX_BYTES - 1);
		if (found)
			n.domains[n.nr_domains++] = found;
	}
	pthread_mutex_unlock(&n.lock);
	if (!found)
		inject__count_nvtx_drops(1);
	return (nvtxDomainHandle_t)(found ? found : overflow_domain);
}

static nvtxDomainHandle_t domain_create_w(const wchar_t *w)
{
	char name[NAME_MAX_BYTES];

	copy_wide(name, w);
	return domain_create(name);
}

static nvtxStringHandle_t register_string(nvtxDomainHandle_t d, const char *s)
{
	char *copy = NULL;

	(void)d;
	pthread_mutex_lock(&n.lock);
	if (n.nr_strings < MAX_STRINGS) {
		copy = strndup(s ? s : "", NAME_MAX_BYTES - 1);
		if (copy)
			n.strings[n.nr_strings++] = copy;
	}
	pthread_mutex_unlock(&n.lock);
	if (!copy)
		inject__count_nvtx_drops(1);
	return (nvtxStringHandle_t)copy;
}

static nvtxStringHandle_t register_string_w(nvtxDomainHandle_t d, const wchar_t *w)
{
	char name[NAME_MAX_BYTES];

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

/* The exiting thread's ranges still open end with the process: sent, so nothing of them is
 * lost (other threads' stacks are theirs alone and end unsent). */
static void close_at_exit(void)
{
	struct thread_ranges *t = tls_ranges;
	uint64_t now = clock__mono_ns();

	for (unsigned i = t ? (t->depth < MAX_DEPTH ? t->depth : MAX_DEPTH) : 0; i-- > 0;)
		if (t->r[i].start)
			send_range(t->r[i].start, now, 0, t->tid, t->r[i].name, t->r[i].domain, 0);
	if (t)
		t->depth = 0;
}

static void after_fork_child(void)
{
	/* The child's threads are its own: the one that forked keeps its ranges' depth. */
	pthread_mutex_init(&n.lock, NULL);
	atomic_store(&n.sending, false);
	atomic_store(&n.next_try_ns, 0);
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
	if (pthread_key_create(&n.key, free_thread))
		return 0;
	pthread_atfork(NULL, NULL, after_fork_child);
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
	/* Connect now, so a daemon already listening gets the first range whole; registered after
	 * the connection's own at-exit flush, close_at_exit runs before it. */
	connection_check(clock__coarse_ns());
	atexit(close_at_exit);
	if (inject__verbose())
		inject__say("NVTX ranges go to xsprofd (%s)",
			    atomic_load(&n.sending) ? "connected" : "not listening yet");
	return 1;
}
