/* SPDX-License-Identifier: Apache-2.0 */
/* Where this installation's CUDA injection library and ITT collector are. */
#ifndef XSPROF_DAEMON_BASE_CUPTI_LIB_PATH_H
#define XSPROF_DAEMON_BASE_CUPTI_LIB_PATH_H

/*
 * $XSPROF_CUPTI_LIB if set; else BINDIR/../LIBDIR/xsprof/libxsprof_cupti.so relative to our own
 * executable when that file exists (so a /usr package and a /usr/local build both work); else
 * the configured install path. The string is static: valid until the next call.
 */
const char *xsprof_cupti_lib_path(void);
/* The same for the ITT collector: $XSPROF_ITT_LIB, libxsprof_itt.so. */
const char *xsprof_itt_lib_path(void);

#endif
