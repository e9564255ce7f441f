// SPDX-License-Identifier: Apache-2.0
/*
 * The table. Each column was printed with offsetof() by a small C program built against that
 * version's internal headers (Py_BUILD_CORE; internal/pycore_frame.h, pycore_runtime.h,
 * pycore_interp.h): 3.11 from Debian's python3.11-dev (3.11.2) and pyenv's 3.11.7 (the same
 * values), 3.12 from 3.12.1, 3.13 from 3.13.0 (equal to its _Py_DebugOffsets). tests/python
 * runs that program again against the installed headers and compares (ctest python_offsets).
 *
 * 3.11: tstate->cframe->current_frame, frames carry is_entry (the first frame of an
 * _PyEval_EvalFrameDefault activation), prev_instr is the last instruction started.
 * 3.12: as 3.11, but each activation pushes a shim frame owned by the C stack (owner 3) under
 * its first frame instead of is_entry. 3.13: no _PyCFrame (tstate->current_frame), f_executable
 * and instr_ptr in place of f_code and prev_instr.
 * 3.9 and 3.10 (pyenv's 3.9.18 and 3.10.13; Debian 12 packages neither): frames are
 * PyFrameObjects linked by f_back from tstate->frame, each its own _PyEval_EvalFrameDefault
 * activation, with f_lasti (bytes in 3.9, code units in 3.10); a thread state knows its thread
 * by pthread_self() only; code objects have co_name (no co_qualname) and co_lnotab (3.9) or
 * the 3.10 co_linetable.
 * Not walked: before 3.9, 3.14 and later (not checked yet), and free-threaded builds (other
 * object layouts).
 */
#include <errno.h>
#include <stddef.h>

#include "daemon/python/py_offsets.h"

