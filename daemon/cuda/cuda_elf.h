/* SPDX-License-Identifier: Apache-2.0 */
/* Reading a file's CUDA API entry points, its xsprof:launch site (file offsets, for uprobes) and
 * whether it has xsprof scopes. */
#ifndef XSPROF_DAEMON_CUDA_CUDA_ELF_H
#define XSPROF_DAEMON_CUDA_CUDA_ELF_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bpf/xsprof_events.h"

/* What one ELF file offers: the file offset of each API's entry (0: absent) and the USDT. */
struct cuda_file {
	dev_t dev;
	ino_t ino;
	uint64_t off[XSPROF_CUDA_API_MAX];
	int nr_apis;
	bool usdt;
	uint64_t usdt_off; /* file offset of the xsprof:launch site */
	bool usdt_nop5;	   /* the site is the 5-byte nop the kernel can optimise */
	bool scopes;	   /* xsprof:scope_begin and scope_end sites (xsprof/scope.h) */
};

/* Fill fi (zeroed by the caller) from the ELF file open at fd. -ENOEXEC for a file that is not
 * x86-64 ELF, -ENOMEM. */
int cuda_file__read(int fd, struct cuda_file *fi);
/* The same for the USDT notes only (usdt, scopes), leaving the symbol tables unread. */
int cuda_file__read_notes(int fd, struct cuda_file *fi);

#endif
