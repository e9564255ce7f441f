// SPDX-License-Identifier: Apache-2.0
/* daemon/python/py_offsets.c's 3.11 column against offsetof() in CPython 3.11's own headers. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>

#include <criterion/criterion.h>
#include <stddef.h>

#include "daemon/python/py_offsets.h"

Test(py_offsets, table_matches_headers_3_11)
{
	const struct py_offsets *o;
	const char *why;

	cr_assert_eq(PY_MAJOR_VERSION, 3);
	cr_assert_eq(PY_MINOR_VERSION, 11);
	cr_assert_eq(py_offsets__get(3, 11, &o, &why), 0);
	cr_assert_eq(o->runtime_interp_head, offsetof(_PyRuntimeState, interpreters.head));
	cr_assert_eq(o->bpf.interp_next, offsetof(PyInterpreterState, next));
	cr_assert_eq(o->bpf.interp_threads_head, offsetof(PyInterpreterState, threads.head));
	cr_assert_eq(o->bpf.tstate_next, offsetof(PyThreadState, next));
	cr_assert_eq(o->bpf.tstate_native_tid, offsetof(PyThreadState, native_thread_id));
	cr_assert_eq(o->bpf.tstate_cframe, offsetof(PyThreadState, cframe));
	cr_assert_eq(o->bpf.current_frame, offsetof(_PyCFrame, current_frame));
	cr_assert_eq(o->bpf.frame_code, offsetof(_PyInterpreterFrame, f_code));
	cr_assert_eq(o->bpf.frame_previous, offsetof(_PyInterpreterFrame, previous));
	cr_assert_eq(o->bpf.frame_instr, offsetof(_PyInterpreterFrame, prev_instr));
	cr_assert_eq(o->bpf.frame_is_entry, offsetof(_PyInterpreterFrame, is_entry));
	cr_assert_eq(o->bpf.frame_owner, offsetof(_PyInterpreterFrame, owner));
	cr_assert_geq(o->bpf.frame_size, offsetof(_PyInterpreterFrame, owner) + 1);
	cr_assert_eq(o->bpf.code_adaptive, offsetof(PyCodeObject, co_code_adaptive));
	cr_assert_eq(o->bpf.code_key, offsetof(PyCodeObject, co_firstlineno));
	cr_assert_geq(o->bpf.code_key + XSPROF_PY_KEY_BYTES,
		      offsetof(PyCodeObject, co_qualname) + 8);
	cr_assert_eq(o->co_filename, offsetof(PyCodeObject, co_filename));
	cr_assert_eq(o->co_qualname, offsetof(PyCodeObject, co_qualname));
	cr_assert_eq(o->co_linetable, offsetof(PyCodeObject, co_linetable));
	cr_assert_eq(o->co_firstlineno, offsetof(PyCodeObject, co_firstlineno));
	cr_assert_geq(o->code_read, offsetof(PyCodeObject, co_linetable) + 8);
	cr_assert_eq(o->str_length, offsetof(PyASCIIObject, length));
	cr_assert_eq(o->str_state, offsetof(PyASCIIObject, state));
	cr_assert_eq(o->str_ascii_data, sizeof(PyASCIIObject));
	cr_assert_eq(o->str_compact_data, sizeof(PyCompactUnicodeObject));
	cr_assert_eq(o->bytes_size, offsetof(PyVarObject, ob_size));
	cr_assert_eq(o->bytes_data, offsetof(PyBytesObject, ob_sval));
	cr_assert_eq(o->ob_type, offsetof(PyObject, ob_type));
}
