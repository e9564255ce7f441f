/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * User stacks through code without frame pointers: a walk driven by the unwind tables that
 * daemon/unwind compiles from each file's .eh_frame (the layout is in xsprof_events.h), with
 * the frame-pointer step where a mapping has no table.
 *
 * Per frame: the mapping holding pc (the one of the frame before, else a bisection of the
 * process's sorted mappings), its file's entry, the page of the file holding pc - bias (pc - 1
 * for a return address: a call can be a function's last instruction), and a bisection of that
 * page's rows for the last one at or below it. A frame at the same address as the one before
 * (recursion) reuses its row. The row gives the CFA (the caller's stack pointer); the return
 * address is at CFA - 8 and, when the row says so, the caller's rbp at CFA + rbp_off. A row that
 * says "outermost" (_start, clone3: the return address is undefined) ends the walk cleanly. The
 * frames are stepped by bpf_loop (verified once), up to the caller's limit; every way a walk
 * ends is counted in unwind_stats.
 *
 * Code without a table in an anonymous mapping (JIT code: V8, the JVM, LuaJIT, oneDNN's
 * kernels) has its caller found by its frame pointer where that is plausible: rbp within the
 * thread's stack above sp, and the return address above it in one of the process's executable
 * mappings (then sp = rbp + 16, pc = that address, rbp = the saved one, and a caller with a
 * table goes on by its table; a JIT caller's rbp must lie above sp in turn). Where it is not
 * (code that uses rbp as a general register), a scan of the stack for a return address.
 *
 * A walk that lands in a file without a table asks the daemon for it (the file's state goes
 * NONE -> WANTED and one XSPROF_REC_UNWIND_WANT is sent); until it is in, the CPU sampler holds
 * the sample (it stops there and sends the registers and a copy of the stack, within a budget
 * per CPU) and the other walks take the frame-pointer step.
 */
#ifndef XSPROF_BPF_UNWIND_BPF_H
#define XSPROF_BPF_UNWIND_BPF_H

#include "xsprof_events.h"
#include "uret.bpf.h"

#ifdef XSPROF_SAMPLER_MAPS_OWNER
#define XSPROF_UNWIND_LINKAGE
#else
#define XSPROF_UNWIND_LINKAGE __weak
#endif

/* Every array below is sized by the daemon before load (--unwind-mb). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xsprof_unwind_row);
} unwind_rows SEC(".maps") XSPROF_UNWIND_LINKAGE;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xsprof_unwind_page);
} unwind_pages SEC(".maps") XSPROF_UNWIND_LINKAGE;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xsprof_unwind_file);
} unwind_files SEC(".maps") XSPROF_UNWIND_LINKAGE;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xsprof_unwind_map);
} unwind_maps SEC(".maps") XSPROF_UNWIND_LINKAGE;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 1);
	__type(key, __u32); /* tgid */
	__type(value, struct xsprof_unwind_proc);
} unwind_procs SEC(".maps") XSPROF_UNWIND_LINKAGE;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xsprof_unwind_stats);
} unwind_stats SEC(".maps") XSPROF_UNWIND_LINKAGE;

/* Offsets in the rt_sigframe at rsp inside __restore_rt (arch/x86/include/uapi/asm/sigcontext.h:
 * struct ucontext's uc_mcontext is at 40; rbp, rsp, rip at 80, 120, 128 in it). */
#define UNWIND_UC_RBP (40 + 80)
#define UNWIND_UC_RSP (40 + 120)
#define UNWIND_UC_RIP (40 + 128)

/* The registers a step needs, and what it learnt. */
struct unwind_regs {
	__u64 pc, sp, bp;
	__u32 exact; /* pc is not a return address (the first frame, or after a signal frame) */
	/* UNWIND_F_*: one word, so that a step sets them with one store. Bits, not counters:
	 * counters would be exact values the verifier checks one by one. */
	__u32 flags;
};

#define UNWIND_F_USED_CFI 0x1 /* a frame came from a table */
#define UNWIND_F_FROM_FP  0x2 /* pc came from a frame-pointer step: it may be garbage */
/* Why the walk ended (enum xsprof_walk_end), set by the step that ends it. */
#define UNWIND_END(r)	     ((__u32)(r) << 8)
#define UNWIND_END_OF(flags) (((flags) >> 8) & 0xf)

/* What a row lookup needs and keeps between frames; no pointers, so that a global function can
 * take it. */
struct unwind_cursor {
	__u64 key;	 /* in: the pc to look up (pc - 1 for a return address) */
	__u32 map_first; /* the process's mappings: unwind_maps[map_first, + map_count) */
	__u32 map_count;
	__u32 last_map; /* 1 + the index of the last mapping found, or 0 */
	__u32 hold;	/* in: the walk may stop to be held (the CPU sampler) */
	__u32 mode;	/* enum xsprof_unwind_mode */
	__u32 tgid;
	__u32 trusted;	  /* in: key is where code surely runs (not from a frame-pointer step) */
	__u32 gen;	  /* the process's xsprof_unwind_proc.gen */
	__u64 cached_key; /* row below was found for this key (0: none) */
	__u32 cache_base; /* the walker's region of unwind_row_cache: its first entry */
	__u32 jit_nofp;	  /* in: the process's JIT code keeps no frame pointer (the JVM's) */
	__u64 stack_hi;	  /* in: a frame pointer lies below this (the thread's stack, at most) */
	__u64 exec_lo, exec_hi; /* executable memory the kernel vouched for (unwind_jit_fp) */
	struct xsprof_unwind_row row;
	__u32 file;	  /* out: the file of a hold */
	__u32 row_file;	  /* out: the file whose table gave row */
	__u32 pending;	  /* out: a frame took the fp step where a table is being built */
	__u32 asked;	  /* out: this walk asked for a table (NONE -> WANTED) */
	__u32 exec_asked; /* the kernel was asked for a mapping (bpf_find_vma) */
	__u32 exec_file;  /* exec_lo/hi map a file (not anonymous memory) */
	__u32 pad_exec;
};

enum unwind_find_result {
	UNWIND_FOUND = 0, /* cursor.row is the row at key */
	UNWIND_NONE = 1,  /* no table for key: the frame-pointer step (auto), or the end (cfi) */
	UNWIND_HOLD = 2,  /* the table is being built: stop, the sampler holds the sample */
	UNWIND_ANON = 3,  /* in an anonymous executable mapping (JIT code): scan for the caller */
};

/* What a probe's walk says besides its frames (*ret_untraced of unwind__walk_traced): a bit
 * set, any of them means the stack must not be reused (launch_reuse.bpf.h). */
#define UNWIND_OUT_UNTRACED 1 /* a traced frame was not read from its slot (signal frame) */
#define UNWIND_OUT_PENDING  2 /* a frame met a table being built: fp there, maybe cut short */
#define UNWIND_OUT_ASKED    4 /* ... and this walk is the one that asked for it */

/* Return-address slots a launch probe's walk notes, at most (launch_reuse.bpf.h). */
#define UNWIND_TRACE_SLOTS 32

/* How far above the first sp a JIT frame's frame pointer may point: a thread's stack at most
 * (glibc's default size, RLIMIT_STACK's usual 8 MiB). The kernel keeps no thread's stack
 * bounds but the main thread's, and asking it for the stack's mapping (bpf_find_vma) from the
 * sampler's interrupt would cost an irq_work (a self-IPI) per walk. An rbp used as a general
 * register (a pointer into the heap, the code or data) seldom lies there, and seldom points at
 * a word that is an address in executable memory: a frame must pass both. */
#define UNWIND_STACK_SPAN (8ull << 20)

/* The bytes above the first sp a walk may copy at once (as ustack.bpf.h's window). */
#define UNWIND_WINDOW 1024

/* A copy of the stack at [lo, lo + UNWIND_WINDOW), read once per sample by the CPU sampler
 * (its own: nothing of ours runs nested inside it on its CPU). */
struct unwind_win {
	__u64 lo;
	__u64 w[UNWIND_WINDOW / 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct unwind_win);
} sample_window SEC(".maps") XSPROF_UNWIND_LINKAGE;

/*
 * A walk's state: too big for the BPF stack (a whole call chain has 512 bytes, and older
 * kernels round every frame up to 32), so it lives in the walking program's own per-CPU
 * scratch (one per program kind: none of them runs nested inside another of its kind on a
 * CPU, and the preemptible probes take a slot by compare-and-swap).
 */
struct xs_unwind_state {
	struct unwind_regs regs;
	struct unwind_cursor cur;
	__u32 first, end; /* the first slot of ips, and the limit (<= 2 * XSPROF_MAX_STACK_DEPTH) */
	__u32 n;	  /* out: frames stored */
	__u32 held;	  /* out: the walk stopped at regs for the daemon to finish */
	__u32 untraced;	  /* out: a traced frame was not read from its slot (signal frame) */
	__u32 win;	  /* frames in sample_window (the CPU sampler's copy) are read there */
	__u32 cache;	  /* rows from and into unwind_row_cache (the CPU sampler only) */
	__u32 pad;
	__u64 tramp; /* the uretprobe trampoline while one is pending on the thread (uret.bpf.h) */
};

/* bpf_loop's context, which must be on the stack: the pointers only (a pointer stored in a
 * map value reads back as a number). */
struct unwind_walk {
	__u64 *ips;
	__u64 *trace; /* NULL, or where the first UNWIND_TRACE_SLOTS callers were read */
	struct xsprof_unwind_stats *st;
	struct xs_unwind_state *s;
};

/*
 * The searches and the steps are global functions, defined once in unwind.bpf.c: the verifier
 * checks each on its own with unknown arguments, instead of inside every state of the step
 * callback that calls them (as plain loops it gave up after 1M instructions; as inline code the
 * sampler took 0.8 s to load). Every program file that walks stacks includes this header; the
 * linker joins the calls to the one definition.
 */
/* Find the row for c->key (enum unwind_find_result). */
__noinline int unwind_find(struct unwind_cursor *c, struct xsprof_unwind_stats *st);

/*
 * Rows found lately, per CPU, by (tgid, pc): a sample's frames are mostly the last samples'
 * (main, the loop, the library's entry points), and a launch's mostly the last launches' (a
 * PyTorch launch walks 60 to 120 frames, most of them the same each time, from a new call
 * site nearly each time: the stack cannot be reused whole, launch_reuse.bpf.h, but its rows
 * can). A hit costs one lookup instead of a search through the process's mappings, the file's
 * pages and its rows. An entry holds while the process's mapping list is the one it was found
 * in (gen): a table evicted since leaves its rows true of the code. Each walker owns a region
 * of its own, so none ever sees another's entry half-written: the CPU sampler region 0 (it
 * runs with nothing of ours nested inside it on its CPU), the USDT launch probe's two scratch
 * slots regions 1 and 2, the CUDA uprobes' two regions 3 and 4 (a slot is held by one run at
 * a time, compare-and-swap). cache: 0 for none, else 1 + the region.
 */
#define UNWIND_ROW_CACHE     256
#define UNWIND_CACHE_REGIONS 5
#define UNWIND_CACHE_SAMPLER 1 /* region 0 */
#define UNWIND_CACHE_USDT    2 /* regions 1, 2: + the scratch slot */
#define UNWIND_CACHE_CUDA    4 /* regions 3, 4: + the scratch slot */

struct unwind_cached_row {
	__u64 key;
	__u32 tgid, gen;
	struct xsprof_unwind_row row;
	__u32 file, pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, UNWIND_ROW_CACHE *UNWIND_CACHE_REGIONS);
	__type(key, __u32);
	__type(value, struct unwind_cached_row);
} unwind_row_cache SEC(".maps") XSPROF_UNWIND_LINKAGE;

