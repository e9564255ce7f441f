// SPDX-License-Identifier: Apache-2.0
/*
 * xsprofctl fleet: ask many xsprofd hosts (their TCP API, --listen) for a profile in parallel,
 * with a concurrency limit, a timeout per host and one overall deadline, and merge the answers
 * into one profile with the host (or one of its labels) as the root frame. Hosts that fail are
 * reported with the reason; a profile with some hosts missing is still written and says so.
 * The hosts' list is fleet_hosts.c's, the options fleet_args.c's, the reports fleet_gpu.c's
 * (--report gpu) and fleet_job.c's (--report straggler).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "daemon/base/clock.h"
#include "daemon/base/atomic_file.h"
#include "daemon/ctl/commands.h"
#include "daemon/ctl/fleet_internal.h"
#include "daemon/ctl/json_get.h"
#include "daemon/ctl/reply_buf.h"
#include "output/model/calltree.h"
#include "output/output.h"
#include "output/model/profile.h"

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	struct fleet_host *h = ctx;

	return reply_buf__append(&h->reply, p, size * n, FLEET_MAX_REPLY);
}

/* The URL asked of h: a recording of the next seconds, or the rolling window. */
void fleet__host_url(const struct fleet *f, const struct fleet_host *h, char *url, size_t size)
{
	const char *fmt = f->gpu_report ? "gpu-report" : f->straggler ? "job-parts" : "folded";
	int n;

	if (f->since > 0)
		n = snprintf(url, size, "%s%s/v1/profile?format=%s&since_s=%.0f",
			     fleet__scheme(f, h), h->addr, fmt, f->since);
	else
		n = snprintf(url, size, "%s%s/debug/pprof/profile?format=%s&seconds=%.0f",
			     fleet__scheme(f, h), h->addr, fmt, f->duration);
	if (f->pid)
		n += snprintf(url + n, size - n, "&pid=%s", f->pid);
	if (f->comm)
		n += snprintf(url + n, size - n, "&comm=%s", f->comm);
	if (f->gpu_mode)
		n += snprintf(url + n, size - n, "&gpu_mode=%s", f->gpu_mode);
	if (f->group_by)
		n += snprintf(url + n, size - n, "&group_by=%s", f->group_by);
	if (f->range_domain)
		n += snprintf(url + n, size - n, "&range_domain=%s", f->range_domain);
	if (f->job) {
		char *esc = curl_easy_escape(NULL, f->job, 0);

		n += snprintf(url + n, size - n, "&job=%s", esc ? esc : "");
		curl_free(esc);
	}
	if (f->rank)
		snprintf(url + n, size - n, "&rank=%s", f->rank);
}

static int start_host(struct fleet *f, CURLM *m, struct fleet_host *h, struct curl_slist *hdrs,
		      double left)
{
	char url[1024];
	double t = f->host_timeout < left ? f->host_timeout : left;

	if (f->dump_before > 0)
		snprintf(url, sizeof(url), "%s%s/v1/dumps", fleet__scheme(f, h), h->addr);
	else
		fleet__host_url(f, h, url, sizeof(url));
	h->h = curl_easy_init();
	if (!h->h)
		return -ENOMEM;
	if (f->dump_before > 0)
		curl_easy_setopt(h->h, CURLOPT_POSTFIELDS, f->dump_body);
	curl_easy_setopt(h->h, CURLOPT_URL, url);
	curl_easy_setopt(h->h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h->h, CURLOPT_WRITEDATA, h);
	curl_easy_setopt(h->h, CURLOPT_ERRORBUFFER, h->why);
	curl_easy_setopt(h->h, CURLOPT_PRIVATE, h);
	fleet__curl_common(f, h->h, hdrs, (long)(t * 1000));
	h->why[0] = '\0';
	h->started = true;
	h->t0 = clock__mono_s();
	return curl_multi_add_handle(m, h->h) ? -EIO : 0;
}

