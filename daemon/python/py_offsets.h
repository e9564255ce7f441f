/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CPython structure offsets the interpreter walk needs, per version. CPython before 3.13
 * publishes none at run time, so they come from a table (py_offsets.c, which says where each
 * column was read and how to check it again); from 3.13 they are read from the interpreter
 * itself, its _Py_DebugOffsets at the start of _PyRuntime, parsed by a reader per minor
 * version (the table's own layout changes between minors).
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
 * The offsets of CPython major.minor from the table (3.9 to 3.12): 0, or -ENOTSUP with
 * *ret_reason saying why that version is not walked from it (its stacks stay native; 3.13 and
 * later: see py_offsets__from_debug).
 */
int py_offsets__get(unsigned int major, unsigned int minor, const struct py_offsets **ret,
		    const char **ret_reason);

/* Bytes at the start of _PyRuntime read for its _Py_DebugOffsets (3.13's takes 584). */
#define PY_DEBUG_OFFSETS_READ 1024

/*
 * The offsets from the interpreter itself (3.13 on): buf holds the first len bytes of the
 * process's _PyRuntime, which starts with _Py_DebugOffsets (its cookie "xdebugpy", the
 * version, the free-threaded flag, then each structure's offsets in a layout of that minor
 * version's own). 0 and *ret filled, or -ENOTSUP with *ret_reason (a static string): no
 * cookie, a free-threaded build, a minor whose layout is not known here, an offset out of
 * the ranges the walk reads.
 */
int py_offsets__from_debug(const void *buf, size_t len, struct py_offsets *ret,
			   const char **ret_reason);

#endif
