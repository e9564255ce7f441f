// SPDX-License-Identifier: Apache-2.0
/*
 * The ranges core (ranges.h). Records are handed to the socket within 50 ms of a later call,
 * and at exit (when the exiting thread's ranges still open are closed and sent); while no
 * daemon listens, a connection is tried again once a second.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "daemon/base/clock.h"
#include "cupti_inject/inject.h"
#include "cupti_inject/ranges.h"
#include "cupti_inject/transport.h"
#include "cupti_inject/wire_encode.h"
#include "cupti_inject/xsprof_wire.h"

#define MAX_DEPTH	    64
#define MAX_DOMAINS	    128
#define MAX_STRINGS	    4096
#define MAX_STARTED	    4096 /* open start/end ranges, a power of two */
#define FLUSH_EVERY_NS	    (50 * 1000000ull)
#define RECONNECT_EVERY_NS  (1000 * 1000000ull)
#define FLUSH_BUFFERED_HIGH (64u << 10)

struct open_range {
	uint64_t start; /* 0: opened while nothing listened (not sent) */
	const char *domain;
	char name[RANGES_NAME_MAX];
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
	char name[RANGES_NAME_MAX];
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

/* Names past the cap of domains share this one. */
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

bool ranges__sending(void)
{
	return atomic_load(&n.sending);
}

static void send_range(uint64_t start, uint64_t end, uint32_t id, uint32_t tid, const char *name,
		       const char *domain, uint16_t flags)
{
	uint8_t rec[sizeof(struct xsprof_wire_nvtx) + 2 * RANGES_NAME_MAX + 16];
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

void ranges__copy_name(char *dst, const void *src)
{
	const char *s = src;
	size_t len = s ? strnlen(s, RANGES_NAME_MAX - 1) : 0;

	memcpy(dst, s ? s : "", len);
	dst[len] = '\0';
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

/* ---- push / pop ---- */

int ranges__push(const char *domain, ranges_name_fn name, const void *src)
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
		name(r->name, src);
		/* The range starts when the call returns, whatever a flush above took. */
		r->start = clock__mono_ns();
		send_range(r->start, r->start, 0, t->tid, r->name, domain, XSPROF_WIRE_F_OPEN);
	}
	return (int)t->depth++;
}

int ranges__pop(const char *domain)
{
	struct thread_ranges *t = tls_ranges;
	int i;

	if (!t || !t->depth) {
		inject__count_nvtx_drops(1);
		return -1;
	}
	if (t->depth > MAX_DEPTH)
		return (int)--t->depth;
	/* The innermost range of this domain (a stack per domain). */
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

/* ---- start / end: may end on another thread ---- */

uint64_t ranges__start(const char *domain, ranges_name_fn name, const void *src)
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
		name(s->name, src);
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

void ranges__end(uint64_t id)
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

void ranges__mark(const char *domain, ranges_name_fn name, const void *src)
{
	uint64_t now = clock__mono_ns();
	char buf[RANGES_NAME_MAX];

	if (!connection_check(clock__coarse_ns()))
		return;
	name(buf, src);
	send_range(now, now, 0, gettid32(), buf, domain, XSPROF_WIRE_F_INSTANT);
}

/* ---- domains and registered strings: copies kept for the process's life ---- */

const char *ranges__domain(const char *name)
{
	char *found = NULL;

	pthread_mutex_lock(&n.lock);
	for (unsigned i = 0; i < n.nr_domains && !found; i++)
		if (!strcmp(n.domains[i], name ? name : ""))
			found = n.domains[i];
	if (!found && n.nr_domains < MAX_DOMAINS) {
		found = strndup(name ? name : "", RANGES_NAME_MAX - 1);
		if (found)
			n.domains[n.nr_domains++] = found;
	}
	pthread_mutex_unlock(&n.lock);
	if (!found)
		inject__count_nvtx_drops(1);
	return found ? found : overflow_domain;
}

const char *ranges__string(const char *s)
{
	char *copy = NULL;

	pthread_mutex_lock(&n.lock);
	if (n.nr_strings < MAX_STRINGS) {
		copy = strndup(s ? s : "", RANGES_NAME_MAX - 1);
		if (copy)
			n.strings[n.nr_strings++] = copy;
	}
	pthread_mutex_unlock(&n.lock);
	if (!copy)
		inject__count_nvtx_drops(1);
	return copy;
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

static int init_ret = -1;

static void init_once(void)
{
	if (pthread_key_create(&n.key, free_thread))
		return;
	pthread_atfork(NULL, NULL, after_fork_child);
	/* Connect now, so a daemon already listening gets the first range whole; registered after
	 * the connection's own at-exit flush, close_at_exit runs before it. */
	connection_check(clock__coarse_ns());
	atexit(close_at_exit);
	init_ret = 0;
}

int ranges__init(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, init_once);
	return init_ret;
}
