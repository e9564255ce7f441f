// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "bpf/xsprof_events.h"
#include "daemon/python/py_code.h"
#include "daemon/python/py_detect.h"
#include "daemon/python/py_offsets.h"
#include "daemon/python/pyprof.h"
#include "daemon/base/hash.h"
#include "daemon/base/hashmap.h"
#include "daemon/symbolize/symbolizer.h"

#define DEFAULT_CODE_BYTES (32u << 20)
#define MAX_MEMO	   (1u << 18) /* (code, instruction) -> token, per process */
#define UNKNOWN_FRAME	   "[python] ?"

struct code_entry {
	char *qualname, *file; /* NULL: unreadable */
	int firstlineno;
	uint8_t *linetable;
	uint32_t linetable_len;
	uint8_t lines; /* the table's format (py_code) */
};

struct py_proc {
	pid_t pid;
	bool unsupported; /* found, not walked: kept so that it is counted once */
	struct py_target t;
	struct py_offsets off; /* the table's column, or read from the interpreter */
	struct hashmap *codes; /* (address, 0) -> struct code_entry */
	struct hashmap *memo;  /* (code, instruction) -> token */
	size_t code_bytes;
};

struct pyprof {
	struct pyprof_opts o;
	struct hashmap *procs; /* (pid, 0) -> struct py_proc */
	size_t code_bytes, max_code_bytes;
	struct pyprof_stats st;
	union {
		struct xsprof_sample sample;
		struct xsprof_cuda_call call;
		struct xsprof_usdt_launch usdt;
		struct xsprof_offcpu_stack offcpu;
	} buf;
};

