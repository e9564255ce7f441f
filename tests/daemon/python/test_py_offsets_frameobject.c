// SPDX-License-Identifier: Apache-2.0
/*
 * daemon/python/py_offsets.c's 3.9 and 3.10 columns against offsetof() in that version's own
 * headers (pyenv's build; compiled once per version, tests/daemon/python/tests.cmake).
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <frameobject.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>

#include <criterion/criterion.h>
#include <stddef.h>

#include "daemon/python/py_offsets.h"

Test(py_offsets, table_matches_headers_frameobject)
{
	const struct py_offsets *o;
	const char *why;

	cr_assert_eq(PY_MAJOR_VERSION, 3);
	cr_assert(PY_MINOR_VERSION == 9 || PY_MINOR_VERSION == 10);
	cr_assert_eq(py_offsets__get(3, PY_MINOR_VERSION, &o, &why), 0);
	cr_assert_eq(o->bpf.version, 0x0300 | PY_MINOR_VERSION);
	cr_assert_eq(o->runtime_interp_head, offsetof(_PyRuntimeState, interpreters.head));
	cr_assert_eq(o->bpf.interp_next, offsetof(PyInterpreterState, next));
	cr_assert_eq(o->bpf.interp_threads_head, offsetof(PyInterpreterState, tstate_head));
	cr_assert_eq(o->bpf.tstate_next, offsetof(PyThreadState, next));
	cr_assert_eq(o->bpf.thread_kind, XSPROF_PY_THREAD_PTHREAD);
	cr_assert_eq(o->bpf.tstate_native_tid, offsetof(PyThreadState, thread_id));
	cr_assert_eq(o->bpf.tstate_cframe, XSPROF_PY_NO_OFFSET);
	cr_assert_eq(o->bpf.current_frame, offsetof(PyThreadState, frame));
	cr_assert_eq(o->bpf.frame_code, offsetof(PyFrameObject, f_code));
	cr_assert_eq(o->bpf.frame_previous, offsetof(PyFrameObject, f_back));
	cr_assert_eq(o->bpf.frame_instr, offsetof(PyFrameObject, f_lasti));
	cr_assert_geq(o->bpf.frame_size, offsetof(PyFrameObject, f_lasti) + sizeof(int));
	cr_assert_eq(o->bpf.frame_instr % 8, 0, "the walk reads 8-byte aligned words");
	cr_assert_eq(o->bpf.frame_kind, PY_MINOR_VERSION == 9 ? XSPROF_PY_FRAME_OBJECT_BYTES
							      : XSPROF_PY_FRAME_OBJECT_UNITS);
	cr_assert_eq(o->bpf.code_tag_bits, 0);
	/* The code's key covers its file and name (a new code object at a freed one's address is
	 * told apart). */
	cr_assert_leq(o->bpf.code_key, offsetof(PyCodeObject, co_filename));
	cr_assert_geq(o->bpf.code_key + XSPROF_PY_KEY_BYTES, offsetof(PyCodeObject, co_name) + 8);
	cr_assert_leq(o->bpf.code_key + XSPROF_PY_KEY_BYTES, sizeof(PyCodeObject));
	cr_assert_eq(o->co_filename, offsetof(PyCodeObject, co_filename));
	cr_assert_eq(o->co_qualname, offsetof(PyCodeObject, co_name));
#if PY_MINOR_VERSION == 9
	cr_assert_eq(o->co_linetable, offsetof(PyCodeObject, co_lnotab));
	cr_assert_eq(o->lines, PY_LINES_LNOTAB);
#else
	cr_assert_eq(o->co_linetable, offsetof(PyCodeObject, co_linetable));
	cr_assert_eq(o->lines, PY_LINES_310);
#endif
	cr_assert_eq(o->co_firstlineno, offsetof(PyCodeObject, co_firstlineno));
	cr_assert_geq(o->code_read, o->co_linetable + 8);
	cr_assert_eq(o->str_length, offsetof(PyASCIIObject, length));
	cr_assert_eq(o->str_state, offsetof(PyASCIIObject, state));
	cr_assert_eq(o->str_ascii_data, sizeof(PyASCIIObject));
	cr_assert_eq(o->str_compact_data, sizeof(PyCompactUnicodeObject));
	cr_assert_eq(o->bytes_size, offsetof(PyVarObject, ob_size));
	cr_assert_eq(o->bytes_data, offsetof(PyBytesObject, ob_sval));
	cr_assert_eq(o->ob_type, offsetof(PyObject, ob_type));
}
