// SPDX-License-Identifier: Apache-2.0
/*
 * xsprof-cupti-dump: a standalone CUPTI pipe receiver for trying libxsprof_cupti.so without
 * the daemon. It serves the socket with the daemon's own server code and prints one line per
 * record as it arrives, times in CLOCK_MONOTONIC ns (the clock BPF uses).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/gpu/cupti_server.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

static const char *const copy_kinds[] = {"?",	 "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
					 "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
static const char *const sync_types[] = {"?", "event", "stream_wait_event", "stream", "context"};

static const char *str_or(const char *s, const char *dflt)
{
	return s ? s : dflt;
}

static uint64_t mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int print_one(void *ctx, const struct gpu_activity *a)
{
	FILE *out = ctx;

	switch (a->kind) {
	case GPU_ACT_KERNEL:
		fprintf(out,
			"kernel pid=%u dev=%u ctx=%u stream=%u corr=%u start=%" PRIu64
			" end=%" PRIu64 " dur=%" PRIu64 " grid=%d,%d,%d block=%d,%d,%d graph=%u"
			" node=%" PRIu64 " name=%s\n",
			a->pid, a->device, a->context, a->stream, a->correlation_id, a->start_ns,
			a->end_ns, a->end_ns - a->start_ns, a->grid[0], a->grid[1], a->grid[2],
			a->block[0], a->block[1], a->block[2], a->graph_id, a->graph_node_id,
			str_or(a->name, "?"));
		break;
	case GPU_ACT_MEMCPY:
	case GPU_ACT_MEMSET:
		fprintf(out,
			"%s pid=%u dev=%u ctx=%u stream=%u corr=%u start=%" PRIu64 " end=%" PRIu64
			" dur=%" PRIu64 " bytes=%" PRIu64 " kind=%s graph=%u\n",
			a->kind == GPU_ACT_MEMCPY ? "memcpy" : "memset", a->pid, a->device,
			a->context, a->stream, a->correlation_id, a->start_ns, a->end_ns,
			a->end_ns - a->start_ns, a->bytes,
			a->kind == GPU_ACT_MEMSET
				? "-"
				: copy_kinds[a->copy_kind < 11 ? a->copy_kind : 0],
			a->graph_id);
		break;
	case GPU_ACT_API:
		fprintf(out,
			"api pid=%u tid=%u %s cbid=%u corr=%u start=%" PRIu64 " end=%" PRIu64
			" dur=%" PRIu64 "\n",
			a->pid, a->tid, a->api_domain == 1 ? "driver" : "runtime", a->api_cbid,
			a->correlation_id, a->start_ns, a->end_ns, a->end_ns - a->start_ns);
		break;
	case GPU_ACT_SYNC:
		fprintf(out,
			"sync pid=%u ctx=%u stream=%d type=%s corr=%u start=%" PRIu64
			" end=%" PRIu64 " dur=%" PRIu64 "\n",
			a->pid, a->context, (int)a->stream,
			sync_types[a->sync_type < 5 ? a->sync_type : 0], a->correlation_id,
			a->start_ns, a->end_ns, a->end_ns - a->start_ns);
		break;
	case GPU_ACT_NVTX:
		fprintf(out,
			"nvtx pid=%u tid=%u id=%u start=%" PRIu64 " end=%" PRIu64 " dur=%" PRIu64
			" domain=%s name=%s\n",
			a->pid, a->tid, a->nvtx_id, a->start_ns, a->end_ns, a->end_ns - a->start_ns,
			str_or(a->domain, "-"), str_or(a->name, "?"));
		break;
	case GPU_ACT_GRAPH:
		fprintf(out,
			"graph pid=%u dev=%u ctx=%u stream=%u corr=%u graph=%u start=%" PRIu64
			" end=%" PRIu64 " dur=%" PRIu64 "\n",
			a->pid, a->device, a->context, a->stream, a->correlation_id, a->graph_id,
			a->start_ns, a->end_ns, a->end_ns - a->start_ns);
		break;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xsprof-cupti-dump [-s SOCKET] [-t SECONDS]\n"
		"Receive the CUPTI pipe and print one line per record.\n"
		"  -s SOCKET   socket to serve (default $XSPROF_CUPTI_SOCKET or %s)\n"
		"  -t SECONDS  exit after this long (default: on SIGINT/SIGTERM)\n"
		"example:\n"
		"  xsprof-cupti-dump -s /tmp/c.sock &\n"
		"  CUDA_INJECTION64_PATH=libxsprof_cupti.so XSPROF_CUPTI_SOCKET=/tmp/c.sock "
		"./app\n",
		XSPROF_WIRE_DEFAULT_SOCKET);
}

int main(int argc, char **argv)
{
	struct cupti_server_opts opts = {.socket_path = getenv(XSPROF_WIRE_SOCKET_ENV)};
	struct cupti_server_stats st;
	struct cupti_server *s;
	double seconds = 0;
	uint64_t deadline = 0;
	int c;

	while ((c = getopt(argc, argv, "s:t:h")) != -1) {
		switch (c) {
		case 's':
			opts.socket_path = optarg;
			break;
		case 't':
			seconds = atof(optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	s = cupti_server__new(&opts);
	if (!s) {
		fprintf(stderr, "xsprof-cupti-dump: cannot serve %s: %s\n",
			opts.socket_path ? opts.socket_path : XSPROF_WIRE_DEFAULT_SOCKET,
			strerror(errno));
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (seconds > 0)
		deadline = mono_now() + (uint64_t)(seconds * 1e9);
	printf("# xsprof-cupti-dump: times are CLOCK_MONOTONIC ns; now=%" PRIu64 "\n", mono_now());
	fflush(stdout);
	while (!stop) {
		struct pollfd p = {.fd = cupti_server__fd(s), .events = POLLIN};

		if (poll(&p, 1, 200) > 0 && cupti_server__process(s) < 0)
			break;
		gpu_store__take(cupti_server__store(s), 0, print_one, stdout);
		fflush(stdout);
		if (deadline && mono_now() > deadline)
			break;
	}
	cupti_server__stats(s, &st);
	fprintf(stderr,
		"xsprof-cupti-dump: %" PRIu64 " connections (%" PRIu64 " refused, %" PRIu64
		" malformed%s%s), %" PRIu64 " records stored, %" PRIu64
		" evicted; senders dropped %" PRIu64 " (daemon slow) + %" PRIu64 " (CUPTI)\n",
		st.accepted, st.rejected, st.malformed, st.malformed ? ": last " : "",
		st.malformed ? st.last_malformed : "", st.store.added, st.store.evicted,
		st.sender_dropped_full, st.sender_dropped_cupti);
	cupti_server__free(s);
	return 0;
}
