// SPDX-License-Identifier: Apache-2.0
/*
 * Stack names (daemon/session/stack_names.c): every stack of a session named once for the
 * writers that look stacks up by id. A CPU stack's frames outermost first (user, then kernel
 * with "_[k]"); launch stacks as STACK_NAMES_LAUNCH | index; the process's name, from its
 * launches when it has them; -ENOENT for an id that names nothing; names that stay valid once
 * the symbolizer and the stores are gone. Frames are named from a fake /proc
 * (tests/lib/fake_proc.h).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon/cuda/launch_store.h"
#include "daemon/session/stack_names.h"
#include "daemon/stacks/stack_table.h"
#include "tests/lib/fake_proc.h"

#define PID   4242
#define OTHER 5151
/* JIT code named by the perf map below; a large [vdso] for many distinct unnamed frames. */
#define JIT  0x7f1000000000ull
#define VDSO 0x7f0000000000ull

static struct fake_proc fp;
static struct symbolizer *sym;

static void setup(void)
{
	fake_proc__init(&fp);
	fake_proc__add(&fp, PID,
		       "7f0000000000-7f0000100000 r-xp 00000000 00:00 0 [vdso]\n"
		       "7f1000000000-7f1000001000 r-xp 00000000 00:00 0 \n",
		       "7f1000000000 100 main\n7f1000000100 100 train_step\n"
		       "7f1000000200 100 forward\n7f1000000300 100 backward\n");
	sym = fake_proc__symbolizer(&fp);
}

static void teardown(void)
{
	fake_proc__remove(&fp);
}

/* The frames of id, joined with ';' ("" when it resolves to none). */
static const char *joined(struct stack_names *sn, uint32_t id)
{
	static char buf[1024];
	const char *const *frames;
	size_t n, len = 0;

	buf[0] = '\0';
	if (stack_names__resolve(sn, PID, id, &frames, &n))
		return buf;
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? ";" : "",
					frames[i]);
	return buf;
}

/* forward at JIT+0x210, called from train_step (returns to +0x121), called from main (+0x31);
 * in the kernel at k_inner+4, called from k_outer (returns to +9). */
static const uint64_t user_fwd[] = {JIT + 0x210, JIT + 0x121, JIT + 0x31};
static const uint64_t user_bwd[] = {JIT + 0x310, JIT + 0x121, JIT + 0x31};
static const uint64_t kernel[] = {FAKE_KBASE + 0x104, FAKE_KBASE + 0x9};

Test(stack_names, cpu_stacks_by_id_outermost_first, .init = setup, .fini = teardown)
{
	struct xsprof_sample a = fake_proc__sample(PID, "app", user_fwd, 3, kernel, 2);
	struct xsprof_sample b = fake_proc__sample(PID, "app", user_bwd, 3, NULL, 0);
	struct stack_table *st = stack_table__new(100);
	const char *const *frames = (const char *const *)&sym; /* a sentinel */
	struct stack_names *sn;
	uint32_t ida, idb;
	size_t n = 77;

	cr_assert_not_null(st);
	cr_assert_eq(stack_table__add_id(st, &a, symbolizer__gen(sym, PID), &ida), 0);
	cr_assert_eq(stack_table__add_id(st, &b, symbolizer__gen(sym, PID), &idb), 0);
	cr_assert_eq(stack_table__add(st, &a, symbolizer__gen(sym, PID)), 0); /* counted again */
	cr_assert_neq(ida, idb);
	sn = stack_names__new(st, NULL, sym);
	cr_assert_not_null(sn, "%s", strerror(errno));
	cr_expect_str_eq(joined(sn, ida), "main;train_step;forward;k_outer_[k];k_inner_[k]");
	cr_expect_str_eq(joined(sn, idb), "main;train_step;backward");
	/* Ids past the table, and launch ids with no launch store, name nothing. */
	cr_expect_eq(stack_names__resolve(sn, PID, 2, &frames, &n), -ENOENT);
	cr_expect_eq(stack_names__resolve(sn, PID, STACK_NAMES_LAUNCH, &frames, &n), -ENOENT);
	cr_expect_eq(stack_names__resolve(sn, PID, UINT32_MAX, &frames, &n), -ENOENT);
	cr_expect_eq(frames, (const char *const *)&sym, "out-parameters untouched on failure");
	cr_expect_eq(n, 77);
	cr_expect_str_eq(stack_names__comm(sn, PID, PID), "app");
	cr_expect_null(stack_names__comm(sn, OTHER, OTHER));
	stack_names__free(sn);
	stack_table__free(st);
}