/* The row for c->key from the cache: UNWIND_FOUND, or -1 on a miss (global functions, as the
 * searches: checked once, not in every state of the step). */
__noinline int unwind_cache_find(struct unwind_cursor *c);
/* Keep c's row (just found) in the cache. */
__noinline int unwind_cache_put(struct unwind_cursor *c);

/* One step through the frame-pointer chain: 0, or 1 when the chain ends. */
__noinline int unwind_fp_step(struct unwind_regs *w, struct xsprof_unwind_stats *st);
/* One step by a table row: 0, 1 when the walk ends, -1 to try the frame-pointer step. */
__noinline int unwind_row_step(const struct xsprof_unwind_row *r, struct unwind_regs *w,
			       struct xsprof_unwind_stats *st);
/* Take one hold from this CPU's budget: 1, or 0 when it is spent. */
__noinline int unwind_hold_take(void);
/* The caller of JIT code by its frame pointer, where that is plausible: 0, or 1. win: as for
 * unwind_row_fast. */
__noinline int unwind_jit_fp(struct unwind_cursor *c, struct unwind_regs *w,
			     struct xsprof_unwind_stats *st, __u32 win);
/* The caller of JIT code, found by scanning the stack: 0, or 1. */
__noinline int unwind_scan(struct unwind_cursor *c, struct unwind_regs *w,
			   struct xsprof_unwind_stats *st);

