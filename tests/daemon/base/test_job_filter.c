// SPDX-License-Identifier: Apache-2.0
/*
 * --job and --rank (daemon/base/job_filter.c): the rank list's syntax, ranges, order and
 * repeats, its cap, every malformed list refused with the filter untouched; job ids checked;
 * which label sets match (job, rank, both, neither said); the description logs show.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "daemon/base/job_filter.h"

#define SEP "\x1f"

Test(job_filter, ranks_and_ranges_sorted_once_each)
{
	struct job_filter f = {0};

	cr_assert_eq(job_filter__set_ranks(&f, "3,0,2-3,7"), 0);
	cr_assert_eq(f.nr_ranks, 4);
	cr_expect_eq(f.ranks[0], 0);
	cr_expect_eq(f.ranks[1], 2);
	cr_expect_eq(f.ranks[2], 3);
	cr_expect_eq(f.ranks[3], 7);
	cr_assert_eq(job_filter__set_ranks(&f, "5"), 0, "a single rank");
	cr_expect_eq(f.nr_ranks, 1);
	cr_expect_eq(f.ranks[0], 5);
	cr_assert_eq(job_filter__set_ranks(&f, "4-4"), 0, "a range of one");
	cr_expect_eq(f.nr_ranks, 1);
	cr_assert_eq(job_filter__set_ranks(&f, "999999936-999999999"), 0, "64 high ranks");
	cr_expect_eq(f.nr_ranks, 64);
	cr_expect_eq(f.ranks[63], 999999999);
}

Test(job_filter, at_most_64_ranks)
{
	struct job_filter f = {0};

	cr_assert_eq(job_filter__set_ranks(&f, "0-63"), 0);
	cr_expect_eq(f.nr_ranks, 64);
	cr_expect_eq(job_filter__set_ranks(&f, "0-63,0-10"), 0, "repeats count once");
	cr_expect_eq(job_filter__set_ranks(&f, "0-64"), -E2BIG);
	cr_expect_eq(job_filter__set_ranks(&f, "0-63,100"), -E2BIG);
	cr_expect_eq(job_filter__set_ranks(&f, "0-999999999"), -E2BIG, "refused, not expanded");
	cr_expect_eq(f.nr_ranks, 64, "a refused list leaves the filter as it was");
}

Test(job_filter, malformed_lists_are_refused_and_change_nothing)
{
	static const char *const bad[] = {
		"",    ",",   "0,", ",0",	  "0,,1",	 "-1",	  "1-",		  "3-2",
		"a",   "0x1", " 1", "1 ",	  "1;2",	 "+1",	  "1--2",	  "1-2-3",
		"1.5", "0-",  "-",  "1000000000", "00000000001", "1,2,b", "9999999999-1",
	};
	struct job_filter f = {0};

	cr_assert_eq(job_filter__set_ranks(&f, "1"), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(job_filter__set_ranks(&f, bad[i]), -EINVAL, "'%s' accepted", bad[i]);
		cr_expect_eq(f.nr_ranks, 1, "'%s' changed the filter", bad[i]);
		cr_expect_eq(f.ranks[0], 1);
	}
}

Test(job_filter, job_ids_checked)
{
	struct job_filter f = {0};
	char longid[JOB_FILTER_ID_MAX + 1];

	cr_expect_not(job_filter__on(&f), "nothing asked: off");
	cr_assert_eq(job_filter__set_job(&f, "xsjob-compute"), 0);
	cr_expect_str_eq(f.job, "xsjob-compute");
	cr_expect(job_filter__on(&f));
	cr_expect_eq(job_filter__set_job(&f, ""), -EINVAL);
	cr_expect_eq(job_filter__set_job(&f, "a\x1f"
					     "b"),
		     -EINVAL, "the label separator");
	cr_expect_eq(job_filter__set_job(&f, "a\nb"), -EINVAL);
	memset(longid, 'j', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	cr_expect_eq(job_filter__set_job(&f, longid), -ENAMETOOLONG);
	longid[JOB_FILTER_ID_MAX - 1] = '\0';
	cr_expect_eq(job_filter__set_job(&f, longid), 0, "63 bytes fit");
	cr_assert_eq(job_filter__set_job(&f, "xsjob-compute"), 0);
	cr_expect_eq(job_filter__set_job(&f, ""), -EINVAL);
	cr_expect_str_eq(f.job, "xsjob-compute", "a refused id leaves the filter as it was");
}

Test(job_filter, a_job_keeps_its_processes)
{
	struct job_filter f = {0};

	cr_assert_eq(job_filter__set_job(&f, "1234"), 0);
	cr_expect(job_filter__matches(&f, "job.id=1234" SEP "job.rank=3"));
	cr_expect(job_filter__matches(&f, "systemd.unit=a.service" SEP "job.id=1234"));
	cr_expect_not(job_filter__matches(&f, "job.id=12345" SEP "job.rank=3"), "a longer id");
	cr_expect_not(job_filter__matches(&f, "job.id=123" SEP "job.rank=3"), "a shorter id");
	cr_expect_not(job_filter__matches(&f, "xjob.id=1234"), "another key ending so");
	cr_expect_not(job_filter__matches(&f, "job.rank=3"), "no job said");
	cr_expect_not(job_filter__matches(&f, "[none]"));
	cr_expect_not(job_filter__matches(&f, "xsprof.labels=capped"));
	cr_expect_not(job_filter__matches(&f, ""));
	cr_expect_not(job_filter__matches(&f, NULL));
}

Test(job_filter, ranks_keep_theirs_and_both_must_hold)
{
	struct job_filter f = {0}, any = {0};

	cr_assert_eq(job_filter__set_ranks(&f, "0,2-3"), 0);
	cr_expect(job_filter__matches(&f, "job.id=j" SEP "job.rank=0" SEP "job.world_size=4"));
	cr_expect(job_filter__matches(&f, "job.rank=3"));
	cr_expect_not(job_filter__matches(&f, "job.rank=1"));
	cr_expect_not(job_filter__matches(&f, "job.rank=30"));
	cr_expect_not(job_filter__matches(&f, "job.local_rank=0"), "a local rank is not a rank");
	cr_expect_not(job_filter__matches(&f, "job.id=j"), "no rank said");
	cr_expect_not(job_filter__matches(&f, "job.rank=2x"));
	cr_assert_eq(job_filter__set_job(&f, "j"), 0);
	cr_expect(job_filter__matches(&f, "job.id=j" SEP "job.rank=2"));
	cr_expect_not(job_filter__matches(&f, "job.id=k" SEP "job.rank=2"), "another job's rank 2");
	cr_expect_not(job_filter__matches(&f, "job.id=j" SEP "job.rank=1"));
	cr_expect(job_filter__matches(&any, "[none]"), "an empty filter keeps everything");
}

Test(job_filter, described_for_the_log)
{
	struct job_filter f = {0};
	char buf[128];

	job_filter__describe(&f, buf, sizeof(buf));
	cr_expect_str_eq(buf, "");
	cr_assert_eq(job_filter__set_ranks(&f, "7,0-3,5,9-10"), 0);
	job_filter__describe(&f, buf, sizeof(buf));
	cr_expect_str_eq(buf, "ranks 0-3,5,7,9-10");
	cr_assert_eq(job_filter__set_job(&f, "xsjob"), 0);
	job_filter__describe(&f, buf, sizeof(buf));
	cr_expect_str_eq(buf, "job xsjob, ranks 0-3,5,7,9-10");
	f.nr_ranks = 0;
	job_filter__describe(&f, buf, sizeof(buf));
	cr_expect_str_eq(buf, "job xsjob");
	cr_assert_eq(job_filter__set_ranks(&f, "3"), 0);
	job_filter__describe(&f, buf, sizeof(buf));
	cr_expect_str_eq(buf, "job xsjob, rank 3");
	f.nr_ranks = 0;
	job_filter__describe(&f, buf, 4);
	cr_expect_str_eq(buf, "job", "truncated, terminated");
}
