// SPDX-License-Identifier: Apache-2.0
/* uprobe_multi links (Linux 6.6) through the raw bpf() syscall, for a libbpf that predates them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "daemon/cuda/uprobe_multi.h"
#include "daemon/probes/bpf_margins.h"
#include "daemon/probes/sampler.h"
#include "xsprof.skel.h"

/*
 * union bpf_attr's link_create for BPF_TRACE_UPROBE_MULTI (Linux 6.6), which this libbpf and
 * these uapi headers predate; the numbers are the kernel's.
 */
#define XS_BPF_LINK_CREATE	  28
#define XS_BPF_TRACE_UPROBE_MULTI 48
#define XS_UPROBE_MULTI_RETURN	  1u /* BPF_F_UPROBE_MULTI_RETURN */

struct uprobe_multi_attr {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__aligned_u64 path;
	__aligned_u64 offsets;
	__aligned_u64 ref_ctr_offsets;
	__aligned_u64 cookies;
	__u32 cnt;
	__u32 multi_flags;
	__u32 pid; /* 0: every process */
};

int uprobe_multi__attach(int prog_fd, pid_t pid, const char *path, const unsigned long *offsets,
			 const __u64 *cookies, uint32_t cnt, bool ret)
{
	struct uprobe_multi_attr attr;
	int fd;

	/* Tests: a kernel before Linux 6.6, which loads the programs typed for these links (a
	 * kprobe program's attach type is not checked there) but refuses the link. */
	if (getenv("XSPROF_TEST_NO_UPROBE_MULTI"))
		return -EINVAL;
	memset(&attr, 0, sizeof(attr));
	attr.prog_fd = (__u32)prog_fd;
	attr.attach_type = XS_BPF_TRACE_UPROBE_MULTI;
	attr.path = (uintptr_t)path;
	attr.offsets = (uintptr_t)offsets;
	attr.cookies = (uintptr_t)cookies;
	attr.cnt = cnt;
	attr.multi_flags = ret ? XS_UPROBE_MULTI_RETURN : 0;
	attr.pid = pid > 0 ? (__u32)pid : 0;
	fd = (int)syscall(__NR_bpf, XS_BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}

/* Make map (of the second instance) the same map as the sampler's instance's. */
static int share_map(struct xsprof_bpf *main, struct bpf_map *map)
{
	struct bpf_map *same = bpf_object__find_map_by_name(main->obj, bpf_map__name(map));

	return same ? bpf_map__reuse_fd(map, bpf_map__fd(same)) : -ENOENT;
}

/*
 * An instance of the skeleton sharing every map of main's, with only the CUDA programs of want
 * (SAMPLER_PROG_BITs of CUDA_CALL, CUDA_RET, USDT_LAUNCH, USDT_SCOPE) loaded; multi: the first two typed for
 * uprobe_multi links, else for perf-event uprobes. NULL when the kernel refuses one of them.
 */
struct xsprof_bpf *cuda_progs__open(struct xsprof_bpf *main, uint32_t want, bool multi)
{
	struct xsprof_bpf *m = xsprof_bpf__open();
	struct bpf_program *p;
	struct bpf_map *map;

	if (!m)
		return NULL;
	for (p = bpf_object__next_program(m->obj, NULL); p; p = bpf_object__next_program(m->obj, p))
		bpf_program__set_autoload(
			p, (p == m->progs.xsprof_cuda_call &&
			    (want & SAMPLER_PROG_BIT(SAMPLER_PROG_CUDA_CALL))) ||
				   (p == m->progs.xsprof_cuda_ret &&
				    (want & SAMPLER_PROG_BIT(SAMPLER_PROG_CUDA_RET))) ||
				   (p == m->progs.xsprof_usdt_launch &&
				    (want & SAMPLER_PROG_BIT(SAMPLER_PROG_USDT_LAUNCH))) ||
				   (p == m->progs.xsprof_usdt_scope &&
				    (want & SAMPLER_PROG_BIT(SAMPLER_PROG_USDT_SCOPE))));
	if (multi) {
		bpf_program__set_expected_attach_type(
			m->progs.xsprof_cuda_call, (enum bpf_attach_type)XS_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(
			m->progs.xsprof_cuda_ret, (enum bpf_attach_type)XS_BPF_TRACE_UPROBE_MULTI);
	}
	sampler__test_refusal(m);
	for (map = bpf_object__next_map(m->obj, NULL); map; map = bpf_object__next_map(m->obj, map))
		if (share_map(main, map))
			goto fail;
	if (bpf_margins__env_prepare(m->obj))
		goto fail;
	if (xsprof_bpf__load(m)) {
		bpf_margins__env_report(m->obj);
		goto fail;
	}
	bpf_margins__env_report(m->obj);
	return m;
fail:
	xsprof_bpf__destroy(m);
	return NULL;
}
