// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <systemd/sd-event.h>

#include "daemon/base/clock.h"
#include "daemon/base/vec.h"
#include "daemon/session/ceiling.h"
#include "daemon/session/recording.h"

/* The order of shedding (ceiling.h says why): a step's kind, and a rate step's divisor. */
static const struct step {
	enum ceiling_kind kind;
	unsigned int rate_div;
} steps[] = {
	{CEILING_RATE, 2},   {CEILING_RATE, 4},		 {CEILING_RATE, 8},
	{CEILING_PYTHON, 0}, {CEILING_LAUNCH_STACKS, 0}, {CEILING_OFFCPU, 0},
	{CEILING_EXEC, 0},   {CEILING_CUDA_CALLS, 0},	 {CEILING_RATE, 16},
	{CEILING_RATE, 32},  {CEILING_RATE, 64},
};
#define NR_STEPS (sizeof(steps) / sizeof(steps[0]))

/* Measured stretches kept: the cost since the last change is over at most this many ticks. */
#define WINDOW_TICKS (1000 / CEILING_TICK_MS)

struct governed {
	struct recording *r;
	uint64_t bpf_ns; /* its programs' run time at the last reading */
};

struct ceiling {
	sd_event_source *timer;
	double max_pct;
	int cpus;
	int stats_fd; /* BPF_STATS_RUN_TIME held on; -1: not measured */
	struct governed *recs;
	size_t nr_recs, cap_recs;
	uint32_t have; /* RECORDING_SHED_* of every recording governed so far */
	unsigned int level;
	/* The last reading, and the totals since the start. */
	uint64_t t0_ns, last_ns, cpu0_ns, last_cpu_ns, bpf_ns;
	/* The cost of the ticks since the last change (ring of the last WINDOW_TICKS). */
	uint64_t win_cost_ns[WINDOW_TICKS], win_span_ns[WINDOW_TICKS];
	unsigned int win_n, win_at;
	double cost_pct;
	uint64_t level_cost_ns, level_span_ns; /* since the level last changed */
	unsigned int hold_s;   /* how long the cost must stay well under to restore a step */
	uint64_t last_down_ns; /* when a step was last restored */
	double shed_s[CEILING_KINDS];
	uint64_t steps_up, steps_down;
	struct ceiling_intake intake; /* top_rate NULL: none */
	unsigned int intake_level;    /* caps set now: intake_caps[intake_level - 1] */
};

static const uint64_t intake_caps[] = CEILING_INTAKE_CAPS;
#define NR_INTAKE_CAPS (sizeof(intake_caps) / sizeof(intake_caps[0]))

static const char *const kind_names[CEILING_KINDS] = {
	"sampling rate",  "Python walks", "launch stacks",    "off-CPU stacks",
	"exec snapshots", "CUDA calls",	  "GPU records read",
};
static const char *const kind_keys[CEILING_KINDS] = {
	"sampling_rate",  "python_walks", "launch_stacks", "offcpu_stacks",
	"exec_snapshots", "cuda_calls",	  "gpu_intake",
};

const char *ceiling__kind_name(enum ceiling_kind k)
{
	return k < CEILING_KINDS ? kind_names[k] : "?";
}

const char *ceiling__kind_key(enum ceiling_kind k)
{
	return k < CEILING_KINDS ? kind_keys[k] : "?";
}

/* The RECORDING_SHED_* bit of what each kind sheds. */
static const uint32_t kind_bits[CEILING_KINDS] = {
	[CEILING_RATE] = RECORDING_SHED_RATE,
	[CEILING_PYTHON] = RECORDING_SHED_PYTHON,
	[CEILING_LAUNCH_STACKS] = RECORDING_SHED_LAUNCH_STACKS,
	[CEILING_OFFCPU] = RECORDING_SHED_OFFCPU,
	[CEILING_EXEC] = RECORDING_SHED_EXEC,
	[CEILING_CUDA_CALLS] = RECORDING_SHED_CUDA_CALLS,
};