/*
 * The usual row (CFA from rsp or rbp, rbp saved right below the return address or not at all),
 * with the frame read from the sampler's window where it lies inside (win: the walk has one,
 * sample_window): 0, 1 when the walk ends, -1 for a row it does not take (unwind_row_step
 * then). A global function as the others: inline, it doubled the time the verifier takes over
 * the sampler (0.07 s to 0.13 s of every start), for a few percent per sample.
 */
__noinline int unwind_row_fast(const struct xsprof_unwind_row *r, struct unwind_regs *w,
			       struct xsprof_unwind_stats *st, __u32 win);

static long unwind__step(__u32 i, void *arg)
{
	struct unwind_walk *w = arg;
	struct xs_unwind_state *ws = w->s;
	/* Every step but the last stores one frame, so the slot follows from the iteration: a
	 * slot carried from step to step would be a range growing by one per frame, and the
	 * verifier would check the step once per frame. */
	__u32 idx = (ws->first + i) & 0xff;
	int ret = -1, found;

	if (idx >= ws->end || idx >= 2 * XSPROF_MAX_STACK_DEPTH) {
		w->st->end_depth++;
		ws->regs.flags |= UNWIND_END(XSPROF_END_DEPTH);
		return 1;
	}
	if (ws->cur.map_count) {
		__u64 key = ws->regs.exact ? ws->regs.pc : ws->regs.pc - 1;

		/* The same address as a frame before (a recursion): its row, without a search. */
		if (key == ws->cur.cached_key) {
			found = UNWIND_FOUND;
		} else {
			ws->cur.key = key;
			ws->cur.trusted = !(ws->regs.flags & UNWIND_F_FROM_FP);
			found = ws->cache ? unwind_cache_find(&ws->cur) : -1;
			if (found < 0) {
				found = unwind_find(&ws->cur, w->st);
				if (found == UNWIND_FOUND && ws->cache)
					unwind_cache_put(&ws->cur);
			}
		}
		if (found == UNWIND_HOLD) {
			ws->held = 1;
			return 1;
		}
		if (found == UNWIND_FOUND) {
			ret = unwind_row_fast(&ws->cur.row, &ws->regs, w->st, ws->win);
			if (ret < 0)
				ret = unwind_row_step(&ws->cur.row, &ws->regs, w->st);
			if (ret > 0)
				return 1;
		} else if (found == UNWIND_ANON && ws->cur.jit_nofp) {
			/* No frame pointer to trust, nothing that proves a caller. */
			ws->regs.flags |= UNWIND_END(XSPROF_END_JIT);
			return 1;
		} else if (found == UNWIND_ANON &&
			   (!unwind_jit_fp(&ws->cur, &ws->regs, w->st, ws->win) ||
			    !unwind_scan(&ws->cur, &ws->regs, w->st))) {
			ret = 0;
		}
		if (ret < 0 && ws->cur.mode == XSPROF_UNWIND_CFI) {
			if (found == UNWIND_FOUND) {
				w->st->end_invalid++;
				ws->regs.flags |= UNWIND_END(XSPROF_END_NO_RULE);
			} else {
				w->st->end_no_table++;
				ws->regs.flags |= UNWIND_END(XSPROF_END_NO_TABLE);
			}
			return 1;
		}
	} else if (ws->cur.mode == XSPROF_UNWIND_CFI) {
		w->st->end_no_table++;
		ws->regs.flags |= UNWIND_END(XSPROF_END_NO_TABLE);
		return 1;
	}
	if (ret < 0 && unwind_fp_step(&ws->regs, w->st))
		return 1;
	/* Every step read the return address at the new sp - 8 (a signal frame's is exact). */
	if (ws->tramp && ws->regs.pc == ws->tramp && !ws->regs.exact)
		ws->regs.pc = unwind_uret_orig(ws->regs.sp - 8, ws->tramp);
	w->ips[idx] = ws->regs.pc;
	ws->n = i + 1;
	/* Every step reads the caller's return address at the new sp - 8, but a signal frame's
	 * (from the ucontext: exact again). */
	if (w->trace && i < UNWIND_TRACE_SLOTS) {
		__u64 t = i;

		/* The mask in the register the store uses (the compiler drops a C one as i < 32). */
		asm volatile("%0 &= 31" : "+r"(t));
		w->trace[t] = ws->regs.sp - 8;
		if (ws->regs.exact)
			ws->untraced = 1;
	}
	return 0;
}

