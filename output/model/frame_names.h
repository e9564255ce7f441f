/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading the frames the daemon names (daemon/stacks): a Python frame is
 * "module.function (file.py:line)", a native one its symbol, either maybe followed by
 * " (file:line)". For the reports that name a place in words (the GPU and job reports' wait
 * chains).
 */
#ifndef XSPROF_OUTPUT_MODEL_FRAME_NAMES_H
#define XSPROF_OUTPUT_MODEL_FRAME_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/* Whether frame is a Python frame. */
bool frame__is_python(const char *frame);
/* The length of frame's function: its name without " (file:line)". */
size_t frame__fn_len(const char *frame);
/* Whether frames (n of them) hold a frame of function fn (its length len). */
bool frame__has_fn(const char *const *frames, size_t n, const char *fn, size_t len);
/*
 * Where a thread waited, from its stack (outermost first, n frames), into buf, as
 * "IN (called from USER)": its innermost Python frame and, when that is in a library, the
 * program's own line that called into it (the innermost frame in the file of the outermost
 * Python frame); with no Python frame, its innermost frame that is not the kernel's nor a
 * reserved name (starting with '_': the C library's insides) and that frame's caller. buf.
 */
const char *frame__wait_site(const char *const *frames, size_t n, char *buf, size_t size);

#endif
