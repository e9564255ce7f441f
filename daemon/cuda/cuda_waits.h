/* SPDX-License-Identifier: Apache-2.0 */
/*
 * CUDA calls that wait for the GPU: stream, event and device (context) synchronize and the
 * blocking copies, runtime and driver; and the calls that allocate GPU memory, whose return
 * says the address. Their entry is probed like every CUDA API (cuda_probes); here are the
 * return probes that time them (bpf/uprobe_cuda_ret.bpf.c), attached on the same files, and
 * their records, kept in the launch store beside the calls.
 */
#ifndef XSPROF_DAEMON_CUDA_CUDA_WAITS_H
#define XSPROF_DAEMON_CUDA_CUDA_WAITS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/xsprof_events.h"

struct bpf_map;
struct bpf_program;
struct cuda_wait_links;
struct launch_store;

/* Whether the API (enum xsprof_cuda_api) waits for the GPU. */
bool cuda_api__waits(unsigned int api);
/* Whether it waits for every stream of the device (device/context and event synchronize, and
 * the blocking copies on the legacy stream), rather than the one stream it names. */
bool cuda_api__waits_all_streams(unsigned int api);

/* How many return probes cuda_wait_links__attach would put on a file with these offsets. */
int cuda_waits__count(const uint64_t *off);

/*
 * Return probes on the waiting APIs of the file at path (offsets: off[api], 0 when absent), for
 * pid (-1: every process). multi_prog: the program loaded for uprobe_multi links (one link for
 * all), or NULL; else, or where the multi link is refused, prog: one perf-event uretprobe each
 * (prog NULL: the multi link's error, or -EOPNOTSUPP). *ret is NULL when the file has no
 * waiting API. Returns how many probes, or -errno (nothing attached).
 */
int cuda_wait_links__attach(const struct bpf_program *multi_prog, const struct bpf_program *prog,
			    pid_t pid, const char *path, const uint64_t *off,
			    struct cuda_wait_links **ret);
void cuda_wait_links__free(struct cuda_wait_links *wl);

/* The wait_stats map's per-CPU counters summed into ret. 0 or -errno. */
int cuda_waits__bpf_stats(const struct bpf_map *map, int ncpu, struct xsprof_wait_stats *ret);

/* One XSPROF_REC_CUDA_WAIT record into ls; -EBADMSG when malformed. */
int cuda_waits__add_record(struct launch_store *ls, const void *data, size_t size);
/* One XSPROF_REC_CUDA_ALLOC record (an allocating call returned) into ls; -EBADMSG when
 * malformed. */
int cuda_waits__add_alloc_record(struct launch_store *ls, const void *data, size_t size);

#endif
