/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GPU activity as the daemon keeps it: one neutral record per kernel, copy, memset, sync,
 * CUDA API call, NVTX range or graph launch, whatever produced it (today the CUPTI pipe), and
 * a store that holds them per process, oldest first, within a record count and a memory bound.
 *
 * The store also keeps each process's NVTX ranges that are open (their opening arrived,
 * XSPROF_WIRE_F_OPEN, their end not yet), apart from the records, so that a session can end
 * them at its own end; capped per process and in bytes, refusals counted.
 *
 * All times are CLOCK_MONOTONIC ns (the CUPTI pipe converts a sender on another clock).
 * GPU-side times of 0/0 mean CUPTI could not measure them. Fields that do not apply to a
 * kind are 0 unless stated.
 */
#ifndef XSPROF_DAEMON_GPU_GPU_RECORDS_H
#define XSPROF_DAEMON_GPU_GPU_RECORDS_H

#include <stddef.h>
#include <stdint.h>

enum gpu_activity_kind {
	GPU_ACT_KERNEL = 1, /* name, grid, block, device/context/stream, graph ids */
	GPU_ACT_MEMCPY,	    /* bytes, copy_kind, src/dst mem kinds, device/context/stream */
	GPU_ACT_MEMSET,	    /* bytes, device/context/stream */
	GPU_ACT_SYNC,	    /* sync_type, context, stream (GPU_NO_ID when not a stream sync) */
	GPU_ACT_API,	    /* api_domain, api_cbid, tid: a CUDA runtime or driver call (CPU) */
	GPU_ACT_NVTX,	    /* name, domain, tid, nvtx_id: an NVTX range or a mark (start == end) */
	GPU_ACT_GRAPH,	    /* graph_id, device/context/stream: a whole graph launch */
};

#define GPU_NO_ID 0xffffffffu

struct gpu_activity {
	uint8_t kind;	    /* enum gpu_activity_kind */
	uint8_t copy_kind;  /* memcpy: enum xsprof_wire_copy_kind (HTOD, DTOH, ...) */
	uint8_t src_kind;   /* memcpy: enum xsprof_wire_mem_kind; memset: the memory kind */
	uint8_t dst_kind;   /* memcpy: enum xsprof_wire_mem_kind */
	uint8_t api_domain; /* api: 1 driver, 2 runtime (cbids are per domain) */
	uint8_t sync_type;  /* sync: enum xsprof_wire_sync_type */
	uint16_t flags;	    /* XSPROF_WIRE_F_* (async, name truncated, instant, device launch) */
	uint32_t pid;	    /* from SO_PEERCRED, in the daemon's pid namespace */
	uint32_t uid;	    /* the sender's, from SO_PEERCRED: whose share of the store it takes */
	uint32_t tid;	    /* api, nvtx: OS thread id (gettid) */
	uint32_t device;
	uint32_t context;
	uint32_t stream;
	uint32_t correlation_id; /* kernel/memcpy/memset/graph: the launching API's; api: its own */
	uint32_t runtime_correlation_id; /* memcpy: the runtime call's, when it differs */
	uint32_t graph_id;		 /* 0 unless part of a graph */
	uint32_t api_cbid;		 /* api: CUPTI_RUNTIME_TRACE_CBID_* / DRIVER_TRACE_CBID_* */
	uint32_t nvtx_id;
	uint64_t graph_node_id;
	uint64_t start_ns;
	uint64_t end_ns;
	uint64_t bytes; /* memcpy, memset */
	int32_t grid[3];
	int32_t block[3];
	const char *name;   /* kernel: mangled name; nvtx: message; else NULL. See lifetime below */
	const char *domain; /* nvtx: domain name, NULL for the default domain */
	uint64_t seq;	    /* set by gpu_store__add: the order records arrived in, from 1 */
};

struct gpu_store;

struct gpu_store_opts {
	size_t max_records;	 /* 0 = 262144 */
	size_t max_bytes;	 /* records + interned names; 0 = 64 MiB */
	size_t max_pids;	 /* processes with records; 0 = 4096 */
	size_t max_open_per_pid; /* open NVTX ranges per process; 0 = 1024 */
	size_t max_open_bytes;	 /* open NVTX ranges of all processes, names included; 0 = 4 MiB */
};

struct gpu_store_stats {
	uint64_t added;
	uint64_t evicted;  /* oldest records dropped to stay within a cap */
	uint64_t rejected; /* records that could not be stored at all (no memory) */
	size_t records;	   /* held now */
	size_t bytes;	   /* held now, names included */
	size_t pids;	   /* processes with records now */
	size_t names;	   /* distinct interned strings now */
	size_t open;	   /* open NVTX ranges held now */
	size_t open_bytes;
	uint64_t open_refused;	     /* openings past max_open_per_pid or max_open_bytes */
	uint64_t open_ended;	     /* open ranges whose range arrived (the usual end) */
	uint64_t open_ended_at_exit; /* ended by gpu_store__end_open (the sender went away) */
	size_t users;		     /* uids tracked now: with records, open ranges or losses */
	uint64_t users_refused;	     /* records of a uid past GPU_STORE_MAX_USERS: refused */
	size_t spare_bytes; /* memory of records taken, kept for the next (gpu_store__trim) */
};