struct pyprof *pyprof__new(const struct pyprof_opts *o)
{
	struct pyprof *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->o = *o;
	p->max_code_bytes = o->max_code_bytes ? o->max_code_bytes : DEFAULT_CODE_BYTES;
	p->procs = hashmap__new();
	if (!p->procs) {
		free(p);
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

static void free_code(void *val, void *ctx)
{
	struct code_entry *e = val;

	free(e->qualname);
	free(e->file);
	free(e->linetable);
	free(e);
}

static void drop_codes(struct pyprof *p, struct py_proc *pp)
{
	if (pp->codes) {
		hashmap__for_each(pp->codes, free_code, NULL);
		hashmap__free(pp->codes);
	}
	hashmap__free(pp->memo);
	pp->codes = NULL;
	pp->memo = NULL;
	p->code_bytes -= pp->code_bytes;
	pp->code_bytes = 0;
}

static void drop_codes_cb(void *val, void *ctx)
{
	drop_codes(ctx, val);
}

static void proc_free(struct pyprof *p, struct py_proc *pp)
{
	drop_codes(p, pp);
	free(pp);
}

static void free_proc_cb(void *val, void *ctx)
{
	proc_free(ctx, val);
}

void pyprof__free(struct pyprof *p)
{
	if (!p)
		return;
	hashmap__for_each(p->procs, free_proc_cb, p);
	hashmap__free(p->procs);
	free(p);
}

static void forget(struct pyprof *p, pid_t pid)
{
	struct py_proc *pp = hashmap__remove(p->procs, (uint64_t)pid, 0);
	__u32 key = (__u32)pid;

	if (!pp)
		return;
	if (!pp->unsupported) {
		bpf_map_delete_elem(p->o.procs_fd, &key);
		p->st.processes--;
	}
	proc_free(p, pp);
}

/*
 * Whether pid's executable is named like a CPython interpreter (python3.X, python3, python):
 * a readlink, where reading its mappings costs a file read and a parse, for every process
 * that execs or is first seen. Programs embedding libpython under another name are not walked.
 */
static bool exe_is_python(const struct pyprof *p, pid_t pid)
{
	char path[64], exe[PATH_MAX];
	unsigned int major, minor;
	const char *base;
	bool shared, ft;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%d/exe", p->o.proc_root ? p->o.proc_root : "/proc",
		 (int)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	if (n > 10 && !strcmp(exe + n - 10, " (deleted)"))
		exe[n - 10] = '\0';
	base = strrchr(exe, '/');
	base = base ? base + 1 : exe;
	return py_detect__parse_name(base, &major, &minor, &shared, &ft) && !shared;
}

/* Remember an unsupported process (within the cap) so it is detected and counted once. */
static void mark_unsupported(struct pyprof *p, pid_t pid)
{
	struct py_proc *pp;

	if (hashmap__count(p->procs) >= 2 * (size_t)p->o.max_procs)
		return;
	pp = calloc(1, sizeof(*pp));
	if (!pp)
		return;
	pp->pid = pid;
	pp->unsupported = true;
	if (hashmap__put(p->procs, (uint64_t)pid, 0, pp))
		free(pp);
}

/*
 * The offsets of the CPython t of pid: the table's (before 3.13), else its _Py_DebugOffsets
 * read from the start of its _PyRuntime. 0, -ENOTSUP with *reason, -ESRCH (gone).
 */
static int offsets_of(pid_t pid, const struct py_target *t, struct py_offsets *ret,
		      const char **reason)
{
	uint8_t buf[PY_DEBUG_OFFSETS_READ];
	const struct py_offsets *o;
	int err;

	if (t->major == 3 && t->minor < 13) {
		if (py_offsets__get(t->major, t->minor, &o, reason))
			return -ENOTSUP;
		*ret = *o;
		return 0;
	}
	err = py_mem_read(pid, t->runtime, buf, sizeof(buf));
	if (err == -ESRCH)
		return err;
	if (err) {
		*reason = "_PyRuntime could not be read for its _Py_DebugOffsets";
		return -ENOTSUP;
	}
	if (py_offsets__from_debug(buf, sizeof(buf), ret, reason))
		return -ENOTSUP;
	if (ret->major != t->major || ret->minor != t->minor) {
		*reason = "_Py_DebugOffsets says another version than Py_Version";
		return -ENOTSUP;
	}
	return 0;
}

int pyprof__add_process(struct pyprof *p, pid_t pid)
{
	struct xsprof_py_proc v;
	const char *reason = NULL;
	struct py_offsets off;
	struct py_target t;
	struct py_proc *pp;
	__u32 key = (__u32)pid;
	int err;

	pp = hashmap__get(p->procs, (uint64_t)pid, 0);
	if (pp)
		return pp->unsupported ? -ENOTSUP : 0;
	if (!exe_is_python(p, pid))
		return -ENOENT;
	err = py_detect(p->o.proc_root, pid, &t, &reason);
	if (!err)
		err = offsets_of(pid, &t, &off, &reason);
	if (err == -ENOTSUP) {
		p->st.detected++;
		p->st.unsupported++;
		p->st.last_reason = reason;
		p->st.last_reason_pid = pid;
		mark_unsupported(p, pid);
		return -ENOTSUP;
	}
	if (err)
		return err;
	p->st.detected++;
	if (p->st.processes >= p->o.max_procs) {
		p->st.procs_full++;
		return -ENOSPC;
	}
	pp = calloc(1, sizeof(*pp));
	if (!pp)
		return -ENOMEM;
	pp->pid = pid;
	pp->t = t;
	pp->off = off;
	v = off.bpf;
	v.interp_head = t.runtime + off.runtime_interp_head;
	if (bpf_map_update_elem(p->o.procs_fd, &key, &v, BPF_ANY)) {
		err = errno == E2BIG ? -ENOSPC : -errno;
		if (err == -ENOSPC)
			p->st.procs_full++;
		free(pp);
		return err;
	}
	err = hashmap__put(p->procs, (uint64_t)pid, 0, pp);
	if (err) {
		bpf_map_delete_elem(p->o.procs_fd, &key);
		free(pp);
		return err;
	}
	p->st.processes++;
	if (t.major > 3 || t.minor >= 13)
		p->st.debug_offsets++;
	return 0;
}

void pyprof__exec(struct pyprof *p, pid_t pid)
{
	forget(p, pid);
	pyprof__add_process(p, pid);
}

void pyprof__exit(struct pyprof *p, pid_t pid)
{
	forget(p, pid);
}

/* The code object at addr of pp (key: its identity, xsprof_py_frame), read once (a failure is
 * kept too, as an unnamed entry). */
static struct code_entry *code_of(struct pyprof *p, struct py_proc *pp, uint64_t addr, uint64_t key)
{
	struct code_entry *e;
	struct py_code c;
	size_t bytes;

	if (!pp->codes && !(pp->codes = hashmap__new()))
		return NULL;
	e = hashmap__get(pp->codes, addr, key);
	if (e)
		return e;
	if (p->code_bytes > p->max_code_bytes) {
		/* At the cap: every process starts over (the names made are in the stacks
		 * already, and the frame name table keeps them). */
		hashmap__for_each(p->procs, drop_codes_cb, p);
		p->st.code_cache_resets++;
		if (!(pp->codes = hashmap__new()))
			return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	p->st.code_reads++;
	if (!py_code__read(pp->pid, addr, &pp->off, pp->t.code_type, &c)) {
		e->qualname = strdup(c.qualname);
		e->file = strdup(c.file);
		e->firstlineno = c.firstlineno;
		e->linetable = c.linetable;
		e->linetable_len = c.linetable_len;
		e->lines = c.lines;
	} else {
		p->st.code_unreadable++;
	}
	if (hashmap__put(pp->codes, addr, key, e)) {
		free_code(e, NULL);
		return NULL;
	}
	bytes = sizeof(*e) + 64 + e->linetable_len + (e->qualname ? strlen(e->qualname) + 1 : 0) +
		(e->file ? strlen(e->file) + 1 : 0);
	pp->code_bytes += bytes;
	p->code_bytes += bytes;
	return e;
}

/* The token naming one interpreter frame; 0 when none can be made. */
static uint64_t frame_token(struct pyprof *p, struct py_proc *pp, const struct xsprof_py_frame *f)
{
	struct code_entry *e;
	struct py_code c;
	char name[2 * PY_CODE_MAX_NAME + 64];
	/* The instruction and the code's identity in one key word. */
	uint64_t k2 = (hash_u64(f->key) & ~0xffffffffull) | f->instr, tok;

	if (!pp->memo && !(pp->memo = hashmap__new()))
		return 0;
	tok = (uintptr_t)hashmap__get(pp->memo, f->code, k2);
	if (tok)
		return tok;
	e = code_of(p, pp, f->code, f->key);
	if (e && e->qualname) {
		memset(&c, 0, sizeof(c));
		snprintf(c.qualname, sizeof(c.qualname), "%s", e->qualname);
		snprintf(c.file, sizeof(c.file), "%s", e->file);
		c.firstlineno = e->firstlineno;
		c.linetable = e->linetable;
		c.linetable_len = e->linetable_len;
		c.lines = e->lines;
		py_code__format(&c, py_code__line(&c, f->instr), name, sizeof(name));
	} else {
		snprintf(name, sizeof(name), UNKNOWN_FRAME);
	}
	tok = symbolizer__intern_frame(p->o.sym, name);
	if (!tok) {
		p->st.names_full++;
		return 0;
	}
	/* The memo may have gone with a cache reset in code_of, or be full. */
	if (pp->memo && hashmap__count(pp->memo) >= MAX_MEMO) {
		hashmap__free(pp->memo);
		pp->memo = NULL;
	}
	if (!pp->memo)
		pp->memo = hashmap__new();
	if (pp->memo)
		hashmap__put(pp->memo, f->code, k2, (void *)(uintptr_t)tok);
	return tok;
}

static bool in_range(uint64_t pc, uint64_t start, uint64_t end)
{
	return start && pc >= start && pc < end;
}

/*
 * User frames (innermost first; ips[0] a pc when first_pc, else a return address) merged with
 * the interpreter frames into out (at most XSPROF_MAX_STACK_DEPTH): each run of interpreter
 * frames up to an activation's first one replaces one _PyEval_EvalFrameDefault frame. Frames
 * left over (the native walk ended early, or never met the interpreter loop) go to the root,
 * after the native frames up to the innermost one in the interpreter's code. Returns the count.
 */
static size_t merge(struct pyprof *p, struct py_proc *pp, const __u64 *ips, size_t nu,
		    bool first_pc, const struct xsprof_py_frame *py, size_t npy, __u64 *out)
{
	const size_t max = XSPROF_MAX_STACK_DEPTH;
	size_t n = 0, j = 0, keep = nu;
	bool replaced = false;
	uint64_t tok;

#define PUT(v)                          \
	do {                            \
		if (n < max)            \
			out[n++] = (v); \
		else                    \
			cut = true;     \
	} while (0)
	bool cut = false;

	for (size_t i = 0; i < nu; i++) {
		uint64_t pc = (i == 0 && first_pc) ? ips[i] : ips[i] - 1;

		if (in_range(pc, pp->t.eval_start, pp->t.eval_end)) {
			replaced = true;
			break;
		}
	}
	if (!replaced) {
		/* Frames past a broken frame-pointer chain would end the stack before the
		 * interpreter frames put after them: cut there first. */
		keep = symbolizer__user_depth(p->o.sym, pp->pid, 0, (const uint64_t *)ips, nu);
		for (size_t i = 0; i < keep; i++) {
			uint64_t pc = (i == 0 && first_pc) ? ips[i] : ips[i] - 1;

			if (in_range(pc, pp->t.text_start, pp->t.text_end)) {
				keep = i + 1;
				break;
			}
		}
	}
	for (size_t i = 0; i < keep; i++) {
		uint64_t pc = (i == 0 && first_pc) ? ips[i] : ips[i] - 1;

		if (j < npy && in_range(pc, pp->t.eval_start, pp->t.eval_end)) {
			do {
				tok = frame_token(p, pp, &py[j]);
				if (tok)
					PUT(tok);
				j++;
			} while (j < npy && !(py[j - 1].flags & XSPROF_PY_F_ENTRY));
			continue;
		}
		PUT(ips[i]);
	}
	for (; j < npy; j++) {
		tok = frame_token(p, pp, &py[j]);
		if (tok)
			PUT(tok);
	}
#undef PUT
	p->st.frames += npy;
	if (replaced)
		p->st.interleaved++;
	else
		p->st.appended++;
	if (cut)
		p->st.truncated++;
	return n;
}

/* Interpreter frames of a record at the end of its n used ips; NULL when they do not fit. */
static const struct xsprof_py_frame *frames_at(const void *data, size_t size, size_t hdr, size_t n,
					       size_t npy)
{
	size_t off = hdr + 8 * n;

	if (npy > XSPROF_PY_MAX_FRAMES || off + npy * sizeof(struct xsprof_py_frame) > size)
		return NULL;
	return (const struct xsprof_py_frame *)((const char *)data + off);
}

/*
 * A record's nu user ips with its npy interpreter frames (in the record at hdr + 8 * at) put in
 * place, into out: their count, or -1 for a record too short for its frames (counted).
 */
static ssize_t merged_user(struct pyprof *p, struct py_proc *pp, const void *rec, size_t size,
			   size_t hdr, size_t at, const __u64 *ips, size_t nu, size_t npy,
			   bool first_pc, __u64 *out)
{
	const struct xsprof_py_frame *py = frames_at(rec, size, hdr, at, npy);
	struct xsprof_py_frame frames[XSPROF_PY_MAX_FRAMES];

	if (!py) {
		p->st.bad_records++;
		return -1;
	}
	memcpy(frames, py, npy * sizeof(*py)); /* unaligned on the ring: copied */
	return (ssize_t)merge(p, pp, ips, nu, first_pc, frames, npy, out);
}

static const void *rewrite_sample(struct pyprof *p, struct py_proc *pp,
				  const struct xsprof_sample *s, size_t size, size_t *ret_size)
{
	struct xsprof_sample *o = &p->buf.sample;
	__u64 merged[XSPROF_MAX_STACK_DEPTH];
	ssize_t nu = merged_user(p, pp, s, size, XSPROF_SAMPLE_HDR_SIZE, s->nr_kernel + s->nr_user,
				 s->ips + s->nr_kernel, s->nr_user, s->nr_python, true, merged);

	if (nu < 0)
		return NULL;
	memcpy(o, s, XSPROF_SAMPLE_HDR_SIZE + 8 * s->nr_kernel);
	memcpy(o->ips + s->nr_kernel, merged, nu * 8);
	o->nr_user = (__u16)nu;
	o->nr_python = 0;
	*ret_size = XSPROF_SAMPLE_HDR_SIZE + 8 * (s->nr_kernel + nu);
	return o;
}

static const void *rewrite_call(struct pyprof *p, struct py_proc *pp,
				const struct xsprof_cuda_call *r, size_t size, size_t *ret_size)
{
	struct xsprof_cuda_call *o = &p->buf.call;
	__u64 merged[XSPROF_MAX_STACK_DEPTH];
	ssize_t nu = merged_user(p, pp, r, size, XSPROF_CUDA_CALL_HDR_SIZE, r->nr_user, r->ips,
				 r->nr_user, r->nr_python, false, merged);

	if (nu < 0)
		return NULL;
	memcpy(o, r, XSPROF_CUDA_CALL_HDR_SIZE);
	memcpy(o->ips, merged, nu * 8);
	o->nr_user = (__u16)nu;
	o->nr_python = 0;
	*ret_size = XSPROF_CUDA_CALL_HDR_SIZE + 8 * nu;
	return o;
}

static const void *rewrite_usdt(struct pyprof *p, struct py_proc *pp,
				const struct xsprof_usdt_launch *r, size_t size, size_t *ret_size)
{
	struct xsprof_usdt_launch *o = &p->buf.usdt;
	__u64 merged[XSPROF_MAX_STACK_DEPTH];
	ssize_t nu = merged_user(p, pp, r, size, XSPROF_USDT_LAUNCH_HDR_SIZE, r->nr_user, r->ips,
				 r->nr_user, r->nr_python, true, merged);

	if (nu < 0)
		return NULL;
	memcpy(o, r, XSPROF_USDT_LAUNCH_HDR_SIZE);
	memcpy(o->ips, merged, nu * 8);
	o->nr_user = (__u16)nu;
	o->nr_python = 0;
	*ret_size = XSPROF_USDT_LAUNCH_HDR_SIZE + 8 * nu;
	return o;
}

/* A new off-CPU stack: where its thread blocked, Python frames in place (as a sample). */
static const void *rewrite_offcpu(struct pyprof *p, struct py_proc *pp,
				  const struct xsprof_offcpu_stack *r, size_t size,
				  size_t *ret_size)
{
	struct xsprof_offcpu_stack *o = &p->buf.offcpu;
	__u64 merged[XSPROF_MAX_STACK_DEPTH];
	ssize_t nu = merged_user(p, pp, r, size, offsetof(struct xsprof_offcpu_stack, uips),
				 r->nr_user, r->uips, r->nr_user, r->nr_python, true, merged);

	if (nu < 0)
		return NULL;
	memcpy(o, r, sizeof(*o));
	memcpy(o->uips, merged, nu * 8);
	o->nr_user = (__u16)nu;
	o->nr_python = 0;
	*ret_size = sizeof(*o);
	return o;
}

const void *pyprof__rewrite(struct pyprof *p, const void *data, size_t size, size_t *ret_size)
{
	const struct xsprof_sample *s = data;
	const struct xsprof_cuda_call *c = data;
	const struct xsprof_usdt_launch *u = data;
	const struct xsprof_offcpu_stack *oc = data;
	struct py_proc *pp;
	const void *out = NULL;
	uint32_t tgid;

	*ret_size = size;
	if (size < XSPROF_CUDA_CALL_HDR_SIZE)
		return data;
	switch (s->type) {
	case XSPROF_REC_SAMPLE:
		if (size < XSPROF_SAMPLE_HDR_SIZE || !s->nr_python ||
		    s->nr_kernel > XSPROF_MAX_STACK_DEPTH || s->nr_user > XSPROF_MAX_STACK_DEPTH)
			return data;
		tgid = s->tgid;
		break;
	case XSPROF_REC_CUDA_CALL:
		if (c->api == XSPROF_CUDA_LIB_MAPPED || !c->nr_python ||
		    c->nr_user > XSPROF_MAX_STACK_DEPTH)
			return data;
		tgid = c->tgid;
		break;
	case XSPROF_REC_AUTOGRAD: /* a call's layout: its Python frames alone */
		if (!c->nr_python || c->nr_user > XSPROF_MAX_STACK_DEPTH)
			return data;
		tgid = c->tgid;
		break;
	case XSPROF_REC_USDT_LAUNCH:
		if (size < XSPROF_USDT_LAUNCH_HDR_SIZE || !u->nr_python ||
		    u->nr_user > XSPROF_MAX_STACK_DEPTH)
			return data;
		tgid = u->tgid;
		break;
	case XSPROF_REC_OFFCPU:
		if (size < sizeof(*oc) || !oc->nr_python ||
		    oc->nr_kernel > XSPROF_MAX_STACK_DEPTH || oc->nr_user > XSPROF_MAX_STACK_DEPTH)
			return data;
		tgid = oc->tgid;
		break;
	default:
		return data;
	}
	p->st.records++;
	pp = hashmap__get(p->procs, tgid, 0);
	if (!pp || pp->unsupported) {
		p->st.unknown_process++;
		return data; /* the native stack; nr_python is ignored downstream */
	}
	if (s->type == XSPROF_REC_SAMPLE)
		out = rewrite_sample(p, pp, s, size, ret_size);
	else if (s->type == XSPROF_REC_CUDA_CALL || s->type == XSPROF_REC_AUTOGRAD)
		out = rewrite_call(p, pp, c, size, ret_size);
	else if (s->type == XSPROF_REC_OFFCPU)
		out = rewrite_offcpu(p, pp, oc, size, ret_size);
	else
		out = rewrite_usdt(p, pp, u, size, ret_size);
	if (!out) {
		*ret_size = size;
		return data;
	}
	return out;
}

void pyprof__stats(const struct pyprof *p, struct pyprof_stats *ret)
{
	*ret = p->st;
	ret->code_bytes = p->code_bytes;
}
