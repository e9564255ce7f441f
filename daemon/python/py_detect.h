/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Finding CPython in a process: the interpreter is the mapped libpython3.X.so (a shared build)
 * or the python3.X executable itself (a static one, like Debian's), whichever holds the
 * _PyRuntime symbol. Its version comes from Py_Version (3.11 on) read from the process, else
 * from the file's name.
 */
#ifndef XSPROF_DAEMON_PYTHON_PY_DETECT_H
#define XSPROF_DAEMON_PYTHON_PY_DETECT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct py_target {
	unsigned int major, minor;
	bool shared;		       /* libpython3.X.so, not the executable */
	uint64_t runtime;	       /* address of _PyRuntime in the process */
	uint64_t eval_start, eval_end; /* _PyEval_EvalFrameDefault; 0, 0 when not found */
	uint64_t code_type;	       /* PyCode_Type; 0 when not found (not checked then) */
	uint64_t text_start, text_end; /* the interpreter file's executable mapping */
};

/*
 * 0 and *ret when pid runs CPython; -ENOENT when it maps no interpreter, -ESRCH when it is gone,
 * -ENOTSUP with *ret_reason (a static string) when it does but cannot be read (no _PyRuntime,
 * a free-threaded build, a version that cannot be told). proc_root: "/proc" when NULL.
 */
int py_detect(const char *proc_root, pid_t pid, struct py_target *ret, const char **ret_reason);

/* Parse an interpreter file's name: "python3.11", "libpython3.11.so.1.0", "python3.13t".
 * true when it is one; *ret_ft: free-threaded ('t'). major/minor 0 when the name has none. */
bool py_detect__parse_name(const char *base, unsigned int *ret_major, unsigned int *ret_minor,
			   bool *ret_shared, bool *ret_ft);

#endif
