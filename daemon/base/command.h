/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Command mode: run a command under the profiler (xsprofd --foreground ... -- CMD ARGS). The
 * child is forked at once and held before its exec until the recording is ready, so nothing it
 * does goes unseen; it runs with CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH set to
 * libxsprof_cupti.so, so CUDA and NVTX load the injection library into it (and its children,
 * which inherit the environment): GPU records, and the program's NVTX ranges; and with
 * INTEL_LIBITTNOTIFY64 set to libxsprof_itt.so, so ITT's static part (oneTBB, oneDNN, the
 * program's own) loads the ITT collector: its ITT tasks as ranges.
 */
#ifndef XSPROF_DAEMON_BASE_COMMAND_H
#define XSPROF_DAEMON_BASE_COMMAND_H

#include <stdbool.h>
#include <sys/types.h>

struct command;

/* The environment variables CUDA and NVTX read, and the one that overrides our library's path. */
#define COMMAND_INJECTION_ENV	   "CUDA_INJECTION64_PATH"
#define COMMAND_NVTX_INJECTION_ENV "NVTX_INJECTION64_PATH"
#define COMMAND_CUPTI_LIB_ENV	   "XSPROF_CUPTI_LIB"
#define COMMAND_ITT_ENV		   "INTEL_LIBITTNOTIFY64"
#define COMMAND_ITT_LIB_ENV	   "XSPROF_ITT_LIB"

/* Where libxsprof_cupti.so is: $XSPROF_CUPTI_LIB if set, else where it is installed. */
const char *command__cupti_lib(void);

/*
 * Fork argv (argv[0] searched in PATH like a shell does), held before exec. inject_lib, when
 * not NULL, becomes the child's CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH; itt_lib, when
 * not NULL, its INTEL_LIBITTNOTIFY64 unless the environment names one already. NULL with
 * errno set: ENOENT when the command is not found, EACCES when it cannot be executed (nothing
 * was forked then).
 */
struct command *command__new(char *const argv[], const char *inject_lib, const char *itt_lib);

pid_t command__pid(const struct command *l);
/* The file the child will execute (argv[0] resolved). */
const char *command__path(const struct command *l);

/* Let the child exec. 0, or -errno when the exec failed (the child exits 127 or 126). */
int command__release(struct command *l);

/* A pidfd: readable once the child has exited. */
int command__fd(const struct command *l);
/*
 * Reap the child: 1 with *ret_status (its exit code, or 128 + the signal that killed it), 0 while
 * it runs (when !block), or -errno. Idempotent once reaped.
 */
int command__reap(struct command *l, bool block, int *ret_status);
bool command__exited(const struct command *l);

/* Send the child sig (nothing once it is reaped). */
int command__kill(struct command *l, int sig);

/*
 * A child never released is killed and reaped; a released one is left to run. (Should xsprofd
 * die before releasing it, the child exits 125 without running the command.)
 */
void command__free(struct command *l);

#endif
