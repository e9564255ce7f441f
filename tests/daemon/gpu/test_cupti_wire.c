// SPDX-License-Identifier: Apache-2.0
/* The CUPTI pipe parser: every record type round-trips, every malformation is named. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/gpu/cupti_wire.h"
#include "tests/lib/cupti_wire_build.h"

static uint8_t buf[XSPROF_WIRE_RECORD_MAX + 64];

static long parse(size_t len, struct cupti_wire_item *it, const char **why)
{
	*why = NULL;
	return cupti_wire__parse_record(buf, len, it, why);
}

Test(cupti_wire, hello_valid_and_partial)
{
	struct cupti_wire_hello h = {0};
	const char *why = NULL;
	size_t n = wb_hello(buf, 4242);

	cr_assert_eq(cupti_wire__parse_hello(buf, n, &h, &why), (long)n);
	cr_assert_eq(h.pid, 4242);
	cr_assert_eq(h.clock_id, CLOCK_MONOTONIC);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(cupti_wire__parse_hello(buf, i, &h, &why), 0, "prefix %zu", i);
}

Test(cupti_wire, hello_rejected_early)
{
	struct cupti_wire_hello h = {.pid = 1};
	struct xsprof_wire_hello raw;
	const char *why = NULL;

	wb_hello(buf, 1);
	buf[0] ^= 0xff; /* wrong magic: known after 4 bytes, no need to wait for 24 */
	cr_assert_eq(cupti_wire__parse_hello(buf, 4, &h, &why), -EPROTO);
	cr_assert(why && strstr(why, "magic"));
	cr_assert_eq(h.pid, 1, "untouched on failure");

	wb_hello(buf, 1);
	memcpy(&raw, buf, sizeof(raw));
	raw.version = XSPROF_WIRE_VERSION + 1;
	memcpy(buf, &raw, sizeof(raw));
	cr_assert_eq(cupti_wire__parse_hello(buf, 6, &h, &why), -EPROTO);
	cr_assert(strstr(why, "version"));

	wb_hello(buf, 1);
	memcpy(&raw, buf, sizeof(raw));
	raw.length = 32;
	memcpy(buf, &raw, sizeof(raw));
	cr_assert_eq(cupti_wire__parse_hello(buf, sizeof(raw), &h, &why), -EPROTO);

	wb_hello(buf, 1);
	memcpy(&raw, buf, sizeof(raw));
	raw.clock_id = 4; /* CLOCK_MONOTONIC_RAW: not something we convert */
	memcpy(buf, &raw, sizeof(raw));
	cr_assert_eq(cupti_wire__parse_hello(buf, sizeof(raw), &h, &why), -EPROTO);

	wb_hello(buf, 1);
	memcpy(&raw, buf, sizeof(raw));
	raw.policy = XSPROF_WIRE_POLICY_END; /* a policy this daemon does not know */
	memcpy(buf, &raw, sizeof(raw));
	cr_assert_eq(cupti_wire__parse_hello(buf, sizeof(raw), &h, &why), -EPROTO);
	cr_assert(strstr(why, "policy"));
}

Test(cupti_wire, hello_says_the_senders_policy)
{
	struct cupti_wire_hello h = {0};
	struct xsprof_wire_hello raw;
	const char *why = NULL;

	for (uint32_t p = XSPROF_WIRE_POLICY_UNSAID; p < XSPROF_WIRE_POLICY_END; p++) {
		wb_hello(buf, 7);
		memcpy(&raw, buf, sizeof(raw));
		raw.policy = p;
		memcpy(buf, &raw, sizeof(raw));
		cr_assert_eq(cupti_wire__parse_hello(buf, sizeof(raw), &h, &why),
			     (long)sizeof(raw));
		cr_assert_eq(h.policy, p);
	}
}

Test(cupti_wire, kernel_round_trip)
{
	struct cupti_wire_item it;
	const char *why;
	size_t n = wb_kernel(buf, "_Z6vecAddPfS_S_i", 100, 250, 42);

	cr_assert_eq(n % 8, 0);
	cr_assert_eq(parse(n, &it, &why), (long)n);
	cr_assert_eq(it.type, XSPROF_WIRE_KERNEL);
	cr_assert_eq(it.act.kind, GPU_ACT_KERNEL);
	cr_assert_str_eq(it.act.name, "_Z6vecAddPfS_S_i");
	cr_assert_eq(it.act.start_ns, 100);
	cr_assert_eq(it.act.end_ns, 250);
	cr_assert_eq(it.act.correlation_id, 42);
	cr_assert_eq(it.act.stream, 7);
	cr_assert_eq(it.act.grid[0], 4);
	cr_assert_eq(it.act.block[0], 256);
	cr_assert_eq(it.act.pid, 0, "pid is the server's to fill in");
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(parse(i, &it, &why), 0, "prefix %zu needs more", i);

	n = wb_kernel(buf, NULL, 0, 0, 1); /* no name, unmeasured times */
	cr_assert_eq(parse(n, &it, &why), (long)n);
	cr_assert_null(it.act.name);
}

