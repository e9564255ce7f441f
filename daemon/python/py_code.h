/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One CPython code object read from a process (process_vm_readv, every length bounded): its
 * qualified name, file, first line and line table, and the line of an instruction offset (the
 * 3.11+ location table, Objects/locations.md in CPython; 3.10's co_linetable and 3.9's
 * co_lnotab, Objects/lnotab_notes.txt of each).
 */
#ifndef XSPROF_DAEMON_PYTHON_PY_CODE_H
#define XSPROF_DAEMON_PYTHON_PY_CODE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct py_offsets;

#define PY_CODE_MAX_NAME      256	  /* longest qualname or file name kept (bytes) */
#define PY_CODE_MAX_LINETABLE (64u << 10) /* longest location table read */

struct py_code {
	char qualname[PY_CODE_MAX_NAME];
	char file[PY_CODE_MAX_NAME];
	int firstlineno;
	uint8_t *linetable; /* malloc'd; NULL when empty or unreadable */
	uint32_t linetable_len;
	uint8_t lines;	    /* the table's format: enum py_lines (py_offsets.h) */
	uint32_t truncated; /* a string or the table was cut at its cap */
};

/* Copy len bytes at addr of pid into buf: 0 or -errno (-EFAULT for a short read). */
int py_mem_read(pid_t pid, uint64_t addr, void *buf, size_t len);

/*
 * Read the code object at addr: 0, -ESRCH (gone), -EFAULT (unreadable), -EINVAL (not a code
 * object: its type is not code_type, when code_type is not 0). ret->linetable is the caller's
 * to free (py_code__release).
 */
int py_code__read(pid_t pid, uint64_t addr, const struct py_offsets *o, uint64_t code_type,
		  struct py_code *ret);
void py_code__release(struct py_code *c);

/* The line of the instruction instr (code units from the first one); firstlineno when the
 * table says none, or for XSPROF_PY_INSTR_NONE. */
int py_code__line(const struct py_code *c, uint32_t instr);

/*
 * "module.qualname (file.py:line)" into buf (NUL-terminated, cut at size). The module is the
 * file's name without ".py" (a package's __init__.py: its directory), "<frozen x>": x; files in
 * angle brackets (<string>) give none. The file is shown without its directory.
 */
void py_code__format(const struct py_code *c, int line, char *buf, size_t size);

#endif