/*
 * Walk from the interrupted (pc, sp, bp) of a frame already stored at ips[first - 1], storing
 * the callers at ips[first], ... below ips[end] (end <= 2 * XSPROF_MAX_STACK_DEPTH), with ws (the
 * caller's scratch) as the walk's state. proc may be NULL (frame pointers only). exact: pc is
 * where the thread is, not a return address. hold: the walk may stop where a table is being
 * built (ws->held set, the registers in ws->regs, the file in ws->cur.file). Returns how many
 * were stored; needs bpf_loop (Linux 5.17).
 */
static __always_inline long unwind__walk_traced(struct xs_unwind_state *ws, __u64 *ips,
						__u64 *trace, __u32 first, __u32 end,
						const struct xsprof_unwind_proc *proc, __u32 tgid,
						__u32 mode, __u64 pc, __u64 sp, __u64 bp,
						__u32 exact, __u32 hold, __u32 *ret_untraced,
						__u32 win, __u32 cache)
{
	__u32 zero = 0;
	__u64 fp0;
	struct unwind_walk w = {.ips = ips, .trace = trace, .s = ws};

	/* Field by field: a struct store would be a memset and a copy of ~180 bytes. */
	ws->regs.pc = pc;
	ws->regs.sp = sp;
	ws->regs.bp = bp;
	ws->regs.exact = exact;
	ws->regs.flags = 0;
	ws->cur.key = 0;
	ws->cur.map_first = proc ? proc->first : 0;
	ws->cur.map_count = proc ? proc->count : 0;
	ws->cur.gen = proc ? proc->gen : 0;
	ws->cur.jit_nofp = proc ? proc->flags & XSPROF_UNWIND_PROC_JIT_NOFP : 0;
	ws->cur.last_map = 0;
	ws->cur.hold = hold;
	ws->cur.mode = mode;
	ws->cur.tgid = tgid;
	ws->cur.trusted = 0;
	ws->cur.cached_key = 0;
	ws->cur.stack_hi = sp + UNWIND_STACK_SPAN;
	ws->cur.exec_lo = 0;
	ws->cur.exec_hi = 0;
	ws->cur.file = 0;
	ws->cur.row_file = 0;
	ws->cur.pending = 0;
	ws->cur.asked = 0;
	ws->cur.exec_asked = 0;
	ws->first = first;
	ws->end = end;
	ws->n = 0;
	ws->held = 0;
	ws->untraced = 0;
	ws->win = win;
	ws->cache = cache;
	ws->cur.cache_base = cache ? ((cache - 1) % UNWIND_CACHE_REGIONS) * UNWIND_ROW_CACHE : 0;
	ws->tramp = uret__tramp(bpf_get_current_task_btf());
	w.st = bpf_map_lookup_elem(&unwind_stats, &zero);
	if (!w.st)
		return 0;
	fp0 = w.st->frames_fp;
	bpf_loop(2 * XSPROF_MAX_STACK_DEPTH, unwind__step, &w, 0);
	/* Per walk, not per frame: every frame not found by frame pointers came from a table
	 * (or a scan). */
	w.st->frames_cfi += ws->n - (w.st->frames_fp - fp0);
	if (ws->regs.flags & UNWIND_F_USED_CFI)
		w.st->walks_cfi++;
	else
		w.st->walks_fp++;
	if (ret_untraced)
		*ret_untraced = (ws->untraced ? UNWIND_OUT_UNTRACED : 0) |
				(ws->cur.pending ? UNWIND_OUT_PENDING : 0) |
				(ws->cur.asked ? UNWIND_OUT_ASKED : 0);
	return ws->n;
}

