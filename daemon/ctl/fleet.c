// SPDX-License-Identifier: Apache-2.0
/*
 * xsprofctl fleet: ask many xsprofd hosts (their TCP API, --listen) for a profile in parallel,
 * with a concurrency limit, a timeout per host and one overall deadline, and merge the answers
 * into one profile with the host (or one of its labels) as the root frame. Hosts that fail are
 * reported with the reason; a profile with some hosts missing is still written and says so.
 */
#include <errno.h>
#include <inttypes.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "daemon/session/session_mode.h"
#include "daemon/base/clock.h"
#include "daemon/base/atomic_file.h"
#include "daemon/base/job_filter.h"
#include "daemon/base/vec.h"
#include "daemon/ctl/commands.h"
#include "daemon/ctl/fleet_internal.h"
#include "daemon/ctl/json_get.h"
#include "daemon/ctl/reply_buf.h"
#include "output/calltree.h"
#include "output/output.h"
#include "output/profile.h"

static const char fleet_usage[] =
	"Usage: xsprofctl fleet [OPTIONS] -o FILE [HOST[:PORT]...]\n"
	"Ask every host's xsprofd (started with --listen) for a profile at once and merge them.\n"
	"  -f, --hosts FILE       hosts, one a line: HOST[:PORT] [key=value...] ('#' comments)\n"
	"  -o, --output FILE      merged profile: .folded/.txt, .svg, .json, .pb.gz\n"
	"  -d, --duration SECS    record this long on every host (default 10)\n"
	"      --since SECS       instead, each host's rolling window of the last SECS\n"
	"      --pid N / --comm NAME / --gpu-mode MODE   passed to every host\n"
	"      --group-by WHAT    each host's recording: unit, container, comm, rank, job,\n"
	"                         range or outer-range (NVTX), under the host root; with\n"
	"                         --since,\n"
	"                         range or outer-range of hosts started with\n"
	"                         --window-group-by\n"
	"      --range-domain D   with --group-by range or outer-range: only NVTX domain D's\n"
	"                         ranges (xsprof: the scopes) on every host's recording\n"
	"      --by host|KEY|none root frame: the host (default), a label's value, or none\n"
	"      --select KEY=VALUE only hosts with this label (repeatable: all must match)\n"
	"      --token-file FILE  bearer token for the hosts' --token-file\n"
	"      --cacert FILE      CA of the hosts' TLS certificates (implies https)\n"
	"      --cert FILE --key FILE   client certificate (implies https)\n"
	"      --parallel N       hosts asked at once (default 64)\n"
	"      --host-timeout SECS   per host (default: duration + 15)\n"
	"      --deadline SECS    the whole collection (default: duration + 30)\n"
	"      --dump SECS        instead, every host's flight recorder saves a dump of the\n"
	"                         same wall-clock moment (now) and the SECS before it; no -o:\n"
	"                         each host's dump name is printed (xsprofctl dump get on\n"
	"                         the host fetches it); hosts need --listen-allow-writes\n"
	"      --report gpu       each host's GPU report of the recording (with --since, of\n"
	"                         its window) instead (why its GPUs wait): a summary per\n"
	"                         host and merged on stdout, and with -o FILE.gpu.json\n"
	"                         every host's report and the merge\n"
	"      --report straggler each host's ranks of a training job (--job ID: of that job\n"
	"                         only) put on one clock and compared: which rank holds\n"
	"                         each collective back and why, on stdout; with -o\n"
	"                         FILE.job.json the report, and beside it FILE.trace.json\n"
	"                         (Perfetto: the ranks on one clock, collectives linked)\n"
	"                         and FILE.diff.svg (the straggler against the median rank)\n"
	"      --job ID / --rank LIST   only that job's processes, those ranks (0,2-3), on\n"
	"                         every host (and the job the straggler report compares)\n"
	"Exit status: 0 every host answered; 5 some did (the profile is partial); 3 none did;\n"
	"2 usage error.\n";

int fleet_usage_error(const char *msg, const char *arg)
{
	fprintf(stderr, "xsprofctl fleet: %s%s%s\nTry 'xsprofctl fleet --help'.\n", msg,
		arg ? ": " : "", arg ? arg : "");
	return FLEET_USAGE;
}

