// SPDX-License-Identifier: Apache-2.0
/*
 * The stack table (daemon/stacks/stack_table.c): samples counted per distinct (process, image
 * generation, thread name, kernel stack, user stack), in the order first seen, weights summed,
 * and past its cap counted in a per-process overflow bucket instead of lost.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "daemon/stacks/stack_table.h"

/* A sample of tgid with nk kernel and nu user frames, each frame base + its index. */
static struct xsprof_sample sample(uint32_t tgid, const char *comm, int nk, int nu, uint64_t base)
{
	struct xsprof_sample s;

	memset(&s, 0, sizeof(s));
	s.type = XSPROF_REC_SAMPLE;
	s.tgid = s.tid = tgid;
	strncpy(s.comm, comm, sizeof(s.comm) - 1);
	s.nr_kernel = (uint16_t)nk;
	s.nr_user = (uint16_t)nu;
	for (int i = 0; i < nk; i++)
		s.ips[i] = 0xffffffff81000000ull + base + (uint64_t)i;
	for (int i = 0; i < nu; i++)
		s.ips[nk + i] = 0x400000ull + base + (uint64_t)i;
	return s;
}

struct seen {
	size_t n;
	uint64_t count[8];
	uint32_t tgid[8], gen[8], flags[8], id[8];
	uint64_t first_user[8], first_kernel[8];
	uint16_t nr_user[8];
};

static int collect(void *ctx, const struct stack_entry *e)
{
	struct seen *s = ctx;

	cr_assert_lt(s->n, 8);
	s->count[s->n] = e->count;
	s->tgid[s->n] = e->tgid;
	s->gen[s->n] = e->gen;
	s->flags[s->n] = e->flags;
	s->id[s->n] = e->id;
	s->nr_user[s->n] = e->nr_user;
	s->first_user[s->n] = e->nr_user ? e->user_ips[0] : 0;
	s->first_kernel[s->n] = e->nr_kernel ? e->kernel_ips[0] : 0;
	s->n++;
	return 0;
}

static void entries(const struct stack_table *t, struct seen *ret)
{
	memset(ret, 0, sizeof(*ret));
	cr_assert_eq(stack_table__for_each(t, collect, ret), 0);
}

Test(stack_table, same_stack_counted_once_distinct_ones_apart)
{
	struct stack_table *t = stack_table__new(100);
	struct xsprof_sample a = sample(10, "app", 2, 3, 0), b = sample(10, "app", 2, 3, 100);
	struct stack_table_stats st;
	struct seen s;
	uint32_t id = 99;

	cr_assert_not_null(t);
	cr_assert_eq(stack_table__add(t, &a, 1), 0);
	cr_assert_eq(stack_table__add(t, &a, 1), 0);
	cr_assert_eq(stack_table__add_id(t, &b, 1, &id), 0);
	cr_expect_eq(id, 1, "the second distinct stack is entry 1, not %u", id);
	cr_assert_eq(stack_table__add(t, &a, 2), 0); /* the same addresses in a new image */
	cr_assert_eq(stack_table__add_weighted(t, &b, 1, 250), 0);
	cr_expect_eq(stack_table__nr_entries(t), 3);
	entries(t, &s);
	cr_assert_eq(s.n, 3);
	for (size_t i = 0; i < s.n; i++) {
		if (s.id[i] == 0) {
			cr_expect_eq(s.count[i], 2);
			cr_expect_eq(s.gen[i], 1);
			cr_expect_eq(s.first_user[i], 0x400000ull, "innermost first");
			cr_expect_eq(s.first_kernel[i], 0xffffffff81000000ull);
			cr_expect_eq(s.nr_user[i], 3);
		} else if (s.id[i] == 1) {
			cr_expect_eq(s.count[i], 251, "a sample and a weight of 250: %llu",
				     (unsigned long long)s.count[i]);
		} else {
			cr_expect_eq(s.id[i], 2);
			cr_expect_eq(s.gen[i], 2);
			cr_expect_eq(s.count[i], 1);
		}
	}
	stack_table__stats(t, &st);
	cr_expect_eq(st.distinct, 3);
	cr_expect_eq(st.overflowed, 0);
	cr_expect_gt(st.bytes, 0);
	stack_table__free(t);
}