/* A transfer ended: ok, or why not. */
static void end_host(CURLM *m, struct fleet_host *h, CURLcode rc)
{
	long status = 0;

	curl_easy_getinfo(h->h, CURLINFO_RESPONSE_CODE, &status);
	h->secs = clock__mono_s() - h->t0;
	h->done = true;
	if (h->reply.overflow)
		snprintf(h->why, sizeof(h->why), "reply over %u MiB", FLEET_MAX_REPLY >> 20);
	else if (rc != CURLE_OK && !h->why[0])
		snprintf(h->why, sizeof(h->why), "%s", curl_easy_strerror(rc));
	else if (rc == CURLE_OK && status != 200 && status != 202) {
		struct json_object *j = h->reply.data ? json_tokener_parse(h->reply.data) : NULL,
				   *e;

		snprintf(h->why, sizeof(h->why), "HTTP %ld: %s", status,
			 j && json_object_object_get_ex(j, "error", &e) ? json_object_get_string(e)
									: "no error text");
		json_object_put(j);
	} else if (rc == CURLE_OK)
		h->ok = true;
	curl_multi_remove_handle(m, h->h);
	curl_easy_cleanup(h->h);
	h->h = NULL;
}

/* Ask every host, parallel at most at once, until all answered or the deadline passed. */
static int collect(struct fleet *f)
{
	CURLM *m = curl_multi_init();
	struct curl_slist *hdrs = f->auth ? curl_slist_append(NULL, f->auth) : NULL;
	double end = clock__mono_s() + f->deadline;
	size_t next = 0, running = 0;

	if (!m)
		return -ENOMEM;
	for (;;) {
		double left = end - clock__mono_s();
		int still, queued;
		CURLMsg *msg;

		while (left > 0 && running < f->parallel && next < f->nr) {
			struct fleet_host *h = &f->hosts[next++];

			if (start_host(f, m, h, hdrs, left)) {
				snprintf(h->why, sizeof(h->why), "cannot start the request");
				h->done = true;
				continue;
			}
			running++;
		}
		if (!running && (next == f->nr || left <= 0))
			break;
		if (left <= 0)
			break;
		curl_multi_perform(m, &still);
		while ((msg = curl_multi_info_read(m, &queued))) {
			struct fleet_host *h;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&h);
			end_host(m, h, msg->data.result);
			running--;
			if (h->ok && f->merge)
				fleet_job__take(f, h);
		}
		curl_multi_poll(m, NULL, 0, left < 0.2 ? (int)(left * 1000) + 1 : 200, NULL);
	}
	for (size_t i = 0; i < f->nr; i++) {
		struct fleet_host *h = &f->hosts[i];

		if (h->h) {
			snprintf(h->why, sizeof(h->why),
				 "no answer before the overall deadline (%g s)", f->deadline);
			end_host(m, h, CURLE_OPERATION_TIMEDOUT);
			h->ok = false;
		} else if (!h->started) {
			snprintf(h->why, sizeof(h->why),
				 "not asked: the overall deadline (%g s) passed first",
				 f->deadline);
		}
	}
	curl_slist_free_all(hdrs);
	curl_multi_cleanup(m);
	return 0;
}

/* The root frame of h's stacks by --by, or NULL for none. */
static const char *root_of(const struct fleet *f, const struct fleet_host *h, char *buf,
			   size_t size)
{
	const char *v;

	if (!strcmp(f->by, "none"))
		return NULL;
	if (!strcmp(f->by, "host")) {
		v = fleet__label_of(h, "host");
		return v ? v : h->addr;
	}
	v = fleet__label_of(h, f->by);
	snprintf(buf, size, "%s=%s", f->by, v ? v : "[none]");
	return buf;
}

/* One host's folded text into t under its root frame. */
static int merge_host(struct fleet *f, struct fleet_host *h, struct calltree *t)
{
	static const char *frames[FLEET_MAX_FRAMES + 1];
	char rootbuf[256], *save = NULL, *line;
	const char *root = root_of(f, h, rootbuf, sizeof(rootbuf));
	int err = 0;

	for (line = h->reply.data ? strtok_r(h->reply.data, "\n", &save) : NULL; line && !err;
	     line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' '), *end, *fsave = NULL, *fr;
		unsigned long long w;
		size_t n = 0;

		if (!sp || !(w = strtoull(sp + 1, &end, 10)) || *end) {
			f->lines_bad++;
			continue;
		}
		*sp = '\0';
		if (root)
			frames[n++] = root;
		for (fr = strtok_r(line, ";", &fsave); fr; fr = strtok_r(NULL, ";", &fsave)) {
			if (n == FLEET_MAX_FRAMES) {
				f->frames_cut++;
				break;
			}
			frames[n++] = fr;
		}
		err = n ? calltree__add(t, frames, n, w) : 0;
	}
	return err;
}

