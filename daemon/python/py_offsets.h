/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CPython structure offsets the interpreter walk needs, per version. CPython before 3.13
 * publishes none at run time, so they come from a table (py_offsets.c, which says where each
 * column was read and how to check it again); 3.13's _Py_DebugOffsets holds the same values
 * for the build, and the table's 3.13 column matches it for the release checked.
 */
#ifndef XSPROF_DAEMON_PYTHON_PY_OFFSETS_H
#define XSPROF_DAEMON_PYTHON_PY_OFFSETS_H

#include <stdint.h>
#include <linux/types.h>

#include "bpf/xsprof_events.h"

/* How a code object's line table maps instructions to lines. */
enum py_lines {
	PY_LINES_LOCATIONS = 0, /* 3.11 on: the location table (Objects/locations.md) */
	PY_LINES_LNOTAB = 1,	/* 3.9 and before: co_lnotab, (byte offset, line) deltas */
	PY_LINES_310 = 2,	/* 3.10: co_linetable, (byte offset, line) deltas, -128 no line */
};

struct py_offsets {
	unsigned int major, minor;
	uint32_t runtime_interp_head; /* _PyRuntime.interpreters.head */
	/* What BPF walks (interp_head is filled per process). */
	struct xsprof_py_proc bpf;
	/* PyCodeObject, read by the daemon (co_qualname: co_name before 3.11, which has none;
	 * co_linetable: co_lnotab in 3.9). */
	uint32_t co_filename, co_qualname, co_linetable, co_firstlineno;
	enum py_lines lines;
	uint32_t code_read; /* bytes of a code object read at once: all of the above inside */
	/* Compact str objects: where their characters start (ASCII, and not ASCII). */
	uint32_t str_length, str_state, str_ascii_data, str_compact_data;
	/* bytes objects. */
	uint32_t bytes_size, bytes_data;
	/* ob_type, to check that an address is a code object. */
	uint32_t ob_type;
};

/*
 * The offsets of CPython major.minor: 0, or -ENOTSUP with *ret_reason saying why that version
 * is not walked (its stacks stay native).
 */
int py_offsets__get(unsigned int major, unsigned int minor, const struct py_offsets **ret,
		    const char **ret_reason);

#endif