/* Whether any governed recording has what step i sheds (c->have: a step stays in the ladder
 * after its recording went; stepping over it sheds nothing for a while). */
static bool applies(const struct ceiling *c, size_t i)
{
	return c->have & kind_bits[steps[i].kind];
}

/* What the steps below level shed. */
static struct recording_shed shed_of(unsigned int level)
{
	struct recording_shed sh = {.rate_div = 1, .launch_stack_every = 1};

	for (unsigned int i = 0; i < level && i < NR_STEPS; i++) {
		switch (steps[i].kind) {
		case CEILING_RATE:
			sh.rate_div = steps[i].rate_div;
			break;
		case CEILING_PYTHON:
			sh.python = true;
			break;
		case CEILING_LAUNCH_STACKS:
			sh.launch_stack_every = CEILING_LAUNCH_STACK_EVERY;
			break;
		case CEILING_OFFCPU:
			sh.offcpu = true;
			break;
		case CEILING_EXEC:
			sh.exec = true;
			break;
		default:
			sh.cuda_calls = true;
			break;
		}
	}
	return sh;
}

/* What is shed now: the steps below the level that some recording has. */
static void shed_flags(const struct ceiling *c, bool ret[CEILING_KINDS])
{
	struct recording_shed sh = shed_of(c->level);
	bool on[CEILING_KINDS] = {
		[CEILING_RATE] = sh.rate_div > 1,
		[CEILING_PYTHON] = sh.python,
		[CEILING_LAUNCH_STACKS] = sh.launch_stack_every > 1,
		[CEILING_OFFCPU] = sh.offcpu,
		[CEILING_EXEC] = sh.exec,
		[CEILING_CUDA_CALLS] = sh.cuda_calls,
	};

	for (int k = 0; k < CEILING_KINDS; k++)
		ret[k] = on[k] && (c->have & kind_bits[k]);
	ret[CEILING_GPU_INTAKE] = c->intake_level > 0;
}

static bool step_up(struct ceiling *c);
static void apply(struct ceiling *c);

static uint64_t intake_cap(const struct ceiling *c)
{
	return c->intake_level ? intake_caps[c->intake_level - 1] : 0;
}

/* The next cap on GPU records read holds back someone: the heaviest user sends more. */
static bool intake_bites(const struct ceiling *c)
{
	return c->intake.top_rate && c->intake_level < NR_INTAKE_CAPS &&
	       c->intake.top_rate(c->intake.ctx) > intake_caps[c->intake_level];
}

static void intake_apply(struct ceiling *c)
{
	if (c->intake.set_cap)
		c->intake.set_cap(c->intake.ctx, intake_cap(c));
	c->win_n = 0;
	c->level_cost_ns = c->level_span_ns = 0;
}

/* Over the ceiling: the cap on reading first, while it holds back the heaviest user; then the
 * steps. */
static bool shed_one(struct ceiling *c)
{
	if (intake_bites(c)) {
		c->intake_level++;
		intake_apply(c);
		return true;
	}
	if (step_up(c)) {
		apply(c);
		return true;
	}
	return false;
}

static void apply(struct ceiling *c)
{
	struct recording_shed sh = shed_of(c->level);

	for (size_t k = 0; k < c->nr_recs; k++)
		recording__shed(c->recs[k].r, &sh);
	/* A new level is measured afresh. */
	c->win_n = 0;
	c->level_cost_ns = c->level_span_ns = 0;
}

static bool step_up(struct ceiling *c)
{
	for (size_t i = c->level; i < NR_STEPS; i++)
		if (applies(c, i)) {
			c->level = (unsigned int)i + 1;
			return true;
		}
	return false;
}

static bool step_down(struct ceiling *c)
{
	for (size_t i = c->level; i-- > 0;)
		if (applies(c, i)) {
			c->level = (unsigned int)i;
			return true;
		}
	return false;
}

