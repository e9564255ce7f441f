/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kernel features xsprofd's programs rely on, probed once at start (a feature, never a
 * version: distribution kernels backport), each with what runs in its place where it is
 * missing. One table (features.c) that the log, status, /metrics and the README's kernel table
 * read. The minimum is what nothing replaces: BTF, perf events, the BPF ring buffer (Linux 5.8).
 */
#ifndef XSPROF_DAEMON_PROBES_FEATURES_H
#define XSPROF_DAEMON_PROBES_FEATURES_H

#include <stdbool.h>
#include <stdint.h>

enum kfeature {
	KF_RINGBUF,	  /* BPF_MAP_TYPE_RINGBUF (5.8): required */
	KF_TP_BTF,	  /* BTF-typed tracepoints, tracing programs (5.5) */
	KF_BPF_LOOP,	  /* bpf_loop (5.17) */
	KF_TASK_STORAGE,  /* BPF_MAP_TYPE_TASK_STORAGE (5.11) */
	KF_ATTACH_COOKIE, /* bpf_get_attach_cookie (5.15) */
	KF_TASK_PT_REGS,  /* bpf_task_pt_regs (5.15) */
	KF_FIND_VMA,	  /* bpf_find_vma (5.17) */
	KF_UPROBE_MULTI,  /* uprobe_multi links (6.6) */
	KF_USDT_SEMA,	  /* uprobes with a reference counter: USDT semaphores (4.20) */
	KF_PREPARE_EXEC,  /* the sched_prepare_exec tracepoint (6.10) */
	KF_UPROBE_NOP5,	  /* uprobes on a nop5 turned into calls, not traps (6.17, x86-64) */
	KF_MAX,
};

struct kfeature_row {
	const char *name;    /* as status and /metrics say it */
	const char *since;   /* the mainline release that brought it */
	bool required;	     /* xsprofd refuses to start without it */
	bool loses;	     /* without it a capability is lost, not only slower (a warning) */
	const char *without; /* what runs in its place, or what is lost */
};

/* The table, indexed by enum kfeature. */
extern const struct kfeature_row kfeature_rows[KF_MAX];

struct kfeatures {
	uint32_t have; /* 1 << enum kfeature */
	char release[65];
};

/* Probe each feature (a few tiny programs and maps, ~ms). Fills *ret; 0. */
int kfeatures__probe(struct kfeatures *ret);
static inline bool kfeatures__has(const struct kfeatures *k, enum kfeature f)
{
	return k->have & (1u << f);
}
/* This process's probe, made once (kfeatures__probe on first use). */
const struct kfeatures *kfeatures__get(void);

#endif
