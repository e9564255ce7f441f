// SPDX-License-Identifier: Apache-2.0
/* The GPU record store: per-pid order, interning, and every cap evicting oldest first. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cupti_inject/xsprof_wire.h"
#include "daemon/gpu/gpu_records.h"
#include "tests/lib/gpu_records_add.h"

static struct gpu_activity kernel(uint32_t pid, uint64_t t, const char *name)
{
	struct gpu_activity a = {
		.kind = GPU_ACT_KERNEL,
		.pid = pid,
		.correlation_id = (uint32_t)t,
		.start_ns = t,
		.end_ns = t + 1,
		.name = name,
	};
	return a;
}

struct collect {
	uint64_t t[64];
	uint32_t pid[64];
	int n;
	int stop_at; /* take: refuse the record at this index */
};

static int collect_fn(void *ctx, const struct gpu_activity *a)
{
	struct collect *c = ctx;

	if (c->stop_at && c->n == c->stop_at)
		return 7;
	if (c->n < 64) {
		c->t[c->n] = a->start_ns;
		c->pid[c->n] = a->pid;
	}
	c->n++;
	return 0;
}

Test(gpu_records, per_pid_order_and_take)
{
	struct gpu_store *st = gpu_store__new(NULL);
	struct gpu_store_stats ss;
	struct collect c = {0};

	cr_assert_not_null(st);
	for (uint64_t t = 1; t <= 6; t++)
		cr_assert_eq(gpu_store__add(st, &(struct gpu_activity){.kind = GPU_ACT_API,
								       .pid = t % 2 ? 100 : 200,
								       .start_ns = t,
								       .end_ns = t}),
			     0);
	cr_assert_eq(gpu_store__for_each(st, 100, collect_fn, &c), 0);
	cr_assert_eq(c.n, 3);
	cr_assert(c.t[0] == 1 && c.t[1] == 3 && c.t[2] == 5);

	memset(&c, 0, sizeof(c));
	cr_assert_eq(gpu_store__for_each(st, 0, collect_fn, &c), 0);
	cr_assert_eq(c.n, 6, "pid 0 walks every process, oldest first");
	cr_assert_eq(c.t[5], 6);

	memset(&c, 0, sizeof(c));
	c.stop_at = 2;
	cr_assert_eq(gpu_store__take(st, 200, collect_fn, &c), 7);
	gpu_store__stats(st, &ss);
	cr_assert_eq(ss.records, 4, "two taken, the refused one kept");
	memset(&c, 0, sizeof(c));
	gpu_store__for_each(st, 200, collect_fn, &c);
	cr_assert_eq(c.n, 1);
	cr_assert_eq(c.t[0], 6);

	gpu_store__forget(st, 100);
	gpu_store__stats(st, &ss);
	cr_assert_eq(ss.records, 1);
	cr_assert_eq(ss.pids, 1);
	gpu_store__free(st);
}

Test(gpu_records, names_interned_and_released)
{
	struct gpu_store *st = gpu_store__new(NULL);
	struct gpu_store_stats ss;
	struct gpu_activity a;
	char name[32];

	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "kernel_%d", i % 10);
		a = kernel(1, (uint64_t)i, name);
		cr_assert_eq(gpu_store__add(st, &a), 0);
	}
	a = (struct gpu_activity){
		.kind = GPU_ACT_NVTX, .pid = 2, .name = "kernel_3", .domain = "d"};
	gpu_store__add(st, &a);
	gpu_store__stats(st, &ss);
	cr_assert_eq(ss.names, 11, "10 kernel names, one domain; shared with the NVTX name");
	gpu_store__forget(st, 1);
	gpu_store__stats(st, &ss);
	cr_assert_eq(ss.names, 2, "names still used by pid 2 stay");
	gpu_store__forget(st, 2);
	gpu_store__stats(st, &ss);
	cr_assert_eq(ss.names, 0);
	cr_assert_eq(ss.bytes, 0, "everything released");
	gpu_store__free(st);
}

static int check_name(void *ctx, const struct gpu_activity *a)
{
	char want[32];

	snprintf(want, sizeof(want), "k%llu", (unsigned long long)a->start_ns);
	cr_assert_str_eq(a->name, want);
	return 0;
}

