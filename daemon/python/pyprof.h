/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Interpreter frames in user stacks: finds the CPython processes among those it is told about
 * (py_detect), hands BPF their offsets (py_procs, bpf/python.bpf.h), and rewrites each record
 * that arrives with interpreter frames so that every frame is a named token
 * (symbolizer__intern_frame) in place of the _PyEval_EvalFrameDefault native frame that runs it:
 * native callers and callees stay where they are. Code objects are read when their first
 * record arrives (the process still runs), cached per process by address, capped, and
 * dropped at exec and exit. A process whose interpreter cannot be read keeps its native stack.
 */
#ifndef XSPROF_DAEMON_PYTHON_PYPROF_H
#define XSPROF_DAEMON_PYTHON_PYPROF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct symbolizer;
struct pyprof;

struct pyprof_opts {
	int procs_fd;	    /* the py_procs BPF hash */
	uint32_t max_procs; /* its max_entries */
	struct symbolizer *sym;
	const char *proc_root; /* "/proc" when NULL */
	size_t max_code_bytes; /* code object cache over every process; 0: 32 MiB */
};

struct pyprof_stats {
	uint64_t processes;	/* CPython processes walked now */
	uint64_t detected;	/* CPython processes found (exec counts again) */
	uint64_t unsupported;	/* found but not walked: their stacks stay native */
	uint64_t procs_full;	/* not walked: the process cap was reached */
	uint64_t debug_offsets; /* walked with offsets read from the interpreter (3.13 on) */
	uint64_t records;	/* records that came with interpreter frames */
	uint64_t frames;	/* interpreter frames placed in stacks */
	uint64_t interleaved;	/* records whose frames replaced the interpreter's native frames */
	uint64_t appended;	/* records without such a native frame: frames put at the root */
	uint64_t truncated;	/* stacks cut at XSPROF_MAX_STACK_DEPTH frames */
	uint64_t unknown_process;   /* records of a process not (or no longer) known: kept native */
	uint64_t code_reads;	    /* code objects read */
	uint64_t code_unreadable;   /* code objects gone or unreadable: "[python] ?" */
	uint64_t code_cache_resets; /* a process's cache dropped at the memory cap */
	uint64_t code_bytes;	    /* cache memory now */
	uint64_t names_full;	    /* frames left out: the symbolizer's frame name table is full */
	uint64_t bad_records;	    /* interpreter frames past the record's end: left out */
	const char *last_reason;    /* why the latest unsupported process is not walked */
	pid_t last_reason_pid;
};

/* NULL with errno set. */
struct pyprof *pyprof__new(const struct pyprof_opts *opts);
void pyprof__free(struct pyprof *p);

/* (Re)detect pid: 0 when it runs a CPython we walk, -ENOENT when it runs none, -ENOTSUP when
 * it runs one we cannot walk (counted, reason kept), -ESRCH when gone, -ENOSPC at the cap. */
int pyprof__add_process(struct pyprof *p, pid_t pid);
/* pid exec'd: its code objects are forgotten and the new image is detected. */
void pyprof__exec(struct pyprof *p, pid_t pid);
/* pid exited: forgotten. */
void pyprof__exit(struct pyprof *p, pid_t pid);

/*
 * A ring buffer record (sample, CUDA call, USDT launch) with interpreter frames rewritten: the
 * frames in its user ips, nr_python 0. Returns the record itself when there is nothing to do,
 * else a copy valid until the next call; *ret_size its size.
 */
const void *pyprof__rewrite(struct pyprof *p, const void *data, size_t size, size_t *ret_size);

void pyprof__stats(const struct pyprof *p, struct pyprof_stats *ret);

#endif
