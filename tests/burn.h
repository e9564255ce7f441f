/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the tests that record themselves share: a thread that burns CPU in burn_loop until
 * burn_stop is set, and a timer callback that ends the event loop. burn_loop sits alone in
 * section xs_burn, so that the linker's __start_xs_burn and __stop_xs_burn bound its code.
 * One file of a test binary includes this.
 */
#ifndef XSPROF_TESTS_BURN_H
#define XSPROF_TESTS_BURN_H

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

#endif
