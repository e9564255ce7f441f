// SPDX-License-Identifier: Apache-2.0
/*
 * libtorch_cpu.so, the autograd engine's double: what xsprofd's autograd probes go on
 * (daemon/python/autograd.c), in PyTorch's shape, for a machine without a GPU. It exports
 * at::sequence_number::get_and_increment (a thread-local counter each node takes its number
 * from), torch::autograd::Engine::evaluate_function (runs one node: launches its kernel on the
 * GPU double and spins a little) and torch::autograd::Engine::execute (hands the nodes to the
 * engine's device thread, named pt_autograd_0 as PyTorch names it, and waits for it), under
 * PyTorch 1.13's mangled names. A node is laid out as PyTorch's: a vtable pointer, the weak
 * pointer of enable_shared_from_this, then its sequence number. Driven from Python through
 * ctypes (tests/workloads/torch_engine.py): xs_td_node makes a node, xs_td_backward runs them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "tests/workloads/gpu_double.h"

struct td_node {
	const void *vptr;
	void *weak[2];
	uint64_t seq;
	const char *kernel;
	uint64_t dur_ns;
};

struct td_job {
	struct td_node **nodes;
	size_t n;
	bool done;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static struct td_job *pending;
static bool started;
static const int vtable[4];

__attribute__((visibility("default"), noipa)) uint64_t
td_get_and_increment(void) __asm__("_ZN2at15sequence_number17get_and_incrementEv");
__attribute__((visibility("default"), noipa)) void
td_evaluate_function(void *engine, void *task, struct td_node *node, void *inputs, void *queue) __asm__(
	"_ZN5torch8autograd6Engine17evaluate_functionERKSt10shared_ptrINS0_9GraphTaskEEPNS0_"
	"4NodeERNS0_11InputBufferERKS3_INS0_10ReadyQueueEE");
__attribute__((visibility("default"), noipa)) void td_execute(
	void *engine, struct td_job *job, void *inputs, bool keep, bool create, bool accumulate,
	void *outputs) __asm__("_ZN5torch8autograd6Engine7executeERKSt6vectorINS0_4EdgeESaIS3_EERKS2_IN2at6TensorESaI"
			       "S9_EEbbbS7_");

static __thread uint64_t next_seq;

uint64_t td_get_and_increment(void)
{
	return next_seq++;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void td_evaluate_function(void *engine, void *task, struct td_node *node, void *inputs, void *queue)
{
	volatile uint64_t x = 0;
	uint64_t end = now_ns() + 20000;

	(void)engine, (void)task, (void)inputs, (void)queue;
	xs_double_kernel(node->kernel, node->dur_ns);
	while (now_ns() < end) /* the node's CPU work */
		x++;
}

static void *engine_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "pt_autograd_0");
	for (;;) {
		struct td_job *job;

		pthread_mutex_lock(&lock);
		while (!pending)
			pthread_cond_wait(&cond, &lock);
		job = pending;
		pending = NULL;
		pthread_mutex_unlock(&lock);
		/* Backward runs the graph from its outputs: the nodes made last first. */
		for (size_t i = job->n; i-- > 0;)
			td_evaluate_function(NULL, NULL, job->nodes[i], NULL, NULL);
		pthread_mutex_lock(&lock);
		job->done = true;
		pthread_cond_broadcast(&cond);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

void td_execute(void *engine, struct td_job *job, void *inputs, bool keep, bool create,
		bool accumulate, void *outputs)
{
	pthread_t t;

	(void)engine, (void)inputs, (void)keep, (void)create, (void)accumulate, (void)outputs;
	pthread_mutex_lock(&lock);
	if (!started && !pthread_create(&t, NULL, engine_main, NULL))
		started = true;
	pending = job;
	pthread_cond_broadcast(&cond);
	while (!job->done)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
}

/* A node whose backward launches kernel (dur_ns on the GPU double); freed by xs_td_backward. */
__attribute__((visibility("default"))) void *xs_td_node(const char *kernel, uint64_t dur_ns)
{
	struct td_node *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->vptr = vtable;
	n->seq = td_get_and_increment();
	n->kernel = kernel;
	n->dur_ns = dur_ns;
	return n;
}

/* backward() over the nodes made (n of them): run on the engine's thread, then freed. */
__attribute__((visibility("default"))) int xs_td_backward(void **nodes, size_t n)
{
	struct td_job job = {.nodes = (struct td_node **)nodes, .n = n};

	td_execute(NULL, &job, NULL, false, false, true, NULL);
	for (size_t i = 0; i < n; i++)
		free(nodes[i]);
	return 0;
}
