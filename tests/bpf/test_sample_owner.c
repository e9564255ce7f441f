// SPDX-License-Identifier: Apache-2.0
/*
 * Whose samples are whose, decided in the kernel: a process whose real and effective uids
 * differ (a setuid program a user started) belongs to root, so the service never hands its
 * stacks to the user; a process of one uid throughout belongs to that uid. The real BPF
 * sampler, loaded in this process. Needs root and BTF.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon/probes/sampler.h"

#define NOBODY 65534

struct seen {
	pid_t mixed, plain;
	uint64_t mixed_root, mixed_other, plain_user, plain_other;
};

static void on_sample(void *ctx, const struct xsprof_sample *s)
{
	struct seen *v = ctx;

	if ((pid_t)s->tgid == v->mixed) {
		if (s->uid == 0)
			v->mixed_root++;
		else
			v->mixed_other++;
	} else if ((pid_t)s->tgid == v->plain) {
		if (s->uid == NOBODY)
			v->plain_user++;
		else
			v->plain_other++;
	}
}

/* A child that spins with these real, effective and saved uids. */
/* A child spinning under uids r, e, s: returned once it has them (a sample before the change
 * would be root's, rightly). */
static pid_t spinner(uid_t r, uid_t e, uid_t s)
{
	int fds[2];
	char c = 0;
	pid_t pid;

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		close(fds[0]);
		if (setresuid(r, e, s))
			_exit(1);
		if (write(fds[1], "x", 1) != 1)
			_exit(1);
		close(fds[1]);
		for (;;)
			;
	}
	close(fds[1]);
	cr_assert_eq(read(fds[0], &c, 1), 1, "the spinner did not take its uids");
	close(fds[0]);
	return pid;
}

Test(sample_owner, mixed_credentials_belong_to_root, .timeout = 60)
{
	struct sampler_opts so = {.freq_hz = 199};
	struct seen v = {0};
	struct sampler *s = sampler__new(&so, on_sample, &v);
	struct timespec tick = {0, 50 * 1000 * 1000};

	cr_assert(s, "loading the BPF sampler: %s (root and BTF needed)", strerror(errno));
	v.mixed = spinner(NOBODY, 0, 0); /* what a setuid-root program run by nobody has */
	v.plain = spinner(NOBODY, NOBODY, NOBODY);
	cr_assert_eq(sampler__add_pid(s, v.mixed), 0);
	cr_assert_eq(sampler__add_pid(s, v.plain), 0);
	cr_assert_eq(sampler__start(s), 0);
	for (int i = 0; i < 30; i++) {
		nanosleep(&tick, NULL);
		cr_assert_geq(sampler__drain(s), 0);
	}
	sampler__stop(s);
	sampler__drain(s);
	kill(v.mixed, SIGKILL);
	kill(v.plain, SIGKILL);
	waitpid(v.mixed, NULL, 0);
	waitpid(v.plain, NULL, 0);
	sampler__free(s);
	cr_log_info("mixed: %llu root, %llu other; plain: %llu nobody, %llu other\n",
		    (unsigned long long)v.mixed_root, (unsigned long long)v.mixed_other,
		    (unsigned long long)v.plain_user, (unsigned long long)v.plain_other);
	cr_assert_gt(v.mixed_root + v.mixed_other, 20, "the mixed process was hardly sampled");
	cr_assert_gt(v.plain_user + v.plain_other, 20, "the plain process was hardly sampled");
	cr_expect_eq(v.mixed_other, 0, "a process with euid 0 handed to its real uid");
	cr_expect_eq(v.plain_other, 0, "a plain process given another uid");
}