static struct xsprof_cuda_call launch(uint32_t pid, const char *comm, const uint64_t *ips, int n)
{
	struct xsprof_cuda_call r;

	memset(&r, 0, sizeof(r));
	r.type = XSPROF_REC_CUDA_CALL;
	r.tgid = pid;
	r.tid = pid;
	r.api = XSPROF_CUDA_cudaLaunchKernel;
	snprintf(r.comm, sizeof(r.comm), "%s", comm);
	r.nr_user = (uint16_t)n;
	for (int i = 0; i < n; i++)
		r.ips[i] = ips[i];
	return r;
}

Test(stack_names, launch_stacks_by_index_and_their_process_name, .init = setup, .fini = teardown)
{
	/* A launch's ips are return addresses (the caller of cudaLaunchKernel); an untrimmed USDT
	 * stack starts at the probe site itself, the first byte of backward here. */
	const uint64_t ret_fwd[] = {JIT + 0x211, JIT + 0x121, JIT + 0x31};
	struct xsprof_cuda_call call = launch(PID, "python3", ret_fwd, 3);
	struct xsprof_cuda_call bare = launch(PID, "python3", NULL, 0);
	struct xsprof_usdt_launch usdt;
	/* The same process sampled before its exec, under the name of what forked it. */
	struct xsprof_sample pre = fake_proc__sample(PID, "xsprofd", user_fwd, 3, NULL, 0);
	struct xsprof_sample other = fake_proc__sample(OTHER, "worker", NULL, 0, kernel, 1);
	struct stack_table *st = stack_table__new(100);
	struct launch_store *ls = launch_store__new(0, 0);
	struct stack_names *sn;

	cr_assert(st && ls);
	memset(&usdt, 0, sizeof(usdt));
	usdt.type = XSPROF_REC_USDT_LAUNCH;
	usdt.tgid = usdt.tid = PID;
	usdt.api = (2u << 16) | 211;
	snprintf(usdt.comm, sizeof(usdt.comm), "python3");
	usdt.nr_user = 2;
	usdt.ips[0] = JIT + 0x300;
	usdt.ips[1] = JIT + 0x31;
	cr_assert_eq(stack_table__add(st, &pre, symbolizer__gen(sym, PID)), 0);
	cr_assert_eq(stack_table__add(st, &other, 0), 0);
	cr_assert_eq(launch_store__add_call(ls, &call), 0);
	cr_assert_eq(launch_store__add_usdt(ls, &usdt, 0), 0);
	cr_assert_eq(launch_store__add_call(ls, &bare), 0);
	cr_assert_eq(launch_store__nr_stacks(ls), 3);
	sn = stack_names__new(st, ls, sym);
	cr_assert_not_null(sn, "%s", strerror(errno));
	/* Launch stacks without the API leaf, outermost first, in the store's order. */
	cr_expect_str_eq(joined(sn, STACK_NAMES_LAUNCH | 0), "main;train_step;forward");
	cr_expect_str_eq(joined(sn, STACK_NAMES_LAUNCH | 1), "main;backward");
	cr_expect_str_eq(joined(sn, STACK_NAMES_LAUNCH | 2), "[no frames]");
	cr_expect_str_eq(joined(sn, STACK_NAMES_LAUNCH | 3), "", "past the launch stacks");
	/* CPU ids still name the CPU stacks. */
	cr_expect_str_eq(joined(sn, 0), "main;train_step;forward");
	cr_expect_str_eq(joined(sn, 1), "k_inner_[k]");
	/* The launches' name wins over the name the process had before its exec: its GPU work
	 * goes under the program that did it. */
	cr_expect_str_eq(stack_names__comm(sn, PID, PID), "python3");
	cr_expect_str_eq(stack_names__comm(sn, OTHER, 1), "worker");
	cr_expect_null(stack_names__comm(sn, 1, 1));
	stack_names__free(sn);
	launch_store__free(ls);
	stack_table__free(st);
}

