/* SPDX-License-Identifier: Apache-2.0 */
/*
 * --max-cpu PERCENT: a ceiling on what xsprofd costs the machine, its own CPU (every thread,
 * user and system) plus its BPF programs' run time (the kernel's BPF statistics, on while the
 * ceiling is), as a share of all online CPUs.
 *
 * Every CEILING_TICK_MS the cost of the last second (or less, since the last change of level)
 * is compared with the ceiling. Over it, one more step is shed (two when four times over: the
 * climb costs what the load does). Well under it, half the ceiling on average since the last
 * change, for a while, one step is restored. The while starts at CEILING_HOLD_S and doubles
 * each time a restored step had to be shed again soon after, so a load that the ceiling only
 * holds at some level does not swing about it. The steps, in the order they are shed (a step none of the recordings has, such as
 * Python walks without --python's processes, is passed over):
 *   1-3. the sampling rate halved, to 1/2, 1/4, 1/8 of the asked one: each sample then counts
 *        for 2, 4, 8, so shares and totals stay those of the asked rate;
 *   4.   Python walks (interpreter frames): stacks stay native;
 *   5.   launch stacks walked 1 in 16 CUDA launches, at random: the others are counted in the
 *        kernel (launch counts stay exact), a walked one counts for 16;
 *   6.   off-CPU stacks (--mode offcpu, wall): threads leaving the CPU are not followed;
 *   7.   exec snapshots: a new process's mappings are read at its first sample, not at its
 *        exec (a short-lived one's frames may stay unnamed); on a machine that starts many
 *        processes they are most of an idle xsprofd's cost;
 *   8.   CUDA calls counted only (in the kernel), not recorded: no launch stacks, no GPU join;
 *   9-11. the sampling rate further halved, to 1/16, 1/32, 1/64.
 * Waits and allocations of the CUDA probes are never shed (their return probes time them).
 *
 * Before any of these, the GPU records read from the CUPTI socket (ceiling__set_intake), a
 * cost that the processes of any user can raise: over the ceiling while one user sends more
 * records a second than the next of CEILING_INTAKE_CAPS, that user's reading is capped there
 * (each user's, but only one over it is held: the heaviest first, the others not at all). The
 * caps are restored last, once no other step is shed.
 */
#ifndef XSPROF_DAEMON_SESSION_CEILING_H
#define XSPROF_DAEMON_SESSION_CEILING_H

#include <stdbool.h>
#include <stdint.h>

typedef struct sd_event sd_event;
struct recording;

#define CEILING_TICK_MS		   250
#define CEILING_HOLD_S		   5
#define CEILING_MAX_HOLD_S	   320
#define CEILING_LAUNCH_STACK_EVERY 16

/* What can be shed, each for how long (struct ceiling_stats.shed_s). */
enum ceiling_kind {
	CEILING_RATE,	       /* the sampling rate lowered */
	CEILING_PYTHON,	       /* Python walks */
	CEILING_LAUNCH_STACKS, /* launch stacks walked 1 in CEILING_LAUNCH_STACK_EVERY */
	CEILING_OFFCPU,	       /* off-CPU stacks */
	CEILING_EXEC,	       /* exec snapshots */
	CEILING_CUDA_CALLS,    /* CUDA calls recorded */
	CEILING_GPU_INTAKE,    /* GPU records read, capped per user (ceiling__set_intake) */
	CEILING_KINDS,
};

/* The caps on GPU records read per user, a second, in the order they are set. */
#define CEILING_INTAKE_CAPS            \
	{                              \
		20000, 5000, 1000, 250 \
	}

struct ceiling_stats {
	double max_pct;	       /* the ceiling: percent of all CPUs */
	int cpus;	       /* online CPUs the percentages are of */
	double cost_pct;       /* the cost over the last measured stretch (at most a second) */
	double avg_pct;	       /* ... and since the ceiling started */
	double own_cpu_s;      /* since it started: xsprofd's CPU */
	double bpf_s;	       /* ... and its BPF programs' run time */
	double span_s;	       /* since it started */
	bool bpf_measured;     /* the kernel's BPF statistics could be turned on */
	unsigned int level;    /* steps shed now (0: none) */
	unsigned int levels;   /* steps there are */
	bool all_shed;	       /* none is left to shed: the cost now is xsprofd's floor */
	unsigned int rate_div; /* the sampling rate is the asked one / this */
	uint32_t launch_stack_every;  /* 1, or CEILING_LAUNCH_STACK_EVERY */
	bool shed[CEILING_KINDS];     /* shed now */
	double shed_s[CEILING_KINDS]; /* seconds each was shed, in all */
	uint64_t steps_up, steps_down;
	unsigned int hold_s; /* how long the cost must stay under half the ceiling to restore */
	uint64_t intake_cap; /* GPU records read per user a second now; 0: not capped */
};

/* The GPU records read (the CUPTI socket's server): the heaviest user's rate now, and the cap
 * on each user's (0: none). */
struct ceiling_intake {
	uint64_t (*top_rate)(void *ctx);
	void (*set_cap)(void *ctx, uint64_t per_s);
	void *ctx;
};

struct ceiling;

/* A ceiling of max_pct percent (0 < max_pct <= 100) on ev's loop. NULL with errno set. */
struct ceiling *ceiling__new(sd_event *ev, double max_pct);
void ceiling__free(struct ceiling *c);

/* Govern r from now on (what is shed now applies to it at once); its BPF programs' time counts.
 * Freeing r lets go of it (recording__free). -ENOMEM. */
int ceiling__add(struct ceiling *c, struct recording *r);
/* Before r is freed: its cost so far is kept. Unknown r: nothing. */
void ceiling__remove(struct ceiling *c, struct recording *r);

void ceiling__stats(const struct ceiling *c, struct ceiling_stats *ret);
/* Govern the GPU records read too (copied; NULL: no longer). */
void ceiling__set_intake(struct ceiling *c, const struct ceiling_intake *in);
/* "sampling rate", "python walks", ...: a kind's name in outputs (snake_case: kind_key). */
const char *ceiling__kind_name(enum ceiling_kind k);
const char *ceiling__kind_key(enum ceiling_kind k);

#endif