Test(cupti_wire, every_type_round_trips)
{
	struct cupti_wire_item it;
	const char *why;
	size_t n;

	n = wb_memcpy(buf, XSPROF_COPY_HTOD, 4096, 10, 20, 3);
	cr_assert_eq(parse(n, &it, &why), (long)n);
	cr_assert_eq(it.act.kind, GPU_ACT_MEMCPY);
	cr_assert_eq(it.act.bytes, 4096);
	cr_assert_eq(it.act.copy_kind, XSPROF_COPY_HTOD);
	cr_assert_eq(it.act.flags, XSPROF_WIRE_F_ASYNC);

	n = wb_memset(buf, 512, 10, 11);
	cr_assert_eq(parse(n, &it, &why), (long)n);
	cr_assert_eq(it.act.kind, GPU_ACT_MEMSET);
	cr_assert_eq(it.act.src_kind, XSPROF_MEM_DEVICE);

	n = wb_api(buf, XSPROF_API_RUNTIME, 211, 1234, 5, 9, 42);
	cr_assert_eq(parse(n, &it, &why), (long)n);
	cr_assert_eq(it.act.kind, GPU_ACT_API);
	cr_assert_eq(it.act.api_cbid, 211);
	cr_assert_eq(it.act.api_domain, XSPROF_API_RUNTIME);
	cr_assert_eq(it.act.tid, 1234);

	n = wb_sync(buf, XSPROF_SYNC_STREAM, 1, 2);
	cr_assert_eq(parse(n, &it, &why), (long)n);
	cr_assert_eq(it.act.kind, GPU_ACT_SYNC);
	cr_assert_eq(it.act.sync_type, XSPROF_SYNC_STREAM);

	n = wb_nvtx(buf, "step", "train", 1, 2, 0);
	cr_assert_eq(parse(n, &it, &why), (long)n);
	cr_assert_eq(it.act.kind, GPU_ACT_NVTX);
	cr_assert_str_eq(it.act.name, "step");
	cr_assert_str_eq(it.act.domain, "train");

	n = wb_nvtx(buf, "mark", NULL, 3, 3, XSPROF_WIRE_F_INSTANT);
	cr_assert_eq(parse(n, &it, &why), (long)n);
	cr_assert_null(it.act.domain);

	/* A range's opening: its start only, flagged. */
	n = wb_nvtx(buf, "epoch", "train", 4, 4, XSPROF_WIRE_F_OPEN);
	cr_assert_eq(parse(n, &it, &why), (long)n);
	cr_assert_eq(it.act.kind, GPU_ACT_NVTX);
	cr_assert_eq(it.act.flags, XSPROF_WIRE_F_OPEN);
	cr_assert_eq(it.act.start_ns, 4);
	cr_assert_str_eq(it.act.name, "epoch");

	n = wb_graph(buf, 9, 1, 2);
	cr_assert_eq(parse(n, &it, &why), (long)n);
	cr_assert_eq(it.act.kind, GPU_ACT_GRAPH);
	cr_assert_eq(it.act.graph_id, 9);

	n = wb_stats(buf, 3, 4);
	cr_assert_eq(parse(n, &it, &why), (long)n);
	cr_assert_eq(it.type, XSPROF_WIRE_STATS);
	cr_assert_eq(it.dropped_full, 3);
	cr_assert_eq(it.dropped_cupti, 4);
}

static void expect_bad(size_t n, long err, const char *why_part)
{
	struct cupti_wire_item it = {.type = 0xbeef};
	const char *why;

	cr_assert_eq(parse(n, &it, &why), err, "expected %ld (%s)", err, why_part);
	cr_assert(why && strstr(why, why_part), "why: %s", why ? why : "(null)");
	cr_assert_eq(it.type, 0xbeef, "item untouched on failure");
}

static struct xsprof_wire_hdr *hdr(void)
{
	return (struct xsprof_wire_hdr *)buf;
}

Test(cupti_wire, framing_lies)
{
	size_t n = wb_kernel(buf, "k", 1, 2, 1);

	hdr()->length = 1u << 30; /* oversized: refused at once, not waited for */
	expect_bad(8, -EMSGSIZE, "length");
	hdr()->length = 4;
	expect_bad(8, -EBADMSG, "length");
	hdr()->length = (uint32_t)n + 3;
	expect_bad(8, -EBADMSG, "length");
	hdr()->length = (uint32_t)n + 8; /* a multiple of 8, but not what the name needs */
	expect_bad(n + 8, -EBADMSG, "length");
	hdr()->length = (uint32_t)n;
	hdr()->type = 0;
	expect_bad(8, -EBADMSG, "type");
	hdr()->type = XSPROF_WIRE_TYPE_END;
	expect_bad(8, -EBADMSG, "type");
	hdr()->type = XSPROF_WIRE_KERNEL;
	hdr()->version = 2;
	expect_bad(8, -EBADMSG, "version");

	n = wb_memcpy(buf, XSPROF_COPY_HTOD, 1, 1, 2, 1);
	hdr()->length = (uint32_t)n + 8; /* fixed-size record with a length that lies */
	expect_bad(n + 8, -EBADMSG, "length");
}

