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
#include "daemon/oneshot/oneshot.h"
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
	enum gpu_mode mode = GPU_MODE_MERGED;
	unsigned long since_s = 300;
	enum output_format f;
	struct calltree *tree;
	struct output_meta meta = {.unit = "samples"};
	char title[160], *buf = NULL, *end;
	size_t len = 0;
	uint64_t from = 0, now = now_ns();
	enum MHD_Result ret;
	FILE *out;
	int err;

	if (MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "pid"))
		return reply_error(c, 400, "the rolling window keeps no per-process data",
				   "record the process instead: xsprofctl record --pid PID");
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
	if (weight && strcmp(weight, "samples"))
		return reply_error(
			c, 400, "the rolling window counts samples only",
			"GPU time is in samples at the window's frequency; record for us");
	if (!window_format(fmt ? fmt : "folded", &f))
		return reply_error(
			c, 400, "the rolling window has no timeline for a Chrome trace",
			"use folded, svg or pprof, or record: xsprofctl record -o x.json");
	/* Include the slice being recorded: close it now. */
	close_slice(s);
	tree = calltree__new();
	if (!tree)
		return reply_error(c, 500, "out of memory", NULL);
	/* CPU samples and the GPU work they launched, by gpu_mode (default: both). */
	err = mode == GPU_MODE_GPU
		      ? 0
		      : window__query(s->store,
				      since_s * 1000000000ull < now ? now - since_s * 1000000000ull
								    : 0,
				      q->authed, q->uid, tree, &from);
	if (!err && mode != GPU_MODE_CPU) {
		struct calltree *us = calltree__new();
		uint64_t gfrom = 0;

		/* The GPU window is in microseconds: as the samples they would have been worth. */
		err = us ? window__query(s->gpu_window,
					 since_s * 1000000000ull < now
						 ? now - since_s * 1000000000ull
						 : 0,
					 q->authed, q->uid, us, &gfrom)
			 : -ENOMEM;
		if (!err)
			err = gpu_window__add_scaled(us, tree, s->opts->freq_hz, 1000000);
		calltree__free(us);
		if (!from || (gfrom && gfrom < from))
			from = gfrom;
	}
	snprintf(title, sizeof(title), "xsprof: last %.0f s at %u Hz%s",
		 from ? (now - from) / 1e9 : 0.0, s->opts->freq_hz,
		 q->authed ? "" : " (your processes)");
	meta.title = title;
	out = err ? NULL : open_memstream(&buf, &len);
	if (!err && !out)
		err = -errno;
	if (!err)
		err = write_tree(tree, f, out, &meta, s->opts->freq_hz, from, now, NULL);
	if (out && fclose(out) && !err)
		err = -EIO;
	calltree__free(tree);
	if (err)
		ret = reply_error(c, 500, "building the profile failed", strerror(-err));
	else
		ret = reply(c, 200, content_type(f), buf, len);
	free(buf);
	return ret;
}

int parse_pid_body(struct req *q, pid_t *ret)
{
	struct json_object *body = json_tokener_parse(q->body ? q->body : ""), *v;
	int64_t pid;
	int err = -EINVAL;

	if (body && json_object_object_get_ex(body, "pid", &v) &&
	    json_object_is_type(v, json_type_int)) {
		pid = json_object_get_int64(v);
		if (pid > 0 && pid <= INT32_MAX) {
			*ret = (pid_t)pid;
			err = 0;
		}
	}
	json_object_put(body);
	return err;
}

/* Forget attachments whose process is gone, or whose pid now names another process. */
void prune_attached(struct service *s)
{
	for (int i = 0; i < s->nr_attached;) {
		struct attachment *a = &s->attached[i];
		uint64_t start;
		uid_t owner;

		if (!pid_identity(a->pid, &owner, &start) && start == a->start) {
			i++;
			continue;
		}
		s->refused.attach_dead_pruned++;
		*a = s->attached[--s->nr_attached];
	}
}

enum MHD_Result api_attach(struct service *s, struct req *q, struct MHD_Connection *c, bool attach)
{
	struct json_object *out;
	enum MHD_Result ret;
	bool cuda = false;
	int i, all_users = 0, mine = 0;
	uint64_t start = 0;
	uid_t owner = 0;
	pid_t pid;
	char msg[160];

	if (parse_pid_body(q, &pid))
		return reply_error(c, 400, "expected {\"pid\": N}", NULL);
	/* Dead pids hold no slot: a user cannot fill the table with them. */
	prune_attached(s);
	for (i = 0; i < s->nr_attached && s->attached[i].pid != pid; i++)
		;
	if (!attach) {
		if (i == s->nr_attached)
			return reply_error(c, 404, "that pid is not attached", NULL);
		if (!q->authed && (s->attached[i].by_root || s->attached[i].by != q->uid))
			return reply_error(c, 403, "another user attached that process", NULL);
		s->attached[i] = s->attached[--s->nr_attached];
		log_info("detached pid %d", (int)pid);
	} else {
		if (!may_profile(q, c, &pid, 1, &ret))
			return ret;
		if (pid_identity(pid, &owner, &start)) {
			snprintf(msg, sizeof(msg), "no such process: %d", (int)pid);
			return reply_error(c, 404, msg, "check the pid with ps");
		}
		for (int j = 0; j < s->nr_attached; j++) {
			all_users += !s->attached[j].by_root;
			mine += !s->attached[j].by_root && s->attached[j].by == q->uid;
		}
		if (i == s->nr_attached && !q->authed && mine >= ATTACHED_PER_UID) {
			s->refused.attach_uid++;
			snprintf(msg, sizeof(msg),
				 "you already have %d processes attached (at most %d "
				 "per user)",
				 mine, ATTACHED_PER_UID);
			return reply_error(c, 429, msg, "detach some first");
		}
		if (i == s->nr_attached &&
		    (s->nr_attached == MAX_ATTACHED ||
		     (!q->authed && all_users >= MAX_ATTACHED - ATTACHED_ROOT_SLOTS))) {
			s->refused.attach_full++;
			return reply_error(c, 429, "too many attached processes",
					   "detach some first");
		}
		if (i == s->nr_attached) {
			s->attached[s->nr_attached++] = (struct attachment){
				.pid = pid, .by = q->uid, .by_root = q->authed, .start = start};
			/* Map it now: its names survive it exiting. */
			symbolizer__add_process(s->sym, pid);
			/* Its CUDA launches from now on, when it maps CUDA. */
			if (s->always && recording__cuda(s->always)) {
				int n = cuda_probes__attach_pid(recording__cuda(s->always), pid);

				cuda = n > 0;
				if (n < 0)
					log_warn("attaching CUDA probes to pid %d: %s", (int)pid,
						 strerror(-n));
			}
			log_info("attached pid %d%s", (int)pid, cuda ? " with CUDA probes" : "");
		}
	}
	out = json_object_new_object();
	add_u64(out, "pid", (uint64_t)pid);
	json_object_object_add(out, "attached", json_object_new_boolean(attach));
	if (attach)
		json_object_object_add(out, "cuda", json_object_new_boolean(cuda));
	return reply_json(c, 200, out);
}
