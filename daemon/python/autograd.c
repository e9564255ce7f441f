// SPDX-License-Identifier: Apache-2.0
/*
 * PyTorch backward work under its forward line (autograd.h says how). The state is bounded:
 * max_procs processes probed, a ring of max_nodes nodes per process (a node older than that is
 * forgotten, and its backward work counted as unknown), max_threads threads followed, and the
 * distinct forward stacks interned once each, up to MAX_FSTACKS.
 */
#include "daemon/python/autograd.h"

#include <bpf/libbpf.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf/xsprof_events.h"
#include "daemon/base/hash.h"
#include "daemon/base/hashmap.h"
#include "daemon/symbolize/elf_symtab.h"
#include "daemon/symbolize/symbolizer.h"

#define DEFAULT_MAX_PROCS   64
#define DEFAULT_MAX_NODES   65536
#define DEFAULT_MAX_THREADS 4096
#define MAX_FSTACKS	    65536
#define MAX_FRAMES	    64 /* forward frames kept per node (innermost first) */
#define EVAL_RING	    16 /* a thread's last nodes run, for samples read late */
#define MARK		    "[backward of] "

enum { L_NODE, L_EVAL, L_EXEC, L_EXEC_END, L_N };

struct ag_slot {
	uint64_t seq;
	uint64_t made_ns; /* when the forward op made it (0: the slot was never used) */
	uint32_t stack;	  /* 1 + index into fstacks; 0: none */
	uint32_t made_tid;
};

struct ag_proc {
	pid_t pid;
	bool probed;
	struct bpf_link *links[L_N];
	struct ag_slot *ring; /* max_nodes, made at the first node */
	/* The process's last backward() call, for its device threads. */
	uint64_t exec_ns, exec_end_ns;
	uint32_t exec_stack;
	/* Nodes run whose number matched a node made, and not: a layout read wrong shows. */
	uint64_t evals_known, evals_missed;
	bool bad_layout;
};

/* A thread's last launch of a kind as walked, for its reuse records. */
struct ag_last {
	bool have, changed; /* changed: the record passed on was not the walked one */
	uint32_t nu;
	char comm[XSPROF_COMM_LEN];
	uint64_t ips[XSPROF_MAX_STACK_DEPTH];
};

struct ag_thread {
	uint32_t tgid, tid;
	int depth; /* backward() calls open on this thread */
	uint64_t exec_ns, exec_end_ns;
	uint32_t exec_stack;
	struct {
		uint64_t ns, seq;
	} evals[EVAL_RING];
	unsigned int nevals;
	struct ag_last last[2]; /* the thread's last CUDA call [0] and xsprof:launch [1] */
};

struct fstack {
	uint32_t n;
	uint64_t tok[]; /* innermost first */
};

struct autograd {
	struct autograd_opts o;
	struct hashmap *procs;	 /* pid -> struct ag_proc */
	struct hashmap *threads; /* tid -> struct ag_thread */
	struct hashmap *fdedup;	 /* (hash, n) -> 1 + index */
	struct hashmap *marked;	 /* token -> its "[backward of] " token */
	struct fstack **fstacks;
	size_t nfstacks;
	uint32_t nprobed;
	union {
		struct xsprof_sample sample;
		struct xsprof_cuda_call call;
		struct xsprof_usdt_launch usdt;
	} out;
	struct autograd_stats st;
	/* autograd__on_timeline's */
	int (*on_pass)(void *ctx, const struct autograd_pass *p);
	int (*on_link)(void *ctx, const struct autograd_link *l);
	void *timeline_ctx;
	char last_error[PATH_MAX + 160];
};

struct autograd *autograd__new(const struct autograd_opts *opts)
{
	struct autograd *ag = calloc(1, sizeof(*ag));