/* unwind__walk_traced without a trace: the samplers' walk. win: sample_window holds a copy of
 * the stack above sp (frames inside it are read from the copy); cache: rows through
 * unwind_row_cache (the CPU sampler only, see there). */
static __always_inline long unwind__walk(struct xs_unwind_state *ws, __u64 *ips, __u32 first,
					 __u32 end, const struct xsprof_unwind_proc *proc,
					 __u32 tgid, __u32 mode, __u64 pc, __u64 sp, __u64 bp,
					 __u32 exact, __u32 hold, __u32 win, __u32 cache)
{
	return unwind__walk_traced(ws, ips, NULL, first, end, proc, tgid, mode, pc, sp, bp, exact,
				   hold, NULL, win, cache);
}

/* A walk uses proc: marked for the daemon (which clears it when it looks for an entry to evict);
 * written only when clear, so the line is not dirtied per sample. */
static __always_inline void unwind__proc_used(const struct xsprof_unwind_proc *proc)
{
	if (!proc->used)
		((struct xsprof_unwind_proc *)proc)->used = 1;
}

/*
 * A probe's user stack (the CUDA uprobes, the USDT probe; ws: its scratch; cache: its region of
 * unwind_row_cache, see there) from (pc, sp, bp; exact as for
 * unwind__walk), callers stored from ips[*nr] (0 or 1: the slots already filled) up to
 * XSPROF_MAX_STACK_DEPTH slots; trace (may be NULL): where the first UNWIND_TRACE_SLOTS
 * callers were read (*ret_untraced: one was not read from its slot). Up to
 * XSPROF_MAX_STACK_DEPTH slots: the table walk where the daemon loaded tgid's mappings and mode
 * is not fp; -1 otherwise (the probe walks frame pointers as before). ips must have room up to
 * index 2 * XSPROF_MAX_STACK_DEPTH in its map value (the probes' records are followed by
 * their stack window).
 */
