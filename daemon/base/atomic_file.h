/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one way xsprof writes a file: a hidden temporary file beside it (mode 0666 less the umask),
 * written, flushed and fsynced, then renamed over the path, so a reader sees the old file or the
 * whole new one, never a part.
 */
#ifndef XSPROF_DAEMON_BASE_ATOMIC_FILE_H
#define XSPROF_DAEMON_BASE_ATOMIC_FILE_H

#include <stdint.h>
#include <stdio.h>

/* write(f, ctx) returns 0 or -errno; on any failure the temporary file is removed and path is
 * untouched. 0 or -errno. */
int atomic_file__write(const char *path, int (*write)(FILE *f, void *ctx), void *ctx);
/*
 * The same, writing at most max_bytes (0: no limit): a write past it fails with EFBIG, and so
 * does the call then (nothing left of the file), so a writer fed by profiled processes cannot
 * outgrow its budget before anyone looks.
 */
int atomic_file__write_capped(const char *path, int (*write)(FILE *f, void *ctx), void *ctx,
			      uint64_t max_bytes);
/* The directory holding path synced: a rename into it lasts (errors ignored). */
void atomic_file__sync_dir_of(const char *path);

#endif