	if (!ag)
		return NULL;
	ag->o = *opts;
	if (!ag->o.max_procs)
		ag->o.max_procs = DEFAULT_MAX_PROCS;
	if (!ag->o.max_nodes || (ag->o.max_nodes & (ag->o.max_nodes - 1)))
		ag->o.max_nodes = DEFAULT_MAX_NODES;
	if (!ag->o.max_threads)
		ag->o.max_threads = DEFAULT_MAX_THREADS;
	ag->procs = hashmap__new();
	ag->threads = hashmap__new();
	ag->fdedup = hashmap__new();
	ag->marked = hashmap__new();
	if (!ag->procs || !ag->threads || !ag->fdedup || !ag->marked) {
		autograd__free(ag);
		return NULL;
	}
	return ag;
}

static void proc_free(struct ag_proc *p)
{
	for (int i = 0; i < L_N; i++)
		bpf_link__destroy(p->links[i]);
	free(p->ring);
	free(p);
}

static void proc_free_cb(void *val, void *ctx)
{
	(void)ctx;
	proc_free(val);
}

static void free_cb(void *val, void *ctx)
{
	(void)ctx;
	free(val);
}

void autograd__free(struct autograd *ag)
{
	if (!ag)
		return;
	if (ag->procs)
		hashmap__for_each(ag->procs, proc_free_cb, NULL);
	hashmap__free(ag->procs);
	if (ag->threads)
		hashmap__for_each(ag->threads, free_cb, NULL);
	hashmap__free(ag->threads);
	hashmap__free(ag->fdedup);
	hashmap__free(ag->marked);
	for (size_t i = 0; i < ag->nfstacks; i++)
		free(ag->fstacks[i]);
	free(ag->fstacks);
	free(ag);
}

/* ---- finding the functions ---- */

/* The file offsets of the three functions in a libtorch (each 0 when not found). */
static int find_functions(const char *path, uint64_t ret[3])
{
	static const char *const want[3] = {AUTOGRAD_SYM_NODE, AUTOGRAD_SYM_EVAL,
					    AUTOGRAD_SYM_EXEC};
	struct elf_symtab *t = elf_symtab__open(path);

	memset(ret, 0, 3 * sizeof(*ret));
	if (!t)
		return errno ? -errno : -EINVAL;
	for (size_t i = 0; i < elf_symtab__count(t); i++) {
		const struct elf_sym *sym = elf_symtab__at(t, i);

		for (int k = 0; k < 3; k++) {
			bool hit = k == 0 ? !strcmp(sym->name, want[k])
					  : !strncmp(sym->name, want[k], strlen(want[k]));

			if (hit && !ret[k] && elf_symtab__vaddr_to_offset(t, sym->addr, &ret[k]))
				ret[k] = 0;
		}
	}
	elf_symtab__free(t);
	return 0;
}

/* The libtorch pid maps (its path as mapped), or false. */
static bool torch_of(pid_t pid, char *path, size_t len)
{
	char fn[64], line[4096];
	bool found = false;
	FILE *f;

	snprintf(fn, sizeof(fn), "/proc/%d/maps", (int)pid);
	f = fopen(fn, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/'), *base, *nl;

		if (!p)
			continue;
		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		base = strrchr(p, '/') + 1;
		if (!strncmp(base, "libtorch_cpu.so", 15) && strlen(p) < len) {
			snprintf(path, len, "%s", p);
			found = true;
		}
	}
	fclose(f);
	return found;
}

static struct ag_proc *proc_get(struct autograd *ag, pid_t pid, bool make)
{
	struct ag_proc *p = hashmap__get(ag->procs, (uint64_t)pid, 0);

	if (p || !make)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	if (hashmap__put(ag->procs, (uint64_t)pid, 0, p)) {
		free(p);
		return NULL;
	}
	return p;
}

static struct bpf_link *attach(struct bpf_program *prog, pid_t pid, const char *path, uint64_t off,
			       bool ret)
{
	LIBBPF_OPTS(bpf_uprobe_opts, uo, .retprobe = ret);

	return bpf_program__attach_uprobe_opts(prog, pid, path, (size_t)off, &uo);
}

