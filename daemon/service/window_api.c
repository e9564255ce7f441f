// SPDX-License-Identifier: Apache-2.0
/* GET /v1/profile (the rolling window) and attach / detach. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "cupti_inject/xsprof_wire.h"
#include "daemon/cuda/cuda_probes.h"
#include "daemon/gpu/cupti_server.h"
#include "daemon/stacks/fold.h"
#include "daemon/session/gpu_join.h"
#include "daemon/cuda/launch_store.h"
#include "daemon/service/http.h"
#include "daemon/log.h"
#include "daemon/options.h"
#include "daemon/probes/preflight.h"
#include "daemon/session/recording.h"
#include "daemon/probes/sampler.h"
#include "daemon/service/service.h"
#include "daemon/service/service_gpu.h"
#include "daemon/stacks/stack_table.h"
#include "daemon/session/stack_names.h"
#include "daemon/service/window.h"
#include "daemon/symbolize/symbolizer.h"
#include "daemon/unwind/unwinder.h"
#include "output/calltree.h"
#include "output/output.h"
#include "output/profile.h"
#include "daemon/service/internal.h"

enum MHD_Result api_profile(struct service *s, struct req *q, struct MHD_Connection *c)
{
	const char *since = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "since_s");
	const char *fmt = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
	const char *mode_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "gpu_mode");
	const char *weight = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "weight");
	const char *pid = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "pid");
	enum gpu_mode mode = GPU_MODE_MERGED;
	enum weight_unit unit = WEIGHT_SAMPLES;
	unsigned long since_s = 300;
	enum output_format f;
	struct calltree *tree;
	struct output_meta meta = {0};
	char title[160], *buf = NULL, *end;
	size_t len = 0;
	uint64_t from = 0, now = clock__mono_ns(), since_ns;
	enum MHD_Result ret;
	FILE *out;
	int err;

	if (since) {
		/* Digits only: strtoul would take "-1" as "everything". */
		errno = 0;
		since_s =
			strspn(since, "0123456789") == strlen(since) ? strtoul(since, &end, 10) : 0;
		if (errno || !*since || !since_s || since_s > MAX_SINCE_S) {
			snprintf(title, sizeof(title),
				 "since_s must be a whole number of seconds in [1, %u]",
				 MAX_SINCE_S);
			return reply_error(c, 400, title,
					   "e.g. since_s=300 for the last 5 minutes");
		}
	}
	if (mode_s && profile__mode_from_name(mode_s, &mode))
		return reply_error(c, 400, "gpu_mode must be cpu, gpu or merged", NULL);
	if (weight && profile__unit_from_name(weight, &unit))
		return reply_error(c, 400, "weight must be samples or us", NULL);
	if (!window_format(fmt ? fmt : "folded", &f))
		return reply_error(
			c, 400, "the rolling window has no timeline for a Chrome trace",
			"use folded, svg or pprof, or record: xsprofctl record -o x.json");
	since_ns = since_s * 1000000000ull < now ? now - since_s * 1000000000ull : 0;
	if (pid)
		return api_attachment_profile(s, q, c, pid, since_ns, mode, unit, f);
	/* Include the slice being recorded: close it now. */
	close_slice(s);
	tree = calltree__new();
	if (!tree)
		return reply_error(c, 500, "out of memory", NULL);
	/* CPU samples and the GPU work they launched, by gpu_mode (default: both). */
	err = lasting__query(&s->machine, since_ns, mode, unit, q->authed, q->uid, tree, &from);
	snprintf(title, sizeof(title), "xsprof: last %.0f s at %u Hz%s",
		 from ? (now - from) / 1e9 : 0.0, s->opts->freq_hz,
		 q->authed ? "" : " (your processes)");
	meta.title = title;
	meta.unit = profile__unit_name(unit);
	out = err ? NULL : open_memstream(&buf, &len);
	if (!err && !out)
		err = -errno;
	if (!err)
		err = write_tree(tree, f, out, &meta, s->opts->freq_hz, unit, from, now,
				 symbolizer__sites(s->sym));
	if (out && fclose(out) && !err)
		err = -EIO;
	calltree__free(tree);
	if (err)
		ret = reply_error(c, 500, "building the profile failed", strerror(-err));
	else
		ret = reply_span(c, content_type(f), buf, len, from, now);
	free(buf);
	return ret;
}
