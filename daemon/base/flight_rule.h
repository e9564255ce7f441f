/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A flight recorder trigger, as written in the config file (trigger = SPEC), on the command
 * line (--trigger SPEC) and through the API: KIND[,key=value...].
 *   gpu-idle,percent=P,seconds=S     a process's GPU idle share above P% over S seconds
 *   slow-step,range=NAME,factor=K    an NVTX range or xsprof scope NAME that lasts more than
 *                                    K times the median of its last 32 (min-steps=N first)
 *   hang,seconds=S[,range=NAME]      a CUDA call that waits for the GPU (or an NVTX range
 *                                    NAME, a collective's) not done after S seconds
 *   death                            a process with GPU work killed by a signal
 * Every kind also takes cooldown=S (default 300), per-hour=N (default 6), before=S (the
 * seconds kept before the moment it trips, default 60) and after=S (after it).
 */
#ifndef XSPROF_DAEMON_BASE_FLIGHT_RULE_H
#define XSPROF_DAEMON_BASE_FLIGHT_RULE_H

#include <stddef.h>

enum flight_kind {
	FLIGHT_MANUAL = 0,
	FLIGHT_GPU_IDLE,
	FLIGHT_SLOW_STEP,
	FLIGHT_HANG,
	FLIGHT_DEATH,
	FLIGHT_NR_KINDS,
};

#define FLIGHT_RULE_RANGE_LEN 64
#define FLIGHT_MAX_PER_HOUR   60

struct flight_rule {
	enum flight_kind kind;
	double percent;	    /* gpu-idle */
	double seconds;	    /* gpu-idle: over; hang: after */
	double factor;	    /* slow-step */
	unsigned min_steps; /* slow-step: ranges seen before the median counts (default 10) */
	char range[FLIGHT_RULE_RANGE_LEN]; /* slow-step (required), hang (optional) */
	double cooldown_s, before_s, after_s;
	unsigned per_hour;
};

#define FLIGHT_MAX_KIND_KEYS 4

/* A kind's row (flight_rule.c's table): its spec's syntax, defaults and what it watches. */
struct flight_kind_info {
	const char *name;			/* "gpu-idle"; "manual" for FLIGHT_MANUAL */
	const char *keys[FLIGHT_MAX_KIND_KEYS]; /* its own keys, in the order written back */
	unsigned nr_required;			/* the first ones of keys must be given */
	const char *needs;			/* "percent=P and seconds=S" */
	const char *example;			/* "gpu-idle,percent=40,seconds=60" */
	double after_s;				/* after='s default */
	const char *watches;			/* the event its detector watches, for people */
};

/* k's row; NULL past the kinds. */
const struct flight_kind_info *flight_kind__info(enum flight_kind k);
/* "gpu-idle", ...; "manual" for FLIGHT_MANUAL. */
const char *flight_kind__name(enum flight_kind k);
/* k's name as a status key and metric member: "gpu_idle" for "gpu-idle". */
void flight_kind__key(enum flight_kind k, char *buf, size_t size);

/*
 * spec into *ret, defaults filled in. 0, or -EINVAL with why in msg (an unknown kind or key,
 * a value out of its range, a key the kind does not take, a required one missing).
 */
int flight_rule__parse(const char *spec, struct flight_rule *ret, char *msg, size_t size);
/* The rule as a spec that parses back to it, every key written. */
void flight_rule__format(const struct flight_rule *r, char *buf, size_t size);

#endif