int autograd__scan(struct autograd *ag, pid_t pid)
{
	char mapped[PATH_MAX], path[PATH_MAX + 32];
	uint64_t off[3];
	struct ag_proc *p = proc_get(ag, pid, false);
	int err;

	if (p && p->probed)
		return 0;
	if (!torch_of(pid, mapped, sizeof(mapped)))
		return -ENOENT;
	if (ag->nprobed >= ag->o.max_procs) {
		ag->st.procs_capped++;
		return -ENOSPC;
	}
	p = proc_get(ag, pid, true);
	if (!p)
		return -ENOMEM;
	snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid, mapped);
	err = find_functions(path, off);
	if (!err && (!off[0] || !off[1] || !off[2]))
		err = -ENOENT;
	if (!err) {
		p->links[L_NODE] = attach(ag->o.node, pid, path, off[0], true);
		p->links[L_EVAL] = attach(ag->o.eval, pid, path, off[1], false);
		p->links[L_EXEC] = attach(ag->o.exec, pid, path, off[2], false);
		p->links[L_EXEC_END] = attach(ag->o.exec_end, pid, path, off[2], true);
		for (int i = 0; i < L_N; i++)
			if (!p->links[i])
				err = -errno ? -errno : -EINVAL;
	}
	p->probed = true; /* once per process, whatever came of it */
	if (err) {
		ag->st.attach_failed++;
		snprintf(ag->last_error, sizeof(ag->last_error),
			 "pid %d: %s: no autograd probes (%s): its backward work is not put under "
			 "its forward line",
			 (int)pid, mapped,
			 err == -ENOENT ? "its engine's functions are not exported"
					: strerror(-err));
		for (int i = 0; i < L_N; i++) {
			bpf_link__destroy(p->links[i]);
			p->links[i] = NULL;
		}
		return err;
	}
	ag->nprobed++;
	ag->st.procs++;
	return 0;
}

struct gone {
	pid_t pid;
	uint32_t *tids;
	size_t n, cap;
};

static void collect_gone(void *val, void *ctx)
{
	const struct ag_thread *t = val;
	struct gone *g = ctx;
	uint32_t *nt;

	if (t->tgid != (uint32_t)g->pid)
		return;
	if (g->n == g->cap) {
		size_t cap = g->cap ? 2 * g->cap : 16;

		nt = realloc(g->tids, cap * sizeof(*nt));
		if (!nt)
			return; /* left in the table: reused or capped, as any */
		g->tids = nt;
		g->cap = cap;
	}
	g->tids[g->n++] = t->tid;
}

void autograd__exit(struct autograd *ag, pid_t pid)
{
	struct ag_proc *p = hashmap__remove(ag->procs, (uint64_t)pid, 0);
	struct gone g = {.pid = pid};

	if (!p)
		return;
	if (p->probed && p->links[0])
		ag->nprobed--;
	proc_free(p);
	/* Its threads go too: the table's cap is for threads alive. */
	hashmap__for_each(ag->threads, collect_gone, &g);
	for (size_t i = 0; i < g.n; i++)
		free(hashmap__remove(ag->threads, g.tids[i], 0));
	free(g.tids);
}

/* ---- events ---- */

/* The forward stack of tokens (innermost first) interned: 1 + its index, 0 when none. */
static uint32_t fstack_intern(struct autograd *ag, const uint64_t *tok, uint32_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	struct fstack *f, **nv;
	uint64_t probe;
	uintptr_t id;

	if (!n)
		return 0;
	if (n > MAX_FRAMES)
		n = MAX_FRAMES;
	for (uint32_t i = 0; i < n; i++)
		h = hash_u64(h ^ tok[i]);
	for (probe = 0; probe < 8; probe++) {
		id = (uintptr_t)hashmap__get(ag->fdedup, h, ((uint64_t)n << 32) | probe);
		if (!id)
			break;
		f = ag->fstacks[id - 1];
		if (f->n == n && !memcmp(f->tok, tok, n * sizeof(*tok)))
			return (uint32_t)id;
	}
	if (probe == 8)
		return 0;
	if (ag->nfstacks >= MAX_FSTACKS)
		return 0;
	f = malloc(sizeof(*f) + n * sizeof(*tok));
	nv = realloc(ag->fstacks, (ag->nfstacks + 1) * sizeof(*nv));
	if (!f || !nv) {
		free(f);
		if (nv)
			ag->fstacks = nv;
		return 0;
	}
	ag->fstacks = nv;
	f->n = n;
	memcpy(f->tok, tok, n * sizeof(*tok));
	ag->fstacks[ag->nfstacks++] = f;
	id = ag->nfstacks;
	if (hashmap__put(ag->fdedup, h, ((uint64_t)n << 32) | probe, (void *)id))
		return 0;
	ag->st.node_frames++;
	return (uint32_t)id;
}

