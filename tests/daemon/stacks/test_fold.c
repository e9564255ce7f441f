// SPDX-License-Identifier: Apache-2.0
/*
 * Folding (daemon/stacks/fold.c): counted raw stacks named into a call tree, outermost first:
 * the process name, user frames, kernel frames suffixed "_[k]"; the uid above them for the
 * service; placeholders that keep every sample counted when frames cannot be had. Names come
 * from a fake /proc (one [vdso] mapping) and a fake kallsyms (tests/lib/fake_proc.h), so the
 * expected text is exact.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "daemon/stacks/fold.h"
#include "daemon/stacks/stack_table.h"
#include "tests/lib/fake_proc.h"
#include "output/model/calltree.h"

#define VDSO 0x7f0000000000ull

static struct fake_proc fp;
static struct symbolizer *sym;

static void setup(void)
{
	fake_proc__init(&fp);
	fake_proc__add(&fp, 4242, "7f0000000000-7f0000001000 r-xp 00000000 00:00 0 [vdso]\n", NULL);
	sym = fake_proc__symbolizer(&fp);
}

static void teardown(void)
{
	fake_proc__remove(&fp);
}

/* A sample of pid 4242 ("app"): user pcs innermost first (return addresses after the first),
 * kernel pcs innermost first. */
static struct xsprof_sample sample(const uint64_t *user, int nu, const uint64_t *kernel, int nk)
{
	return fake_proc__sample(4242, "app", user, nu, kernel, nk);
}

Test(fold, outermost_first_user_then_kernel_with_the_process_on_top, .init = setup,
     .fini = teardown)
{
	/* Interrupted at vdso+0x10 in a call from vdso+0x21 (returns to 0x21: the call is 0x20),
	 * in the kernel at k_inner+4 called from k_outer (return address k_outer+8). */
	const uint64_t user[] = {VDSO + 0x10, VDSO + 0x21};
	const uint64_t kernel[] = {FAKE_KBASE + 0x104, FAKE_KBASE + 0x9};
	struct xsprof_sample s = sample(user, 2, kernel, 2);
	struct stack_table *st = stack_table__new(100);
	struct calltree *t = calltree__new();
	struct fold_stats fs = {0};

	cr_assert_eq(stack_table__add(st, &s, symbolizer__gen(sym, 4242)), 0);
	cr_assert_eq(stack_table__add(st, &s, symbolizer__gen(sym, 4242)), 0);
	cr_assert_eq(fold_stacks(st, sym, t, &fs), 0);
	cr_expect_str_eq(fake_proc__folded(t),
			 "app;[vdso]+0x20;[vdso]+0x10;k_outer_[k];k_inner_[k] 2\n");
	cr_expect_eq(fs.frames, 4);
	cr_expect_eq(fs.unnamed_frames, 2, "module+0xOFF names count as unnamed");
	calltree__free(t);
	/* The service's fold: the uid above each stack; scaled: each sample weighs its period. */
	t = calltree__new();
	cr_assert_eq(fold_stacks_under(st, sym, t, 1, true, NULL, NULL), 0);
	cr_expect_str_eq(fake_proc__folded(t),
			 "uid:1000;app;[vdso]+0x20;[vdso]+0x10;k_outer_[k];k_inner_[k] 2\n");
	calltree__free(t);
	t = calltree__new();
	cr_assert_eq(fold_stacks_scaled(st, sym, t, 10101, NULL), 0);
	cr_expect_eq(calltree__total(t), 20202);
	calltree__free(t);
	stack_table__free(st);
}

static const char *group_root(void *ctx, uint32_t tgid)
{
	(void)ctx;
	return tgid == 4242 ? "unit:app.service" : "unit:-";
}

Test(fold, a_root_above_the_process, .init = setup, .fini = teardown)
{
	const uint64_t user[] = {VDSO + 0x10};
	struct xsprof_sample s = sample(user, 1, NULL, 0);
	struct stack_table *st = stack_table__new(100);
	struct calltree *t = calltree__new();

	cr_assert_eq(stack_table__add(st, &s, symbolizer__gen(sym, 4242)), 0);
	cr_assert_eq(fold_stacks_under(st, sym, t, 1, false,
				       &(struct fold_procs){.root = group_root}, NULL),
		     0);
	cr_expect_str_eq(fake_proc__folded(t), "unit:app.service;app;[vdso]+0x10 1\n");
	calltree__free(t);
	stack_table__free(st);
}

static bool only_4243(void *ctx, uint32_t tgid)
{
	++*(int *)ctx;
	return tgid == 4243;
}

/* --job, --rank: the stacks of a process the filter leaves out are not folded at all. */
Test(fold, only_the_processes_kept, .init = setup, .fini = teardown)
{
	const uint64_t user[] = {VDSO + 0x10};
	struct xsprof_sample a = sample(user, 1, NULL, 0);
	struct xsprof_sample b = fake_proc__sample(4243, "other", user, 1, NULL, 0);
	struct stack_table *st = stack_table__new(100);
	struct calltree *t = calltree__new();
	int asked = 0;
	struct fold_procs keep = {.root = group_root, .accept = only_4243, .accept_ctx = &asked};

	cr_assert_eq(stack_table__add(st, &a, symbolizer__gen(sym, 4242)), 0);
	cr_assert_eq(stack_table__add(st, &a, symbolizer__gen(sym, 4242)), 0);
	cr_assert_eq(stack_table__add(st, &b, symbolizer__gen(sym, 4243)), 0);
	cr_assert_eq(fold_stacks_under(st, sym, t, 1, false, &keep, NULL), 0);
	cr_expect_eq(calltree__total(t), 1, "only 4243's sample");
	cr_expect(strstr(fake_proc__folded(t), "unit:-;other;"), "%s", fake_proc__folded(t));
	cr_expect_not(strstr(fake_proc__folded(t), "app"), "%s", fake_proc__folded(t));
	cr_expect_geq(asked, 2, "asked about each process's stacks");
	calltree__free(t);
	stack_table__free(st);
}

Test(fold, placeholders_keep_every_sample_counted, .init = setup, .fini = teardown)
{
	const uint64_t kernel[] = {FAKE_KBASE + 0x104};
	struct xsprof_sample nouser = sample(NULL, 0, kernel, 1), none = sample(NULL, 0, NULL, 0);
	struct stack_table *st = stack_table__new(1);
	struct calltree *t = calltree__new();
	struct fold_stats fs = {0};
	const char *text;

	nouser.user_err = -14; /* -EFAULT: the user stack could not be read */
	none.kernel_err = -14;
	none.comm[0] = '\0';
	cr_assert_eq(stack_table__add(st, &nouser, 0), 0);
	cr_assert_eq(stack_table__add(st, &none, 0), 0); /* over the cap of 1: overflow bucket */
	cr_assert_eq(fold_stacks(st, sym, t, &fs), 0);
	text = fake_proc__folded(t);
	cr_expect(strstr(text, "app;[user stack unreadable];k_inner_[k] 1\n"), "%s", text);
	cr_expect(strstr(text, ";[stack table full: raise --max-stacks] 1\n"), "%s", text);
	cr_expect_eq(calltree__total(t), 2, "every sample counted");
	cr_expect_eq(fs.missing_ustacks, 1);
	calltree__free(t);
	stack_table__free(st);
}
