// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon/uprobe_multi.h"

/* union bpf_attr's link_create for BPF_TRACE_UPROBE_MULTI. */
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

int uprobe_multi__attach(int prog_fd, pid_t pid, const char *path, const unsigned long *offs,
			 const __u64 *cookies, uint32_t n, bool ret)
{
	struct uprobe_multi_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_fd = (__u32)prog_fd;
	attr.attach_type = XS_BPF_TRACE_UPROBE_MULTI;
	attr.path = (uintptr_t)path;
	attr.offsets = (uintptr_t)offs;
	attr.cookies = (uintptr_t)cookies;
	attr.cnt = n;
	attr.multi_flags = ret ? XS_UPROBE_MULTI_RETURN : 0;
	attr.pid = pid > 0 ? (__u32)pid : 0;
	fd = (int)syscall(__NR_bpf, XS_BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}