Test(gpu_records, record_cap_evicts_oldest)
{
	struct gpu_store *st = gpu_store__new(&(struct gpu_store_opts){.max_records = 10});
	struct gpu_store_stats ss;
	struct collect c = {0};
	char name[32];

	for (uint64_t t = 0; t < 100; t++) {
		snprintf(name, sizeof(name), "k%llu", (unsigned long long)t);
		struct gpu_activity a = kernel(1 + (uint32_t)(t % 3), t, name);
		cr_assert_eq(gpu_store__add(st, &a), 0);
	}
	gpu_store__stats(st, &ss);
	cr_assert_eq(ss.records, 10);
	cr_assert_eq(ss.evicted, 90);
	cr_assert_eq(ss.names, 10, "evicted records took their names along");
	gpu_store__for_each(st, 0, collect_fn, &c);
	cr_assert_eq(c.t[0], 90, "the newest ten are kept");
	gpu_store__for_each(st, 0, check_name, NULL);
	gpu_store__free(st);
}

Test(gpu_records, byte_cap_holds)
{
	struct gpu_store *st = gpu_store__new(&(struct gpu_store_opts){.max_bytes = 64 << 10});
	struct gpu_store_stats ss;
	char name[1024];

	for (int i = 0; i < 2000; i++) {
		/* Distinct long names: the worst case for memory. */
		memset(name, 'a' + i % 26, sizeof(name) - 1);
		snprintf(name, 16, "%08d", i);
		name[8] = 'x';
		name[sizeof(name) - 1] = '\0';
		struct gpu_activity a = kernel(5, (uint64_t)i, name);
		cr_assert_eq(gpu_store__add(st, &a), 0);
		gpu_store__stats(st, &ss);
		cr_assert_leq(ss.bytes, 64 << 10);
	}
	cr_assert_gt(ss.evicted, 1900);
	gpu_store__free(st);

	st = gpu_store__new(&(struct gpu_store_opts){.max_bytes = 64});
	struct gpu_activity a = kernel(5, 1, "too big for this store");
	cr_assert_eq(gpu_store__add(st, &a), -ENOMEM);
	gpu_store__stats(st, &ss);
	cr_assert_eq(ss.rejected, 1);
	gpu_store__free(st);
}

Test(gpu_records, pid_cap_evicts_oldest_process)
{
	struct gpu_store *st = gpu_store__new(&(struct gpu_store_opts){.max_pids = 4});
	struct gpu_store_stats ss;
	struct collect c = {0};

	for (uint32_t pid = 1; pid <= 10; pid++) {
		struct gpu_activity a = kernel(pid, pid, NULL);
		cr_assert_eq(gpu_store__add(st, &a), 0);
	}
	gpu_store__stats(st, &ss);
	cr_assert_eq(ss.pids, 4);
	gpu_store__for_each(st, 0, collect_fn, &c);
	cr_assert_eq(c.pid[0], 7);
	gpu_store__free(st);
}

Test(gpu_records, free_accepts_null)
{
	gpu_store__free(NULL);
}

static int collect_open(void *ctx, const struct gpu_activity *a)
{
	cr_expect(a->flags & XSPROF_WIRE_F_OPEN);
	cr_expect_eq(a->start_ns, a->end_ns);
	return collect_fn(ctx, a);
}

/* Openings are kept apart from the records; the range that ends one removes it; a process that
 * never ends its ranges holds at most its cap (the rest counted); a sender gone ends them. */
