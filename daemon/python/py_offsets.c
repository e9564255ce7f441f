// SPDX-License-Identifier: Apache-2.0
/*
 * The table. Each column was printed with offsetof() by a small C program built against that
 * version's internal headers (Py_BUILD_CORE; internal/pycore_frame.h, pycore_runtime.h,
 * pycore_interp.h): 3.11 from Debian's python3.11-dev (3.11.2) and pyenv's 3.11.7 (the same
 * values), 3.12 from 3.12.1. tests/test_py_offsets*.c compare them with offsetof() in the
 * installed headers (Debian's 3.11, pyenv's 3.9 and 3.10).
 *
 * 3.11: tstate->cframe->current_frame, frames carry is_entry (the first frame of an
 * _PyEval_EvalFrameDefault activation), prev_instr is the last instruction started.
 * 3.12: as 3.11, but each activation pushes a shim frame owned by the C stack (owner 3) under
 * its first frame instead of is_entry.
 * 3.13 on: read from the interpreter (py_offsets__from_debug, below): no _PyCFrame
 * (tstate->current_frame), f_executable and instr_ptr in place of f_code and prev_instr.
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
#include <string.h>

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
	else if (major > 3 || minor >= 13)
		*ret_reason = "CPython 3.13 and later: offsets come from its _Py_DebugOffsets";
	else if (major == 2)
		*ret_reason = "CPython 2 is not walked";
	else
		*ret_reason = "no checked structure offsets for this CPython version";
	return -ENOTSUP;
}

/*
 * _Py_DebugOffsets (Include/internal/pycore_runtime.h in 3.13): every field a uint64_t. The
 * header is the same in every minor so far; the groups after it are laid out per minor. The
 * word index of each field the walk uses, in 3.13's layout.
 */
enum {
	D13_VERSION = 1,
	D13_FREE_THREADED = 2,
	D13_RUNTIME_INTERP_HEAD = 5,   /* runtime_state: size, finalizing, interpreters_head */
	D13_INTERP_NEXT = 8,	       /* interpreter_state: size, id, next, threads_head, ... */
	D13_INTERP_THREADS_HEAD = 9,   /* ... 13 words in all (6 .. 18) */
	D13_TSTATE_NEXT = 21,	       /* thread_state: size, prev, next, interp, */
	D13_TSTATE_CURRENT_FRAME = 23, /* current_frame, thread_id, native_thread_id, ... */
	D13_TSTATE_NATIVE_TID = 25,    /* 9 words (19 .. 27) */
	D13_FRAME_PREVIOUS = 29,       /* interpreter_frame: size, previous, executable, */
	D13_FRAME_EXECUTABLE = 30,     /* instr_ptr, localsplus, owner (28 .. 33) */
	D13_FRAME_INSTR_PTR = 31,
	D13_FRAME_OWNER = 33,
	D13_CODE_FILENAME = 35,	 /* code_object: size, filename, name, qualname, */
	D13_CODE_QUALNAME = 37,	 /* linetable, firstlineno, argcount, localsplusnames, */
	D13_CODE_LINETABLE = 38, /* localspluskinds, co_code_adaptive (34 .. 43) */
	D13_CODE_FIRSTLINENO = 39,
	D13_CODE_ADAPTIVE = 43,
	D13_OBJECT_TYPE = 45, /* pyobject: size, ob_type (44, 45); type_object (46 .. 49), */
	D13_BYTES_SIZE = 65,  /* tuple, list, dict, float, long (50 .. 63); */
	D13_BYTES_SVAL = 66,  /* bytes_object: size, ob_size, ob_sval (64 .. 66) */
	D13_STR_STATE = 68,   /* unicode_object: size, state, length, */
	D13_STR_LENGTH = 69,  /* asciiobject_size (67 .. 70); gc (71, 72) */
	D13_STR_ASCII_SIZE = 70,
	D13_WORDS = 73,
};

/* 3.13's _PyInterpreterFrame owner of the shim frame each activation pushes
 * (FRAME_OWNED_BY_CSTACK, Include/internal/pycore_frame.h): not in the debug offsets. */
#define PY313_OWNER_CSTACK 3
/* PyCompactUnicodeObject past PyASCIIObject since 3.12: utf8_length, utf8. */
#define PY312_COMPACT_EXTRA 16

static uint64_t dword(const uint8_t *buf, unsigned int i)
{
	uint64_t v;

	memcpy(&v, buf + 8 * (size_t)i, sizeof(v));
	return v;
}