static const struct py_offsets table[] = {
	{
		.major = 3,
		.minor = 9,
		.runtime_interp_head = 32,
		.bpf =
			{
				.version = 0x0309,
				.interp_next = 0,
				.interp_threads_head = 8, /* tstate_head */
				.tstate_next = 8,
				.tstate_native_tid = 176, /* thread_id: pthread_self() */
				.tstate_cframe = XSPROF_PY_NO_OFFSET,
				.current_frame = 24, /* tstate->frame */
				.frame_code = 32,
				.frame_previous = 24, /* f_back */
				.frame_instr = 104,   /* f_lasti */
				.frame_is_entry = XSPROF_PY_NO_OFFSET,
				.frame_owner = 0,
				.code_adaptive = 0,
				.owner_cstack = 0xff,
				.frame_size = 112,
				.code_key = 56, /* co_code .. co_name */
				.frame_kind = XSPROF_PY_FRAME_OBJECT_BYTES,
				.thread_kind = XSPROF_PY_THREAD_PTHREAD,
			},
		.co_filename = 104,
		.co_qualname = 112,  /* co_name */
		.co_linetable = 120, /* co_lnotab */
		.co_firstlineno = 40,
		.lines = PY_LINES_LNOTAB,
		.code_read = 128,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_data = 48,
		.str_compact_data = 72,
		.bytes_size = 16,
		.bytes_data = 32,
		.ob_type = 8,
	},
	{
		.major = 3,
		.minor = 10,
		.runtime_interp_head = 32,
		.bpf =
			{
				.version = 0x030a,
				.interp_next = 0,
				.interp_threads_head = 8, /* tstate_head */
				.tstate_next = 8,
				.tstate_native_tid = 176, /* thread_id: pthread_self() */
				.tstate_cframe = XSPROF_PY_NO_OFFSET,
				.current_frame = 24, /* tstate->frame */
				.frame_code = 32,
				.frame_previous = 24, /* f_back */
				.frame_instr = 96,    /* f_lasti */
				.frame_is_entry = XSPROF_PY_NO_OFFSET,
				.frame_owner = 0,
				.code_adaptive = 0,
				.owner_cstack = 0xff,
				.frame_size = 104,
				.code_key = 56, /* co_code .. co_name */
				.frame_kind = XSPROF_PY_FRAME_OBJECT_UNITS,
				.thread_kind = XSPROF_PY_THREAD_PTHREAD,
			},
		.co_filename = 104,
		.co_qualname = 112, /* co_name */
		.co_linetable = 120,
		.co_firstlineno = 40,
		.lines = PY_LINES_310,
		.code_read = 128,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_data = 48,
		.str_compact_data = 72,
		.bytes_size = 16,
		.bytes_data = 32,
		.ob_type = 8,
	},
	{
		.major = 3,
		.minor = 11,
		.runtime_interp_head = 40,
		.bpf =
			{
				.version = 0x030b,
				.interp_next = 0,
				.interp_threads_head = 16,
				.tstate_next = 8,
				.tstate_native_tid = 160,
				.tstate_cframe = 56,
				.current_frame = 8,
				.frame_code = 32,
				.frame_previous = 48,
				.frame_instr = 56,
				.frame_is_entry = 68,
				.frame_owner = 69,
				.code_adaptive = 184,
				.owner_cstack = 0xff,
				.frame_size = 72,
				.code_key = 72, /* co_firstlineno .. co_qualname */
			},
		.co_filename = 112,
		.co_qualname = 128,
		.co_linetable = 136,
		.co_firstlineno = 72,
		.code_read = 144,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_data = 48,
		.str_compact_data = 72,
		.bytes_size = 16,
		.bytes_data = 32,
		.ob_type = 8,
	},
	{
		.major = 3,
		.minor = 12,
		.runtime_interp_head = 40,
		.bpf =
			{
				.version = 0x030c,
				.interp_next = 0,
				.interp_threads_head = 72,
				.tstate_next = 8,
				.tstate_native_tid = 144,
				.tstate_cframe = 56,
				.current_frame = 0,
				.frame_code = 0,
				.frame_previous = 8,
				.frame_instr = 56,
				.frame_is_entry = XSPROF_PY_NO_OFFSET,
				.frame_owner = 70,
				.code_adaptive = 192,
				.owner_cstack = 3,
				.frame_size = 72,
				.code_key = 68, /* co_firstlineno .. co_qualname */
			},
		.co_filename = 112,
		.co_qualname = 128,
		.co_linetable = 136,
		.co_firstlineno = 68,
		.code_read = 144,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_data = 40,
		.str_compact_data = 56,
		.bytes_size = 16,
		.bytes_data = 32,
		.ob_type = 8,
	},
	{
		.major = 3,
		.minor = 13,
		.runtime_interp_head = 632,
		.bpf =
			{
				.version = 0x030d,
				.interp_next = 7264,
				.interp_threads_head = 7344,
				.tstate_next = 8,
				.tstate_native_tid = 160,
				.tstate_cframe = XSPROF_PY_NO_OFFSET,
				.current_frame = 72,
				.frame_code = 0,
				.frame_previous = 8,
				.frame_instr = 56,
				.frame_is_entry = XSPROF_PY_NO_OFFSET,
				.frame_owner = 70,
				.code_adaptive = 200,
				.owner_cstack = 3,
				.frame_size = 72,
				.code_key = 68, /* co_firstlineno .. co_qualname */
			},
		.co_filename = 112,
		.co_qualname = 128,
		.co_linetable = 136,
		.co_firstlineno = 68,
		.code_read = 144,
		.str_length = 16,
		.str_state = 32,
		.str_ascii_data = 40,
		.str_compact_data = 56,
		.bytes_size = 16,
		.bytes_data = 32,
		.ob_type = 8,
	},
};

int py_offsets__get(unsigned int major, unsigned int minor, const struct py_offsets **ret,
		    const char **ret_reason)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (table[i].major == major && table[i].minor == minor) {
			*ret = &table[i];
			return 0;
		}
	}
	if (major == 3 && minor < 9)
		*ret_reason = "CPython before 3.9 is not walked";
	else if (major == 2)
		*ret_reason = "CPython 2 is not walked";
	else
		*ret_reason = "no checked structure offsets for this CPython version";
	return -ENOTSUP;
}