static void json_frames(struct json_object *stacks, char *line)
{
	char *sp = strrchr(line, ' '), *save = NULL, *fr;
	struct json_object *o, *a;

	if (!sp)
		return;
	*sp = '\0';
	o = json_object_new_object();
	a = json_object_new_array();
	for (fr = strtok_r(line, ";", &save); fr; fr = strtok_r(NULL, ";", &save))
		json_object_array_add(a, json_object_new_string(fr));
	json_object_object_add(o, "frames", a);
	json_object_object_add(o, "weight", json_object_new_int64(strtoll(sp + 1, NULL, 10)));
	json_object_array_add(stacks, o);
}

/* .json: every host's outcome and the merged stacks. */
static int write_json(const struct fleet *f, const struct calltree *t, const char *title)
{
	struct json_object *root = json_object_new_object(), *hosts = json_object_new_array(),
			   *stacks = json_object_new_array();
	char *buf = NULL, *save = NULL, *line;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	int err = mem ? output__write(t, OUTPUT_FOLDED, mem, NULL) : -errno;

	if (mem && fclose(mem) && !err)
		err = -EIO;
	for (line = err ? NULL : strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		json_frames(stacks, line);
	for (size_t i = 0; i < f->nr; i++) {
		const struct fleet_host *h = &f->hosts[i];
		struct json_object *o = json_object_new_object(), *l = json_object_new_object();

		json_object_object_add(o, "host", json_object_new_string(h->addr));
		for (int k = 0; k < h->nr_labels; k++) {
			char *eq = strchr(h->labels[k], '=');

			*eq = '\0';
			json_object_object_add(l, h->labels[k], json_object_new_string(eq + 1));
			*eq = '=';
		}
		json_object_object_add(o, "labels", l);
		json_object_object_add(o, "ok", json_object_new_boolean(h->ok));
		if (!h->ok)
			json_object_object_add(o, "error", json_object_new_string(h->why));
		json_object_object_add(o, "seconds", json_object_new_double(h->secs));
		json_object_array_add(hosts, o);
	}
	json_object_object_add(root, "title", json_object_new_string(title));
	json_object_object_add(root, "hosts", hosts);
	json_object_object_add(root, "stacks", stacks);
	free(buf);
	if (!err) {
		FILE *out = fopen(f->out, "we");

		err = !out || fputs(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY),
				    out) < 0
			      ? -errno
			      : 0;
		if (out && fclose(out) && !err)
			err = -EIO;
	}
	json_object_put(root);
	return err;
}

static int write_merged(const struct fleet *f, const struct calltree *t, const char *title)
{
	enum output_format fmt;
	struct output_meta meta = {.title = title, .unit = "samples"};
	struct profile_data pd = {
		.cpu_tree = t,
		.sample_period_ns = 1000000000ull / 99,
		.mode = GPU_MODE_CPU,
		.unit = WEIGHT_SAMPLES,
	};

	if (strlen(f->out) > 5 && !strcmp(f->out + strlen(f->out) - 5, ".json"))
		return write_json(f, t, title);
	if (output__format_from_path(f->out, &fmt))
		return -EINVAL;
	if (fmt == OUTPUT_PPROF) {
		/* The host (or label) and the process are sample labels in pprof, not frames. */
		const char *keys[2] = {strcmp(f->by, "none") ? f->by : "process", "process"};

		pd.root_labels = keys;
		pd.nr_root_labels = strcmp(f->by, "none") ? 2 : 1;
		return output__write_profile_file(&pd, fmt, f->out, &meta);
	}
	return output__write_file(t, fmt, f->out, &meta);
}

