// SPDX-License-Identifier: Apache-2.0
/*
 * libxsprof_itt.so's connection to xsprofd (inject.h, as inject.c is libxsprof_cupti.so's):
 * made at the first range, on the CUPTI pipe's socket ($XSPROF_CUPTI_SOCKET or the default),
 * CLOCK_MONOTONIC times, policy "ranges"; flushed once more at exit (up to
 * $XSPROF_CUPTI_EXIT_LINGER_MS, default 200 ms); a forked child starts afresh. No CUDA.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cupti_inject/env.h"
#include "cupti_inject/inject.h"
#include "cupti_inject/transport.h"
#include "cupti_inject/xsprof_wire.h"

static struct {
	pthread_mutex_t lock;
	struct cupti_transport *tr;
	bool tried, hooks, verbose;
	unsigned linger_ms;
	atomic_uint_fast64_t drops;
} g = {.lock = PTHREAD_MUTEX_INITIALIZER};

void inject__say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	env_vsay("xsprof-itt", fmt, ap);
	va_end(ap);
}

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
	atomic_fetch_add(&g.drops, n);
}

static void at_exit(void)
{
	struct cupti_transport_stats ts;

	pthread_mutex_lock(&g.lock);
	if (!g.tr) {
		pthread_mutex_unlock(&g.lock);
		return;
	}
	cupti_transport__set_drops(g.tr, 0, atomic_load(&g.drops));
	cupti_transport__flush(g.tr, (int)g.linger_ms);
	cupti_transport__stats(g.tr, &ts);
	pthread_mutex_unlock(&g.lock);
	/* A daemon that never ran is a choice, not a fault: only a lossy session is reported. */
	if (g.verbose || (ts.connects && ts.dropped_full))
		inject__say("sent %llu range records, dropped %llu (daemon absent or slow) and "
			    "%llu (caps), %zu bytes unsent",
			    (unsigned long long)ts.sent, (unsigned long long)ts.dropped_full,
			    (unsigned long long)atomic_load(&g.drops), ts.buffered);
}

static void fork_prepare(void)
{
	pthread_mutex_lock(&g.lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&g.lock);
}

static void fork_child(void)
{
	/* The parent's queued records and connection are not the child's to send. */
	if (g.tr)
		cupti_transport__after_fork(g.tr, (uint32_t)getpid());
	atomic_store(&g.drops, 0);
	pthread_mutex_unlock(&g.lock);
}

struct cupti_transport *inject__transport_locked(void)
{
	const char *sock;
	struct cupti_transport_opts opts = {0};

	if (g.tr || g.tried)
		return g.tr;
	g.tried = true;
	g.verbose = env_true("XSPROF_ITT_VERBOSE") || env_true("XSPROF_CUPTI_VERBOSE");
	if (env_true("XSPROF_ITT_DISABLE"))
		return NULL;
	g.linger_ms = env_uint("XSPROF_CUPTI_EXIT_LINGER_MS", 200, 0, 10000);
	sock = getenv(XSPROF_WIRE_SOCKET_ENV);
	opts.socket_path = sock && *sock ? sock : XSPROF_WIRE_DEFAULT_SOCKET;
	opts.reconnect_ms = 1000;
	opts.clock_id = CLOCK_MONOTONIC;
	opts.policy = XSPROF_WIRE_POLICY_RANGES;
	g.tr = cupti_transport__new(&opts);
	if (!g.tr) {
		inject__say("cannot set up (%s, socket %s); no ITT range is sent to xsprofd",
			    strerror(errno ? errno : ENOMEM), opts.socket_path);
		return NULL;
	}
	if (!g.hooks) {
		pthread_atfork(fork_prepare, fork_parent, fork_child);
		atexit(at_exit);
		g.hooks = true;
	}
	return g.tr;
}