/* The BPF run time of the governed recordings since the last reading. */
static uint64_t read_bpf(struct ceiling *c)
{
	uint64_t d = 0;

	if (c->stats_fd < 0)
		return 0;
	for (size_t k = 0; k < c->nr_recs; k++) {
		uint64_t now = recording__bpf_run_ns(c->recs[k].r);

		if (now > c->recs[k].bpf_ns)
			d += now - c->recs[k].bpf_ns;
		c->recs[k].bpf_ns = now;
	}
	return d;
}

static void decide(struct ceiling *c, uint64_t now)
{
	uint64_t cost = 0, span = 0;
	bool over, under;
	double level_pct;

	for (unsigned int i = 0; i < c->win_n; i++) {
		cost += c->win_cost_ns[i];
		span += c->win_span_ns[i];
	}
	if (!span)
		return;
	c->cost_pct = 100.0 * (double)cost / ((double)span * c->cpus);
	over = c->cost_pct > c->max_pct;
	/* Well under: half the ceiling on average at this level, for the hold at least (a burst
	 * of a tick does not reset it; one over the ceiling sheds first). */
	level_pct = 100.0 * (double)c->level_cost_ns / ((double)c->level_span_ns * c->cpus);
	under = c->level_span_ns >= c->hold_s * 1000000000ull && level_pct < c->max_pct / 2;
	if (over && shed_one(c)) {
		/* Far over (a heavy load met at the start): a second step at once, so that the
		 * climb, which costs what the load does, is short. */
		if (c->cost_pct > 4 * c->max_pct && shed_one(c))
			c->steps_up++;
		/* Shed again soon after a restore: that level does not hold, wait longer. */
		if (c->last_down_ns && now - c->last_down_ns < 2ull * c->hold_s * 1000000000ull) {
			c->hold_s *= 2;
			if (c->hold_s > CEILING_MAX_HOLD_S)
				c->hold_s = CEILING_MAX_HOLD_S;
		}
		c->steps_up++;
	} else if (under && c->level && step_down(c)) {
		c->steps_down++;
		c->last_down_ns = now;
		apply(c);
	} else if (under && c->intake_level) {
		/* The cap on reading last, once no step is left to restore. */
		c->intake_level--;
		c->steps_down++;
		c->last_down_ns = now;
		intake_apply(c);
	}
}

static int on_tick(sd_event_source *src, uint64_t usec, void *userdata)
{
	struct ceiling *c = userdata;
	uint64_t now = clock__mono_ns(), cpu = clock__cpu_ns(), bpf = read_bpf(c);
	uint64_t d_cpu = cpu > c->last_cpu_ns ? cpu - c->last_cpu_ns : 0;
	bool shed[CEILING_KINDS];

	(void)usec;
	shed_flags(c, shed);
	for (int k = 0; k < CEILING_KINDS; k++)
		if (shed[k])
			c->shed_s[k] += (double)(now - c->last_ns) / 1e9;
	c->bpf_ns += bpf;
	c->win_cost_ns[c->win_at] = d_cpu + bpf;
	c->win_span_ns[c->win_at] = now - c->last_ns;
	c->level_cost_ns += d_cpu + bpf;
	c->level_span_ns += now - c->last_ns;
	c->win_at = (c->win_at + 1) % WINDOW_TICKS;
	if (c->win_n < WINDOW_TICKS)
		c->win_n++;
	c->last_ns = now;
	c->last_cpu_ns = cpu;
	decide(c, now);
	sd_event_source_set_time_relative(src, CEILING_TICK_MS * 1000ull);
	sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
	return 0;
}

struct ceiling *ceiling__new(sd_event *ev, double max_pct)
{
	struct ceiling *c;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int err;

