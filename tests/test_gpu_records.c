// SPDX-License-Identifier: Apache-2.0
/* The GPU record store: per-pid order, interning, and every cap evicting oldest first. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon/gpu/gpu_records.h"

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