Test(stack_names, names_outlive_the_symbolizer_and_the_stores, .init = setup, .fini = teardown)
{
	enum { NR = 20000 }; /* past the first intern table, pool chunk and frame array */
	struct stack_table *st = stack_table__new(NR + 1);
	struct launch_store *ls = launch_store__new(0, 0);
	const uint64_t ret_fwd[] = {JIT + 0x211, JIT + 0x121, JIT + 0x31};
	struct xsprof_cuda_call call = launch(PID, "app", ret_fwd, 3);
	struct xsprof_sample fwd = fake_proc__sample(PID, "app", user_fwd, 3, NULL, 0);
	const char *const *frames, *k_inner = NULL, *main_cpu;
	struct stack_names *sn;
	char want[64];
	size_t n;

	cr_assert(st && ls);
	/* Each stack a distinct [vdso]+0xOFF frame under one kernel frame. */
	for (uint64_t i = 0; i < NR; i++) {
		uint64_t pc = VDSO + 4 * i;
		struct xsprof_sample s = fake_proc__sample(PID, "app", &pc, 1, kernel, 1);

		cr_assert_eq(stack_table__add(st, &s, symbolizer__gen(sym, PID)), 0);
	}
	cr_assert_eq(stack_table__add(st, &fwd, symbolizer__gen(sym, PID)), 0); /* id NR */
	cr_assert_eq(launch_store__add_call(ls, &call), 0);
	cr_assert_eq(stack_table__nr_entries(st), NR + 1);
	sn = stack_names__new(st, ls, sym);
	cr_assert_not_null(sn, "%s", strerror(errno));
	/* Nothing it returns may point into them any more. */
	launch_store__free(ls);
	stack_table__free(st);
	symbolizer__free(sym);
	fp.sym = sym = NULL;
	for (uint32_t i = 0; i < NR; i++) {
		cr_assert_eq(stack_names__resolve(sn, PID, i, &frames, &n), 0, "stack %u", i);
		cr_assert_eq(n, 2);
		snprintf(want, sizeof(want), "[vdso]+0x%x", 4 * i);
		cr_assert_str_eq(frames[0], want);
		cr_assert_str_eq(frames[1], "k_inner_[k]");
		/* Interned: one copy of a name however many stacks hold it. */
		if (!k_inner)
			k_inner = frames[1];
		cr_assert_eq(frames[1], k_inner, "stack %u has its own copy of k_inner_[k]", i);
	}
	cr_assert_eq(stack_names__resolve(sn, PID, NR, &frames, &n), 0);
	cr_assert_eq(n, 3);
	main_cpu = frames[0];
	cr_assert_eq(stack_names__resolve(sn, PID, STACK_NAMES_LAUNCH, &frames, &n), 0);
	cr_assert_eq(n, 3);
	cr_expect_str_eq(frames[0], "main");
	cr_expect_str_eq(frames[2], "forward");
	cr_expect_eq(frames[0], main_cpu, "a launch stack and a CPU stack share their names");
	cr_expect_str_eq(stack_names__comm(sn, PID, PID), "app");
	stack_names__free(sn);
}

/*
 * A process that exec'd (a shell's exec, sampled a few times before it) has stacks under two
 * names: the latest one names it, whichever order the table is walked in (its hash order,
 * not the order the stacks came in). 40 stacks of "sh" then one of "xs_new", in each of 8
 * tables made one slot bigger each time (other walk orders).
 */
Test(stack_names, an_execd_process_is_named_by_its_latest_name, .init = setup, .fini = teardown)
{
	for (size_t size = 100; size < 108; size++) {
		struct stack_table *st = stack_table__new(size);
		struct stack_names *sn;

		cr_assert_not_null(st);
		for (uint64_t i = 0; i < 40; i++) {
			uint64_t pc = JIT + 0x100 + i;
			struct xsprof_sample old = fake_proc__sample(PID, "sh", &pc, 1, NULL, 0);

			cr_assert_eq(stack_table__add(st, &old, symbolizer__gen(sym, PID)), 0);
		}
		struct xsprof_sample now = fake_proc__sample(PID, "xs_new", user_fwd, 3, NULL, 0);

		cr_assert_eq(stack_table__add(st, &now, symbolizer__gen(sym, PID)), 0);
		sn = stack_names__new(st, NULL, sym);
		cr_assert_not_null(sn);
		cr_expect_str_eq(stack_names__comm(sn, PID, PID), "xs_new", "table of %zu", size);
		stack_names__free(sn);
		stack_table__free(st);
	}
}

Test(stack_names, an_empty_session_names_nothing, .init = setup, .fini = teardown)
{
	struct stack_names *sn = stack_names__new(NULL, NULL, sym);
	const char *const *frames;
	size_t n;

	cr_assert_not_null(sn);
	cr_expect_eq(stack_names__resolve(sn, PID, 0, &frames, &n), -ENOENT);
	cr_expect_eq(stack_names__resolve(sn, PID, STACK_NAMES_LAUNCH, &frames, &n), -ENOENT);
	cr_expect_null(stack_names__comm(sn, PID, PID));
	stack_names__free(sn);
	stack_names__free(NULL);
}