Test(gpu_records, open_ranges)
{
	struct gpu_store *st = gpu_store__new(&(struct gpu_store_opts){.max_open_per_pid = 3});
	struct gpu_store_stats ss;
	struct collect c = {0};

	cr_assert_not_null(st);
	cr_assert_eq(test_add_nvtx(st, 1, 10, 100, 100, "epoch", XSPROF_WIRE_F_OPEN), 0);
	cr_assert_eq(test_add_nvtx(st, 1, 10, 110, 110, "step", XSPROF_WIRE_F_OPEN), 0);
	cr_assert_eq(test_add_nvtx(st, 1, 11, 110, 110, "load", XSPROF_WIRE_F_OPEN), 0);
	gpu_store__stats(st, &ss);
	cr_expect_eq(ss.records, 0, "an opening is no record");
	cr_expect_eq(ss.open, 3);
	/* step ends on thread 10: only its opening goes (load started at the same time). */
	cr_assert_eq(test_add_nvtx(st, 1, 10, 110, 150, "step", 0), 0);
	gpu_store__stats(st, &ss);
	cr_expect_eq(ss.records, 1);
	cr_expect_eq(ss.open, 2);
	cr_expect_eq(ss.open_ended, 1);
	cr_assert_eq(gpu_store__for_each_open(st, 1, collect_open, &c), 0);
	cr_assert_eq(c.n, 2);

	/* The cap: a fourth and fifth opening of pid 1 are refused, counted; pid 2 still fits. */
	test_add_nvtx(st, 1, 12, 200, 200, "a", XSPROF_WIRE_F_OPEN);
	test_add_nvtx(st, 1, 12, 210, 210, "b", XSPROF_WIRE_F_OPEN);
	test_add_nvtx(st, 1, 12, 220, 220, "c", XSPROF_WIRE_F_OPEN);
	test_add_nvtx(st, 2, 20, 300, 300, "other", XSPROF_WIRE_F_OPEN);
	gpu_store__stats(st, &ss);
	cr_expect_eq(ss.open, 4);
	cr_expect_eq(ss.open_refused, 2);
	/* A range whose opening was refused ends nothing. */
	test_add_nvtx(st, 1, 12, 220, 230, "c", 0);
	gpu_store__stats(st, &ss);
	cr_expect_eq(ss.open, 4);

	/* pid 1's sender went away: its three open ranges end there, as ranges. */
	gpu_store__end_open(st, 1, 1000);
	gpu_store__stats(st, &ss);
	cr_expect_eq(ss.open, 1);
	cr_expect_eq(ss.open_ended_at_exit, 3);
	memset(&c, 0, sizeof(c));
	gpu_store__for_each(st, 1, collect_fn, &c);
	cr_expect_eq(c.n, 5, "step, c, and the three ended at the exit");
	memset(&c, 0, sizeof(c));
	gpu_store__for_each_open(st, 0, collect_open, &c);
	cr_expect_eq(c.n, 1);
	cr_expect_eq(c.pid[0], 2);
	gpu_store__forget(st, 2);
	gpu_store__stats(st, &ss);
	cr_expect_eq(ss.open, 0);
	cr_expect_eq(ss.open_bytes, 0);
	/* Freed with an opening still held: nothing leaks (ASan builds). */
	test_add_nvtx(st, 3, 30, 1, 1, "left", XSPROF_WIRE_F_OPEN);
	gpu_store__free(st);
}

/* G1: one uid floods a full store; another's few records, sent among the flood, all stay. */
Test(gpu_records, a_flooding_user_evicts_only_its_own)
{
	struct gpu_store *st = gpu_store__new(&(struct gpu_store_opts){.max_records = 1000});
	struct gpu_store_user_stats us[4];
	struct gpu_store_stats ss;
	struct collect c = {0};
	size_t n;

	for (uint64_t t = 0; t < 60000; t++) {
		struct gpu_activity a = kernel(100, t, "flood");

		a.uid = 1001;
		cr_assert_eq(gpu_store__add(st, &a), 0);
		if (t % 1000 == 500) { /* 60 records of the victim, among the flood */
			a = kernel(200, t, "victim");
			a.uid = 1002;
			cr_assert_eq(gpu_store__add(st, &a), 0);
		}
	}
	gpu_store__for_each(st, 200, collect_fn, &c);
	cr_expect_eq(c.n, 60, "the victim kept %d of its 60 records", c.n);
	gpu_store__stats(st, &ss);
	cr_expect_eq(ss.records, 1000);
	n = gpu_store__user_stats(st, us, 4);
	cr_assert_eq(n, 2);
	for (size_t i = 0; i < n; i++) {
		if (us[i].uid == 1001) {
			cr_expect_eq(us[i].records, 940);
			cr_expect_eq(us[i].evicted, ss.evicted, "every eviction was the flooder's");
		} else {
			cr_expect_eq(us[i].uid, 1002);
			cr_expect_eq(us[i].records, 60);
			cr_expect_eq(us[i].evicted, 0);
		}
	}
	/* Once the victim holds the most, its own oldest go first. */
	for (uint64_t t = 0; t < 2000; t++) {
		struct gpu_activity a = kernel(200, 100000 + t, "victim");

		a.uid = 1002;
		cr_assert_eq(gpu_store__add(st, &a), 0);
	}
	n = gpu_store__user_stats(st, us, 4);
	for (size_t i = 0; i < n; i++)
		if (us[i].uid == 1001)
			cr_expect_gt(us[i].records, 400, "the flooder keeps about half: %zu",
				     us[i].records);
	gpu_store__free(st);
}

