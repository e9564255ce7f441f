/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Wire records (xsprof_wire.h) without CUDA: the helpers every encoder uses, and the NVTX range
 * record the NVTX and ITT collectors (ranges.c) and the CUPTI encoder (encode.c) send.
 */
#ifndef XSPROF_CUPTI_INJECT_WIRE_ENCODE_H
#define XSPROF_CUPTI_INJECT_WIRE_ENCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes of s on the wire, its NUL included (0 for NULL); past XSPROF_WIRE_NAME_MAX, cut and
 * *truncated set. */
uint32_t wire__string_len(const char *s, bool *truncated);
/* len bytes of s (len includes the NUL; s may be cut, so terminated explicitly). */
void wire__put_string(uint8_t *dst, const char *s, uint32_t len);
/* The record's header in out, the whole record zeroed first (padding and reserved fields go
 * out as zeros); NULL when fixed + strings, aligned, is more than cap. */
void *wire__start_record(void *out, size_t cap, uint16_t type, size_t fixed, uint32_t strings,
			 uint32_t *ret_len);

/*
 * One NVTX range [start, end] (a mark: start == end, XSPROF_WIRE_F_INSTANT) of thread tid, as
 * the wire record; names longer than XSPROF_WIRE_NAME_MAX are cut and flagged. Bytes written,
 * or -ENOSPC. What the NVTX and ITT collectors send, and the CUPTI markers once paired.
 */
long cupti_encode__nvtx(void *out, size_t cap, uint64_t start, uint64_t end, uint32_t id,
			uint32_t tid, const char *name, const char *domain, uint16_t flags);

#endif