/*
 * Each sender's uid has a share of the store. When it is full, the oldest record of the uid
 * that holds the most (bytes of records and their names) goes first: a uid flooding the store
 * evicts its own records, never those of one that holds less. Open NVTX ranges: a uid holds at
 * most half of max_open_bytes. At most GPU_STORE_MAX_USERS uids at once (one without records
 * or open ranges makes room); records of another are refused, counted.
 */
#define GPU_STORE_MAX_USERS 64

struct gpu_store_user_stats {
	uint32_t uid;
	size_t records;	       /* held now */
	size_t bytes;	       /* held now: records and their names' lengths */
	size_t open_bytes;     /* open NVTX ranges held now */
	uint64_t evicted;      /* its records evicted (it held the most when the store was full) */
	uint64_t refused;      /* its records refused (no memory) */
	uint64_t open_refused; /* its range openings refused at its share or a process's cap */
};

/* The uids with records or open ranges, at most max into ret; returns how many. */
size_t gpu_store__user_stats(const struct gpu_store *st, struct gpu_store_user_stats *ret,
			     size_t max);

/*
 * Caps for mb MiB: the bytes, and records at GPU_STORE_RECORD_COST each. A record takes 224
 * bytes (its node and the allocator's header; names interned once), a graph's kernel too:
 * nothing is kept per graph or node. bench/README.md states the daemon's bound under bursts.
 */
#define GPU_STORE_RECORD_COST 256
void gpu_store_opts__sized(struct gpu_store_opts *opts, unsigned int mb);

struct gpu_store *gpu_store__new(const struct gpu_store_opts *opts);
void gpu_store__free(struct gpu_store *st);

/*
 * Copy one record in; name and domain are interned (shared between records). Evicts the
 * oldest records, of any process, to stay within the caps. 0, or -ENOMEM (counted).
 * An NVTX opening (XSPROF_WIRE_F_OPEN) is kept among the open ranges instead (one past the
 * caps is refused and counted, and still returns 0); an NVTX range ends the open range it
 * matches (pid, tid, nvtx_id and start).
 */
int gpu_store__add(struct gpu_store *st, const struct gpu_activity *a);

/*
 * Callbacks see records oldest first, of one pid, or of all pids when pid is 0. A record's
 * name and domain stay valid while the record is in the store; copy them to keep them longer.
 * fn returns 0 to go on; anything else stops the walk and is returned.
 */
typedef int (*gpu_activity_fn)(void *ctx, const struct gpu_activity *a);
int gpu_store__for_each(const struct gpu_store *st, uint32_t pid, gpu_activity_fn fn, void *ctx);

/*
 * Hand records over and remove them: each record fn returns 0 for is removed right after the
 * call (its strings too, unless shared); a non-zero return keeps that record and stops.
 */
int gpu_store__take(struct gpu_store *st, uint32_t pid, gpu_activity_fn fn, void *ctx);
/*
 * gpu_store__take of every process's records, oldest first, while they end before before_ns.
 * When none held ends that late, all go at once, without a look at each (a flood's slice).
 */
void gpu_store__take_ended(struct gpu_store *st, uint64_t before_ns);

/*
 * The open NVTX ranges of pid (0: all), oldest first per process, as NVTX records with
 * XSPROF_WIRE_F_OPEN and end == start; names valid until the range ends or is forgotten.
 */
int gpu_store__for_each_open(const struct gpu_store *st, uint32_t pid, gpu_activity_fn fn,
			     void *ctx);

/*
 * pid's sender went away (its connection closed: the process exited, or exec'd): its open
 * ranges can no longer end, so they end at end_ns and are stored as ranges (counted).
 */
void gpu_store__end_open(struct gpu_store *st, uint32_t pid, uint64_t end_ns);

/* Drop every record and open range of pid (the process exited and was reported). */
void gpu_store__forget(struct gpu_store *st, uint32_t pid);

/* The seq of the latest record stored (0: none yet): a reader that has seen up to it asks
 * for those after it next time, each record once however late it came. */
uint64_t gpu_store__last_seq(const struct gpu_store *st);

void gpu_store__stats(const struct gpu_store *st, struct gpu_store_stats *ret);

/* The memory the records taken since the last call left for the next ones, back to malloc
 * (the service's slice that closes on its time: no flood under way). */
void gpu_store__trim(struct gpu_store *st);

#endif
