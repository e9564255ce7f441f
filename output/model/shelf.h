/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Big arrays kept mapped between the slice builds that fill them. The daemon maps every buffer
 * of 128 KiB and more afresh (daemon/main.c: the heap would otherwise keep its peaks), so a
 * slice of 65,536 GPU records faulted its 5.5 MiB join array, and the GPU report its work
 * arrays, in page by page, slice after slice of a flood: a quarter of the service's CPU per
 * record. A build takes its arrays from the shelf and puts them back; the service clears the
 * shelf when a slice closes on its own time (no flood), so what a flood leaves there is back
 * with the system within a slice. New buffers are a power of two in size, so that the next
 * slice's, a little larger, fits one. At most SHELF_SLOTS buffers and SHELF_MAX_BYTES in all;
 * thread-safe.
 */
#ifndef XSPROF_OUTPUT_SHELF_H
#define XSPROF_OUTPUT_SHELF_H

#include <stddef.h>

#define SHELF_SLOTS	8
#define SHELF_MIN_BYTES (256u << 10) /* smaller ones come from the heap, kept by malloc */
#define SHELF_MAX_BYTES (32u << 20)

/* At least need bytes, not cleared: the smallest shelved buffer that holds them, else a new
 * one (need bytes, or from SHELF_MIN_BYTES on the next power of two); *ret_bytes: its size.
 * NULL (errno ENOMEM) when none can be had. */
void *shelf__take(size_t need, size_t *ret_bytes);

/* A buffer of bytes bytes from shelf__take or malloc: shelved when big enough and there is
 * room, else freed. NULL is ignored. */
void shelf__put(void *p, size_t bytes);

/* Every shelved buffer freed. */
void shelf__clear(void);

/* Bytes shelved now. */
size_t shelf__bytes(void);

#endif