/* Open NVTX ranges: a uid holds at most half of the bytes they may take. */
Test(gpu_records, open_ranges_are_shared_by_uid)
{
	struct gpu_store *st = gpu_store__new(
		&(struct gpu_store_opts){.max_open_bytes = 64 << 10, .max_open_per_pid = 100000});
	struct gpu_store_user_stats us[4];
	size_t n;

	for (uint32_t i = 0; i < 10000; i++) {
		struct gpu_activity a = {.kind = GPU_ACT_NVTX,
					 .flags = XSPROF_WIRE_F_OPEN,
					 .pid = 100 + i % 7,
					 .uid = 1001,
					 .tid = 1,
					 .nvtx_id = i,
					 .start_ns = i,
					 .end_ns = i,
					 .name = "open forever"};

		gpu_store__add(st, &a);
	}
	struct gpu_activity b = {.kind = GPU_ACT_NVTX,
				 .flags = XSPROF_WIRE_F_OPEN,
				 .pid = 200,
				 .uid = 1002,
				 .tid = 1,
				 .nvtx_id = 1,
				 .start_ns = 5,
				 .end_ns = 5,
				 .name = "step"};
	gpu_store__add(st, &b);
	n = gpu_store__user_stats(st, us, 4);
	cr_assert_eq(n, 2);
	for (size_t i = 0; i < n; i++) {
		if (us[i].uid == 1001) {
			cr_expect_leq(us[i].open_bytes, 32u << 10);
			cr_expect_gt(us[i].open_refused, 0);
		} else {
			cr_expect_gt(us[i].open_bytes, 0, "the other user's opening was kept");
			cr_expect_eq(us[i].open_refused, 0);
		}
	}
	gpu_store__free(st);
}

#define REUSE_N 5000

struct addrs {
	const void *p[REUSE_N];
	size_t n;
};

/* Records are nodes of 32 KiB slabs (gpu_records.c's SLAB_BYTES, aligned to it): the slab of
 * each. */
#define STORE_SLAB 32768u

static int addr_fn(void *ctx, const struct gpu_activity *a)
{
	struct addrs *s = ctx;

	if (s->n < REUSE_N)
		s->p[s->n++] = (const void *)((uintptr_t)a & ~(uintptr_t)(STORE_SLAB - 1));
	return 0;
}

static int cmp_ptr(const void *a, const void *b)
{
	const void *x = *(const void *const *)a, *y = *(const void *const *)b;

	return x < y ? -1 : x > y;
}

static int add_kernel(struct gpu_store *st, uint32_t pid, uint64_t t, const char *name)
{
	struct gpu_activity a = kernel(pid, t, name);

	return gpu_store__add(st, &a);
}

/* A flood's records all taken by a slice: their memory waits for the next ones (no new
 * allocation to fault in), until gpu_store__trim gives it back; the store works as before. */
Test(gpu_records, taken_records_memory_reused_until_trimmed)
{
	struct gpu_store *st = gpu_store__new(NULL);
	static struct addrs first, again;
	struct gpu_store_stats ss;
	struct collect c = {0};

	cr_assert_not_null(st);
	for (uint64_t t = 1; t <= REUSE_N; t++)
		cr_assert_eq(add_kernel(st, 7, t, "k"), 0);
	gpu_store__for_each(st, 0, addr_fn, &first);
	cr_assert_eq(gpu_store__take(st, 0, collect_fn, &c), 0);
	cr_assert_eq(c.n, REUSE_N);
	gpu_store__stats(st, &ss);
	cr_assert_geq(ss.spare_bytes, REUSE_N * 100, "the taken records' memory is kept: %zu",
		      ss.spare_bytes);
	for (uint64_t t = 1; t <= REUSE_N; t++)
		cr_assert_eq(add_kernel(st, 8, t, "k2"), 0);
	gpu_store__for_each(st, 0, addr_fn, &again);
	cr_assert_eq(again.n, REUSE_N);
	qsort(first.p, first.n, sizeof(first.p[0]), cmp_ptr);
	for (size_t i = 0; i < again.n; i++)
		cr_assert_not_null(
			bsearch(&again.p[i], first.p, first.n, sizeof(first.p[0]), cmp_ptr),
			"record %zu in a new slab, not the taken records'", i);
	gpu_store__stats(st, &ss);
	cr_assert_eq(ss.spare_bytes, 0, "all of it in use again");

	memset(&c, 0, sizeof(c));
	cr_assert_eq(gpu_store__take(st, 0, collect_fn, &c), 0);
	gpu_store__trim(st);
	gpu_store__stats(st, &ss);
	cr_assert_eq(ss.spare_bytes, 0, "trimmed: back to malloc");
	gpu_store__trim(st); /* twice: nothing left the second time */
	cr_assert_eq(add_kernel(st, 9, 1, "k3"), 0);
	gpu_store__stats(st, &ss);
	cr_assert_eq(ss.records, 1);
	memset(&c, 0, sizeof(c));
	gpu_store__for_each(st, 9, collect_fn, &c);
	cr_assert_eq(c.n, 1);
	gpu_store__free(st);
}

