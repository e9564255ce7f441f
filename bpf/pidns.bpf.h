/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * Process ids as the daemon sees them. bpf_get_current_pid_tgid() gives ids in the initial pid
 * namespace; a daemon running in another one (a container, systemd in a fresh namespace) reads
 * /proc with its own ids. The daemon fills `pidns` with its namespace (nsfs dev and inode) only
 * then; tasks outside that namespace get their host ids and a false return, so the daemon never
 * looks their ids up in its /proc, where they would name another process or none.
 *
 * sampler.bpf.c defines the map (XSPROF_PIDNS_OWNER); the other programs share it (__weak).
 */
#ifndef XSPROF_BPF_PIDNS_BPF_H
#define XSPROF_BPF_PIDNS_BPF_H

struct xsprof_pidns {
	__u64 dev;
	__u64 ino; /* 0: the daemon is in the initial pid namespace */
};

#ifdef XSPROF_PIDNS_OWNER
#define XSPROF_PIDNS_LINKAGE
#else
#define XSPROF_PIDNS_LINKAGE __weak
#endif

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xsprof_pidns);
} pidns SEC(".maps") XSPROF_PIDNS_LINKAGE;

/* tgid << 32 | tid of the current task for the daemon; false when it is outside its namespace. */
static __always_inline bool xsprof_current_ids(__u64 *ret_pid_tgid)
{
	struct bpf_pidns_info info;
	struct xsprof_pidns *ns;
	__u32 zero = 0;

	ns = bpf_map_lookup_elem(&pidns, &zero);
	if (!ns || !ns->ino) {
		*ret_pid_tgid = bpf_get_current_pid_tgid();
		return true;
	}
	if (bpf_get_ns_current_pid_tgid(ns->dev, ns->ino, &info, sizeof(info))) {
		*ret_pid_tgid = bpf_get_current_pid_tgid();
		return false;
	}
	*ret_pid_tgid = (__u64)info.tgid << 32 | info.pid;
	return true;
}

/* The same, 0 for a task outside the daemon's namespace (callers then ignore the event). */
static __always_inline __u64 xsprof_ids(void)
{
	__u64 id;

	return xsprof_current_ids(&id) ? id : 0;
}

/* Deepest pid namespace nesting the kernel allows (MAX_PID_NS_LEVEL). */
#define XSPROF_PIDNS_MAX_LEVEL 32

/*
 * TASK's process id as the daemon sees it, for a task that need not be current (the child at a
 * fork): its leader's id at the level of the daemon's namespace; 0 when it has none there.
 */
static __always_inline __u32 xsprof_task_tgid(struct task_struct *task)
{
	struct xsprof_pidns *ns;
	struct pid *pid;
	unsigned int level;
	__u32 zero = 0;

	ns = bpf_map_lookup_elem(&pidns, &zero);
	if (!ns || !ns->ino)
		return BPF_CORE_READ(task, tgid);
	pid = BPF_CORE_READ(task, group_leader, thread_pid);
	if (!pid)
		return 0;
	level = BPF_CORE_READ(pid, level);
	for (unsigned int l = 0; l < XSPROF_PIDNS_MAX_LEVEL && l <= level; l++) {
		struct upid up;

		if (bpf_probe_read_kernel(&up, sizeof(up), &pid->numbers[l]))
			return 0;
		if (BPF_CORE_READ(up.ns, ns.inum) == ns->ino)
			return up.nr;
	}
	return 0;
}

#endif
