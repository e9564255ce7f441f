/* SPDX-License-Identifier: Apache-2.0 */
/*
 * How the kernel probes a USDT site in a running process, read from the process's memory: the
 * 5-byte nop xsprof's sites are (cupti_inject/usdt.h) is turned into a call to the uprobe
 * trampoline on kernels that optimise uprobes (Linux 6.18), and into an int3 trap elsewhere.
 */
#ifndef XSPROF_DAEMON_CUDA_USDT_SITE_H
#define XSPROF_DAEMON_CUDA_USDT_SITE_H

#include <stdint.h>
#include <sys/types.h>

enum usdt_site_mode {
	USDT_SITE_UNKNOWN = 0, /* not read (process gone, file not mapped) */
	USDT_SITE_NOP,	       /* the nop is intact: no probe there, or not hit yet */
	USDT_SITE_TRAP,	       /* int3: every hit is a trap */
	USDT_SITE_CALL,	       /* a call into the uprobe trampoline: optimised */
};

const char *usdt_site_mode__name(enum usdt_site_mode mode);

/*
 * The mode of the site at file offset off of the file (dev, ino) as pid maps it. 0, or -ESRCH
 * (gone), -ENOENT (the file is not mapped there executable), -errno of /proc/PID/mem.
 */
int usdt_site__read(pid_t pid, dev_t dev, ino_t ino, uint64_t off, enum usdt_site_mode *ret_mode);

/* The mode the first bytes of a site say (the unit-testable part of usdt_site__read). */
enum usdt_site_mode usdt_site__decode(const uint8_t *insn, size_t len);

#endif
