/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * Maps of the CPU sampler that other programs share: the ring buffer every record goes
 * through and the pid filter. sampler.bpf.c defines them (XSPROF_SAMPLER_MAPS_OWNER); the others
 * include the same definitions __weak, which bpftool gen object merges into the strong ones.
 * libbpf 1.1's linker mis-relocates a __weak map it meets before the strong one ("map relo
 * failed"), so bpf/CMakeLists.txt links sampler.bpf.c first.
 */
#ifndef XSPROF_SHARED_MAPS_BPF_H
#define XSPROF_SHARED_MAPS_BPF_H

#ifdef XSPROF_SAMPLER_MAPS_OWNER
#define XSPROF_SAMPLER_LINKAGE
#else
#define XSPROF_SAMPLER_LINKAGE __weak
#endif

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* resized by the daemon before load */
} samples SEC(".maps") XSPROF_SAMPLER_LINKAGE;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096); /* resized by the daemon before load */
	__type(key, __u32);	   /* tgid */
	__type(value, __u8);
} pid_filter SEC(".maps") XSPROF_SAMPLER_LINKAGE;

/*
 * Threads in an exec, from sched_prepare_exec (before the old image is dropped) to
 * sched_process_exec (the new one is in place): tid -> the mm they had before. A sample finding
 * a different mm is between images (task_events.bpf.c). A hash, not task storage: creating task
 * storage cost 10-40 us per exec here, a preallocated hash update well under 1 us; an exec that
 * dies half-way leaves an entry the LRU recycles.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} exec_window SEC(".maps") XSPROF_SAMPLER_LINKAGE;

#endif