static int from_debug_313(const uint8_t *b, struct py_offsets *o, const char **ret_reason)
{
	uint64_t v[] = {
		dword(b, D13_RUNTIME_INTERP_HEAD), dword(b, D13_INTERP_NEXT),
		dword(b, D13_INTERP_THREADS_HEAD), dword(b, D13_TSTATE_NEXT),
		dword(b, D13_TSTATE_NATIVE_TID),   dword(b, D13_TSTATE_CURRENT_FRAME),
		dword(b, D13_CODE_ADAPTIVE),	   dword(b, D13_CODE_FIRSTLINENO),
	};
	uint64_t frame_end = 0, code_end = 0;
	const unsigned int frame_fields[] = {D13_FRAME_PREVIOUS, D13_FRAME_EXECUTABLE,
					     D13_FRAME_INSTR_PTR};
	const unsigned int code_fields[] = {D13_CODE_FILENAME, D13_CODE_QUALNAME,
					    D13_CODE_LINETABLE};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		if (v[i] >= XSPROF_PY_NO_OFFSET) {
			*ret_reason = "_Py_DebugOffsets: an offset past what the walk can hold";
			return -ENOTSUP;
		}
	}
	/* The frame's fields are read from one copy of its first PY_FRAME_READ (128) bytes,
	 * as aligned words; the code object's from one of 256. */
	for (size_t i = 0; i < 3; i++) {
		uint64_t off = dword(b, frame_fields[i]);

		if (off % 8) {
			*ret_reason = "_Py_DebugOffsets: a frame field not 8-byte aligned";
			return -ENOTSUP;
		}
		if (off + 8 > frame_end)
			frame_end = off + 8;
		off = dword(b, code_fields[i]);
		if (off + 8 > code_end)
			code_end = off + 8;
	}
	if (dword(b, D13_FRAME_OWNER) + 1 > frame_end)
		frame_end = dword(b, D13_FRAME_OWNER) + 1;
	frame_end = (frame_end + 7) & ~7ull;
	if (dword(b, D13_CODE_FIRSTLINENO) + 4 > code_end)
		code_end = dword(b, D13_CODE_FIRSTLINENO) + 4;
	if (frame_end > 128 || code_end > 256 ||
	    dword(b, D13_CODE_FIRSTLINENO) + XSPROF_PY_KEY_BYTES > dword(b, D13_CODE_ADAPTIVE) ||
	    dword(b, D13_STR_STATE) < dword(b, D13_STR_LENGTH) ||
	    dword(b, D13_STR_STATE) - dword(b, D13_STR_LENGTH) + 4 > 32 ||
	    dword(b, D13_STR_ASCII_SIZE) > 256 || dword(b, D13_BYTES_SIZE) > 256 ||
	    dword(b, D13_BYTES_SVAL) > 256 || dword(b, D13_OBJECT_TYPE) > 256) {
		*ret_reason = "_Py_DebugOffsets: an offset past what the walk reads";
		return -ENOTSUP;
	}
	memset(o, 0, sizeof(*o));
	o->major = 3;
	o->minor = 13;
	o->runtime_interp_head = (uint32_t)v[0];
	o->bpf.version = 0x030d;
	o->bpf.interp_next = (__u16)v[1];
	o->bpf.interp_threads_head = (__u16)v[2];
	o->bpf.tstate_next = (__u16)v[3];
	o->bpf.tstate_native_tid = (__u16)v[4];
	o->bpf.tstate_cframe = XSPROF_PY_NO_OFFSET;
	o->bpf.current_frame = (__u16)v[5];
	o->bpf.frame_code = (__u16)dword(b, D13_FRAME_EXECUTABLE);
	o->bpf.frame_previous = (__u16)dword(b, D13_FRAME_PREVIOUS);
	o->bpf.frame_instr = (__u16)dword(b, D13_FRAME_INSTR_PTR);
	o->bpf.frame_is_entry = XSPROF_PY_NO_OFFSET;
	o->bpf.frame_owner = (__u16)dword(b, D13_FRAME_OWNER);
	o->bpf.code_adaptive = (__u16)v[6];
	o->bpf.owner_cstack = PY313_OWNER_CSTACK;
	o->bpf.frame_size = (__u8)frame_end;
	o->bpf.code_key = (__u16)v[7]; /* co_firstlineno .. co_qualname */
	o->bpf.frame_kind = XSPROF_PY_FRAME_INTERP;
	o->bpf.thread_kind = XSPROF_PY_THREAD_NATIVE_TID;
	o->co_filename = (uint32_t)dword(b, D13_CODE_FILENAME);
	o->co_qualname = (uint32_t)dword(b, D13_CODE_QUALNAME);
	o->co_linetable = (uint32_t)dword(b, D13_CODE_LINETABLE);
	o->co_firstlineno = (uint32_t)v[7];
	o->lines = PY_LINES_LOCATIONS;
	o->code_read = (uint32_t)code_end;
	o->str_length = (uint32_t)dword(b, D13_STR_LENGTH);
	o->str_state = (uint32_t)dword(b, D13_STR_STATE);
	o->str_ascii_data = (uint32_t)dword(b, D13_STR_ASCII_SIZE);
	o->str_compact_data = o->str_ascii_data + PY312_COMPACT_EXTRA;
	o->bytes_size = (uint32_t)dword(b, D13_BYTES_SIZE);
	o->bytes_data = (uint32_t)dword(b, D13_BYTES_SVAL);
	o->ob_type = (uint32_t)dword(b, D13_OBJECT_TYPE);
	return 0;
}

int py_offsets__from_debug(const void *buf, size_t len, struct py_offsets *ret,
			   const char **ret_reason)
{
	const uint8_t *b = buf;
	uint64_t version;
	unsigned int major, minor;

	if (len < 24 || memcmp(b, "xdebugpy", 8)) {
		*ret_reason = "no _Py_DebugOffsets at the start of _PyRuntime (no \"xdebugpy\" "
			      "cookie)";
		return -ENOTSUP;
	}
	version = dword(b, D13_VERSION);
	major = (unsigned int)(version >> 24);
	minor = (unsigned int)((version >> 16) & 0xff);
	if (dword(b, D13_FREE_THREADED)) {
		*ret_reason = "a free-threaded CPython build: not walked";
		return -ENOTSUP;
	}
	if (major == 3 && minor == 13) {
		if (len < 8 * D13_WORDS) {
			*ret_reason = "_Py_DebugOffsets: shorter than 3.13's";
			return -ENOTSUP;
		}
		return from_debug_313(b, ret, ret_reason);
	}
	if (major == 3 && minor == 14)
		*ret_reason = "CPython 3.14: its _Py_DebugOffsets layout and tagged frame "
			      "references are not read by this xsprof";
	else
		*ret_reason = "a CPython whose _Py_DebugOffsets layout is not known to this xsprof";
	return -ENOTSUP;
}