	if (!(max_pct > 0 && max_pct <= 100)) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->max_pct = max_pct;
	c->cpus = cpus > 0 ? (int)cpus : 1;
	c->hold_s = CEILING_HOLD_S;
	/* Run times are counted while an fd of this holds them on (the kernel's switch, shared). */
	c->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (c->stats_fd < 0)
		c->stats_fd = -1;
	c->t0_ns = c->last_ns = clock__mono_ns();
	c->cpu0_ns = c->last_cpu_ns = clock__cpu_ns();
	err = sd_event_add_time_relative(ev, &c->timer, CLOCK_MONOTONIC, CEILING_TICK_MS * 1000ull,
					 0, on_tick, c);
	if (err < 0) {
		ceiling__free(c);
		errno = -err;
		return NULL;
	}
	return c;
}

void ceiling__free(struct ceiling *c)
{
	if (!c)
		return;
	sd_event_source_disable_unref(c->timer);
	for (size_t k = 0; k < c->nr_recs; k++)
		recording__set_ceiling(c->recs[k].r, NULL);
	if (c->stats_fd >= 0)
		close(c->stats_fd);
	free(c->recs);
	free(c);
}

int ceiling__add(struct ceiling *c, struct recording *r)
{
	struct recording_shed sh = shed_of(c->level);
	int err = vec__reserve((void **)&c->recs, &c->cap_recs, c->nr_recs + 1, sizeof(*c->recs));

	if (err)
		return err;
	/* Its programs ran before it came under the ceiling (loading): not counted. */
	c->recs[c->nr_recs++] = (struct governed){.r = r, .bpf_ns = recording__bpf_run_ns(r)};
	c->have |= recording__sheddable(r);
	recording__set_ceiling(r, c);
	recording__shed(r, &sh);
	return 0;
}

void ceiling__remove(struct ceiling *c, struct recording *r)
{
	for (size_t k = 0; c && k < c->nr_recs; k++) {
		uint64_t now;

		if (c->recs[k].r != r)
			continue;
		now = c->stats_fd >= 0 ? recording__bpf_run_ns(r) : 0;
		if (now > c->recs[k].bpf_ns)
			c->bpf_ns += now - c->recs[k].bpf_ns;
		recording__set_ceiling(r, NULL);
		c->recs[k] = c->recs[--c->nr_recs];
		return;
	}
}

void ceiling__stats(const struct ceiling *c, struct ceiling_stats *ret)
{
	struct recording_shed sh = shed_of(c->level);
	uint64_t now = clock__mono_ns(), cpu = clock__cpu_ns();

	memset(ret, 0, sizeof(*ret));
	ret->max_pct = c->max_pct;
	ret->cpus = c->cpus;
	ret->cost_pct = c->cost_pct;
	ret->own_cpu_s = (double)(cpu - c->cpu0_ns) / 1e9;
	ret->bpf_s = (double)c->bpf_ns / 1e9;
	ret->span_s = (double)(now - c->t0_ns) / 1e9;
	if (ret->span_s > 0)
		ret->avg_pct = 100.0 * (ret->own_cpu_s + ret->bpf_s) / (ret->span_s * c->cpus);
	ret->bpf_measured = c->stats_fd >= 0;
	ret->level = c->level;
	ret->levels = NR_STEPS;
	ret->all_shed = true;
	for (size_t i = c->level; i < NR_STEPS; i++)
		ret->all_shed &= !applies(c, i);
	ret->rate_div = sh.rate_div;
	shed_flags(c, ret->shed);
	ret->launch_stack_every = ret->shed[CEILING_LAUNCH_STACKS] ? sh.launch_stack_every : 1;
	memcpy(ret->shed_s, c->shed_s, sizeof(ret->shed_s));
	ret->steps_up = c->steps_up;
	ret->steps_down = c->steps_down;
	ret->hold_s = c->hold_s;
	ret->intake_cap = intake_cap(c);
	if (intake_bites(c))
		ret->all_shed = false;
}

void ceiling__set_intake(struct ceiling *c, const struct ceiling_intake *in)
{
	if (c->intake.set_cap)
		c->intake.set_cap(c->intake.ctx, 0);
	c->intake = in ? *in : (struct ceiling_intake){0};
	c->intake_level = 0;
}
