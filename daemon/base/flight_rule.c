// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/flight_rule.h"

/* A key of a spec: its range, where it goes and what a bad value is told. */
struct rule_key {
	const char *name;
	double lo, hi;
	bool whole;	  /* a whole number, into an unsigned field */
	size_t offset;	  /* into struct flight_rule: a double, or an unsigned when whole */
	const char *what; /* "a share from 1 to 100" */
};

#define FIELD(f) offsetof(struct flight_rule, f)

/* Every key; the first ones by kind (the row's keys say which), the last four every kind's. */
static const struct rule_key keys[] = {
	{"percent", 1, 100, false, FIELD(percent), "a share from 1 to 100"},
	{"seconds", 1, 3600, false, FIELD(seconds), "from 1 to 3600"},
	{"factor", 1.1, 1000, false, FIELD(factor), "from 1.1 to 1000 (times the median)"},
	{"min-steps", 3, 32, true, FIELD(min_steps), "a whole number from 3 to 32"},
	{"range", 0, 0, false, FIELD(range), "a name of 1 to 63 characters"},
	{"cooldown", 0, 86400, false, FIELD(cooldown_s), "seconds from 0 to 86400"},
	{"per-hour", 1, FLIGHT_MAX_PER_HOUR, true, FIELD(per_hour), "a whole number from 1 to 60"},
	{"before", 0, 3600, false, FIELD(before_s), "seconds from 0 to 3600"},
	{"after", 0, 60, false, FIELD(after_s), "seconds from 0 to 60"},
};

#define NR_KEYS	   (sizeof(keys) / sizeof(keys[0]))
#define COMMON_KEY 5 /* keys[COMMON_KEY...]: every kind takes them */

/*
 * The kinds: a new one is a row here (its detector, watching its event, in
 * daemon/service/flight_triggers.c; its docs in xsprofd(8), --help and the completions).
 * keys: what the kind takes, in the order a spec is written back; required: the first
 * nr_required of them.
 */
static const struct flight_kind_info kinds[FLIGHT_NR_KINDS] = {
	[FLIGHT_MANUAL] = {.name = "manual", .watches = "a dump asked for (xsprofctl dump)"},
	[FLIGHT_GPU_IDLE] =
		{
			.name = "gpu-idle",
			.keys = {"percent", "seconds"},
			.nr_required = 2,
			.needs = "percent=P and seconds=S",
			.example = "gpu-idle,percent=40,seconds=60",
			.watches = "each process's GPU figures at each slice's close",
		},
	[FLIGHT_SLOW_STEP] =
		{
			.name = "slow-step",
			.keys = {"range", "factor", "min-steps"},
			.nr_required = 2,
			.needs = "range=NAME and factor=K",
			.example = "slow-step,range=step,factor=3",
			/* The step whole, and the GPU records that end it (CUPTI's buffers come
			 * every 250 ms). */
			.after_s = 0.5,
			.watches = "each NVTX range or xsprof scope as it ends",
		},
	[FLIGHT_HANG] =
		{
			.name = "hang",
			.keys = {"seconds", "range"},
			.nr_required = 1,
			.needs = "seconds=S",
			.example = "hang,seconds=120",
			.watches = "CUDA calls waiting for the GPU, and open NVTX ranges",
		},
	[FLIGHT_DEATH] =
		{
			.name = "death",
			.example = "death",
			/* The last records its process sent. */
			.after_s = 0.5,
			.watches = "processes with GPU work killed by a signal",
		},
};

const struct flight_kind_info *flight_kind__info(enum flight_kind k)
{
	return (unsigned)k < FLIGHT_NR_KINDS ? &kinds[k] : NULL;
}

const char *flight_kind__name(enum flight_kind k)
{
	return (unsigned)k < FLIGHT_NR_KINDS ? kinds[k].name : "?";
}

void flight_kind__key(enum flight_kind k, char *buf, size_t size)
{
	snprintf(buf, size, "%s", flight_kind__name(k));
	for (char *p = buf; *p; p++)
		*p = *p == '-' ? '_' : *p;
}

/* "gpu-idle, slow-step, hang or death": the kinds a spec may name. */
static void kind_list(char *buf, size_t size)
{
	size_t at = 0;

	buf[0] = '\0';
	for (enum flight_kind k = FLIGHT_GPU_IDLE; k < FLIGHT_NR_KINDS && at < size; k++) {
		int n = snprintf(buf + at, size - at, "%s%s",
				 k == FLIGHT_GPU_IDLE	    ? ""
				 : k + 1 == FLIGHT_NR_KINDS ? " or "
							    : ", ",
				 kinds[k].name);

		at += n > 0 ? (size_t)n : 0;
	}
}

/* key's row, when kind takes it (its own keys and the common ones); NULL when it does not. */
static const struct rule_key *taken(enum flight_kind k, const char *key)
{
	for (size_t i = 0; i < NR_KEYS; i++) {
		if (strcmp(keys[i].name, key))
			continue;
		if (i >= COMMON_KEY)
			return &keys[i];
		for (size_t j = 0; j < FLIGHT_MAX_KIND_KEYS && kinds[k].keys[j]; j++)
			if (!strcmp(kinds[k].keys[j], key))
				return &keys[i];
		return NULL;
	}
	return NULL;
}

