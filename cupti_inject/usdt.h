/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The USDT probes xsprof owns: xsprof:launch (correlation id, CUPTI API id), fired by
 * libxsprof_cupti.so at launch API entry, behind its semaphore. One definition, included by the
 * library and by the test double that stands in for it without a GPU.
 *
 * The probe site is a 5-byte nop (0f 1f 44 00 00) instead of <sys/sdt.h>'s 1-byte one. A uprobe
 * is an int3 trap; Linux 6.18 rewrites a uprobe that sits on exactly this nop into a call to a
 * trampoline (arch_uprobe_optimize) after its first hit, which costs a fraction of the trap. The
 * stapsdt note is sdt.h's own, so every USDT consumer (bpftrace, libbpf, readelf -n) reads the
 * site as before; on other kernels the nop is trapped like the 1-byte one.
 *
 * XSPROF_USDT_INT3 keeps sdt.h's 1-byte nop (the benchmark measures both sites).
 */
#ifndef XSPROF_CUPTI_INJECT_USDT_H
#define XSPROF_CUPTI_INJECT_USDT_H

#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

/* sdt.h expands _SDT_NOP where a probe is used, so redefining it here takes effect. No commas:
 * the instruction passes through sdt.h's macro arguments. */
#if defined(__x86_64__) && !defined(XSPROF_USDT_INT3)
#undef _SDT_NOP
#define _SDT_NOP    \
	.byte 0x0f; \
	.byte 0x1f; \
	.byte 0x44; \
	.byte 0x00; \
	.byte 0x00
#define XSPROF_USDT_SITE_BYTES 5
#else
#define XSPROF_USDT_SITE_BYTES 1
#endif

/* Non-zero while a tracer is attached to xsprof:launch (uprobe semaphore, bumped by the kernel).
 * Defined once, by the file that fires the probe (XSPROF_USDT_DEFINE_SEMAPHORE). */
#ifdef XSPROF_USDT_DEFINE_SEMAPHORE
unsigned short xsprof_launch_semaphore __attribute__((unused)) __attribute__((section(".probes")));
#else
extern unsigned short xsprof_launch_semaphore;
#endif

#define XSPROF_USDT_LAUNCH_ENABLED() \
	__builtin_expect(*(volatile unsigned short *)&xsprof_launch_semaphore, 0)
#define XSPROF_USDT_LAUNCH(corr_id, api) STAP_PROBE2(xsprof, launch, corr_id, api)

#endif