/* A host and its labels from one line (spaces between); 0, 1 for an empty line, or -EINVAL. */
static int add_host_line(struct fleet *f, char *line)
{
	char *save = NULL, *tok = strtok_r(line, " \t\r\n", &save);
	struct fleet_host *h;

	if (!tok || *tok == '#')
		return 1;
	if (f->nr == FLEET_MAX_HOSTS)
		return -E2BIG;
	if (vec_reserve(&f->hosts, &f->cap, f->nr + 1))
		return -ENOMEM;
	h = &f->hosts[f->nr];
	memset(h, 0, sizeof(*h));
	h->addr = strdup(tok);
	while ((tok = strtok_r(NULL, " \t\r\n", &save)) && *tok != '#') {
		if (!strchr(tok, '=') || h->nr_labels == FLEET_MAX_LABELS) {
			free(h->addr);
			for (int i = 0; i < h->nr_labels; i++)
				free(h->labels[i]);
			return -EINVAL;
		}
		h->labels[h->nr_labels++] = strdup(tok);
	}
	f->nr++;
	return 0;
}

static int read_hosts(struct fleet *f, const char *path)
{
	FILE *in = fopen(path, "re");
	char line[FLEET_LINE_MAX];
	int err = 0, no = 0;

	if (!in) {
		fprintf(stderr, "xsprofctl fleet: %s: %s\n", path, strerror(errno));
		return -errno;
	}
	while (!err && fgets(line, sizeof(line), in)) {
		no++;
		err = add_host_line(f, line);
		if (err == 1)
			err = 0;
	}
	fclose(in);
	if (err)
		fprintf(stderr, "xsprofctl fleet: %s line %d: %s\n", path, no,
			err == -EINVAL	? "expected HOST[:PORT] key=value... (at most 16 labels)"
			: err == -E2BIG ? "more than 10000 hosts"
					: strerror(-err));
	return err;
}

/* The value of label key of h, or NULL. */
static const char *label_of(const struct fleet_host *h, const char *key)
{
	size_t n = strlen(key);

	for (int i = 0; i < h->nr_labels; i++)
		if (!strncmp(h->labels[i], key, n) && h->labels[i][n] == '=')
			return h->labels[i] + n + 1;
	return NULL;
}

static bool selected(const struct fleet *f, const struct fleet_host *h)
{
	for (int i = 0; i < f->nr_select; i++) {
		const char *eq = strchr(f->select[i], '=');
		char key[128];
		const char *v;

		snprintf(key, sizeof(key), "%.*s", (int)(eq - f->select[i]), f->select[i]);
		v = label_of(h, key);
		if (!v || strcmp(v, eq + 1))
			return false;
	}
	return true;
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	struct fleet_host *h = ctx;

	return reply_buf__append(&h->reply, p, size * n, FLEET_MAX_REPLY);
}

const char *fleet__scheme(const struct fleet *f, const struct fleet_host *h)
{
	return strstr(h->addr, "://") ? "" : f->cacert || f->cert ? "https://" : "http://";
}

const char *fleet__host_name(const struct fleet_host *h)
{
	for (int i = 0; i < h->nr_labels; i++)
		if (!strncmp(h->labels[i], "host=", 5))
			return h->labels[i] + 5;
	return h->addr;
}

/* The URL asked of h: a recording of the next seconds, or the rolling window. */
static void host_url(const struct fleet *f, const struct fleet_host *h, char *url, size_t size)
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

void fleet__curl_common(const struct fleet *f, CURL *h, struct curl_slist *hdrs, long timeout_ms)
{
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms > 1 ? timeout_ms : 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	if (f->cacert)
		curl_easy_setopt(h, CURLOPT_CAINFO, f->cacert);
	if (f->cert) {
		curl_easy_setopt(h, CURLOPT_SSLCERT, f->cert);
		curl_easy_setopt(h, CURLOPT_SSLKEY, f->key);
	}
}

static int start_host(struct fleet *f, CURLM *m, struct fleet_host *h, struct curl_slist *hdrs,
		      double left)
{
	char url[1024];
	double t = f->host_timeout < left ? f->host_timeout : left;

	if (f->dump_before > 0)
		snprintf(url, sizeof(url), "%s%s/v1/dumps", fleet__scheme(f, h), h->addr);
	else
		host_url(f, h, url, sizeof(url));
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
		v = label_of(h, "host");
		return v ? v : h->addr;
	}
	v = label_of(h, f->by);
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

