/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Each BPF program's margins against the classic verifier limits, read off its own load:
 * the verifier's statistics (instructions processed, states, time, each subprogram's stack
 * depth) and the call graph of the instructions libbpf sent (BPF-to-BPF calls and bpf_loop
 * callbacks), from which the deepest chain's stack is summed as the kernel sums it. Two sums:
 * frames rounded to 32 bytes (Linux before 6.9, and any kernel that interprets) and to 16 (a
 * JIT on 6.9 and later). The limit is 512 bytes for the whole chain; a private stack (6.13+,
 * and not for every program type) is never counted on.
 */
#ifndef XSPROF_PROBES_BPF_MARGINS_H
#define XSPROF_PROBES_BPF_MARGINS_H

#include <stdio.h>

struct bpf_object;

/* The classic limits, and the margin kept below the stack limit. */
#define BPF_MARGINS_STACK_LIMIT 512
#define BPF_MARGINS_STACK_SPARE 64
#define BPF_MARGINS_INSN_LIMIT	1000000

/* Give every program of obj that will load a log buffer at the statistics level. Call between
 * open and load; the buffers live until bpf_margins__report. 0, or -errno. */
int bpf_margins__prepare(struct bpf_object *obj);

/*
 * One line per program that was to load (loaded or refused), as
 * "prog NAME loaded|refused insns N states N peak N time_us N stack32 N stack16 N chain A+B+..."
 * followed by "refusal: ..." lines for a refused one (the verifier's last words). Frees the
 * buffers. Appends to out. 0, or -errno.
 */
int bpf_margins__report(struct bpf_object *obj, FILE *out);

/* XSPROF_BPF_MARGINS=FILE in the environment: prepare before a load, and append the report to
 * FILE after it (bench/bpf_margins.sh reads it). Nothing without it. */
int bpf_margins__env_prepare(struct bpf_object *obj);
void bpf_margins__env_report(struct bpf_object *obj);

#endif
