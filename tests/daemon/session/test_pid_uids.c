// SPDX-License-Identifier: Apache-2.0
/*
 * Whose a process is (daemon/session/pid_uids.c): a process sampled under two uids is the one
 * it ran as last, its newest image's; one with no samples is its GPU records' sender's.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "daemon/session/pid_uids.h"
#include "daemon/stacks/stack_table.h"

static void add(struct stack_table *t, uint32_t tgid, uint32_t uid, uint32_t gen, uint64_t pc)
{
	struct xsprof_sample s;

	memset(&s, 0, sizeof(s));
	s.type = XSPROF_REC_SAMPLE;
	s.tgid = s.tid = tgid;
	s.uid = uid;
	s.nr_user = 1;
	s.ips[0] = pc;
	cr_assert_eq(stack_table__add(t, &s, gen), 0);
}

Test(pid_uids, a_process_is_the_uid_it_ran_as_last)
{
	struct stack_table *t = stack_table__new(100);
	struct pid_uids *u;

	cr_assert_not_null(t);
	/* setpriv as root, caught by a sample before its exec; the member's program after. */
	add(t, 10, 0, 1, 0x401000);
	add(t, 10, 65534, 2, 0x402000);
	add(t, 10, 65534, 2, 0x402100);
	/* The same, its entries made in the other order (a later stack of the first image). */
	add(t, 11, 65534, 2, 0x402000);
	add(t, 11, 0, 1, 0x401000);
	/* A setuid exec: root's image is the newer one. */
	add(t, 12, 1000, 1, 0x401000);
	add(t, 12, 0, 2, 0x403000);
	/* One image that changed its uid (setresuid): its last-made entry's. */
	add(t, 13, 0, 1, 0x401000);
	add(t, 13, 1000, 1, 0x401100);
	add(t, 14, 1000, 1, 0x401000);
	u = pid_uids__new(t);
	cr_assert_not_null(u);
	cr_expect_eq(pid_uids__get(u, 10), 65534, "setpriv's root sample gave it to root");
	cr_expect_eq(pid_uids__get(u, 11), 65534);
	cr_expect_eq(pid_uids__get(u, 12), 0, "a setuid exec is root's, not its caller's");
	cr_expect_eq(pid_uids__get(u, 13), 1000);
	cr_expect_eq(pid_uids__get(u, 14), 1000);
	/* No samples: the uid its GPU records came with. */
	cr_assert_eq(pid_uids__note(u, 0x7ffffff0u, 65534), 0);
	cr_expect_eq(pid_uids__get(u, 0x7ffffff0u), 65534);
	pid_uids__free(u);
	stack_table__free(t);
}
