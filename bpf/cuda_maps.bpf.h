/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * Maps the GPU-path programs share: their counters and the processes that sent a record.
 * uprobe_cuda.bpf.c defines them (XSPROF_CUDA_MAPS_OWNER); usdt_launch.bpf.c and watch.bpf.c
 * include them __weak and sort after it (see shared_maps.bpf.h for why order matters).
 */
#ifndef XSPROF_BPF_CUDA_MAPS_BPF_H
#define XSPROF_BPF_CUDA_MAPS_BPF_H

#ifdef XSPROF_CUDA_MAPS_OWNER
#define XSPROF_CUDA_LINKAGE
#else
#define XSPROF_CUDA_LINKAGE __weak
#endif

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xsprof_cuda_stats);
} cuda_stats SEC(".maps") XSPROF_CUDA_LINKAGE;

/* Profiled processes that sent a record: the first one is held (see uprobe_cuda.bpf.c). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tgid */
	__type(value, __u8);
} cuda_seen SEC(".maps") XSPROF_CUDA_LINKAGE;

#endif
