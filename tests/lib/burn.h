/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the tests that record themselves share: burn_while_looping, a thread that burns CPU in
 * burn_loop while an event loop (and the recording on it) runs. burn_loop sits alone in section
 * xs_burn, so that the linker's __start_xs_burn and __stop_xs_burn bound its code. One file of
 * a test binary includes this.
 */
#ifndef XSPROF_TESTS_BURN_H
#define XSPROF_TESTS_BURN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <systemd/sd-event.h>

static atomic_bool burn_stop;

__attribute__((noinline, section("xs_burn"))) void burn_loop(void)
{
	volatile uint64_t x = 0;

	while (!atomic_load_explicit(&burn_stop, memory_order_relaxed))
		x = x * 31 + 7;
}
extern const char __start_xs_burn[], __stop_xs_burn[];

static void *burner(void *arg)
{
	burn_loop();
	return NULL;
}

static int burn_end(sd_event_source *src, uint64_t usec, void *ctx)
{
	return sd_event_exit(sd_event_source_get_event(src), 0);
}

/* Runs ev's loop for ms while a thread burns CPU in burn_loop. 0 or a negative errno. */
static int burn_while_looping(sd_event *ev, unsigned int ms)
{
	pthread_t t;
	int err;

	atomic_store(&burn_stop, false);
	err = -pthread_create(&t, NULL, burner, NULL);
	if (err)
		return err;
	err = sd_event_add_time_relative(ev, NULL, CLOCK_MONOTONIC, ms * 1000ull, 0, burn_end,
					 NULL);
	if (err >= 0)
		err = sd_event_loop(ev);
	atomic_store(&burn_stop, true);
	pthread_join(t, NULL);
	return err < 0 ? err : 0;
}

#endif