/* ---- --report gpu: every host's GPU report, side by side and merged ---- */

static int severity_rank(const char *s)
{
	return !strcmp(s, "high") ? 3 : !strcmp(s, "medium") ? 2 : 1;
}

/* One host's report into the merge: device times summed, findings by kind with their hosts. */
static void merge_gpu_report(struct json_object *merged, struct json_object *r, const char *host)
{
	static const char *const causes[] = {"host_ns", "launch_ns", "sync_ns", "dependency_ns",
					     "unknown_ns"};
	struct json_object *idle = jget(merged, "idle_by_cause"), *kinds = jget(merged, "findings");

	for (size_t i = 0; i < jlen(r, "devices"); i++) {
		struct json_object *d = json_object_array_get_idx(jget(r, "devices"), i);

		json_object_object_add(merged, "devices",
				       json_object_new_int64(jint(merged, "devices") + 1));
		json_object_object_add(
			merged, "active_ns",
			json_object_new_int64(jint(merged, "active_ns") + jint(d, "active_ns")));
		json_object_object_add(
			merged, "busy_ns",
			json_object_new_int64(jint(merged, "busy_ns") + jint(d, "busy_ns")));
		for (size_t c = 0; c < sizeof(causes) / sizeof(causes[0]); c++)
			json_object_object_add(
				idle, causes[c],
				json_object_new_int64(jint(idle, causes[c]) +
						      jint(jget(d, "idle_by_cause"), causes[c])));
	}
	for (size_t i = 0; i < jlen(r, "memory"); i++)
		json_object_object_add(
			merged, "memory_peak_bytes",
			json_object_new_int64(jint(merged, "memory_peak_bytes") +
					      jint(json_object_array_get_idx(jget(r, "memory"), i),
						   "peak_bytes")));
	for (size_t i = 0; i < jlen(r, "findings"); i++) {
		struct json_object *fnd = json_object_array_get_idx(jget(r, "findings"), i);
		const char *kind = json_object_get_string(jget(fnd, "kind"));
		const char *sev = json_object_get_string(jget(fnd, "severity"));
		struct json_object *k = jget(kinds, kind);

		if (!kind || !sev)
			continue;
		if (!k) {
			k = json_object_new_object();
			json_object_object_add(k, "severity", json_object_new_string(sev));
			json_object_object_add(k, "hosts", json_object_new_array());
			json_object_object_add(k, "example", json_object_get(jget(fnd, "summary")));
			json_object_object_add(kinds, kind, k);
		}
		if (severity_rank(sev) > severity_rank(json_object_get_string(jget(k, "severity"))))
			json_object_object_add(k, "severity", json_object_new_string(sev));
		json_object_array_add(jget(k, "hosts"), json_object_new_string(host));
	}
}

/* A line per host and the merged findings, on stdout. */
static void print_gpu_summary(const struct fleet *f, struct json_object *hosts,
			      struct json_object *merged)
{
	struct json_object *idle = jget(merged, "idle_by_cause");
	int64_t active = jint(merged, "active_ns");