static __always_inline long unwind__probe_walk(struct xs_unwind_state *ws, __u64 *ips, __u16 *nr,
					       __u32 tgid, __u32 mode, __u64 pc, __u64 sp, __u64 bp,
					       __u32 exact, __u64 *trace, __u32 *ret_untraced,
					       __u32 cache)
{
	const struct xsprof_unwind_proc *proc;
	__u32 first;

	if (mode == XSPROF_UNWIND_FP)
		return -1;
	proc = bpf_map_lookup_elem(&unwind_procs, &tgid);
	if (!proc)
		return -1;
	unwind__proc_used(proc);
	/* The first slot comes through the record (*nr, in the map value): the verifier then
	 * knows a range, not a constant, and checks the step a few times, not once per frame. */
	/* Masked, not compared: a range as wide as the step's own mask converges at once. The
	 * step bounds every store at 2 * XSPROF_MAX_STACK_DEPTH, inside the probes' scratch. */
	first = *(volatile __u16 *)nr & 0xff;
	/* The limit from first too (a range as well): ips has XSPROF_MAX_STACK_DEPTH slots. */
	return unwind__walk_traced(ws, ips, trace, first, first + XSPROF_MAX_STACK_DEPTH - 1, proc,
				   tgid, mode, pc, sp, bp, exact, 0, ret_untraced, 0, cache);
}

#endif
