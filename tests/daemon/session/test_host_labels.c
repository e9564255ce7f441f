// SPDX-License-Identifier: Apache-2.0
/*
 * The labels a process carries to the profile stores: job and rank from a fake environment
 * (daemon/base/proc_env.h, each launcher and their precedence), unit, container and Kubernetes
 * pod from fake /proc/PID/cgroup files in the kubelet's two layouts, the pod's name and
 * namespace from a fake /var/log/pods, and the cap on distinct label sets; --job and --rank
 * (job_keep) over those labels, each process counted once.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/base/job_filter.h"
#include "daemon/base/proc_env.h"
#include "daemon/session/host_labels.h"
#include "daemon/session/job_keep.h"

#define UID  "1234abcd-5678-90ef-1234-567890abcdef"
#define UIDU "1234abcd_5678_90ef_1234_567890abcdef"
#define CID  "3f2a9c1b7d0e11112222333344445555666677778888999900001111aaaabbbb"

static struct proc_job job_of(const char *env, size_t len)
{
	struct proc_job j;

	proc_env__job_of(env, len, &j);
	return j;
}

Test(proc_env, torchrun_rank_and_run)
{
	static const char env[] = "PATH=/bin\0RANK=3\0LOCAL_RANK=1\0WORLD_SIZE=8\0"
				  "TORCHELASTIC_RUN_ID=run42\0HOME=/root";
	struct proc_job j = job_of(env, sizeof(env));

	cr_assert_eq(j.rank, 3);
	cr_assert_eq(j.local_rank, 1);
	cr_assert_eq(j.world_size, 8);
	cr_assert_str_eq(j.job_id, "run42");
	cr_assert_str_eq(j.launcher, "torchrun");
}

Test(proc_env, torchrun_under_slurm_takes_torchruns_rank_and_slurms_job)
{
	static const char env[] = "SLURM_JOB_ID=777\0SLURM_PROCID=5\0SLURM_LOCALID=2\0RANK=9\0";
	struct proc_job j = job_of(env, sizeof(env) - 1);

	cr_assert_eq(j.rank, 9);
	cr_assert_eq(j.local_rank, 2);
	cr_assert_str_eq(j.job_id, "777");
	cr_assert_str_eq(j.launcher, "torchrun");
}

Test(proc_env, mpi_pmi_and_nothing)
{
	static const char mpi[] = "OMPI_COMM_WORLD_RANK=4\0OMPI_COMM_WORLD_SIZE=16\0PMI_RANK=1";
	static const char pmi[] = "PMI_RANK=2\0PMI_SIZE=4";
	static const char bad[] = "RANK=x3\0WORLD_SIZE=99999999999\0RANKS=1\0=\0RANK";
	struct proc_job j = job_of(mpi, sizeof(mpi) - 1);

	cr_assert_eq(j.rank, 4);
	cr_assert_eq(j.world_size, 16);
	cr_assert_str_eq(j.launcher, "mpi");
	j = job_of(pmi, sizeof(pmi) - 1);
	cr_assert_eq(j.rank, 2);
	cr_assert_eq(j.world_size, 4);
	cr_assert_str_eq(j.launcher, "pmi");
	/* Not numbers, too big, other names, no value: nothing said. */
	j = job_of(bad, sizeof(bad) - 1);
	cr_assert_eq(j.rank, -1);
	cr_assert_eq(j.world_size, -1);
	cr_assert_null(j.launcher);
	cr_assert_str_eq(j.job_id, "");
}

Test(proc_env, reads_this_process)
{
	struct proc_job j;

	cr_assert_eq(setenv("SLURM_PROCID", "6", 1), 0);
	/* /proc/self/environ is the environment at exec: the test's own, without the setenv. */
	cr_assert_eq(proc_env__job("/proc", (uint32_t)getpid(), &j), 0);
	cr_assert_eq(proc_env__job("/proc", 0, &j), -ENOENT);
}

Test(host_labels, pod_uid_from_both_kubelet_layouts)
{
	char uid[64];

	host_labels__pod_uid("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UIDU
			     ".slice/cri-containerd-" CID ".scope",
			     uid, sizeof(uid));
	cr_assert_str_eq(uid, UID);
	host_labels__pod_uid("/kubepods.slice/kubepods-pod" UIDU ".slice/crio-" CID ".scope", uid,
			     sizeof(uid));
	cr_assert_str_eq(uid, UID);
	host_labels__pod_uid("/kubepods/burstable/pod" UID "/" CID, uid, sizeof(uid));
	cr_assert_str_eq(uid, UID);
	host_labels__pod_uid("/kubepods/pod" UID "/" CID, uid, sizeof(uid));
	cr_assert_str_eq(uid, UID);
	host_labels__pod_uid("/system.slice/podman.service", uid, sizeof(uid));
	cr_assert_str_eq(uid, "");
	host_labels__pod_uid("/user.slice/pod" UID "/x", uid, sizeof(uid));
	cr_assert_str_eq(uid, "", "not a kubepods path");
}

static char root[64];

