/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HotSpot's JIT code (the JVM's code cache: anonymous memory, no unwind tables) keeps no frame
 * pointer unless the JVM runs with -XX:+PreserveFramePointer: rbp there is a general register,
 * so a frame-pointer step from Java code lands on whatever frame last set it (the call stub's
 * caller, JavaCalls::call_helper), skipping every Java caller: a wrong caller, worse than none.
 * Such processes are told to BPF (XSPROF_UNWIND_PROC_JIT_NOFP): their walks end at the first
 * JIT frame, marked "[truncated: JIT code without frame pointers]".
 */
#ifndef XSPROF_DAEMON_UNWIND_UNWIND_JVM_H
#define XSPROF_DAEMON_UNWIND_UNWIND_JVM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct proc_maps;

/* Whether the mappings hold HotSpot (libjvm.so). */
bool jvm__maps_hotspot(const struct proc_maps *pm);

/*
 * Whether the JVM's options, in the order HotSpot takes them (JAVA_TOOL_OPTIONS, then
 * JDK_JAVA_OPTIONS and the command line, then _JAVA_OPTIONS), leave PreserveFramePointer off
 * (its default): the last of -XX:+PreserveFramePointer and -XX:-PreserveFramePointer wins.
 * cmdline and env as /proc/PID/cmdline and environ give them (NUL-separated; NULL: unread).
 */
bool jvm__options_leave_fp_off(const char *cmdline, size_t cmdline_len, const char *env,
			       size_t env_len);

/* The same for process pid under proc_root ("/proc" when NULL); unreadable: off. */
bool jvm__jit_without_fp(const char *proc_root, pid_t pid);

#endif