Test(stack_table, past_the_cap_samples_go_to_their_process_overflow_bucket)
{
	struct stack_table *t = stack_table__new(2);
	struct xsprof_sample a = sample(10, "app", 1, 2, 0), b = sample(10, "app", 1, 2, 100),
			     c = sample(10, "app", 1, 2, 200), d = sample(11, "other", 1, 2, 300);
	struct stack_table_stats st;
	struct seen s;
	uint64_t kept = 0, over = 0;

	cr_assert_eq(stack_table__add(t, &a, 1), 0);
	cr_assert_eq(stack_table__add(t, &b, 1), 0);
	cr_assert_eq(stack_table__add(t, &c, 1), 0); /* a third distinct stack: over the cap */
	cr_assert_eq(stack_table__add(t, &c, 1), 0);
	cr_assert_eq(stack_table__add(t, &d, 1), 0); /* another process's: its own bucket */
	cr_assert_eq(stack_table__add(t, &a, 1), 0); /* a kept stack still counts as itself */
	entries(t, &s);
	for (size_t i = 0; i < s.n; i++) {
		if (s.flags[i] & STACK_F_OVERFLOW) {
			over += s.count[i];
			cr_expect_eq(s.nr_user[i], 0, "an overflow bucket keeps no stack");
		} else {
			kept += s.count[i];
		}
	}
	cr_expect_eq(kept, 3);
	cr_expect_eq(over, 3);
	stack_table__stats(t, &st);
	cr_expect_eq(st.overflowed, 3);
	cr_expect_eq(kept + over, 6, "no sample lost");
	stack_table__free(t);
}

Test(stack_table, past_the_cap_new_stacks_add_no_memory)
{
	struct stack_table *t = stack_table__new(2);
	struct xsprof_sample a = sample(10, "app", 1, 8, 0), b = sample(10, "app", 1, 8, 1000),
			     c = sample(10, "app", 1, 8, 2000);
	struct stack_table_stats before, after;
	struct seen s;

	cr_assert_eq(stack_table__add(t, &a, 1), 0);
	cr_assert_eq(stack_table__add(t, &b, 1), 0);
	cr_assert_eq(stack_table__add(t, &c, 1), 0); /* the overflow bucket made */
	stack_table__stats(t, &before);
	/* Distinct stacks past the cap: their frames are not interned (they were, unbounded). */
	for (uint64_t i = 0; i < 20000; i++) {
		struct xsprof_sample x = sample(10, "app", 1, 8, 10000 + i * 16);

		cr_assert_eq(stack_table__add(t, &x, 1), 0);
	}
	cr_assert_eq(stack_table__add(t, &a, 1), 0); /* a kept stack still counts as itself */
	stack_table__stats(t, &after);
	cr_expect_eq(after.bytes, before.bytes, "%zu bytes before, %zu after", (size_t)before.bytes,
		     (size_t)after.bytes);
	cr_expect_eq(after.overflowed, 20001);
	entries(t, &s);
	cr_expect_eq(s.n, 3, "two stacks and one bucket");
	for (size_t i = 0; i < s.n; i++)
		if (s.id[i] == 0)
			cr_expect_eq(s.count[i], 2, "the first stack, kept");
	stack_table__free(t);
}

static int stop_at_second(void *ctx, const struct stack_entry *e)
{
	(void)e;
	return ++*(int *)ctx == 2 ? 42 : 0;
}

Test(stack_table, for_each_stops_when_told)
{
	struct stack_table *t = stack_table__new(100);
	int calls = 0;

	for (int i = 0; i < 5; i++) {
		struct xsprof_sample x = sample(10, "app", 0, 1, (uint64_t)i * 10);

		cr_assert_eq(stack_table__add(t, &x, 1), 0);
	}
	cr_expect_eq(stack_table__for_each(t, stop_at_second, &calls), 42);
	cr_expect_eq(calls, 2);
	stack_table__free(t);
}