/* A number in [lo, hi]; false when it is not one. */
static bool number(const char *s, double lo, double hi, double *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
		return false;
	*ret = v;
	return true;
}

static int bad(char *msg, size_t size, const char *fmt, const char *a, const char *b)
{
	snprintf(msg, size, fmt, a, b);
	return -EINVAL;
}

static int set_key(struct flight_rule *r, const char *key, const char *val, char *msg, size_t size)
{
	const struct rule_key *k = taken(r->kind, key);
	char *field = (char *)r + (k ? k->offset : 0);
	char why[96];
	double v;

	if (!k)
		return bad(msg, size, "a %s trigger takes no key '%s'", flight_kind__name(r->kind),
			   key);
	snprintf(why, sizeof(why), "%s=%%s: %s%%s", k->name, k->what);
	if (k->offset == FIELD(range)) {
		if (!*val || strlen(val) >= sizeof(r->range))
			return bad(msg, size, why, val, "");
		snprintf(r->range, sizeof(r->range), "%s", val);
		return 0;
	}
	if (!number(val, k->lo, k->hi, &v) || (k->whole && v != (unsigned)v))
		return bad(msg, size, why, val, "");
	if (k->whole)
		*(unsigned *)field = (unsigned)v;
	else
		*(double *)field = v;
	return 0;
}

int flight_rule__parse(const char *spec, struct flight_rule *ret, char *msg, size_t size)
{
	char buf[512], list[128], *save = NULL, *tok;
	struct flight_rule r = {
		.cooldown_s = 300,
		.per_hour = 6,
		.before_s = 60,
		.min_steps = 10,
	};
	bool seen[FLIGHT_MAX_KIND_KEYS] = {false};
	int err = 0;

	kind_list(list, sizeof(list));
	if (!spec || strlen(spec) >= sizeof(buf))
		return bad(msg, size, "a trigger: KIND[,key=value...], at most 511 characters%s%s",
			   "", "");
	snprintf(buf, sizeof(buf), "%s", spec);
	tok = strtok_r(buf, ",", &save);
	if (!tok)
		return bad(msg, size, "an empty trigger: give %s%s", list, "");
	for (r.kind = FLIGHT_GPU_IDLE; r.kind < FLIGHT_NR_KINDS; r.kind++)
		if (!strcmp(tok, kinds[r.kind].name))
			break;
	if (r.kind == FLIGHT_NR_KINDS)
		return bad(msg, size, "unknown trigger '%s': %s", tok, list);
	/* Defaults by kind (the row's after=); the others look back from the moment they
	 * trip. */
	r.after_s = kinds[r.kind].after_s;
	while (!err && (tok = strtok_r(NULL, ",", &save))) {
		char *eq = strchr(tok, '=');

		if (!eq)
			return bad(msg, size, "'%s': key=value expected%s", tok, "");
		*eq = '\0';
		for (size_t j = 0; j < FLIGHT_MAX_KIND_KEYS && kinds[r.kind].keys[j]; j++)
			seen[j] |= !strcmp(tok, kinds[r.kind].keys[j]);
		err = set_key(&r, tok, eq + 1, msg, size);
	}
	if (err)
		return err;
	for (size_t j = 0; j < kinds[r.kind].nr_required; j++)
		if (!seen[j]) {
			snprintf(msg, size, "%s needs %s (e.g. %s)", kinds[r.kind].name,
				 kinds[r.kind].needs, kinds[r.kind].example);
			return -EINVAL;
		}
	*ret = r;
	return 0;
}

/* key=value of r, appended at *at (a number as %g, a whole one as %u). */
static void append_key(const struct flight_rule *r, const struct rule_key *k, char *buf,
		       size_t size, size_t *at)
{
	const char *field = (const char *)r + k->offset;
	int n;

	if (*at >= size)
		return;
	if (k->offset == FIELD(range))
		n = snprintf(buf + *at, size - *at, ",%s=%s", k->name, r->range);
	else if (k->whole)
		n = snprintf(buf + *at, size - *at, ",%s=%u", k->name, *(const unsigned *)field);
	else
		n = snprintf(buf + *at, size - *at, ",%s=%g", k->name, *(const double *)field);
	*at += n > 0 ? (size_t)n : 0;
}

void flight_rule__format(const struct flight_rule *r, char *buf, size_t size)
{
	const struct flight_kind_info *ki = flight_kind__info(r->kind);
	int n = snprintf(buf, size, "%s", flight_kind__name(r->kind));
	size_t at = n > 0 ? (size_t)n : 0;

	for (size_t j = 0; ki && j < FLIGHT_MAX_KIND_KEYS && ki->keys[j]; j++) {
		const struct rule_key *k = taken(r->kind, ki->keys[j]);

		/* An optional range left out is not written (hang's). */
		if (k && !(k->offset == FIELD(range) && !r->range[0]))
			append_key(r, k, buf, size, &at);
	}
	for (size_t i = COMMON_KEY; i < NR_KEYS; i++)
		append_key(r, &keys[i], buf, size, &at);
}
