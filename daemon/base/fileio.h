/* SPDX-License-Identifier: Apache-2.0 */
/* Whole-file reads for procfs text files, whose st_size is 0 and must be read to EOF. */
#ifndef XSPROF_DAEMON_BASE_FILEIO_H
#define XSPROF_DAEMON_BASE_FILEIO_H

#include <stddef.h>

/*
 * Reads path to EOF into a malloc'd buffer (NUL-terminated; the NUL is not counted in
 * *ret_len). -EFBIG past max_size bytes, else the negative errno of open or read.
 */
int file__read_all(const char *path, size_t max_size, char **ret_buf, size_t *ret_len);

#endif
