/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one way xsprof writes a file: a hidden temporary file beside it (mode 0666 less the umask),
 * written, flushed and fsynced, then renamed over the path, so a reader sees the old file or the
 * whole new one, never a part.
 */
#ifndef XSPROF_DAEMON_BASE_ATOMIC_FILE_H
#define XSPROF_DAEMON_BASE_ATOMIC_FILE_H

#include <stdio.h>

/* write(f, ctx) returns 0 or -errno; on any failure the temporary file is removed and path is
 * untouched. 0 or -errno. */
int atomic_file__write(const char *path, int (*write)(FILE *f, void *ctx), void *ctx);
/* The directory holding path synced: a rename into it lasts (errors ignored). */
void atomic_file__sync_dir_of(const char *path);

#endif
