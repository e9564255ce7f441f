/* SPDX-License-Identifier: Apache-2.0 */
/* Turning counted raw stacks into a named call tree. */
#ifndef XSPROF_DAEMON_STACKS_FOLD_H
#define XSPROF_DAEMON_STACKS_FOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/xsprof_events.h"

struct stack_entry;
struct stack_table;
struct symbolizer;
struct calltree;

struct fold_stats {
	uint64_t frames;	  /* frames named (user + kernel) */
	uint64_t unnamed_frames;  /* kept as module+0xOFF or [unknown] */
	uint64_t missing_ustacks; /* samples whose user stack could not be read */
	uint64_t weight;	  /* what the stacks count (samples, or microseconds) */
	/* Of it, in stacks whose user walk stopped before the root, by enum xsprof_walk_end:
	 * each marked with one frame, fold__end_mark(). */
	uint64_t truncated[XSPROF_END_REASONS];
};

/* The frame that marks a user walk that ended for reason end before the root
 * ("[truncated: no unwind rule]"); NULL when end is the root or not said. */
const char *fold__end_mark(unsigned int end);

/* How a stack of nr_user user frames whose walk ended for reason end ends once named, the
 * symbolizer having kept nu of them (fewer: cut past a broken frame-pointer chain);
 * XSPROF_END_NONE when nothing of it is named. */
unsigned int fold__user_end(int nu, int nr_user, unsigned int end);

/* A stack's own frames: user and kernel frames, and up to three placeholders. */
/* User frames with --debug-info: an address may expand into inlined frames, up to this many. */
#define FOLD_MAX_USER_FRAMES (2 * XSPROF_MAX_STACK_DEPTH)
#define FOLD_MAX_FRAMES	     (3 + FOLD_MAX_USER_FRAMES + XSPROF_MAX_STACK_DEPTH)

/* Room for naming one stack: the frames and the kernel names with their suffix. */
struct fold_names {
	const char *frames[FOLD_MAX_FRAMES];
	size_t n;
	char kbuf[XSPROF_MAX_STACK_DEPTH][160];
	char ubuf[FOLD_MAX_USER_FRAMES][192]; /* "name (file:line)" with --debug-info */
};

/*
 * Name one stack entry's frames into buf, outermost first, without the process name: user
 * frames, then kernel frames suffixed "_[k]", or a placeholder saying why there are none. The
 * names stay valid until buf is reused or symbolizer__trim() runs. Adds to stats (may be NULL).
 */
void fold__name_stack(struct symbolizer *sym, const struct stack_entry *e, struct fold_names *buf,
		      struct fold_stats *stats);

struct symbolizer_frame;
/*
 * Records where the user frame named frame lies (the address, its file's mapping; with
 * fr from symbolizer__user_frames, the function, source line and inlining) in the
 * symbolizer's frame sites, when it has them and frame has none yet.
 */
void fold__note_user(struct symbolizer *sym, uint32_t tgid, uint32_t gen, uint64_t addr,
		     const char *frame, const struct symbolizer_frame *fr);

/*
 * Add every stack of the table to the tree as comm;user frames (outermost first);kernel frames
 * suffixed "_[k]". Frames that cannot be named stay in place under a placeholder, so every
 * sample is counted. 0 or -errno (-ENOMEM).
 */
int fold_stacks(const struct stack_table *st, struct symbolizer *sym, struct calltree *tree,
		struct fold_stats *ret_stats);

/* Same, each count weighing scale (wall mode: a CPU sample is its period in us). */
int fold_stacks_scaled(const struct stack_table *st, struct symbolizer *sym, struct calltree *tree,
		       uint64_t scale, struct fold_stats *ret_stats);

/* A frame above the process of tgid (--group-by); valid until the fold returns. */
typedef const char *(*fold_root_fn)(void *ctx, uint32_t tgid);
/* Whether tgid's stacks are kept (--job, --rank); profile__take's accept has its shape. */
typedef bool (*fold_accept_fn)(void *ctx, uint32_t tgid);

/* Which processes' stacks a fold keeps, and the frame it puts above each. */
struct fold_procs {
	fold_root_fn root; /* a frame above the process (--group-by); NULL: none */
	void *root_ctx;
	fold_accept_fn accept; /* the processes kept; NULL: all */
	void *accept_ctx;
};

/* Same as fold_stacks_scaled, each stack under a "uid:N" frame naming the sampled thread's uid
 * first when uid_root (the service's windows), then under procs->root (--group-by), only the
 * processes procs->accept keeps (procs may be NULL: all, no root). */
int fold_stacks_under(const struct stack_table *st, struct symbolizer *sym, struct calltree *tree,
		      uint64_t scale, bool uid_root, const struct fold_procs *procs,
		      struct fold_stats *ret_stats);

#endif
