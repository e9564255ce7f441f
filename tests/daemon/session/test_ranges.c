// SPDX-License-Identifier: Apache-2.0
/* --group-by range: which NVTX range a thread was in at a time (daemon/session/ranges.c). */
#include <criterion/criterion.h>

#include "correlate/correlate.h"
#include "daemon/session/ranges.h"

#define NV(p, t, s, e, n)                                                                        \
	{                                                                                        \
		.kind = CORR_GPU_NVTX, .pid = p, .tid = t, .start_ns = s, .end_ns = e, .name = n \
	}

/* Thread 10 of pid 1: step [100, 400) holding forward [110, 200) and backward [200, 390);
 * data [0, 100) before it; a mark at 50; thread 11 has its own range; a kernel is no range. */
static const struct corr_gpu_rec recs[] = {
	NV(1, 10, 200, 390, "backward"),
	NV(1, 10, 100, 400, "step"),
	NV(1, 10, 0, 100, "data"),
	NV(1, 10, 110, 200, "forward"),
	NV(1, 10, 50, 50, "mark"),
	NV(1, 11, 0, 1000, "loader"),
	{.kind = CORR_GPU_KERNEL, .pid = 1, .tid = 10, .start_ns = 0, .end_ns = 1000, .name = "k"},
	NV(2, 10, 0, 1000, "other process"),
};
#define NR (sizeof(recs) / sizeof(recs[0]))

Test(ranges, innermost_range_at_each_time)
{
	struct ranges *r = ranges__new(recs, NR, false, NULL);

	cr_assert(r);
	cr_expect_eq(ranges__count(r), 6, "marks and kernels are not ranges");
	cr_expect_str_eq(ranges__at(r, 1, 10, 0), "data");
	cr_expect_str_eq(ranges__at(r, 1, 10, 50), "data", "a mark is not a range");
	cr_expect_str_eq(ranges__at(r, 1, 10, 100), "step", "the end is not inside");
	cr_expect_str_eq(ranges__at(r, 1, 10, 105), "step");
	cr_expect_str_eq(ranges__at(r, 1, 10, 150), "forward");
	cr_expect_str_eq(ranges__at(r, 1, 10, 200), "backward");
	/* backward ended: back out to the step still open. */
	cr_expect_str_eq(ranges__at(r, 1, 10, 395), "step");
	cr_expect_str_eq(ranges__at(r, 1, 10, 400), RANGES_NONE);
	cr_expect_str_eq(ranges__at(r, 1, 10, 5000), RANGES_NONE);
	/* Other threads and processes keep their own ranges. */
	cr_expect_str_eq(ranges__at(r, 1, 11, 150), "loader");
	cr_expect_str_eq(ranges__at(r, 2, 10, 150), "other process");
	cr_expect_str_eq(ranges__at(r, 1, 12, 150), RANGES_NONE);
	cr_expect_str_eq(ranges__at(r, 3, 10, 150), RANGES_NONE);
	ranges__free(r);
}

Test(ranges, outermost_range_at_each_time)
{
	struct ranges *r = ranges__new(recs, NR, true, NULL);

	cr_assert(r);
	cr_expect_str_eq(ranges__at(r, 1, 10, 150), "step");
	cr_expect_str_eq(ranges__at(r, 1, 10, 250), "step");
	cr_expect_str_eq(ranges__at(r, 1, 10, 10), "data");
	cr_expect_str_eq(ranges__at(r, 1, 10, 450), RANGES_NONE);
	cr_expect_str_eq(ranges__root_at(r, 1, 11, 1), "loader");
	ranges__free(r);
}

/* A range that starts inside another and ends after it (start/end ranges need not nest). */
Test(ranges, overlapping_ranges_that_do_not_nest)
{
	static const struct corr_gpu_rec v[] = {
		NV(1, 10, 0, 100, "a"),
		NV(1, 10, 50, 200, "b"),
	};
	struct ranges *inner = ranges__new(v, 2, false, NULL),
		      *outer = ranges__new(v, 2, true, NULL);

	cr_expect_str_eq(ranges__at(inner, 1, 10, 60), "b");
	cr_expect_str_eq(ranges__at(inner, 1, 10, 150), "b");
	cr_expect_str_eq(ranges__at(outer, 1, 10, 60), "a");
	cr_expect_str_eq(ranges__at(outer, 1, 10, 150), "b", "a has ended");
	ranges__free(inner);
	ranges__free(outer);
}

/*
 * The outermost range is the first-started one still open, even where a range between it and
 * the innermost has ended: epoch holds a (start/end) and b starts in a, ends after it.
 */