	printf("%-28s %7s %8s %s\n", "host", "devices", "busy", "findings");
	for (size_t i = 0; i < json_object_array_length(hosts); i++) {
		struct json_object *h = json_object_array_get_idx(hosts, i), *r = jget(h, "report");
		int64_t busy = 0, act = 0;
		char kinds[256] = "";
		size_t l = 0;

		if (!r) {
			printf("%-28s %s\n", json_object_get_string(jget(h, "host")),
			       json_object_get_string(jget(h, "error")));
			continue;
		}
		for (size_t k = 0; k < jlen(r, "devices"); k++) {
			struct json_object *d = json_object_array_get_idx(jget(r, "devices"), k);

			busy += jint(d, "busy_ns");
			act += jint(d, "active_ns");
		}
		for (size_t k = 0; k < jlen(r, "findings") && l < sizeof(kinds) - 1; k++)
			l += (size_t)snprintf(
				kinds + l, sizeof(kinds) - l, "%s%s", k ? ", " : "",
				json_object_get_string(
					jget(json_object_array_get_idx(jget(r, "findings"), k),
					     "kind")));
		printf("%-28s %7zu %7.1f%% %s\n", json_object_get_string(jget(h, "host")),
		       jlen(r, "devices"), act ? 100.0 * (double)busy / (double)act : 0.0,
		       l ? kinds : "-");
	}
	printf("\nmerged: %lld devices busy %.1f%% of their active time; idle: host %.1f%%, "
	       "launch %.1f%%, sync %.1f%%, dependency %.1f%%\n",
	       jint(merged, "devices"),
	       active ? 100.0 * (double)jint(merged, "busy_ns") / (double)active : 0.0,
	       active ? 100.0 * (double)jint(idle, "host_ns") / (double)active : 0.0,
	       active ? 100.0 * (double)jint(idle, "launch_ns") / (double)active : 0.0,
	       active ? 100.0 * (double)jint(idle, "sync_ns") / (double)active : 0.0,
	       active ? 100.0 * (double)jint(idle, "dependency_ns") / (double)active : 0.0);
	json_object_object_foreach(jget(merged, "findings"), kind, k)
	{
		printf("  [%s] %s on %zu of %zu hosts, e.g. %s\n",
		       json_object_get_string(jget(k, "severity")), kind, jlen(k, "hosts"), f->nr,
		       json_object_get_string(jget(k, "example")));
	}
}

static int write_doc(FILE *out, void *ctx)
{
	return fputs(json_object_to_json_string_ext(ctx, JSON_C_TO_STRING_PLAIN), out) < 0 ||
			       fputc('\n', out) == EOF
		       ? -EIO
		       : 0;
}

