// SPDX-License-Identifier: Apache-2.0
/* GET /v1/profile (the rolling window) and attach / detach. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <microhttpd.h>

#include "daemon/base/clock.h"
#include "daemon/options.h"
#include "daemon/service/internal.h"
#include "daemon/service/status_doc.h"
#include "daemon/session/lasting.h"
#include "daemon/session/window.h"
#include "daemon/symbolize/symbolizer.h"
#include "output/model/calltree.h"
#include "output/output.h"
#include "output/model/profile.h"

/*
 * A time in the daemon's CLOCK_MONOTONIC milliseconds (what GET /v1/timeline gives) into *ns:
 * digits only, not past now. false when it is not one.
 */
static bool parse_ms(const char *str, uint64_t now_ns, uint64_t *ns)
{
	unsigned long long v;
	char *end;

	if (!*str || strspn(str, "0123456789") != strlen(str))
		return false;
	errno = 0;
	v = strtoull(str, &end, 10);
	if (errno || v > now_ns / 1000000 + 1)
		return false;
	*ns = v * 1000000ull;
	return true;
}

/* since_s, or from_ms and to_ms, into [*since_ns, *until_ns); false with *ret the answer. */
static bool parse_range(struct MHD_Connection *c, uint64_t now, uint64_t *since_ns,
			uint64_t *until_ns, enum MHD_Result *ret)
{
#define ARG(k) MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k)
	const char *since = ARG("since_s"), *from_ms = ARG("from_ms"), *to_ms = ARG("to_ms");
#undef ARG
	unsigned long since_s = 300;
	char msg[160], *end;

	*until_ns = UINT64_MAX;
	if (since && (from_ms || to_ms)) {
		*ret = reply__error(c, 400, "give since_s, or from_ms and to_ms, not both", NULL);
		return false;
	}
	if ((from_ms && !parse_ms(from_ms, now, since_ns)) ||
	    (to_ms && !parse_ms(to_ms, now, until_ns)) ||
	    (from_ms && to_ms && *until_ns <= *since_ns)) {
		*ret = reply__error(
			c, 400,
			"from_ms and to_ms must be times of the daemon's monotonic clock "
			"in milliseconds, from before to, not in the future",
			"take them from GET /v1/timeline (now_ms, each slice's start and "
			"end)");
		return false;
	}
	if (from_ms)
		return true;
	if (since) {
		/* Digits only: strtoul would take "-1" as "everything". */
		errno = 0;
		since_s =
			strspn(since, "0123456789") == strlen(since) ? strtoul(since, &end, 10) : 0;
		if (errno || !*since || !since_s || since_s > MAX_SINCE_S) {
			snprintf(msg, sizeof(msg),
				 "since_s must be a whole number of seconds in [1, %u]",
				 MAX_SINCE_S);
			*ret = reply__error(c, 400, msg, "e.g. since_s=300 for the last 5 minutes");
			return false;
		}
	}
	*since_ns = since_s * 1000000000ull < now ? now - since_s * 1000000000ull : 0;
	return true;
}

/* Whether the window answers group (none: the plain view, grouped or not). */
static bool window_answers(struct service *s, enum session_group group, struct MHD_Connection *c,
			   enum MHD_Result *ret)
{
	char msg[160];

	if (!group || group == s->machine.group_by)
		return true;
	if (!s->machine.group_by) {
		*ret = reply__error(c, 400, "the rolling window is not grouped by range",
				    "start xsprofd with --window-group-by range or outer-range "
				    "(config key window-group-by), or attach the process grouped "
				    "(xsprofctl attach PID --group-by range), or record it");
		return false;
	}
	snprintf(msg, sizeof(msg), "the rolling window is grouped by %s, not %s",
		 session_group__name(s->machine.group_by), session_group__name(group));
	*ret = reply__error(c, 400, msg,
			    "xsprofd's --window-group-by sets it at start; or attach the process "
			    "grouped as you want it (xsprofctl attach PID --group-by G)");
	return false;
}

