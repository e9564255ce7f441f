// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "daemon/probes/features.h"

const struct kfeature_row kfeature_rows[KF_MAX] = {
	[KF_RINGBUF] = {"ringbuf", "5.8", true, true, "nothing: xsprofd needs the BPF ring buffer"},
	[KF_TP_BTF] = {"tp_btf", "5.5", false, true,
		       "the off-CPU and wall modes and exec events are refused (tracing programs)"},
	[KF_BPF_LOOP] = {"bpf_loop", "5.17", true, true,
			 "nothing yet: the stack walks (unwind tables, Python frames) are built "
			 "on bpf_loop"},
	[KF_TASK_STORAGE] = {"task_storage", "5.11", true, true,
			     "nothing yet: the sampler's object holds the launch probes' "
			     "per-thread maps"},
	[KF_ATTACH_COOKIE] = {"attach_cookie", "5.15", false, true,
			      "the CUDA API uprobes are refused (the cookie says which API fired)"},
	[KF_TASK_PT_REGS] = {"task_pt_regs", "5.15", false, true,
			     "a sample taken in the kernel reads the user stack with bpf_get_stack "
			     "(frame pointers only)"},
	[KF_FIND_VMA] = {"find_vma", "5.17", false, false,
			 "JIT code outside the mappings read at attach is walked by stack scan "
			 "only"},
	[KF_UPROBE_MULTI] = {"uprobe_multi", "6.6", false, false,
			     "one perf-event uprobe per CUDA API (slower to attach and detach)"},
	[KF_USDT_SEMA] = {"usdt_semaphores", "4.20", false, true,
			  "USDT probes guarded by a semaphore stay off (xsprof:launch has none)"},
	[KF_PREPARE_EXEC] = {"sched_prepare_exec", "6.10", false, false,
			     "samples inside an exec keep the old image's user pc (counted)"},
	[KF_UPROBE_NOP5] =
		{"uprobe_nop5", "6.18", false, false,
		 "uprobes trap (int3) on every call instead of a call into a trampoline"},
};

static bool helper(enum bpf_prog_type type, enum bpf_func_id id)
{
	return libbpf_probe_bpf_helper(type, id, NULL) == 1;
}

/* Whether the kernel's BTF names value in enum type (an attach type this libbpf may predate). */
static bool btf_enum_has(const struct btf *btf, const char *type, const char *value)
{
	int id = btf ? btf__find_by_name_kind(btf, type, BTF_KIND_ENUM) : -1;
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	const struct btf_enum *e;

	if (!t)
		return false;
	e = btf_enum(t);
	for (int i = 0; i < btf_vlen(t); i++)
		if (!strcmp(btf__name_by_offset(btf, e[i].name_off), value))
			return true;
	return false;
}

/* A kernel function by name in /proc/kallsyms (a feature with no other trace in user space). */
static bool ksym(const char *name)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[256];
	size_t n = strlen(name);
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		const char *sym = strrchr(line, ' ');

		found = sym && !strncmp(sym + 1, name, n) &&
			(sym[1 + n] == '\n' || sym[1 + n] == '\t' || !sym[1 + n]);
	}
	fclose(f);
	return found;
}

int kfeatures__probe(struct kfeatures *ret)
{
	struct btf *btf = btf__load_vmlinux_btf();
	struct utsname u;
	uint32_t have = 0;

	if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) == 1)
		have |= 1u << KF_RINGBUF;
	/* libbpf cannot probe a tracing program type without a target: the kernel's BTF names
	 * the sched_switch tracepoint's type where tp_btf programs can attach to it. */
	if (btf && btf__find_by_name_kind(btf, "btf_trace_sched_switch", BTF_KIND_TYPEDEF) > 0)
		have |= 1u << KF_TP_BTF;
	if (helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop))
		have |= 1u << KF_BPF_LOOP;
	if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) == 1)
		have |= 1u << KF_TASK_STORAGE;
	if (helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_get_attach_cookie))
		have |= 1u << KF_ATTACH_COOKIE;
	if (helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_task_pt_regs))
		have |= 1u << KF_TASK_PT_REGS;
	if (helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_find_vma))
		have |= 1u << KF_FIND_VMA;
	if (btf_enum_has(btf, "bpf_attach_type", "BPF_TRACE_UPROBE_MULTI"))
		have |= 1u << KF_UPROBE_MULTI;
	if (!access("/sys/bus/event_source/devices/uprobe/format/ref_ctr_offset", F_OK))
		have |= 1u << KF_USDT_SEMA;
	if (btf &&
	    btf__find_by_name_kind(btf, "btf_trace_sched_prepare_exec", BTF_KIND_TYPEDEF) > 0)
		have |= 1u << KF_PREPARE_EXEC;
	if (ksym("arch_uprobe_optimize"))
		have |= 1u << KF_UPROBE_NOP5;
	btf__free(btf);
	ret->have = have;
	ret->release[0] = 0;
	if (!uname(&u))
		snprintf(ret->release, sizeof(ret->release), "%s", u.release);
	return 0;
}

const struct kfeatures *kfeatures__get(void)
{
	static struct kfeatures k;
	static bool probed;

	if (!probed) {
		kfeatures__probe(&k);
		probed = true;
	}
	return &k;
}