Test(ranges, outermost_past_an_ended_range_between)
{
	static const struct corr_gpu_rec v[] = {
		NV(1, 10, 0, 1000, "epoch"),
		NV(1, 10, 100, 300, "a"),
		NV(1, 10, 200, 600, "b"),
		NV(1, 10, 400, 500, "c"),
	};
	struct ranges *inner = ranges__new(v, 4, false, NULL),
		      *outer = ranges__new(v, 4, true, NULL);

	cr_expect_str_eq(ranges__at(inner, 1, 10, 350), "b");
	cr_expect_str_eq(ranges__at(inner, 1, 10, 450), "c");
	cr_expect_str_eq(ranges__at(inner, 1, 10, 550), "b");
	cr_expect_str_eq(ranges__at(outer, 1, 10, 250), "epoch");
	cr_expect_str_eq(ranges__at(outer, 1, 10, 350), "epoch", "a has ended, epoch has not");
	cr_expect_str_eq(ranges__at(outer, 1, 10, 450), "epoch", "from c, past a");
	cr_expect_str_eq(ranges__at(outer, 1, 10, 700), "epoch");
	ranges__free(inner);
	ranges__free(outer);
}

/*
 * A cycle of short ranges as a training loop makes them (issue 35): load [0, 3000), step
 * [3000, 8000) holding kernel [3000, 5000) (pushed at the same nanosecond) and tiny [6000,
 * 6050), io [8000, 10000) starting where step ends. Every time, a nanosecond either side of
 * each boundary, is in the range that holds it: [start, end), none moved to a neighbour.
 */
Test(ranges, each_boundary_to_the_nanosecond)
{
	static const struct corr_gpu_rec v[] = {
		NV(1, 10, 8000, 10000, "io"),  NV(1, 10, 3000, 5000, "kernel"),
		NV(1, 10, 0, 3000, "load"),    NV(1, 10, 6000, 6050, "tiny"),
		NV(1, 10, 3000, 8000, "step"), NV(1, 11, 2999, 3001, "other thread"),
	};
	static const struct {
		uint64_t t;
		const char *inner, *outer;
	} at[] = {
		{0, "load", "load"},
		{2999, "load", "load"},
		{3000, "kernel", "step"},
		{4999, "kernel", "step"},
		{5000, "step", "step"},
		{5999, "step", "step"},
		{6000, "tiny", "step"},
		{6049, "tiny", "step"},
		{6050, "step", "step"},
		{7999, "step", "step"},
		{8000, "io", "io"},
		{9999, "io", "io"},
		{10000, RANGES_NONE, RANGES_NONE},
	};
	struct ranges *inner = ranges__new(v, 6, false, NULL),
		      *outer = ranges__new(v, 6, true, NULL);

	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		cr_expect_str_eq(ranges__at(inner, 1, 10, at[i].t), at[i].inner, "at %llu",
				 (unsigned long long)at[i].t);
		cr_expect_str_eq(ranges__at(outer, 1, 10, at[i].t), at[i].outer, "at %llu",
				 (unsigned long long)at[i].t);
	}
	ranges__free(inner);
	ranges__free(outer);
}

Test(ranges, none_and_unnamed)
{
	static const struct corr_gpu_rec v[] = {NV(1, 10, 0, 100, NULL)};
	struct ranges *r = ranges__new(v, 1, false, NULL),
		      *empty = ranges__new(NULL, 0, false, NULL);

	cr_expect_str_eq(ranges__at(r, 1, 10, 1), "[unnamed range]");
	cr_expect_eq(ranges__count(empty), 0);
	cr_expect_str_eq(ranges__at(empty, 1, 10, 1), RANGES_NONE);
	cr_expect_str_eq(ranges__at(NULL, 1, 10, 1), RANGES_NONE);
	ranges__free(r);
	ranges__free(empty);
}

Test(ranges, one_domain_or_the_default_one)
{
	struct corr_gpu_rec v[] = {
		NV(1, 10, 0, 100, "default outer"),
		NV(1, 10, 10, 50, "io read"),
	};
	struct ranges *io, *def;

	v[1].domain = "io";
	io = ranges__new(v, 2, false, "io");
	def = ranges__new(v, 2, false, RANGES_DEFAULT_DOMAIN);
	cr_expect_str_eq(ranges__at(io, 1, 10, 20), "io read");
	cr_expect_str_eq(ranges__at(io, 1, 10, 70), RANGES_NONE, "another domain's range");
	cr_expect_str_eq(ranges__at(def, 1, 10, 20), "default outer");
	ranges__free(io);
	ranges__free(def);
}
