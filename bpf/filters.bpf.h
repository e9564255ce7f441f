/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * Filters besides the pid set, checked in the kernel so filtered-out processes cost next to
 * nothing: a set of threads, a process name (the thread group leader's comm) and a cgroup v2 subtree (a
 * container, a systemd unit). Both are for the current task; sampler.bpf.c defines them
 * (XSPROF_FILTERS_OWNER), the other programs use the same (extern / __weak).
 */
#ifndef XSPROF_BPF_FILTERS_BPF_H
#define XSPROF_BPF_FILTERS_BPF_H

#ifdef XSPROF_FILTERS_OWNER
/* Set between open and load. */
const volatile bool filter_comm_on = false;
const volatile char filter_comm[XSPROF_COMM_LEN] = {};
const volatile bool filter_cgroup_on = false;
const volatile bool filter_tid_on = false;
const volatile bool filter_uid_on = false;
const volatile __u32 filter_uid = 0;
#define XSPROF_FILTERS_LINKAGE
#else
extern const volatile bool filter_comm_on;
extern const volatile char filter_comm[XSPROF_COMM_LEN];
extern const volatile bool filter_cgroup_on;
extern const volatile bool filter_tid_on;
extern const volatile bool filter_uid_on;
extern const volatile __u32 filter_uid;
#define XSPROF_FILTERS_LINKAGE __weak
#endif

/* Slot 0: the cgroup directory (an fd put there by the daemon). */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroup_filter SEC(".maps") XSPROF_FILTERS_LINKAGE;

/* Threads to profile (--tid): ids in the daemon's pid namespace. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} tid_filter SEC(".maps") XSPROF_FILTERS_LINKAGE;

/* Whether the current task passes the thread, name and cgroup filters (the pid set is apart). */
static __always_inline bool xsprof_filters_pass(struct task_struct *task)
{
	if (filter_tid_on) {
		__u32 tid = (__u32)xsprof_ids();

		if (!tid || !bpf_map_lookup_elem(&tid_filter, &tid))
			return false;
	}
	if (filter_comm_on) {
		char comm[XSPROF_COMM_LEN];

		if (BPF_CORE_READ_STR_INTO(&comm, task, group_leader, comm) < 0)
			return false;
		for (int i = 0; i < XSPROF_COMM_LEN; i++) {
			if (comm[i] != filter_comm[i])
				return false;
			if (!comm[i])
				break;
		}
	}
	if (filter_cgroup_on && bpf_current_task_under_cgroup(&cgroup_filter, 0) != 1)
		return false;
	return true;
}

/*
 * Whose record this is: the thread's uid when its real and effective uids agree; root's (0)
 * when they differ, as in a setuid program a user started (its real uid is the user's, but what
 * it runs and reads is root's) or a root process that took on a user's effective uid. The
 * service hands a user only the samples of that user's uid.
 */
static __always_inline __u32 visible_uid(struct task_struct *task)
{
	const struct cred *c = BPF_CORE_READ(task, cred);
	__u32 ruid = BPF_CORE_READ(c, uid.val), euid = BPF_CORE_READ(c, euid.val);

	return ruid == euid ? ruid : 0;
}

/* Records left out because their thread was another user's (filter_uid), per program kind. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xsprof_owner_stats);
} owner_stats SEC(".maps") XSPROF_FILTERS_LINKAGE;

/*
 * A user's recording sees only that user's threads (filter_uid: visible_uid, so a setuid
 * program its processes run is root's, not theirs), whatever the pid set says: descendants are
 * in it by following forks. Whether task passes; what (enum xsprof_owner_kind) is counted when
 * it does not.
 */
static __always_inline bool xsprof_owner_pass(struct task_struct *task, __u32 what)
{
	struct xsprof_owner_stats *st;
	__u32 zero = 0;

	if (!filter_uid_on || visible_uid(task) == filter_uid)
		return true;
	st = bpf_map_lookup_elem(&owner_stats, &zero);
	if (st && what < XSPROF_OWNER_KINDS)
		st->dropped[what]++;
	return false;
}

#endif
