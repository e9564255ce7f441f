/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the two halves of libxsprof_cupti.so share: CUPTI's (inject.c, loaded by CUDA) and
 * NVTX's (nvtx.c, loaded by the NVTX library): one connection to xsprofd and its lock.
 */
#ifndef XSPROF_CUPTI_INJECT_INJECT_H
#define XSPROF_CUPTI_INJECT_INJECT_H

#include <stdbool.h>
#include <stdint.h>

struct cupti_transport;

void inject__lock(void);
void inject__unlock(void);

/*
 * With the lock held: the connection to xsprofd, made at the first call (CLOCK_MONOTONIC
 * times, the socket of $XSPROF_CUPTI_SOCKET or the default); NULL when it cannot be (out of
 * memory, XSPROF_CUPTI_DISABLE). Flushed once more at process exit.
 */
struct cupti_transport *inject__transport_locked(void);

/* NVTX events not sent for a cap of this library (counted with the sender's drops). */
void inject__count_nvtx_drops(uint64_t n);

/* $XSPROF_CUPTI_VERBOSE: say more on stderr. */
bool inject__verbose(void);

/* stderr, once per cause: "xsprof-cupti[PID]: ..." */
void inject__say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
