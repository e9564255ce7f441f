// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer harness for the CUPTI pipe parser (daemon/gpu/cupti_wire.c): the bytes are what one
 * client sent, framed as the server frames them, and whatever parses goes into a small
 * gpu_store the way the server stores it. Besides ASan/UBSan, it traps on broken invariants:
 * a parser that consumes more than it was given, a record off the 8-byte grid, times backwards.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cupti_inject/xsprof_wire.h"
#include "daemon/gpu/cupti_wire.h"
#include "daemon/gpu/gpu_records.h"

static int touch(void *ctx, const struct gpu_activity *a)
{
	size_t *sum = ctx;

	/* Reads every stored string to its end: ASan checks they are whole. */
	*sum += a->name ? strlen(a->name) : 0;
	*sum += a->domain ? strlen(a->domain) : 0;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gpu_store *store;
	struct cupti_wire_hello h;
	struct cupti_wire_item it;
	const char *why = NULL;
	size_t off = 0, sum = 0;
	long n;

	if (!store)
		store = gpu_store__new(&(struct gpu_store_opts){
			.max_records = 256, .max_bytes = 256 << 10, .max_pids = 4});
	if (size < 1)
		return 0;
	/* First byte: 0 = a whole connection (hello, then records), else records alone. */
	if (data[0] == 0) {
		n = cupti_wire__parse_hello(data + 1, size - 1, &h, &why);
		if (n <= 0)
			return 0;
		if ((size_t)n > size - 1 || h.version != XSPROF_WIRE_VERSION)
			__builtin_trap();
		off = 1 + (size_t)n;
	} else {
		off = 1;
	}
	while (off < size) {
		n = cupti_wire__parse_record(data + off, size - off, &it, &why);
		if (n < 0) {
			if (!why)
				__builtin_trap(); /* every rejection says why */
			break;
		}
		if (n == 0)
			break;
		if ((size_t)n > size - off || n % XSPROF_WIRE_ALIGN ||
		    n > (long)XSPROF_WIRE_RECORD_MAX)
			__builtin_trap();
		if (it.type != XSPROF_WIRE_STATS) {
			if (it.act.start_ns > it.act.end_ns)
				__builtin_trap();
			it.act.pid = (uint32_t)(off % 7) + 1;
			gpu_store__add(store, &it.act);
		}
		off += (size_t)n;
	}
	gpu_store__for_each(store, 0, touch, &sum);
	gpu_store__for_each_open(store, 0, touch, &sum);
	gpu_store__take(store, (uint32_t)(size % 7) + 1, touch, &sum);
	/* A sender gone: its open ranges end as ranges. */
	gpu_store__end_open(store, (uint32_t)(size % 5) + 1, size);
	return 0;
}
