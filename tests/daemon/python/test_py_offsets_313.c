// SPDX-License-Identifier: Apache-2.0
/*
 * Offsets from the interpreter (3.13 on): a live pyenv CPython 3.13's _Py_DebugOffsets, read
 * from its _PyRuntime as the daemon reads it, parsed by py_offsets__from_debug, against
 * offsetof() in that version's own headers; then the same bytes altered, each refused with
 * its reason.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>

#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon/python/py_code.h"
#include "daemon/python/py_detect.h"
#include "daemon/python/py_offsets.h"

static uint8_t runtime[PY_DEBUG_OFFSETS_READ];

/* Start pyenv's python3.13 (waiting on stdin) and copy the start of its _PyRuntime. */
static void read_live(void)
{
	char bin[512];
	struct py_target t;
	const char *why = NULL;
	int in[2], out[2];
	pid_t pid;
	FILE *f;

	f = popen("ls -d /root/.pyenv/versions/3.13.*/bin/python3.13 | tail -1", "r");
	cr_assert(f);
	cr_assert(fgets(bin, sizeof(bin), f), "no pyenv CPython 3.13 under /root/.pyenv");
	pclose(f);
	bin[strcspn(bin, "\n")] = '\0';
	cr_assert(!pipe(in) && !pipe(out));
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		execl(bin, bin, "-c", "import sys\nprint('up', flush=True)\nsys.stdin.read()\n",
		      (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	cr_assert_gt(read(out[0], bin, 3), 0, "python3.13 printed nothing");
	cr_assert_eq(py_detect(NULL, pid, &t, &why), 0, "%s", why ? why : "");
	cr_assert(t.major == 3 && t.minor == 13, "%u.%u", t.major, t.minor);
	cr_assert_eq(py_mem_read(pid, t.runtime, runtime, sizeof(runtime)), 0);
	close(in[1]);
	close(out[0]);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
}

Test(py_offsets, debug_offsets_of_a_live_313)
{
	struct py_offsets o;
	const char *why = NULL;

	read_live();
	cr_assert_eq(py_offsets__from_debug(runtime, sizeof(runtime), &o, &why), 0, "%s", why);
	cr_assert_eq(o.major, 3);
	cr_assert_eq(o.minor, 13);
	cr_assert_eq(o.bpf.version, 0x030d);
	cr_assert_eq(o.runtime_interp_head, offsetof(_PyRuntimeState, interpreters.head));
	cr_assert_eq(o.bpf.interp_next, offsetof(PyInterpreterState, next));
	cr_assert_eq(o.bpf.interp_threads_head, offsetof(PyInterpreterState, threads.head));
	cr_assert_eq(o.bpf.tstate_next, offsetof(PyThreadState, next));
	cr_assert_eq(o.bpf.tstate_native_tid, offsetof(PyThreadState, native_thread_id));
	cr_assert_eq(o.bpf.thread_kind, XSPROF_PY_THREAD_NATIVE_TID);
	cr_assert_eq(o.bpf.tstate_cframe, XSPROF_PY_NO_OFFSET);
	cr_assert_eq(o.bpf.current_frame, offsetof(PyThreadState, current_frame));
	cr_assert_eq(o.bpf.frame_code, offsetof(_PyInterpreterFrame, f_executable));
	cr_assert_eq(o.bpf.frame_previous, offsetof(_PyInterpreterFrame, previous));
	cr_assert_eq(o.bpf.frame_instr, offsetof(_PyInterpreterFrame, instr_ptr));
	cr_assert_eq(o.bpf.frame_owner, offsetof(_PyInterpreterFrame, owner));
	cr_assert_eq(o.bpf.owner_cstack, FRAME_OWNED_BY_CSTACK);
	cr_assert_eq(o.bpf.frame_is_entry, XSPROF_PY_NO_OFFSET);
	cr_assert_geq(o.bpf.frame_size, offsetof(_PyInterpreterFrame, owner) + 1);
	cr_assert_leq(o.bpf.frame_size, 128);
	cr_assert_eq(o.bpf.frame_kind, XSPROF_PY_FRAME_INTERP);
	cr_assert_eq(o.bpf.code_adaptive, offsetof(PyCodeObject, co_code_adaptive));
	cr_assert_eq(o.bpf.code_key, offsetof(PyCodeObject, co_firstlineno));
	/* The key reaches co_qualname's low half (the bytes that differ between objects). */
	cr_assert_geq(o.bpf.code_key + XSPROF_PY_KEY_BYTES,
		      offsetof(PyCodeObject, co_qualname) + 4);
	cr_assert_eq(o.co_filename, offsetof(PyCodeObject, co_filename));
	cr_assert_eq(o.co_qualname, offsetof(PyCodeObject, co_qualname));
	cr_assert_eq(o.co_linetable, offsetof(PyCodeObject, co_linetable));
	cr_assert_eq(o.co_firstlineno, offsetof(PyCodeObject, co_firstlineno));
	cr_assert_eq(o.lines, PY_LINES_LOCATIONS);
	cr_assert_geq(o.code_read, offsetof(PyCodeObject, co_linetable) + 8);
	cr_assert_eq(o.str_length, offsetof(PyASCIIObject, length));
	cr_assert_eq(o.str_state, offsetof(PyASCIIObject, state));
	cr_assert_eq(o.str_ascii_data, sizeof(PyASCIIObject));
	cr_assert_eq(o.str_compact_data, sizeof(PyCompactUnicodeObject));
	cr_assert_eq(o.bytes_size, offsetof(PyVarObject, ob_size));
	cr_assert_eq(o.bytes_data, offsetof(PyBytesObject, ob_sval));
	cr_assert_eq(o.ob_type, offsetof(PyObject, ob_type));
	/* The table holds no 3.13 column: the interpreter is the one source. */
	{
		const struct py_offsets *t;

		cr_assert_eq(py_offsets__get(3, 13, &t, &why), -ENOTSUP);
	}
}

/* The live bytes with one uint64_t field (by its offset in _Py_DebugOffsets) set to v:
 * refused, the reason containing want. */
static void refused(size_t field, uint64_t v, const char *want)
{
	uint8_t b[PY_DEBUG_OFFSETS_READ];
	struct py_offsets o;
	const char *why = NULL;

	memcpy(b, runtime, sizeof(b));
	memcpy(b + field, &v, sizeof(v));
	cr_assert_eq(py_offsets__from_debug(b, sizeof(b), &o, &why), -ENOTSUP,
		     "field %zu = %llu was taken", field, (unsigned long long)v);
	cr_assert(why && strstr(why, want), "reason \"%s\", wanted \"%s\"", why ? why : "", want);
}

Test(py_offsets, debug_offsets_refused_with_a_reason)
{
	const char *why = NULL;
	struct py_offsets o;

	read_live();
	refused(offsetof(_Py_DebugOffsets, cookie), 0x6161616161616161ull, "cookie");
	refused(offsetof(_Py_DebugOffsets, free_threaded), 1, "free-threaded");
	refused(offsetof(_Py_DebugOffsets, version), 0x030e00f0ull, "3.14");
	refused(offsetof(_Py_DebugOffsets, version), 0x030f00a1ull, "not known");
	refused(offsetof(_Py_DebugOffsets, interpreter_frame.owner), 200, "past what the walk");
	refused(offsetof(_Py_DebugOffsets, interpreter_frame.instr_ptr), 60, "aligned");
	refused(offsetof(_Py_DebugOffsets, thread_state.native_thread_id), 1u << 20,
		"past what the walk");
	refused(offsetof(_Py_DebugOffsets, code_object.linetable), 4096, "past what the walk");
	/* Too short a copy. */
	cr_assert_eq(py_offsets__from_debug(runtime, 100, &o, &why), -ENOTSUP);
	cr_assert(strstr(why, "shorter"));
}
