/* SPDX-License-Identifier: Apache-2.0 */
/* Checks run before loading BPF, each failing with a message that says what to do. */
#ifndef XSPROF_DAEMON_PROBES_PREFLIGHT_H
#define XSPROF_DAEMON_PROBES_PREFLIGHT_H

#include <stdarg.h>
#include <sys/types.h>

#include <bpf/libbpf.h>

/* Privileges and kernel features; 0 or -errno after logging why. */
int preflight__kernel(void);
struct kfeatures;
/* The probed features: a required one missing refuses (one line, -ENOTSUP), each other one
 * missing is said once with what runs in its place. */
int preflight__features(const struct kfeatures *k);
/* The process exists; 0 or -ESRCH/-EPERM after logging. */
/* --tid: the thread exists (logs why not). 0 or -ESRCH. */
int preflight__tid(pid_t tid);
int preflight__pid(pid_t pid);
/* The file can be created where asked (its directory exists and is writable). */
int preflight__output(const char *path);
/* Explain a failure to load or attach BPF. */
void preflight__explain_bpf_error(const char *what, int err);

/* libbpf's messages through our log levels (info and debug ones only with -v): the print hook
 * every mode gives libbpf_set_print. */
int preflight__libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap);

#endif
