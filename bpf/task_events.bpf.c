// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * Process lifetime for the symbolizer: exec, whole-process exit, and the dynamic loader's
 * library changes (start-up, dlopen). A process that lives 20 ms must have its mappings
 * read while it runs, so exec and library records wake the daemon at once instead of waiting for
 * its periodic drain; the daemon does the reading (BPF only says when).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "xsprof_events.h"
#include "shared_maps.bpf.h"
#include "pidns.bpf.h"

#define PF_KTHREAD 0x00200000

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xsprof_proc_stats);
} proc_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, XSPROF_PROC_BUDGET_USERS);
	__type(key, __u32);
	__type(value, struct xsprof_proc_budget);
} proc_budget SEC(".maps");

/* Set by the daemon (mmapped .bss): records are only sent while it listens. */
bool proc_events_on = false;
/* --max-cpu shed exec snapshots (sampler.bpf.c). */
extern bool exec_shed;
/* A session that watches some processes only (--pid, command mode; sampler.bpf.c). */
extern bool pid_filter_on;

static __always_inline struct xsprof_proc_stats *stats(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&proc_stats, &zero);
}

/* Whether the current user may send one more exec or library record this second. */
static __always_inline bool budget_take(void)
{
	__u32 uid = (__u32)bpf_get_current_uid_gid();
	__u64 now = bpf_ktime_get_ns();
	struct xsprof_proc_budget *b, fresh = {.window_ns = now, .sent = 1};

	if (!uid)
		return true;
	b = bpf_map_lookup_elem(&proc_budget, &uid);
	if (!b) {
		bpf_map_update_elem(&proc_budget, &uid, &fresh, BPF_ANY);
		return true;
	}
	/* Two CPUs may both start a new second: a few records more, never fewer. */
	if (now - b->window_ns >= 1000000000ull) {
		b->window_ns = now;
		b->sent = 0;
	}
	return __sync_fetch_and_add(&b->sent, 1) < XSPROF_PROC_RECORDS_PER_USER_S;
}

static __always_inline void send_exec(__u32 flags)
{
	struct xsprof_proc_stats *st = stats();
	struct xsprof_proc_exec *e;
	__u64 id = xsprof_ids();
	__u32 tgid;

	if (!st || !id)
		return;
	/* Only the watched processes' images are worth reading: a --pid or command-mode session
	 * does not snapshot, unwind-load or look for an interpreter in every other program the
	 * machine starts (their children are in the filter from their fork on). */
	tgid = id >> 32;
	if (pid_filter_on && !bpf_map_lookup_elem(&pid_filter, &tgid))
		return;
	if (!budget_take()) {
		st->over_budget++;
		return;
	}
	e = bpf_ringbuf_reserve(&samples, sizeof(*e), 0);
	if (!e) {
		st->drop_ringbuf++;
		return;
	}
	e->type = XSPROF_REC_PROC_EXEC;
	e->tgid = id >> 32;
	e->tid = (__u32)id;
	e->flags = flags;
	e->time_ns = bpf_ktime_get_ns();
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	if (flags & XSPROF_PROC_EXEC_F_LIBS)
		st->libs++;
	else
		st->execs++;
}

/*
 * The start of an exec (Linux 6.10; the daemon does not load this where the tracepoint is
 * missing): until sched_process_exec, a sample whose mm is no longer this one is between two
 * images, and its user registers name neither (sampler.bpf.c).
 */
SEC("tp_btf/sched_prepare_exec")
int BPF_PROG(xsprof_exec_begin, struct task_struct *task, struct linux_binprm *bprm)
{
	__u32 tid = BPF_CORE_READ(task, pid);
	__u64 mm = (__u64)BPF_CORE_READ(task, mm);

	bpf_map_update_elem(&exec_window, &tid, &mm, BPF_ANY);
	return 0;
}

/* After the new image is in place: its executable and the loader are mapped. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(xsprof_proc_exec, struct task_struct *p, pid_t old_pid)
{
	/* A thread that is not the leader takes the leader's pid in the exec (de_thread). */
	__u32 tid = (__u32)old_pid;

	bpf_map_delete_elem(&exec_window, &tid);
	if (proc_events_on && !exec_shed)
		send_exec(0);
	return 0;
}

/*
 * The dynamic loader calls _dl_debug_state (the hook debuggers break on) when it has mapped a
 * program's libraries, and around each dlopen/dlclose: the moment the mappings are worth
 * reading. A uprobe fires only then, unlike a syscall hook that would tax every syscall, and
 * needs no ftrace (some kernels refuse fentry/fexit). Attached to the host's loader.
 */
SEC("uprobe")
int xsprof_proc_libs(struct pt_regs *ctx)
{
	if (proc_events_on && !exec_shed)
		send_exec(XSPROF_PROC_EXEC_F_LIBS);
	return 0;
}

/* Every thread runs this; only the last one of its process ends the process. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(xsprof_proc_exit, struct task_struct *p)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct xsprof_proc_stats *st;
	struct xsprof_proc_exit *e;

	if (!proc_events_on || (BPF_CORE_READ(task, flags) & PF_KTHREAD) || !xsprof_ids())
		return 0;
	/* do_exit() decrements signal->live before this tracepoint; 0: the group is dead. Two
	 * threads exiting together may both see 0: a second exit record is harmless. */
	if (BPF_CORE_READ(task, signal, live.counter) != 0)
		return 0;
	st = stats();
	if (!st)
		return 0;
	e = bpf_ringbuf_reserve(&samples, sizeof(*e), 0);
	if (!e) {
		st->drop_ringbuf++;
		return 0;
	}
	e->type = XSPROF_REC_PROC_EXIT;
	e->tgid = xsprof_ids() >> 32;
	e->time_ns = bpf_ktime_get_ns();
	e->exit_code = (__u32)BPF_CORE_READ(task, exit_code);
	e->pad = 0;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	st->exits++;
	return 0;
}

/* The kernel wants a GPL-compatible licence for the GPL-only helpers: the SPDX line's GPL-2.0. */
char LICENSE[] SEC("license") = "GPL";