/* Every host's report (or why none) and their merge: stdout, and -o FILE.gpu.json. */
static int gpu_reports(const struct fleet *f, size_t ok)
{
	struct json_object *doc = json_object_new_object(), *hosts = json_object_new_array();
	struct json_object *merged = json_object_new_object();
	int err = 0;

	if (!doc || !hosts || !merged) {
		json_object_put(doc);
		json_object_put(hosts);
		json_object_put(merged);
		return -ENOMEM;
	}
	json_object_object_add(merged, "idle_by_cause", json_object_new_object());
	json_object_object_add(merged, "findings", json_object_new_object());
	for (size_t i = 0; i < f->nr; i++) {
		const struct fleet_host *h = &f->hosts[i];
		struct json_object *o = json_object_new_object(), *lab = json_object_new_object();
		struct json_object *r = h->ok ? json_tokener_parse(h->reply.data) : NULL;

		json_object_object_add(o, "host", json_object_new_string(h->addr));
		for (int k = 0; k < h->nr_labels; k++) {
			const char *eq = strchr(h->labels[k], '=');
			char key[128];

			snprintf(key, sizeof(key), "%.*s", (int)(eq - h->labels[k]), h->labels[k]);
			json_object_object_add(lab, key, json_object_new_string(eq + 1));
		}
		json_object_object_add(o, "labels", lab);
		if (r && json_object_get_string(jget(r, "schema")) &&
		    !strcmp(json_object_get_string(jget(r, "schema")), "xsprof.gpu_report")) {
			merge_gpu_report(merged, r, h->addr);
			json_object_object_add(o, "report", r);
		} else {
			json_object_put(r);
			json_object_object_add(
				o, "error",
				json_object_new_string(h->ok ? "not a GPU report" : h->why));
		}
		json_object_array_add(hosts, o);
	}
	json_object_object_add(doc, "schema", json_object_new_string("xsprof.gpu_report_fleet"));
	json_object_object_add(doc, "version", json_object_new_int(1));
	json_object_object_add(doc, "hosts_answered", json_object_new_int64((int64_t)ok));
	json_object_object_add(doc, "hosts", hosts);
	json_object_object_add(doc, "merged", merged);
	print_gpu_summary(f, hosts, merged);
	if (f->out && ok) {
		err = atomic_file__write(f->out, write_doc, doc);
		if (!err)
			fprintf(stderr,
				"xsprofctl fleet: GPU reports of %zu of %zu hosts: wrote %s\n", ok,
				f->nr, f->out);
	}
	json_object_put(doc);
	return err;
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

static bool parse_secs(const char *arg, double lo, double hi, double *ret)
{
	char *end;

	*ret = strtod(arg, &end);
	return end != arg && !*end && isfinite(*ret) && *ret >= lo && *ret <= hi;
}

/* "Authorization: Bearer TOKEN" from a file only its owner can read. */
static int read_token(struct fleet *f)
{
	char tok[512] = "";
	struct stat st;
	FILE *in = fopen(f->token_file, "re");
	size_t n;

	if (!in)
		return -errno;
	if (fstat(fileno(in), &st) || (st.st_mode & 0077)) {
		fclose(in);
		return -EPERM;
	}
	n = fread(tok, 1, sizeof(tok) - 1, in);
	fclose(in);
	while (n && (tok[n - 1] == '\n' || tok[n - 1] == '\r' || tok[n - 1] == ' '))
		tok[--n] = '\0';
	if (!n)
		return -EINVAL;
	if (asprintf(&f->auth, "Authorization: Bearer %s", tok) < 0)
		return -ENOMEM;
	return 0;
}

enum {
	FO_SINCE = 256,
	FO_PID,
	FO_COMM,
	FO_GPU_MODE,
	FO_BY,
	FO_SELECT,
	FO_TOKEN,
	FO_CACERT,
	FO_CERT,
	FO_KEY,
	FO_PARALLEL,
	FO_HOST_TIMEOUT,
	FO_DEADLINE,
	FO_GROUP_BY,
	FO_RANGE_DOMAIN,
	FO_REPORT,
	FO_DUMP,
	FO_JOB,
	FO_RANK,
};

static int fleet_opt(struct fleet *f, int c, const char *arg)
{
	struct job_filter jf = {0};
	char *end;

	switch (c) {
	case 'f':
		return read_hosts(f, arg) ? FLEET_USAGE : 0;
	case 'o':
		f->out = arg;
		return 0;
	case 'd':
		return parse_secs(arg, 1, 3600, &f->duration)
			       ? 0
			       : fleet_usage_error("--duration: expected 1..3600 seconds", arg);
	case FO_SINCE:
		return parse_secs(arg, 1, 7 * 24 * 3600, &f->since)
			       ? 0
			       : fleet_usage_error("--since: expected 1..604800 seconds", arg);
	case FO_HOST_TIMEOUT:
	case FO_DEADLINE:
		return parse_secs(arg, 0.1, 86400,
				  c == FO_DEADLINE ? &f->deadline : &f->host_timeout)
			       ? 0
			       : fleet_usage_error("expected 0.1..86400 seconds", arg);
	case FO_PARALLEL:
		f->parallel = strtoul(arg, &end, 10);
		return *end || !f->parallel || f->parallel > FLEET_MAX_PARALLEL
			       ? fleet_usage_error("--parallel: expected 1..1024", arg)
			       : 0;
	case FO_SELECT:
		if (!strchr(arg, '=') || f->nr_select == FLEET_MAX_LABELS)
			return fleet_usage_error("--select: expected KEY=VALUE (at most 16)", arg);
		f->select[f->nr_select++] = arg;
		return 0;
	case FO_GPU_MODE: {
		enum gpu_mode mode;

		if (profile__mode_from_name(arg, &mode))
			return fleet_usage_error("--gpu-mode: expected cpu, gpu or merged", arg);
		f->gpu_mode = arg;
		return 0;
	}
	case FO_PID:
		return strspn(arg, "0123456789,") != strlen(arg) || !*arg
			       ? fleet_usage_error("--pid: expected N[,N...]", arg)
			       : (f->pid = arg, 0);
	case FO_COMM:
		return strspn(arg,
			      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
					       strlen(arg) ||
				       !*arg || strlen(arg) > 15
			       ? fleet_usage_error("--comm: expected a process name (letters, "
						   "digits, . _ -; at most 15)",
						   arg)
			       : (f->comm = arg, 0);
	case FO_BY:
		f->by = arg;
		return 0;
	case FO_GROUP_BY:
		if (session_group__from_name(arg, &(enum session_group){0}))
			return fleet_usage_error(
				"--group-by: expected unit, container, comm, rank, "
				"job, range or outer-range",
				arg);
		f->group_by = arg;
		return 0;
	case FO_RANGE_DOMAIN:
		/* Into a URL as it is: what a domain name needs, nothing to escape. */
		if (!*arg || strlen(arg) > 63 ||
		    strspn(arg,
			   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-:") !=
			    strlen(arg))
			return fleet_usage_error("--range-domain: expected an NVTX domain's name "
						 "(letters, digits, . _ - :; at most 63)",
						 arg);
		f->range_domain = arg;
		return 0;
	case FO_DUMP:
		return parse_secs(arg, 1, 3600, &f->dump_before)
			       ? 0
			       : fleet_usage_error("--dump: expected 1..3600 seconds before", arg);
	case FO_REPORT:
		if (strcmp(arg, "gpu") && strcmp(arg, "straggler"))
			return fleet_usage_error("--report: expected gpu or straggler", arg);
		f->gpu_report = !strcmp(arg, "gpu");
		f->straggler = !f->gpu_report;
		return 0;
	case FO_JOB:
		if (job_filter__set_job(&jf, arg))
			return fleet_usage_error("--job: expected " JOB_FILTER_JOB_HELP, arg);
		f->job = arg;
		return 0;
	case FO_RANK:
		if (job_filter__set_ranks(&jf, arg))
			return fleet_usage_error("--rank: expected " JOB_FILTER_RANK_HELP, arg);
		f->rank = arg;
		return 0;
	case FO_TOKEN:
		f->token_file = arg;
		return 0;
	case FO_CACERT:
		f->cacert = arg;
		return 0;
	case FO_CERT:
		f->cert = arg;
		return 0;
	case FO_KEY:
		f->key = arg;
		return 0;
	case 'h':
		fputs(fleet_usage, stdout);
		return -1;
	default:
		return fleet_usage_error("unknown option or missing value", NULL);
	}
}

/* --report gpu: every host's recording, or with --since its window's reports; no grouping. */
static int gpu_report_checks(struct fleet *f)
{
	enum output_format fmt;

	if (f->out && (output__format_from_path(f->out, &fmt) || fmt != OUTPUT_GPU_REPORT))
		return fleet_usage_error("--report gpu writes its hosts' reports to FILE.gpu.json",
					 f->out);
	if (f->group_by || f->gpu_mode)
		return fleet_usage_error("--report gpu takes no --group-by or --gpu-mode", NULL);
	return 0;
}

static int fleet_parse(struct fleet *f, int argc, char **argv)
{
	static const struct option lo[] = {
		{"hosts", required_argument, NULL, 'f'},
		{"output", required_argument, NULL, 'o'},
		{"duration", required_argument, NULL, 'd'},
		{"since", required_argument, NULL, FO_SINCE},
		{"pid", required_argument, NULL, FO_PID},
		{"comm", required_argument, NULL, FO_COMM},
		{"gpu-mode", required_argument, NULL, FO_GPU_MODE},
		{"group-by", required_argument, NULL, FO_GROUP_BY},
		{"range-domain", required_argument, NULL, FO_RANGE_DOMAIN},
		{"by", required_argument, NULL, FO_BY},
		{"select", required_argument, NULL, FO_SELECT},
		{"token-file", required_argument, NULL, FO_TOKEN},
		{"cacert", required_argument, NULL, FO_CACERT},
		{"cert", required_argument, NULL, FO_CERT},
		{"key", required_argument, NULL, FO_KEY},
		{"parallel", required_argument, NULL, FO_PARALLEL},
		{"host-timeout", required_argument, NULL, FO_HOST_TIMEOUT},
		{"deadline", required_argument, NULL, FO_DEADLINE},
		{"report", required_argument, NULL, FO_REPORT},
		{"dump", required_argument, NULL, FO_DUMP},
		{"job", required_argument, NULL, FO_JOB},
		{"rank", required_argument, NULL, FO_RANK},
		{"help", no_argument, NULL, 'h'},
		{}};
	enum output_format fmt;
	int c, st;

	optind = 0; /* glibc: 0 re-initialises getopt (main stopped at the command with "+") */
	while ((c = getopt_long(argc, argv, "f:o:d:h", lo, NULL)) != -1)
		if ((st = fleet_opt(f, c, optarg)))
			return st;
	for (int i = optind; i < argc; i++) {
		char line[FLEET_LINE_MAX];

		snprintf(line, sizeof(line), "%s", argv[i]);
		if (strchr(line, ' ') || add_host_line(f, line))
			return fleet_usage_error("bad host", argv[i]);
	}
	if (!f->nr)
		return fleet_usage_error("no hosts: give HOST[:PORT] arguments or --hosts FILE",
					 NULL);
	if (f->gpu_report && (st = gpu_report_checks(f)))
		return st;
	if (f->straggler && (st = fleet_job__checks(f)))
		return st;
	if (f->dump_before > 0 && (f->out || f->gpu_report || f->straggler || f->since > 0 ||
				   f->pid || f->comm || f->group_by || f->gpu_mode))
		return fleet_usage_error("--dump asks each host's flight recorder for a dump: no "
					 "-o, --report, --since, --pid, --comm, --group-by or "
					 "--gpu-mode",
					 NULL);
	if (f->dump_before > 0)
		goto credentials;
	if (!f->out && !f->gpu_report && !f->straggler)
		return fleet_usage_error("--output FILE is needed", NULL);
	if (!f->gpu_report && !f->straggler &&
	    (output__format_from_path(f->out, &fmt) ||
	     !output__format_allowed(fmt, OUTPUT_IN_FLEET)) &&
	    !(strlen(f->out) > 5 && !strcmp(f->out + strlen(f->out) - 5, ".json"))) {
		char list[160], msg[200];

		snprintf(msg, sizeof(msg), "--output: use %s (or .json: every host's stacks)",
			 output__format_list(OUTPUT_IN_FLEET, true, list, sizeof(list)));
		return fleet_usage_error(msg, f->out);
	}
	if (!f->cert != !f->key)
		return fleet_usage_error("--cert and --key go together", NULL);
	if (f->since > 0 && f->pid)
		return fleet_usage_error("--since reads the machine's window: no --pid", NULL);
	/* A window groups by range only (xsprofd --window-group-by), all domains. */
	if (f->since > 0 && f->group_by && strcmp(f->group_by, "range") &&
	    strcmp(f->group_by, "outer-range"))
		return fleet_usage_error(
			"--group-by unit, container, comm, rank or job groups a recording "
			"(--duration): the machine's window (--since) groups by "
			"range or outer-range only",
			NULL);
	if (f->range_domain &&
	    (!f->group_by || (strcmp(f->group_by, "range") && strcmp(f->group_by, "outer-range"))))
		return fleet_usage_error("--range-domain goes with --group-by range or outer-range",
					 NULL);
	if (f->range_domain && f->since > 0)
		return fleet_usage_error("--range-domain keeps one domain of a recording "
					 "(--duration): a window groups by all of them",
					 NULL);
credentials:
	if (f->token_file) {
		st = read_token(f);
		if (st) {
			fprintf(stderr, "xsprofctl fleet: --token-file %s: %s\n", f->token_file,
				st == -EPERM ? "readable by others: chmod 600 it" : strerror(-st));
			return FLEET_USAGE;
		}
	}
	return 0;
}

static void fleet_free(struct fleet *f)
{
	for (size_t i = 0; i < f->nr; i++) {
		free(f->hosts[i].addr);
		free(f->hosts[i].reply.data);
		for (int k = 0; k < f->hosts[i].nr_labels; k++)
			free(f->hosts[i].labels[k]);
	}
	free(f->hosts);
	job_merge__free(f->merge);
	if (f->auth)
		explicit_bzero(f->auth, strlen(f->auth));
	free(f->auth);
}

/* Drop hosts that --select leaves out. */
static void apply_select(struct fleet *f)
{
	size_t n = 0;

	for (size_t i = 0; i < f->nr; i++) {
		if (selected(f, &f->hosts[i])) {
			f->hosts[n++] = f->hosts[i];
			continue;
		}
		free(f->hosts[i].addr);
		for (int k = 0; k < f->hosts[i].nr_labels; k++)
			free(f->hosts[i].labels[k]);
	}
	f->nr = n;
}

int ctl_fleet(int argc, char **argv)
{
	struct fleet f = {.by = "host", .duration = 10, .parallel = 64};
	struct calltree *t = NULL;
	char title[200];
	size_t ok = 0;
	int st = fleet_parse(&f, argc, argv), err = 0;

	if (st)
		goto out;
	apply_select(&f);
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
		err = gpu_reports(&f, ok);
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
	fleet_free(&f);
	return st < 0 ? 0 : st;
}
