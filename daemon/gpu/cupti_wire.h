/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CUPTI pipe parser (format: cupti_inject/xsprof_wire.h). Pure functions over bytes, no I/O,
 * no allocation: what a profiled process sends is untrusted, so every length, enum, string
 * and time is checked here, and this is what the fuzzer exercises.
 */
#ifndef XSPROF_DAEMON_GPU_CUPTI_WIRE_H
#define XSPROF_DAEMON_GPU_CUPTI_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/gpu/gpu_records.h"

struct cupti_wire_hello {
	uint16_t version;
	uint32_t pid; /* as the sender claims it: informational only */
	uint32_t clock_id;
	uint32_t cupti_version;
	uint32_t policy; /* enum xsprof_wire_policy */
};

struct cupti_wire_item {
	uint16_t type; /* enum xsprof_wire_type */
	/*
	 * Every type but XSPROF_WIRE_STATS: the record, with pid 0 and times as sent. name and
	 * domain point into the parsed buffer and live only as long as it.
	 */
	struct gpu_activity act;
	/* XSPROF_WIRE_STATS: the sender's cumulative counters. */
	uint64_t dropped_full;
	uint64_t dropped_cupti;
	uint64_t dropped_other;
	uint64_t connects;
};

/*
 * Each parser returns the bytes it consumed (> 0) and fills *ret; 0 when buf holds only the
 * start of a valid-looking hello or record (read more); or, with *ret untouched and *ret_why
 * (when not NULL) set to a static description:
 *   -EPROTO   hello with a wrong magic, version or length
 *   -EMSGSIZE record length over XSPROF_WIRE_RECORD_MAX
 *   -EBADMSG  anything else malformed (type, version, length, enum, string, time, padding)
 * Errors are reported as soon as the bytes at hand prove them, without waiting for the rest.
 */
long cupti_wire__parse_hello(const void *buf, size_t len, struct cupti_wire_hello *ret,
			     const char **ret_why);
long cupti_wire__parse_record(const void *buf, size_t len, struct cupti_wire_item *ret,
			      const char **ret_why);

#endif