static void put(const char *rel, const char *data, size_t len)
{
	char path[256], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (slash = strchr(path + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	f = fopen(path, "w");
	cr_assert(f, "%s", path);
	cr_assert_eq(fwrite(data, 1, len, f), len);
	fclose(f);
}

static void setup(void)
{
	static const char env[] = "RANK=3\0WORLD_SIZE=8\0TORCHELASTIC_RUN_ID=job7\0";
	char path[128];

	snprintf(root, sizeof(root), "/tmp/xsprof-labels-XXXXXX");
	cr_assert(mkdtemp(root));
	put("proc/100/cgroup",
	    "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UIDU
	    ".slice/cri-containerd-" CID ".scope\n",
	    strlen("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UIDU
		   ".slice/cri-containerd-" CID ".scope\n"));
	put("proc/100/environ", env, sizeof(env) - 1);
	put("proc/200/cgroup", "0::/system.slice/trainer.service\n",
	    strlen("0::/system.slice/trainer.service\n"));
	put("proc/200/environ", "SLURM_JOB_ID=55\0SLURM_PROCID=1", 30);
	put("proc/300/cgroup", "0::/kubepods/burstable/pod" UID "/" CID "\n",
	    strlen("0::/kubepods/burstable/pod" UID "/" CID "\n"));
	snprintf(path, sizeof(path), "%s/pods", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/pods/ml-team_trainer-0_" UID, root);
	cr_assert_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/pods/other_x_00000000-5678-90ef-1234-567890abcdef", root);
	mkdir(path, 0755);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	cr_assert_eq(system(cmd), 0);
}

static struct host_labels *labels(size_t max_sets)
{
	char proc[96], pods[96];
	struct host_labels *h;

	snprintf(proc, sizeof(proc), "%s/proc", root);
	snprintf(pods, sizeof(pods), "%s/pods", root);
	h = host_labels__new(proc, pods, max_sets);
	cr_assert(h);
	return h;
}

Test(host_labels, pod_container_and_rank, .init = setup, .fini = teardown)
{
	struct host_labels *h = labels(0);
	const char *s = host_labels__of(h, 100);

	cr_assert_str_eq(
		s, "container.id=3f2a9c1b7d0e\x1fk8s.pod.uid=" UID
		   "\x1fk8s.namespace.name=ml-team\x1fk8s.pod.name=trainer-0"
		   "\x1fjob.id=job7\x1fjob.rank=3\x1fjob.world_size=8\x1fjob.launcher=torchrun");
	cr_assert_eq(host_labels__of(h, 100), s, "looked up once, kept");
	cr_assert_str_eq(host_labels__of(h, 200), "systemd.unit=trainer.service\x1fjob.id=55"
						  "\x1fjob.rank=1\x1fjob.launcher=slurm");
	/* cgroupfs layout, no environment to read: the pod only. */
	cr_assert_str_eq(host_labels__of(h, 300),
			 "container.id=3f2a9c1b7d0e\x1fk8s.pod.uid=" UID
			 "\x1fk8s.namespace.name=ml-team\x1fk8s.pod.name=trainer-0");
	/* Gone: nothing known. */
	cr_assert_str_eq(host_labels__of(h, 999), HOST_LABELS_NONE);
	host_labels__free(h);
}

Test(host_labels, distinct_sets_are_capped, .init = setup, .fini = teardown)
{
	struct host_labels *h = labels(2);
	size_t sets;
	uint64_t capped;

	cr_assert_str_neq(host_labels__of(h, 100), HOST_LABELS_CAPPED);
	cr_assert_str_neq(host_labels__of(h, 200), HOST_LABELS_CAPPED);
	cr_assert_str_eq(host_labels__of(h, 300), HOST_LABELS_CAPPED);
	cr_assert_str_eq(host_labels__of(h, 999), HOST_LABELS_CAPPED);
	host_labels__stats(h, &sets, &capped);
	cr_assert_eq(sets, 2);
	cr_assert_eq(capped, 2);
	/* A process with a set already known is not capped. */
	cr_assert_str_neq(host_labels__of(h, 100), HOST_LABELS_CAPPED);
	host_labels__free(h);
}

/* --job job7 --rank 3: process 100 (torchrun rank 3 of job7) only; 200 is Slurm job 55's rank
 * 1, 300 says no job, 999 is gone. Asked again, a process is not counted again. */
Test(job_keep, keeps_by_the_labels_and_counts_each_process_once, .init = setup, .fini = teardown)
{
	struct host_labels *h = labels(0);
	struct job_filter f = {0};
	struct job_keep *k;
	struct job_keep_stats ks;

	cr_assert_eq(job_filter__set_job(&f, "job7"), 0);
	cr_assert_eq(job_filter__set_ranks(&f, "1,3"), 0);
	k = job_keep__new(&f, h);
	cr_assert(k);
	cr_expect(job_keep__accepts(k, 100));
	cr_expect_not(job_keep__accepts(k, 200), "rank 1, but of job 55");
	cr_expect_not(job_keep__accepts(k, 300), "no job said");
	cr_expect_not(job_keep__accepts(k, 999), "gone: nothing said");
	cr_expect(job_keep__accepts(k, 100));
	cr_expect_not(job_keep__accepts(k, 200));
	job_keep__stats(k, &ks);
	cr_expect_eq(ks.kept, 1);
	cr_expect_eq(ks.left_out, 3);
	cr_expect_eq(ks.uncounted, 0);
	job_keep__free(k);
	/* Ranks alone: any job's. */
	f = (struct job_filter){0};
	cr_assert_eq(job_filter__set_ranks(&f, "1"), 0);
	k = job_keep__new(&f, h);
	cr_assert(k);
	cr_expect_not(job_keep__accepts(k, 100));
	cr_expect(job_keep__accepts(k, 200), "Slurm's rank 1");
	job_keep__free(k);
	job_keep__free(NULL);
	host_labels__free(h);
}
