/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CUPTI activity records -> CUPTI pipe records (xsprof_wire.h). Uses CUPTI's types but calls
 * no CUPTI function, so tests build real CUPTI structs and encode them without a GPU.
 * Written against the CUDA 13 record versions (CUpti_ActivityKernel10, Memcpy6, ...).
 * Not thread-safe (NVTX pairing state): the injection library calls it under its lock.
 */
#ifndef XSPROF_CUPTI_INJECT_ENCODE_H
#define XSPROF_CUPTI_INJECT_ENCODE_H

#include <stddef.h>
#include <stdint.h>
#include <cupti_activity.h>

#include "cupti_inject/wire_encode.h"

struct cupti_encoder;

struct cupti_encoder_stats {
	uint64_t encoded;	/* wire records produced */
	uint64_t skipped_kind;	/* activity kinds we do not forward */
	uint64_t bad_time;	/* records with end < start, not forwarded */
	uint64_t nvtx_unpaired; /* range ends whose start we never saw */
	uint64_t nvtx_overflow; /* range starts refused: too many ranges open at once */
	uint64_t open_ranges;	/* NVTX ranges open now */
	uint64_t kernels;	/* activity records CUPTI handed over, by kind: kernels, */
	uint64_t copies;	/* memcpy (peer copies too) */
	uint64_t memsets;	/* and memset records, forwarded or not */
};

/* max_open_ranges caps NVTX ranges held for pairing (0 = 1024). */
struct cupti_encoder *cupti_encoder__new(unsigned max_open_ranges);
void cupti_encoder__free(struct cupti_encoder *e);

/*
 * Encode one activity record into out[0..cap). Returns the wire bytes written, 0 when it
 * produces no wire record (a range start held for pairing, a kind not forwarded, bad
 * timestamps), -ENOSPC when cap is below XSPROF_WIRE_RECORD_MAX and the record does not fit.
 */
long cupti_encoder__encode(struct cupti_encoder *e, const CUpti_Activity *rec, void *out,
			   size_t cap);

void cupti_encoder__stats(const struct cupti_encoder *e, struct cupti_encoder_stats *ret);

#endif
