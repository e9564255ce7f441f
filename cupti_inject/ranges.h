/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Ranges an application marks, sent to xsprofd as XSPROF_WIRE_NVTX records: what the NVTX
 * injection (nvtx.c) and the ITT collector (itt.c) share. No CUDA, no NVTX or ITT types:
 * domains are interned names, a range's name is made by the caller's function (only while a
 * daemon listens: otherwise a push only counts its depth and takes no time stamp).
 *
 * Push/pop ranges nest per thread and domain (a pop ends the innermost of its domain); start/end
 * ranges may end on another thread. While a daemon listens, a push or a start also sends the
 * range's opening (XSPROF_WIRE_F_OPEN). Bounded: 64 open push/pop ranges a thread (deeper ones
 * counted), names cut at RANGES_NAME_MAX - 1 bytes, 128 domains, 4096 registered strings, 4096
 * open start/end ranges; what a cap refuses is counted as the sender's drops
 * (inject__count_nvtx_drops). The connection is the library's (inject.h).
 */
#ifndef XSPROF_CUPTI_INJECT_RANGES_H
#define XSPROF_CUPTI_INJECT_RANGES_H

#include <stdbool.h>
#include <stdint.h>

#define RANGES_NAME_MAX 120

/* Writes the name of src into dst: at most RANGES_NAME_MAX - 1 bytes and a NUL. */
typedef void (*ranges_name_fn)(char *dst, const void *src);

/* A C string as a name (NULL: ""). */
void ranges__copy_name(char *dst, const void *s);

/* The push/pop key, thread-local storage and fork hook; connects, and closes the exiting
 * thread's ranges at exit. 0, or -1 when the key cannot be made. */
int ranges__init(void);
/* Whether a daemon took the last flush. */
bool ranges__sending(void);

/* The depth before the push (as NVTX returns it), -1 when nothing could be kept. */
int ranges__push(const char *domain, ranges_name_fn name, const void *src);
/* The depth after the pop, -1 when the thread had no range of that domain open. */
int ranges__pop(const char *domain);
/* The range's id, for ranges__end (never 0). */
uint64_t ranges__start(const char *domain, ranges_name_fn name, const void *src);
void ranges__end(uint64_t id);
/* An instant. */
void ranges__mark(const char *domain, ranges_name_fn name, const void *src);

/* The interned copy of a domain's name; past the cap, one shared overflow domain (counted). */
const char *ranges__domain(const char *name);
/* A copy kept for the process's life, or NULL past the cap (counted). */
const char *ranges__string(const char *s);

#endif