enum MHD_Result window_api__profile(struct service *s, struct req *q, struct MHD_Connection *c)
{
	const char *fmt = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
	const char *mode_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "gpu_mode");
	const char *weight = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "weight");
	const char *pid = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "pid");
	const char *group_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "group_by");
	enum session_group group = SESSION_GROUP_NONE;
	enum gpu_mode mode = GPU_MODE_MERGED;
	enum weight_unit unit = WEIGHT_SAMPLES;
	enum output_format f;
	struct calltree *tree;
	struct output_meta meta = {0};
	char title[160], *buf = NULL;
	size_t len = 0;
	uint64_t from = 0, now = clock__mono_ns(), since_ns = 0, until_ns;
	enum MHD_Result ret;
	FILE *out;
	int err;

	if (!parse_range(c, now, &since_ns, &until_ns, &ret))
		return ret;
	if (mode_s && profile__mode_from_name(mode_s, &mode))
		return reply__error(c, 400, "gpu_mode must be cpu, gpu or merged", NULL);
	if (weight && profile__unit_from_name(weight, &unit))
		return reply__error(c, 400, "weight must be samples or us", NULL);
	if (!reply__window_format(fmt ? fmt : "folded", &f)) {
		char list[160], hint[240];

		snprintf(hint, sizeof(hint), "use %s, or record: xsprofctl record -o x.json",
			 output__format_list(OUTPUT_IN_WINDOW, false, list, sizeof(list)));
		return reply__error(c, 400,
				    output__format_from_name(fmt, &f)
					    ? "unknown format"
					    : "the rolling window has no timeline for a Chrome "
					      "trace or the GPU timeline",
				    hint);
	}
	if (reply__is_report(f) && group_s)
		return reply__error(c, 400, "a GPU report is not grouped",
				    "ask without group_by (the report has its own ranges)");
	if (group_s && (session_group__from_name(group_s, &group) ||
			(group && !session_group__is_range(group))))
		return reply__error(
			c, 400, "group_by must be range or outer-range",
			"unit, container or comm: record it (xsprofctl record --group-by ...)");
	if (pid)
		return attachments__api_profile(s, q, c, pid, since_ns, until_ns, mode, unit, group,
						f);
	if (!window_answers(s, group, c, &ret))
		return ret;
	/* Include the slice being recorded: close it now. */
	slices__close(s);
	if (reply__is_report(f))
		return reply__gpu_report(c, &s->machine, since_ns, until_ns, q->authed, q->uid, f,
					 now);
	tree = calltree__new();
	if (!tree)
		return reply__error(c, 500, "out of memory", NULL);
	/* CPU samples and the GPU work they launched, by gpu_mode (default: both). */
	err = lasting__query(&s->machine, since_ns, until_ns, mode, unit, q->authed, q->uid, tree,
			     &from);
	/* Asked without its group: the plain view, the range level gone. */
	if (!err && s->machine.group_by && !group)
		err = lasting__drop_root(&tree);
	snprintf(title, sizeof(title), "xsprof: %.0f s at %u Hz%s",
		 from ? ((until_ns < now ? until_ns : now) - from) / 1e9 : 0.0, s->opts->freq_hz,
		 q->authed ? "" : " (your processes)");
	meta.title = title;
	meta.unit = profile__unit_name(unit);
	out = err ? NULL : open_memstream(&buf, &len);
	if (!err && !out)
		err = -errno;
	if (!err)
		err = reply__write_tree(tree, f, out, &meta, s->opts->freq_hz, unit, from, now,
					symbolizer__sites(s->sym));
	if (out && fclose(out) && !err)
		err = -EIO;
	calltree__free(tree);
	if (err)
		ret = reply__error(c, 500, "building the profile failed", strerror(-err));
	else
		ret = reply__span(c, reply__content_type(f), buf, len, from,
				  until_ns < now ? until_ns : now);
	free(buf);
	return ret;
}

static int timeline_row(void *ctx, uint64_t start_ns, uint64_t end_ns, uint64_t weight)
{
	struct json_object *row = json_object_new_array_ext(3);

	if (!row)
		return -ENOMEM;
	json_object_array_add(row, json_object_new_int64((int64_t)(start_ns / 1000000)));
	json_object_array_add(row, json_object_new_int64((int64_t)(end_ns / 1000000)));
	json_object_array_add(row, json_object_new_int64((int64_t)weight));
	return json_object_array_add(ctx, row) ? -ENOMEM : 0;
}

/*
 * GET /v1/timeline[?since_s=S][&pid=N]: each slice of the window (or of N's attachment) with
 * its CPU samples and its GPU microseconds, what the web view's strip draws and brushes.
 */
enum MHD_Result window_api__timeline(struct service *s, struct req *q, struct MHD_Connection *c)
{
	const char *pid = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "pid");
	struct json_object *out, *cpu, *gpu;
	const struct lasting *l = &s->machine;
	uint64_t now = clock__mono_ns(), since_ns = 0, until_ns;
	bool all = q->authed;
	enum MHD_Result ret;
	int err;

	if (!parse_range(c, now, &since_ns, &until_ns, &ret))
		return ret;
	if (pid) {
		struct attachment *a = attachments__to_read(s, q, c, pid, &ret);

		if (!a)
			return ret;
		l = &a->prof;
		all = true;
	} else {
		slices__close(s);
	}
	out = json_object_new_object();
	cpu = json_object_new_array();
	gpu = json_object_new_array();
	err = out && cpu && gpu ? 0 : -ENOMEM;
	if (!err)
		err = window__for_each_slice(l->cpu, since_ns, all, q->uid, timeline_row, cpu);
	if (!err)
		err = window__for_each_slice(l->gpu, since_ns, all, q->uid, timeline_row, gpu);
	if (err) {
		json_object_put(out);
		json_object_put(cpu);
		json_object_put(gpu);
		return reply__error(c, 500, "out of memory", NULL);
	}
	status_doc__add_u64(out, "now_ms", clock__mono_ns() / 1000000);
	status_doc__add_u64(out, "freq_hz", l->freq_hz);
	status_doc__add_u64(out, "window_s", s->opts->window_s);
	json_object_object_add(out, "cpu", cpu);
	json_object_object_add(out, "gpu", gpu);
	return reply__json(c, 200, out);
}
