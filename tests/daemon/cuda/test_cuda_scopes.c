// SPDX-License-Identifier: Apache-2.0
/* xsprof scopes from their probe records to ranges (daemon/cuda/cuda_scopes.c): pairing per
 * thread and name, the caps, and names read once per address. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bpf/xsprof_events.h"
#include "daemon/cuda/cuda_scopes.h"
#include "daemon/cuda/launch_store.h"

static int reads;

/* Address 0x1000 + k names "scope k"; 0xdead cannot be read. */
static int fake_read(uint32_t tgid, uint64_t addr, char *buf, size_t size)
{
	(void)tgid;
	reads++;
	if (addr == 0xdead)
		return -EFAULT;
	snprintf(buf, size, "scope %llu", (unsigned long long)(addr - 0x1000));
	return 0;
}

static struct cuda_scopes *sc;
static struct launch_store *ls;

static void setup(void)
{
	sc = cuda_scopes__new();
	ls = launch_store__new(0, 0);
	cr_assert(sc && ls);
	cuda_scopes__set_reader(sc, fake_read);
	reads = 0;
}

static void teardown(void)
{
	cuda_scopes__free(sc);
	launch_store__free(ls);
}

static void rec(uint32_t tid, int end, uint64_t t, uint64_t name)
{
	struct xsprof_scope r = {.type = XSPROF_REC_SCOPE,
				 .tgid = 7,
				 .tid = tid,
				 .end = end,
				 .time_ns = t,
				 .name = name};

	cr_assert_eq(cuda_scopes__add(sc, ls, &r, sizeof(r)), 0);
}

static const struct launch_range *range(size_t i)
{
	cr_assert_lt(i, launch_store__nr_ranges(ls));
	return &launch_store__ranges(ls)[i];
}

TestSuite(cuda_scopes, .init = setup, .fini = teardown);

Test(cuda_scopes, nested_scopes_become_ranges_with_their_names)
{
	rec(1, 0, 100, 0x1001);
	rec(1, 0, 110, 0x1002);
	rec(1, 1, 150, 0x1002);
	rec(1, 0, 160, 0x1002);
	rec(1, 1, 170, 0x1002);
	rec(1, 1, 200, 0x1001);
	cr_assert_eq(launch_store__nr_ranges(ls), 3);
	cr_expect_str_eq(range(0)->name, "scope 2");
	cr_expect_eq(range(0)->start_ns, 110);
	cr_expect_eq(range(0)->end_ns, 150);
	cr_expect_str_eq(range(2)->name, "scope 1");
	cr_expect_eq(range(2)->start_ns, 100);
	cr_expect_eq(range(2)->end_ns, 200);
	cr_expect_eq(range(2)->tgid, 7);
	cr_expect_eq(range(2)->tid, 1);
	cr_expect_eq(reads, 2, "a name is read once per address");
}

Test(cuda_scopes, threads_keep_their_own_stacks_and_ends_close_their_name)
{
	struct cuda_scopes_stats st;

	rec(1, 0, 100, 0x1001);
	rec(2, 0, 105, 0x1001);
	rec(1, 0, 110, 0x1002);
	/* scope 1 ends before scope 2 on thread 1: each end closes its own name. */
	rec(1, 1, 120, 0x1001);
	rec(2, 1, 130, 0x1001);
	rec(1, 1, 140, 0x1002);
	rec(3, 1, 150, 0x1003); /* never begun */
	cr_assert_eq(launch_store__nr_ranges(ls), 3);
	cr_expect_eq(range(0)->tid, 1);
	cr_expect_eq(range(0)->start_ns, 100);
	cr_expect_eq(range(1)->tid, 2);
	cr_expect_eq(range(1)->start_ns, 105);
	cr_expect_str_eq(range(2)->name, "scope 2");
	cuda_scopes__stats(sc, &st);
	cr_expect_eq(st.begins, 3);
	cr_expect_eq(st.ends, 4);
	cr_expect_eq(st.ranges, 3);
	cr_expect_eq(st.unpaired_ends, 1);
	cr_expect_eq(st.open, 0);
}

