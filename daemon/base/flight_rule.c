// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/flight_rule.h"

static const char *const kind_names[FLIGHT_NR_KINDS] = {
	[FLIGHT_MANUAL] = "manual",	  [FLIGHT_GPU_IDLE] = "gpu-idle",
	[FLIGHT_SLOW_STEP] = "slow-step", [FLIGHT_HANG] = "hang",
	[FLIGHT_DEATH] = "death",
};

const char *flight_kind__name(enum flight_kind k)
{
	return (unsigned)k < FLIGHT_NR_KINDS ? kind_names[k] : "?";
}

/* Which keys each kind takes, besides cooldown, per-hour, before and after. */
static bool takes(enum flight_kind k, const char *key)
{
	if (!strcmp(key, "percent"))
		return k == FLIGHT_GPU_IDLE;
	if (!strcmp(key, "seconds"))
		return k == FLIGHT_GPU_IDLE || k == FLIGHT_HANG;
	if (!strcmp(key, "factor") || !strcmp(key, "min-steps"))
		return k == FLIGHT_SLOW_STEP;
	if (!strcmp(key, "range"))
		return k == FLIGHT_SLOW_STEP || k == FLIGHT_HANG;
	return !strcmp(key, "cooldown") || !strcmp(key, "per-hour") || !strcmp(key, "before") ||
	       !strcmp(key, "after");
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

static int set_key(struct flight_rule *r, const char *key, const char *val, bool *seen_range,
		   char *msg, size_t size)
{
	double v;

	if (!takes(r->kind, key))
		return bad(msg, size, "a %s trigger takes no key '%s'", flight_kind__name(r->kind),
			   key);
	if (!strcmp(key, "range")) {
		if (!*val || strlen(val) >= sizeof(r->range))
			return bad(msg, size, "range=%s: a name of 1 to 63 characters%s", val, "");
		snprintf(r->range, sizeof(r->range), "%s", val);
		*seen_range = true;
		return 0;
	}
	if (!strcmp(key, "percent")) {
		if (!number(val, 1, 100, &v))
			return bad(msg, size, "percent=%s: a share from 1 to 100%s", val, "");
		r->percent = v;
	} else if (!strcmp(key, "seconds")) {
		if (!number(val, 1, 3600, &v))
			return bad(msg, size, "seconds=%s: from 1 to 3600%s", val, "");
		r->seconds = v;
	} else if (!strcmp(key, "factor")) {
		if (!number(val, 1.1, 1000, &v))
			return bad(msg, size, "factor=%s: from 1.1 to 1000 (times the median)%s",
				   val, "");
		r->factor = v;
	} else if (!strcmp(key, "min-steps")) {
		if (!number(val, 3, 32, &v) || v != (unsigned)v)
			return bad(msg, size, "min-steps=%s: a whole number from 3 to 32%s", val,
				   "");
		r->min_steps = (unsigned)v;
	} else if (!strcmp(key, "cooldown")) {
		if (!number(val, 0, 86400, &v))
			return bad(msg, size, "cooldown=%s: seconds from 0 to 86400%s", val, "");
		r->cooldown_s = v;
	} else if (!strcmp(key, "per-hour")) {
		if (!number(val, 1, FLIGHT_MAX_PER_HOUR, &v) || v != (unsigned)v)
			return bad(msg, size, "per-hour=%s: a whole number from 1 to 60%s", val,
				   "");
		r->per_hour = (unsigned)v;
	} else if (!strcmp(key, "before")) {
		if (!number(val, 0, 3600, &v))
			return bad(msg, size, "before=%s: seconds from 0 to 3600%s", val, "");
		r->before_s = v;
	} else if (!strcmp(key, "after")) {
		if (!number(val, 0, 60, &v))
			return bad(msg, size, "after=%s: seconds from 0 to 60%s", val, "");
		r->after_s = v;
	}
	return 0;
}

int flight_rule__parse(const char *spec, struct flight_rule *ret, char *msg, size_t size)
{
	char buf[512], *save = NULL, *tok;
	struct flight_rule r = {
		.cooldown_s = 300,
		.per_hour = 6,
		.before_s = 60,
		.min_steps = 10,
	};
	bool seen_range = false, seen_percent = false, seen_seconds = false, seen_factor = false;
	int err = 0;

	if (!spec || strlen(spec) >= sizeof(buf))
		return bad(msg, size, "a trigger: KIND[,key=value...], at most 511 characters%s%s",
			   "", "");
	snprintf(buf, sizeof(buf), "%s", spec);
	tok = strtok_r(buf, ",", &save);
	if (!tok)
		return bad(msg, size,
			   "an empty trigger: give gpu-idle, slow-step, hang or death%s%s", "", "");
	for (r.kind = FLIGHT_GPU_IDLE; r.kind < FLIGHT_NR_KINDS; r.kind++)
		if (!strcmp(tok, kind_names[r.kind]))
			break;
	if (r.kind == FLIGHT_NR_KINDS)
		return bad(msg, size, "unknown trigger '%s': gpu-idle, slow-step, hang or death%s",
			   tok, "");
	/* Defaults by kind: a slow step's dump holds the step whole and the GPU records that
	 * end it (CUPTI's buffers come every 250 ms), a death's the last records its process
	 * sent; the others look back from the moment they trip. */
	r.after_s = r.kind == FLIGHT_SLOW_STEP || r.kind == FLIGHT_DEATH ? 0.5 : 0;
	while (!err && (tok = strtok_r(NULL, ",", &save))) {
		char *eq = strchr(tok, '=');

		if (!eq)
			return bad(msg, size, "'%s': key=value expected%s", tok, "");
		*eq = '\0';
		seen_percent |= !strcmp(tok, "percent");
		seen_seconds |= !strcmp(tok, "seconds");
		seen_factor |= !strcmp(tok, "factor");
		err = set_key(&r, tok, eq + 1, &seen_range, msg, size);
	}
	if (err)
		return err;
	if (r.kind == FLIGHT_GPU_IDLE && (!seen_percent || !seen_seconds))
		return bad(msg, size, "gpu-idle needs percent=P and seconds=S (e.g. %s)%s",
			   "gpu-idle,percent=40,seconds=60", "");
	if (r.kind == FLIGHT_SLOW_STEP && (!seen_range || !seen_factor))
		return bad(msg, size, "slow-step needs range=NAME and factor=K (e.g. %s)%s",
			   "slow-step,range=step,factor=3", "");
	if (r.kind == FLIGHT_HANG && !seen_seconds)
		return bad(msg, size, "hang needs seconds=S (e.g. %s)%s", "hang,seconds=120", "");
	*ret = r;
	return 0;
}

void flight_rule__format(const struct flight_rule *r, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s", flight_kind__name(r->kind));
	size_t at = n > 0 ? (size_t)n : 0;

#define APPEND(...)                                                         \
	do {                                                                \
		if (at < size) {                                            \
			int k = snprintf(buf + at, size - at, __VA_ARGS__); \
			at += k > 0 ? (size_t)k : 0;                        \
		}                                                           \
	} while (0)
	if (r->kind == FLIGHT_GPU_IDLE)
		APPEND(",percent=%g,seconds=%g", r->percent, r->seconds);
	if (r->kind == FLIGHT_SLOW_STEP)
		APPEND(",range=%s,factor=%g,min-steps=%u", r->range, r->factor, r->min_steps);
	if (r->kind == FLIGHT_HANG) {
		APPEND(",seconds=%g", r->seconds);
		if (r->range[0])
			APPEND(",range=%s", r->range);
	}
	APPEND(",cooldown=%g,per-hour=%u,before=%g,after=%g", r->cooldown_s, r->per_hour,
	       r->before_s, r->after_s);
#undef APPEND
}