/* Which hosts answered and which did not (stderr), and the exit status. */
static int report(const struct fleet *f, size_t *ret_ok)
{
	size_t ok = 0;

	for (size_t i = 0; i < f->nr; i++) {
		const struct fleet_host *h = &f->hosts[i];

		ok += h->ok;
		const char *what = h->ok ? "" : h->why;
		struct json_object *j = NULL, *v;

		/* A dump's answer names it on that host. */
		if (h->ok && f->dump_before > 0 && h->reply.data &&
		    (j = json_tokener_parse(h->reply.data)) &&
		    json_object_object_get_ex(j, "name", &v))
			what = json_object_get_string(v);
		fprintf(stderr, "  %-28s %s  %.2f s  %s\n", h->addr, h->ok ? "ok    " : "FAILED",
			h->secs, what);
		json_object_put(j);
	}
	*ret_ok = ok;
	return ok == f->nr ? FLEET_ALL : ok ? FLEET_SOME : FLEET_NONE;
}

int ctl_fleet(int argc, char **argv)
{
	struct fleet f = {.by = "host", .duration = 10, .parallel = 64};
	struct calltree *t = NULL;
	char title[200];
	size_t ok = 0;
	int st = fleet__parse(&f, argc, argv), err = 0;

	if (st)
		goto out;
	fleet__apply_select(&f);
	if (!f.nr) {
		st = fleet_usage_error("--select matched no host", NULL);
		goto out;
	}
	if (f.dump_before > 0) {
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		f.dump_at = (double)now.tv_sec + now.tv_nsec / 1e9;
		snprintf(f.dump_body, sizeof(f.dump_body),
			 "{\"at_unix_s\": %.3f, \"before_s\": %.0f, \"note\": \"xsprofctl fleet "
			 "--dump\"}",
			 f.dump_at, f.dump_before);
		f.host_timeout = f.host_timeout ? f.host_timeout : 15;
		f.deadline = f.deadline ? f.deadline : 30;
		collect(&f);
		st = report(&f, &ok);
		fprintf(stderr,
			"xsprof fleet: %zu of %zu hosts saved a dump of the %.0f s before "
			"%.3f (wall clock)\n",
			ok, f.nr, f.dump_before, f.dump_at);
		goto out;
	}
	if (!f.host_timeout)
		f.host_timeout = (f.since > 0 ? 0 : f.duration) + 15;
	if (!f.deadline)
		f.deadline = (f.since > 0 ? 0 : f.duration) + 30;
	if (f.straggler) {
		fleet_job__probe_clocks(&f);
		if ((err = fleet_job__begin(&f))) {
			fprintf(stderr, "xsprofctl fleet: the job report: %s\n", strerror(-err));
			st = FLEET_NONE;
			goto out;
		}
	}
	collect(&f);
	st = report(&f, &ok);
	if (f.straggler) {
		err = fleet_job__report(&f, ok);
		if (err) {
			fprintf(stderr, "xsprofctl fleet: the job report: %s\n", strerror(-err));
			st = FLEET_NONE;
		}
		goto out;
	}
	if (f.gpu_report) {
		err = fleet_gpu__report(&f, ok);
		if (err) {
			fprintf(stderr, "xsprofctl fleet: the GPU reports: %s\n", strerror(-err));
			st = FLEET_NONE;
		}
		goto out;
	}
	t = calltree__new();
	for (size_t i = 0; t && !err && i < f.nr; i++)
		if (f.hosts[i].ok)
			err = merge_host(&f, &f.hosts[i], t);
	snprintf(title, sizeof(title), "xsprof fleet: %zu of %zu hosts%s", ok, f.nr,
		 ok == f.nr ? "" : " (PARTIAL: some hosts did not answer)");
	if (f.lines_bad || f.frames_cut)
		fprintf(stderr,
			"xsprofctl fleet: %llu malformed lines skipped, %llu stacks cut at "
			"%d frames\n",
			(unsigned long long)f.lines_bad, (unsigned long long)f.frames_cut,
			FLEET_MAX_FRAMES);
	if (!t || err || (ok && (err = write_merged(&f, t, title)))) {
		fprintf(stderr, "xsprofctl fleet: writing %s: %s\n", f.out,
			strerror(err ? -err : ENOMEM));
		st = FLEET_NONE;
		goto out;
	}
	if (ok)
		fprintf(stderr, "%s: wrote %s\n", title, f.out);
	else
		fprintf(stderr, "xsprofctl fleet: no host answered; nothing written\n");
out:
	calltree__free(t);
	fleet__free(&f);
	return st < 0 ? 0 : st;
}