/* The slice's take: oldest first while they end before the cut, the first that ends later
 * stops it (even when newer ones ended earlier); with every record ended, all of them at
 * once, the store left as empty as a new one (processes, users, names) and working on. */
Test(gpu_records, take_ended_takes_the_oldest_ended_and_all_at_once)
{
	struct gpu_store *st = gpu_store__new(NULL);
	struct gpu_store_user_stats us[4];
	struct gpu_store_stats ss;
	struct collect c = {0};
	struct gpu_activity a;

	cr_assert_not_null(st);
	for (uint64_t t = 1; t <= 4; t++)
		cr_assert_eq(add_kernel(st, 100 + (uint32_t)(t % 2), t * 10, "k"), 0);
	a = kernel(100, 50, "long");
	a.end_ns = 1000; /* ends after the cut */
	cr_assert_eq(gpu_store__add(st, &a), 0);
	cr_assert_eq(add_kernel(st, 102, 60, "k"), 0); /* ended, but newer than the long one */
	gpu_store__take_ended(st, 100);
	gpu_store__stats(st, &ss);
	cr_assert_eq(ss.records, 2, "the long one and the one after it stay: %zu", ss.records);
	cr_assert_eq(ss.pids, 2);
	cr_assert_eq(ss.names, 2);
	gpu_store__for_each(st, 0, collect_fn, &c);
	cr_assert_eq(c.n, 2);
	cr_assert_eq(c.t[0], 50);
	cr_assert_eq(c.t[1], 60);

	gpu_store__take_ended(st, 1001); /* every one ended: all at once */
	gpu_store__stats(st, &ss);
	cr_assert_eq(ss.records, 0);
	cr_assert_eq(ss.pids, 0);
	cr_assert_eq(ss.names, 0);
	cr_assert_eq(ss.bytes, 0, "nothing held, nothing counted: %zu", ss.bytes);
	cr_assert_gt(ss.spare_bytes, 0, "their memory kept for the next burst");
	cr_assert_eq(gpu_store__user_stats(st, us, 4), 0, "no user holds anything");
	memset(&c, 0, sizeof(c));
	cr_assert_eq(gpu_store__for_each(st, 0, collect_fn, &c), 0);
	cr_assert_eq(c.n, 0);

	/* And on as before: the same name again (interned anew), a new process. */
	for (uint64_t t = 1; t <= 3; t++)
		cr_assert_eq(add_kernel(st, 103, 2000 + t, "k"), 0);
	gpu_store__stats(st, &ss);
	cr_assert_eq(ss.records, 3);
	cr_assert_eq(ss.names, 1);
	cr_assert_eq(ss.pids, 1);
	memset(&c, 0, sizeof(c));
	gpu_store__for_each(st, 103, collect_fn, &c);
	cr_assert_eq(c.n, 3);
	gpu_store__take_ended(st, 3000);
	gpu_store__stats(st, &ss);
	cr_assert_eq(ss.records, 0);
	cr_assert_eq(ss.bytes, 0);
	gpu_store__free(st);
}

static int named_same(void *ctx, const struct gpu_activity *a)
{
	struct collect *c = ctx;

	cr_assert_str_eq(a->name, "same");
	c->n++;
	return 0;
}

/* The name stored last is found again without a lookup, and a record evicted with it (its last
 * one) takes it along: the next record of that name interns it afresh. */
Test(gpu_records, a_repeated_name_survives_its_eviction)
{
	struct gpu_store *st = gpu_store__new(&(struct gpu_store_opts){.max_records = 2});
	struct gpu_store_stats ss;
	struct collect c = {0};
	char name[16];

	cr_assert_not_null(st);
	strcpy(name, "same");
	cr_assert_eq(add_kernel(st, 1, 1, name), 0);
	cr_assert_eq(add_kernel(st, 1, 2, "other"), 0);
	cr_assert_eq(add_kernel(st, 1, 3, "other"), 0); /* evicts "same"'s only record */
	gpu_store__stats(st, &ss);
	cr_assert_eq(ss.names, 1);
	cr_assert_eq(add_kernel(st, 1, 4, name), 0);
	cr_assert_eq(add_kernel(st, 1, 5, name), 0); /* evicts both "other" */
	gpu_store__stats(st, &ss);
	cr_assert_eq(ss.names, 1);
	cr_assert_eq(ss.records, 2);
	strcpy(name, "changed"); /* the store's copy is its own */
	cr_assert_eq(gpu_store__for_each(st, 0, named_same, &c), 0);
	cr_assert_eq(c.n, 2);
	gpu_store__free(st);
}