Test(cupti_wire, bad_strings)
{
	struct xsprof_wire_kernel k;
	size_t n = wb_kernel(buf, "abcdef", 1, 2, 1);

	buf[sizeof(k) + 6] = 'x'; /* NUL overwritten: unterminated */
	expect_bad(n, -EBADMSG, "terminated");

	n = wb_kernel(buf, "abcdef", 1, 2, 1);
	buf[sizeof(k) + 2] = '\0'; /* a NUL inside: the stated length lies */
	expect_bad(n, -EBADMSG, "terminated");

	n = wb_kernel(buf, "abcdef", 1, 2, 1);
	buf[n - 1] = 1; /* non-zero padding */
	expect_bad(n, -EBADMSG, "length");

	n = wb_kernel(buf, "abcdef", 1, 2, 1);
	memcpy(&k, buf, sizeof(k));
	k.name_len = XSPROF_WIRE_NAME_MAX + 8;
	memcpy(buf, &k, sizeof(k));
	expect_bad(n, -EBADMSG, "name");

	n = wb_nvtx(buf, "n", "dom", 1, 2, 0);
	buf[sizeof(struct xsprof_wire_nvtx) + 2 + 3] = 'z'; /* the domain's NUL */
	expect_bad(n, -EBADMSG, "domain");
}

Test(cupti_wire, bad_fields)
{
	struct xsprof_wire_kernel k;
	struct xsprof_wire_api a;
	size_t n;

	n = wb_kernel(buf, "k", 200, 100, 1);
	expect_bad(n, -EBADMSG, "end before start");
	n = wb_memcpy(buf, 99, 1, 1, 2, 1);
	expect_bad(n, -EBADMSG, "copy kind");
	n = wb_memcpy(buf, XSPROF_COPY_DTOH, XSPROF_WIRE_MAX_BYTES + 1, 1, 2, 1);
	expect_bad(n, -EBADMSG, "size");
	n = wb_memset(buf, 1, 5, 4);
	expect_bad(n, -EBADMSG, "end before start");
	n = wb_api(buf, 3, 211, 1, 1, 2, 1);
	expect_bad(n, -EBADMSG, "domain");
	n = wb_api(buf, XSPROF_API_DRIVER, 0x10000, 1, 1, 2, 1);
	expect_bad(n, -EBADMSG, "cbid");
	n = wb_api(buf, XSPROF_API_DRIVER, 1, 1, 1, 2, 1);
	memcpy(&a, buf, sizeof(a));
	a.reserved[3] = 1;
	memcpy(buf, &a, sizeof(a));
	expect_bad(n, -EBADMSG, "reserved");
	n = wb_sync(buf, 17, 1, 2);
	expect_bad(n, -EBADMSG, "type");
	n = wb_nvtx(buf, "m", NULL, 1, 2, XSPROF_WIRE_F_INSTANT);
	expect_bad(n, -EBADMSG, "mark");
	n = wb_nvtx(buf, "m", NULL, 1, 2, 0x100);
	expect_bad(n, -EBADMSG, "flags");
	n = wb_nvtx(buf, "o", NULL, 1, 2, XSPROF_WIRE_F_OPEN);
	expect_bad(n, -EBADMSG, "opening with a length");
	n = wb_nvtx(buf, "o", NULL, 1, 1, XSPROF_WIRE_F_OPEN | XSPROF_WIRE_F_INSTANT);
	expect_bad(n, -EBADMSG, "mark cannot be open");
	n = wb_graph(buf, 1, 9, 8);
	expect_bad(n, -EBADMSG, "end before start");

	n = wb_kernel(buf, "k", 1, 2, 1);
	memcpy(&k, buf, sizeof(k));
	k.block[1] = 4096;
	memcpy(buf, &k, sizeof(k));
	expect_bad(n, -EBADMSG, "block");
	k.block[1] = 1;
	k.grid[2] = -1;
	memcpy(buf, &k, sizeof(k));
	expect_bad(n, -EBADMSG, "grid");
}

Test(cupti_wire, records_back_to_back)
{
	uint8_t *stream = malloc(4 * XSPROF_WIRE_RECORD_MAX);
	struct cupti_wire_item it;
	const char *why;
	size_t len = 0, off = 0;
	int count = 0;
	long n;

	len += wb_kernel(stream + len, "a", 1, 2, 1);
	len += wb_api(stream + len, XSPROF_API_DRIVER, 307, 1, 1, 2, 1);
	len += wb_nvtx(stream + len, "range", NULL, 1, 5, 0);
	len += wb_kernel(stream + len, "b", 3, 4, 2);
	while ((n = cupti_wire__parse_record(stream + off, len - off, &it, &why)) > 0) {
		off += (size_t)n;
		count++;
	}
	cr_assert_eq(n, 0);
	cr_assert_eq(off, len);
	cr_assert_eq(count, 4);
	free(stream);
}