Test(cuda_scopes, depth_cap_and_unreadable_names_are_counted)
{
	struct cuda_scopes_stats st;

	for (int i = 0; i < 70; i++)
		rec(1, 0, 100 + i, 0x1001);
	for (int i = 0; i < 70; i++)
		rec(1, 1, 300 + i, 0x1001);
	rec(1, 0, 400, 0xdead);
	rec(1, 1, 410, 0xdead);
	cuda_scopes__stats(sc, &st);
	cr_expect_eq(st.too_deep, 6);
	cr_expect_eq(st.ranges, 65);
	cr_expect_eq(st.names_unread, 1);
	cr_expect_str_eq(range(64)->name, CUDA_SCOPES_UNREAD);
	cr_expect_eq(st.open, 0);
}

Test(cuda_scopes, malformed_records_are_refused)
{
	struct xsprof_scope r = {.type = XSPROF_REC_SCOPE, .end = 2};

	cr_expect_eq(cuda_scopes__add(sc, ls, &r, sizeof(r)), -EBADMSG);
	r.end = 0;
	cr_expect_eq(cuda_scopes__add(sc, ls, &r, sizeof(r) - 1), -EBADMSG);
	r.type = XSPROF_REC_SAMPLE;
	cr_expect_eq(cuda_scopes__add(sc, ls, &r, sizeof(r)), -EBADMSG);
}

static void rec_of(uint32_t tgid, uint32_t tid, int end, uint64_t t, uint64_t name)
{
	struct xsprof_scope r = {.type = XSPROF_REC_SCOPE,
				 .tgid = tgid,
				 .tid = tid,
				 .end = end,
				 .time_ns = t,
				 .name = name};

	cr_assert_eq(cuda_scopes__add(sc, ls, &r, sizeof(r)), 0);
}

Test(cuda_scopes, open_scopes_end_at_their_exit_then_at_the_end)
{
	struct cuda_scopes_stats st;

	rec_of(7, 1, 0, 100, 0x1001);
	rec_of(7, 1, 0, 110, 0x1002);
	rec_of(7, 2, 0, 120, 0x1003);
	rec_of(8, 8, 0, 130, 0x1004);
	/* Process 7 exits at 300 inside three scopes of two threads; 8 runs on. */
	cuda_scopes__end_open(sc, ls, 7, 300);
	cr_assert_eq(launch_store__nr_ranges(ls), 3);
	for (size_t i = 0; i < 3; i++) {
		cr_expect_eq(range(i)->tgid, 7);
		cr_expect_eq(range(i)->end_ns, 300);
	}
	/* Innermost first on a thread, as their ends would have come. */
	for (size_t i = 0; i < 2; i++)
		if (range(i)->tid == 1 && range(i + 1)->tid == 1) {
			cr_expect_str_eq(range(i)->name, "scope 2");
			cr_expect_str_eq(range(i + 1)->name, "scope 1");
		}
	/* An end of 7's after its exit pairs with nothing. */
	rec_of(7, 1, 1, 310, 0x1001);
	cuda_scopes__end_open(sc, ls, 0, 400);
	cr_assert_eq(launch_store__nr_ranges(ls), 4);
	cr_expect_eq(range(3)->tgid, 8);
	cr_expect_eq(range(3)->start_ns, 130);
	cr_expect_eq(range(3)->end_ns, 400);
	cr_expect_str_eq(range(3)->name, "scope 4");
	cuda_scopes__stats(sc, &st);
	cr_expect_eq(st.ended_at_exit, 3);
	cr_expect_eq(st.ended_at_end, 1);
	cr_expect_eq(st.ranges, 4);
	cr_expect_eq(st.open, 0);
	cr_expect_eq(st.unpaired_ends, 1);
}