/* Whether a user-stack value is a Python frame: an interned name that is not a mark. */
static bool is_python(const struct autograd *ag, uint64_t v)
{
	const char *name = symbolizer__frame_name(ag->o.sym, v);

	return name && name[0] != '[';
}

/* The record's Python frames (innermost first) interned. */
static uint32_t frames_of(struct autograd *ag, const struct xsprof_cuda_call *r)
{
	uint64_t tok[MAX_FRAMES];
	uint32_t n = 0;

	for (uint32_t i = 0; i < r->nr_user && n < MAX_FRAMES; i++)
		if (is_python(ag, r->ips[i]))
			tok[n++] = r->ips[i];
	return fstack_intern(ag, tok, n);
}

static struct ag_thread *thread_get(struct autograd *ag, uint32_t tgid, uint32_t tid)
{
	struct ag_thread *t = hashmap__get(ag->threads, tid, 0);

	if (t && t->tgid != tgid) { /* the tid was reused by another process */
		memset(t, 0, sizeof(*t));
		t->tgid = tgid;
		t->tid = tid;
	}
	if (t)
		return t;
	if (hashmap__count(ag->threads) >= ag->o.max_threads) {
		ag->st.threads_capped++;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->tgid = tgid;
	t->tid = tid;
	if (hashmap__put(ag->threads, tid, 0, t)) {
		free(t);
		return NULL;
	}
	return t;
}

static const struct ag_slot *slot_of(const struct autograd *ag, const struct ag_proc *p,
				     uint64_t seq)
{
	const struct ag_slot *s;

	if (!p || !p->ring)
		return NULL;
	s = &p->ring[seq & (ag->o.max_nodes - 1)];
	return s->made_ns && s->seq == seq ? s : NULL;
}

/*
 * A libtorch whose nodes keep their number elsewhere than where the probe reads it: most nodes
 * run then match no node made (a number read from another field). Past 256 nodes run with
 * fewer than half matched, the process's backward work is no longer joined, and said why.
 */
static void check_layout(struct autograd *ag, struct ag_proc *p)
{
	if (p->bad_layout || p->evals_known + p->evals_missed < 256 ||
	    p->evals_known >= p->evals_missed)
		return;
	p->bad_layout = true;
	ag->st.bad_layout++;
	snprintf(ag->last_error, sizeof(ag->last_error),
		 "pid %d: %llu of %llu autograd nodes run matched no node made: this libtorch "
		 "keeps a node's sequence number elsewhere; its backward work is no longer put "
		 "under its forward line",
		 (int)p->pid, (unsigned long long)p->evals_missed,
		 (unsigned long long)(p->evals_known + p->evals_missed));
}

/* A launch joined to the node slot was made for: handed to the on_link function. */
static void give_link(struct autograd *ag, uint32_t tgid, uint32_t tid, uint64_t when,
		      const struct ag_slot *slot)
{
	struct autograd_link link;

	if (!slot || !ag->on_link)
		return;
	link = (struct autograd_link){.tgid = tgid,
				      .tid = tid,
				      .time_ns = when,
				      .fwd_tid = slot->made_tid,
				      .fwd_ns = slot->made_ns};
	if (ag->on_link(ag->timeline_ctx, &link))
		ag->st.links_untimed++;
}

static void give_pass(struct autograd *ag, const struct ag_thread *t)
{
	struct autograd_pass pass = {t->tgid, t->tid, t->exec_ns, t->exec_end_ns};

	if (ag->on_pass && ag->on_pass(ag->timeline_ctx, &pass))
		ag->st.passes_untimed++;
}

void autograd__on_timeline(struct autograd *ag,
			   int (*on_pass)(void *ctx, const struct autograd_pass *p),
			   int (*on_link)(void *ctx, const struct autograd_link *l), void *ctx)
{
	ag->on_pass = on_pass;
	ag->on_link = on_link;
	ag->timeline_ctx = ctx;
}

struct end_ctx {
	struct autograd *ag;
	uint64_t now;
};

static void end_pass_cb(void *val, void *ctx)
{
	struct ag_thread *t = val;
	struct end_ctx *e = ctx;

	if (t->depth <= 0 || t->exec_end_ns || t->exec_ns > e->now)
		return;
	t->exec_end_ns = e->now;
	t->depth = 0; /* handed out once: a late return does not give it again */
	give_pass(e->ag, t);
}

void autograd__end_passes(struct autograd *ag, uint64_t now_ns)
{
	struct end_ctx e = {ag, now_ns};

	if (ag && ag->on_pass)
		hashmap__for_each(ag->threads, end_pass_cb, &e);
}

int autograd__record(struct autograd *ag, const void *data, size_t size)
{
	const struct xsprof_cuda_call *r = data;
	struct ag_thread *t;
	struct ag_proc *p;
	struct ag_slot *s;

	if (size < XSPROF_CUDA_CALL_HDR_SIZE || r->type != XSPROF_REC_AUTOGRAD ||
	    r->nr_user > XSPROF_MAX_STACK_DEPTH ||
	    size < XSPROF_CUDA_CALL_HDR_SIZE + 8u * r->nr_user) {
		ag->st.bad_records++;
		return -EBADMSG;
	}
	p = proc_get(ag, (pid_t)r->tgid, true);
	if (!p)
		return 0;
	switch (r->api) {
	case XSPROF_AG_NODE:
		ag->st.nodes++;
		if (!p->ring && !(p->ring = calloc(ag->o.max_nodes, sizeof(*p->ring))))
			return 0;
		s = &p->ring[r->stream & (ag->o.max_nodes - 1)];
		s->seq = r->stream;
		s->made_ns = r->time_ns ? r->time_ns : 1;
		s->made_tid = r->tid;
		s->stack = frames_of(ag, r);
		if (!s->stack)
			ag->st.nodes_no_frames++;
		return 0;
	case XSPROF_AG_EVAL:
		ag->st.evals++;
		/* AccumulateGrad and the like take no sequence number (UINT64_MAX): no forward
		 * op made them, so none is missed. */
		if ((r->flags & XSPROF_AG_F_SEQ_ERR) ||
		    (r->stream != UINT64_MAX && !slot_of(ag, p, r->stream))) {
			ag->st.evals_unknown++;
			p->evals_missed++;
		} else if (r->stream != UINT64_MAX) {
			p->evals_known++;
		}
		check_layout(ag, p);
		t = thread_get(ag, r->tgid, r->tid);
		if (!t)
			return 0;
		t->evals[t->nevals % EVAL_RING].ns = r->time_ns;
		t->evals[t->nevals % EVAL_RING].seq =
			(r->flags & XSPROF_AG_F_SEQ_ERR) ? UINT64_MAX : r->stream;
		t->nevals++;
		return 0;
	case XSPROF_AG_EXEC:
		ag->st.execs++;
		t = thread_get(ag, r->tgid, r->tid);
		if (!t)
			return 0;
		if (t->depth++ > 0)
			return 0; /* a backward() inside backward: the outer call stands */
		t->exec_ns = r->time_ns;
		t->exec_end_ns = 0;
		t->exec_stack = frames_of(ag, r);
		p->exec_ns = r->time_ns;
		p->exec_end_ns = 0;
		p->exec_stack = t->exec_stack;
		return 0;
	case XSPROF_AG_EXEC_END:
		t = thread_get(ag, r->tgid, r->tid);
		if (!t || t->depth <= 0 || --t->depth > 0)
			return 0;
		t->exec_end_ns = r->time_ns;
		p->exec_end_ns = r->time_ns;
		give_pass(ag, t);
		return 0;
	default:
		ag->st.bad_records++;
		return -EBADMSG;
	}
}

/* ---- stacks ---- */

static bool open_at(uint64_t begin, uint64_t end, uint64_t t)
{
	return begin && t >= begin && (!end || end < begin || t <= end);
}

/* The node a thread ran at time t (its last eval at or before t, after since), or UINT64_MAX. */
static uint64_t node_at(const struct ag_thread *t, uint64_t when, uint64_t since)
{
	uint64_t best_ns = 0, seq = UINT64_MAX;
	unsigned int n = t->nevals < EVAL_RING ? t->nevals : EVAL_RING;

	for (unsigned int i = 0; i < n; i++)
		if (t->evals[i].ns <= when && t->evals[i].ns >= since &&
		    t->evals[i].ns >= best_ns) {
			best_ns = t->evals[i].ns;
			seq = t->evals[i].seq;
		}
	return seq;
}

static uint64_t marked(struct autograd *ag, uint64_t tok)
{
	char buf[1024];
	const char *name = symbolizer__frame_name(ag->o.sym, tok);
	uint64_t m = (uintptr_t)hashmap__get(ag->marked, tok, 0);

	if (m || !name)
		return m ? m : tok;
	snprintf(buf, sizeof(buf), MARK "%s", name);
	m = symbolizer__intern_frame(ag->o.sym, buf);
	if (!m)
		return tok;
	hashmap__put(ag->marked, tok, 0, (void *)(uintptr_t)m);
	return m;
}

/*
 * The user frames (innermost first) of thread tid's record at time when, the forward frames of
 * the node it ran put in, into out (room frames at most): their count, or -1 when the record
 * was not taken inside backward (or nothing is known to put in, or it would not fit: counted).
 * *ret_fw: whether a node's forward frames went in.
 */
static int join(struct autograd *ag, const struct ag_thread *t, uint32_t tgid, uint64_t when,
		const uint64_t *user, uint32_t nu, uint32_t room, uint64_t *out, bool *ret_fw,
		const struct ag_slot **ret_slot)
{
	const struct ag_proc *p = hashmap__get(ag->procs, tgid, 0);
	const struct fstack *fw = NULL, *ex = NULL;
	const struct ag_slot *slot;
	uint64_t base[MAX_FRAMES], since, seq;
	uint32_t nbase = 0, k, common = 0, nfw, n = 0;
	bool engine;

	*ret_fw = false;
	if (ret_slot)
		*ret_slot = NULL;
	if (p && p->bad_layout)
		return -2;
	/* In backward: inside this thread's backward() call, or a thread of the engine's own
	 * (it never called backward()) while the process's last call is open. */
	engine = !t->exec_ns;
	if (!engine && open_at(t->exec_ns, t->exec_end_ns, when))
		since = t->exec_ns;
	else if (engine && p && open_at(p->exec_ns, p->exec_end_ns, when))
		since = p->exec_ns;
	else
		return -2;
	seq = node_at(t, when, since);
	slot = seq == UINT64_MAX ? NULL : slot_of(ag, p, seq);
	if (slot && slot->stack)
		fw = ag->fstacks[slot->stack - 1];
	if (engine && p && p->exec_stack)
		ex = ag->fstacks[p->exec_stack - 1];
	if (!fw && !ex)
		return -1;
	/* Where the forward frames go: above the record's innermost Python frame, or (a thread
	 * with none) at the root, under the backward() call's frames. */
	for (k = 0; k < nu && !is_python(ag, user[k]); k++)
		;
	if (k < nu) {
		for (uint32_t i = k; i < nu && nbase < MAX_FRAMES; i++)
			if (is_python(ag, user[i]))
				base[nbase++] = user[i];
	} else if (ex) {
		nbase = ex->n;
		memcpy(base, ex->tok, nbase * sizeof(*base));
	}
	/* Frames the forward stack shares with the base, from the root. */
	nfw = fw ? fw->n : 0;
	while (common < nfw && common < nbase &&
	       fw->tok[nfw - 1 - common] == base[nbase - 1 - common])
		common++;
	if (nu + (nfw - common) + (k < nu ? 0 : nbase) > room) {
		ag->st.too_deep++;
		return -1;
	}
	for (uint32_t i = 0; i < k; i++)
		out[n++] = user[i];
	for (uint32_t i = 0; i + common < nfw; i++)
		out[n++] = i + 1 + common == nfw ? marked(ag, fw->tok[i]) : fw->tok[i];
	if (k < nu) {
		for (uint32_t i = k; i < nu; i++)
			out[n++] = user[i];
	} else {
		for (uint32_t i = 0; i < nbase; i++)
			out[n++] = base[i];
	}
	*ret_fw = fw != NULL;
	if (ret_slot && fw)
		*ret_slot = slot;
	return (int)n;
}

static const void *rewrite_sample(struct autograd *ag, const struct xsprof_sample *s, size_t size,
				  size_t *ret_size)
{
	struct xsprof_sample *o = &ag->out.sample;
	const struct ag_thread *t;
	bool fw;
	int n;

	if (size < XSPROF_SAMPLE_HDR_SIZE || s->nr_python ||
	    s->nr_kernel > XSPROF_MAX_STACK_DEPTH || s->nr_user > XSPROF_MAX_STACK_DEPTH ||
	    size < XSPROF_SAMPLE_HDR_SIZE + 8u * (s->nr_kernel + s->nr_user))
		return s;
	t = hashmap__get(ag->threads, s->tid, 0);
	if (!t || t->tgid != s->tgid)
		return s;
	n = join(ag, t, s->tgid, s->time_ns, (const uint64_t *)(s->ips + s->nr_kernel), s->nr_user,
		 XSPROF_MAX_STACK_DEPTH - s->nr_kernel, (uint64_t *)(o->ips + s->nr_kernel), &fw,
		 NULL);
	ag->st.samples_backward += n != -2;
	if (n < 0)
		return s;
	memcpy(o, s, XSPROF_SAMPLE_HDR_SIZE + 8 * s->nr_kernel);
	o->nr_user = (uint16_t)n;
	ag->st.samples_joined += fw;
	*ret_size = XSPROF_SAMPLE_HDR_SIZE + 8 * (s->nr_kernel + n);
	return o;
}

/*
 * A launch (a CUDA call or an xsprof:launch) of a thread the engine ran nodes on: its native
 * stack kept (a reuse record of the thread's next launch stands for it), and the node's
 * forward frames put in. Once one of the thread's launches was changed so, the launch store's
 * "last stack" of the thread is no longer the walked one: its reuse records are made whole
 * again here, from the stack kept (rewrite_reuse).
 */
static const void *rewrite_launch(struct autograd *ag, const void *data, size_t size,
				  size_t *ret_size)
{
	const struct xsprof_cuda_call *c = data;
	const struct xsprof_usdt_launch *u = data;
	bool usdt = c->type == XSPROF_REC_USDT_LAUNCH, fw;
	size_t hdr = usdt ? XSPROF_USDT_LAUNCH_HDR_SIZE : XSPROF_CUDA_CALL_HDR_SIZE;
	uint32_t nu = usdt ? u->nr_user : c->nr_user, tid = c->tid, tgid = c->tgid;
	uint64_t when = usdt ? u->time_ns : c->time_ns;
	const uint64_t *ips = (const uint64_t *)(usdt ? u->ips : c->ips);
	const struct ag_slot *slot;
	struct ag_thread *t;
	struct ag_last *l;
	uint64_t *out;
	int n;

	if (size < hdr || nu > XSPROF_MAX_STACK_DEPTH || size < hdr + 8u * nu ||
	    (usdt ? u->nr_python : c->nr_python) || (!usdt && c->api == XSPROF_CUDA_LIB_MAPPED))
		return data;
	t = hashmap__get(ag->threads, tid, 0);
	if (!t || t->tgid != tgid)
		return data;
	l = &t->last[usdt];
	l->have = true;
	l->nu = nu;
	memcpy(l->ips, ips, 8u * nu);
	memcpy(l->comm, c->comm, sizeof(l->comm)); /* at the same offset in both */
	out = (uint64_t *)(usdt ? ag->out.usdt.ips : ag->out.call.ips);
	n = join(ag, t, tgid, when, ips, nu, XSPROF_MAX_STACK_DEPTH, out, &fw, &slot);
	l->changed = n >= 0;
	give_link(ag, tgid, tid, when, slot);
	if (n < 0)
		return data;
	memcpy(&ag->out, data, hdr);
	if (usdt)
		ag->out.usdt.nr_user = (uint16_t)n;
	else
		ag->out.call.nr_user = (uint16_t)n;
	ag->st.launches_joined += fw;
	*ret_size = hdr + 8u * n;
	return &ag->out;
}

/* A reuse record of a thread whose last launch was changed: made whole, as a launch. */
static const void *rewrite_reuse(struct autograd *ag, const struct xsprof_launch_reuse *r,
				 size_t size, size_t *ret_size)
{
	bool usdt = r->kind == XSPROF_LAUNCH_USDT, fw;
	const struct ag_slot *slot;
	struct ag_thread *t;
	struct ag_last *l;
	uint64_t *out;
	int n;

	if (size < sizeof(*r) || (r->kind != XSPROF_LAUNCH_CALL && !usdt))
		return r;
	t = hashmap__get(ag->threads, r->tid, 0);
	if (!t || t->tgid != r->tgid || !t->last[usdt].have)
		return r;
	l = &t->last[usdt];
	out = (uint64_t *)(usdt ? ag->out.usdt.ips : ag->out.call.ips);
	n = join(ag, t, r->tgid, r->time_ns, l->ips, l->nu, XSPROF_MAX_STACK_DEPTH, out, &fw,
		 &slot);
	give_link(ag, r->tgid, r->tid, r->time_ns, slot);
	if (n < 0 && !l->changed)
		return r; /* the store's last stack is the walked one: right as it is */
	if (n < 0) {
		memcpy(out, l->ips, 8u * l->nu);
		n = (int)l->nu;
	}
	l->changed = fw || n != (int)l->nu;
	if (usdt) {
		struct xsprof_usdt_launch *o = &ag->out.usdt;

		memset(o, 0, XSPROF_USDT_LAUNCH_HDR_SIZE);
		o->type = XSPROF_REC_USDT_LAUNCH;
		o->api = r->api;
		o->corr_id = r->arg;
		o->flags = r->flags;
		o->nr_user = (uint16_t)n;
		o->tgid = r->tgid;
		o->tid = r->tid;
		o->time_ns = r->time_ns;
		memcpy(o->comm, l->comm, sizeof(o->comm));
		*ret_size = XSPROF_USDT_LAUNCH_HDR_SIZE + 8u * n;
	} else {
		struct xsprof_cuda_call *o = &ag->out.call;

		memset(o, 0, XSPROF_CUDA_CALL_HDR_SIZE);
		o->type = XSPROF_REC_CUDA_CALL;
		o->api = (uint16_t)r->api;
		o->stream = r->arg;
		o->flags = r->flags;
		o->nr_user = (uint16_t)n;
		o->tgid = r->tgid;
		o->tid = r->tid;
		o->time_ns = r->time_ns;
		memcpy(o->comm, l->comm, sizeof(o->comm));
		*ret_size = XSPROF_CUDA_CALL_HDR_SIZE + 8u * n;
	}
	ag->st.launches_joined += fw;
	ag->st.reuse_made_whole++;
	return &ag->out;
}

const void *autograd__rewrite(struct autograd *ag, const void *data, size_t size, size_t *ret_size)
{
	const struct xsprof_sample *s = data;

	*ret_size = size;
	if (size < sizeof(uint32_t) || !hashmap__count(ag->threads))
		return data;
	switch (s->type) {
	case XSPROF_REC_SAMPLE:
		return rewrite_sample(ag, s, size, ret_size);
	case XSPROF_REC_CUDA_CALL:
	case XSPROF_REC_USDT_LAUNCH:
		return rewrite_launch(ag, data, size, ret_size);
	case XSPROF_REC_LAUNCH_REUSE:
		return rewrite_reuse(ag, data, size, ret_size);
	default:
		return data;
	}
}

void autograd__stats(const struct autograd *ag, struct autograd_stats *ret)
{
	*ret = ag->st;
}

const char *autograd__last_error(const struct autograd *ag)
{
	return ag->last_error[0] ? ag->last_error : NULL;
}
