// SPDX-License-Identifier: Apache-2.0
#include <curl/curl.h>
#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/base/clock.h"
#include "daemon/base/fileio.h"
#include "daemon/log.h"
#include "daemon/service/export.h"
#include "output/gpu_report/gpu_report.h"
#include "output/otlp.h"
#include "output/pprof.h"
#include "output/model/profile.h"
#include "output/protobuf.h"

enum sink_format { SINK_OTLP, SINK_PYROSCOPE, SINK_PARCA };
static const char *const format_names[] = {"otlp", "pyroscope", "parca"};

#define NS 1000000000ull

struct item {
	struct item *next;
	uint8_t *body;
	size_t len;
	uint64_t from_s, until_s; /* the slice, wall clock */
};

struct sink {
	enum sink_format format;
	char url[512], name[128];
	unsigned int period_s;
	char *ca_file, *cert, *key;   /* paths, given to libcurl */
	char *token, *basic, *tenant; /* contents of their files */
	struct item *head, **tail;    /* head may be in flight (not dropped then) */
	bool head_in_flight;
	size_t queued, queued_bytes;
	uint64_t next_ns, backoff_s;
	uint64_t pushed, failures, dropped, rejected, pushed_bytes;
	uint64_t too_large;	/* dropped as they came: larger than the whole queue */
	uint64_t push_ns_total; /* time spent in pushes that succeeded */
	char last_error[160];
};

struct exporter {
	struct sink sinks[EXPORT_MAX_SINKS];
	size_t n;
	char *labels[EXPORT_MAX_LABELS][2];
	size_t nr_labels;
	char host[256];
	size_t cap_bytes, queued_bytes;
	unsigned int freq_hz;
	uint64_t encode_ns, encoded_bytes, encoded;
	int64_t realtime_offset_ns; /* taken once: one slice's end is the next one's start */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_t thread;
	bool started, stop;
};

static void item_free(struct item *it)
{
	if (it)
		free(it->body);
	free(it);
}

static int read_secret(const char *path, char **ret, char *err, size_t err_size)
{
	char *buf = NULL;
	size_t len = 0;
	int rc = file__read_all(path, 4096, &buf, &len);

	if (rc) {
		snprintf(err, err_size, "cannot read %s: %s", path, strerror(-rc));
		return rc;
	}
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		buf[--len] = '\0';
	if (!len || strpbrk(buf, "\r\n")) {
		snprintf(err, err_size, "%s: expected one line", path);
		free(buf);
		return -EINVAL;
	}
	*ret = buf;
	return 0;
}

static int readable(const char *path, char **ret, char *err, size_t err_size)
{
	if (access(path, R_OK)) {
		snprintf(err, err_size, "cannot read %s: %s", path, strerror(errno));
		return -errno;
	}
	*ret = strdup(path);
	return *ret ? 0 : -ENOMEM;
}

/* scheme://host[:port][/path], http or https, host present, no spaces. */
static bool url_ok(const char *url)
{
	const char *host = !strncmp(url, "http://", 7)	  ? url + 7
			   : !strncmp(url, "https://", 8) ? url + 8
							  : NULL;

	return host && *host && *host != '/' && *host != ':' && !strpbrk(url, " \t\r\n\"'<>\\");
}

static int parse_spec(struct sink *k, const char *spec, char *err, size_t err_size)
{
	char *copy = strdup(spec), *save = NULL, *tok;
	int rc = 0;
	size_t i;

	if (!copy)
		return -ENOMEM;
	tok = strtok_r(copy, ",", &save);
	for (i = 0; tok && i < 3 && strcmp(tok, format_names[i]); i++)
		;
	if (!tok || i == 3) {
		snprintf(err, err_size,
			 "--export %s: unknown format '%s' (otlp, pyroscope or parca)", spec,
			 tok ? tok : "");
		free(copy);
		return -EINVAL;
	}
	k->format = (enum sink_format)i;
	k->period_s = EXPORT_DEFAULT_PERIOD;
	snprintf(k->name, sizeof(k->name), "xsprof");
	while (!rc && (tok = strtok_r(NULL, ",", &save))) {
		char *v = strchr(tok, '=');

		if (!v) {
			snprintf(err, err_size, "--export %s: '%s' is not KEY=VALUE", spec, tok);
			rc = -EINVAL;
			break;
		}
		*v++ = '\0';
		if (!strcmp(tok, "url")) {
			if (strlen(v) >= sizeof(k->url) - 64 || !url_ok(v)) {
				snprintf(err, err_size,
					 "--export %s: bad url '%s' (http://HOST[:PORT][/PATH] or "
					 "https://...)",
					 spec, v);
				rc = -EINVAL;
			} else {
				snprintf(k->url, sizeof(k->url), "%s", v);
			}
		} else if (!strcmp(tok, "period")) {
			char *end;
			unsigned long p = strtoul(v, &end, 10);

			if (*end || !*v || p < 1 || p > 3600) {
				snprintf(err, err_size, "--export %s: period %s is not 1 to 3600 s",
					 spec, v);
				rc = -EINVAL;
			}
			k->period_s = (unsigned int)p;
		} else if (!strcmp(tok, "name")) {
			if (!*v || strlen(v) >= sizeof(k->name) || strpbrk(v, "{}&?=#% ")) {
				snprintf(err, err_size, "--export %s: bad name '%s'", spec, v);
				rc = -EINVAL;
			}
			snprintf(k->name, sizeof(k->name), "%s", v);
		} else if (!strcmp(tok, "ca-file")) {
			rc = readable(v, &k->ca_file, err, err_size);
		} else if (!strcmp(tok, "cert")) {
			rc = readable(v, &k->cert, err, err_size);
		} else if (!strcmp(tok, "key")) {
			rc = readable(v, &k->key, err, err_size);
		} else if (!strcmp(tok, "token-file")) {
			rc = read_secret(v, &k->token, err, err_size);
		} else if (!strcmp(tok, "basic-auth-file")) {
			rc = read_secret(v, &k->basic, err, err_size);
			if (!rc && !strchr(k->basic, ':')) {
				snprintf(err, err_size, "%s: expected USER:PASSWORD", v);
				rc = -EINVAL;
			}
		} else if (!strcmp(tok, "tenant-file")) {
			rc = read_secret(v, &k->tenant, err, err_size);
		} else {
			snprintf(
				err, err_size,
				"--export %s: unknown key '%s' (url, period, name, ca-file, cert, key, "
				"token-file, basic-auth-file, tenant-file)",
				spec, tok);
			rc = -EINVAL;
		}
	}
	if (!rc && !k->url[0]) {
		snprintf(err, err_size, "--export %s: no url=", spec);
		rc = -EINVAL;
	}
	if (!rc && !k->cert != !k->key) {
		snprintf(err, err_size, "--export %s: give both cert= and key=", spec);
		rc = -EINVAL;
	}
	if (!rc && k->token && k->basic) {
		snprintf(err, err_size, "--export %s: token-file= or basic-auth-file=, not both",
			 spec);
		rc = -EINVAL;
	}
	free(copy);
	return rc;
}

static void sink_release(struct sink *k)
{
	while (k->head) {
		struct item *it = k->head;

		k->head = it->next;
		item_free(it);
	}
	free(k->ca_file);
	free(k->cert);
	free(k->key);
	free(k->token);
	free(k->basic);
	free(k->tenant);
}

void exporter__free(struct exporter *e)
{
	if (!e)
		return;
	if (e->started) {
		pthread_mutex_lock(&e->lock);
		e->stop = true;
		pthread_cond_signal(&e->wake);
		pthread_mutex_unlock(&e->lock);
		pthread_join(e->thread, NULL);
	}
	for (size_t i = 0; i < e->n; i++)
		sink_release(&e->sinks[i]);
	for (size_t i = 0; i < e->nr_labels; i++) {
		free(e->labels[i][0]);
		free(e->labels[i][1]);
	}
	pthread_mutex_destroy(&e->lock);
	pthread_cond_destroy(&e->wake);
	free(e);
}

struct exporter *exporter__new(const char *const *specs, size_t n, const char *const *labels,
			       size_t nr_labels, unsigned int queue_kb, unsigned int freq_hz,
			       char *err, size_t err_size)
{
	struct exporter *e = calloc(1, sizeof(*e));
	pthread_condattr_t ca;

	if (!e || n > EXPORT_MAX_SINKS || nr_labels > EXPORT_MAX_LABELS) {
		snprintf(err, err_size, e ? "too many sinks or labels" : "out of memory");
		free(e);
		return NULL;
	}
	pthread_mutex_init(&e->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->wake, &ca);
	pthread_condattr_destroy(&ca);
	e->cap_bytes = (size_t)(queue_kb ? queue_kb : EXPORT_DEFAULT_KB) << 10;
	e->freq_hz = freq_hz;
	{
		struct timespec rt;

		clock_gettime(CLOCK_REALTIME, &rt);
		e->realtime_offset_ns = (int64_t)((uint64_t)rt.tv_sec * NS + (uint64_t)rt.tv_nsec) -
					(int64_t)clock__mono_ns();
	}
	if (gethostname(e->host, sizeof(e->host) - 1))
		snprintf(e->host, sizeof(e->host), "unknown");
	for (size_t i = 0; i < nr_labels; i++) {
		const char *eq = strchr(labels[i], '=');

		if (!eq || eq == labels[i] || !eq[1] || strpbrk(labels[i], "\x1f{},\"")) {
			snprintf(err, err_size, "--export-label %s: expected KEY=VALUE", labels[i]);
			exporter__free(e);
			return NULL;
		}
		e->labels[i][0] = strndup(labels[i], (size_t)(eq - labels[i]));
		e->labels[i][1] = strdup(eq + 1);
		e->nr_labels++;
	}
	for (size_t i = 0; i < n; i++) {
		e->sinks[i].tail = &e->sinks[i].head;
		e->n++;
		if (parse_spec(&e->sinks[i], specs[i], err, err_size)) {
			exporter__free(e);
			return NULL;
		}
	}
	return e;
}

/* ---- encoding, on the loop */

static int encode_pprof(const struct profile_data *pd, uint8_t **ret, size_t *ret_len)
{
	char *p = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&p, &len);
	int err;

	if (!f)
		return -errno;
	err = pprof__write(pd, f, NULL);
	if (fclose(f) && !err)
		err = -EIO;
	if (err) {
		free(p);
		return err;
	}
	*ret = (uint8_t *)p;
	*ret_len = len;
	return 0;
}

/* Drops sink k's oldest slice that is not in flight; whether there was one. */
static bool drop_oldest(struct exporter *e, struct sink *k)
{
	struct item **at = k->head_in_flight && k->head ? &k->head->next : &k->head, *it;

	it = *at;
	if (!it)
		return false;
	*at = it->next;
	if (k->tail == &it->next)
		k->tail = at;
	k->queued--;
	k->queued_bytes -= it->len;
	e->queued_bytes -= it->len;
	k->dropped++;
	item_free(it);
	return true;
}

/* The bytes of sink k's queue that may be dropped: all but a slice being pushed. */
static size_t droppable(const struct sink *k)
{
	return k->queued_bytes - (k->head_in_flight && k->head ? k->head->len : 0);
}

/*
 * Makes room for len more bytes. The oldest slices go first, never one being
 * pushed, and from a sink whose store is failing (in back-off) before a healthy one: a healthy
 * sink's queue is only what waits for its next period, and may hold as much as a down one's
 * for a moment on a loaded machine (its slices were dropped then: issue 53 H4's check went red
 * at random). Among the failing, or else among all, the sink that holds the most pays.
 */
static bool make_room(struct exporter *e, size_t len)
{
	/* Past the whole cap it cannot fit whatever goes: drop nothing else for it. */
	if (len > e->cap_bytes)
		return false;
	for (;;) {
		size_t flying = 0;
		struct sink *hog = NULL;

		/* A slice being pushed cannot be dropped: it counts against the cap only once it
		 * is back in the queue (a push failed), else a down store's one slice in flight
		 * could leave a healthy sink no room. At most one a sink, so still bounded. */
		for (size_t i = 0; i < e->n; i++)
			flying += e->sinks[i].queued_bytes - droppable(&e->sinks[i]);
		if (e->queued_bytes - flying + len <= e->cap_bytes)
			break;
		for (int failing = 1; failing >= 0 && !hog; failing--)
			for (size_t i = 0; i < e->n; i++) {
				struct sink *x = &e->sinks[i];

				if (droppable(x) && (!failing || x->backoff_s) &&
				    (!hog || droppable(x) > droppable(hog)))
					hog = x;
			}
		if (!hog || !drop_oldest(e, hog))
			return false;
	}
	return true;
}

void exporter__on_slice(void *ctx, const struct profile_data *slice)
{
	struct exporter *e = ctx;
	const char *res[2 * (EXPORT_MAX_LABELS + 1)];
	struct profile_data pd = *slice;
	uint64_t t0 = clock__mono_ns();
	uint8_t *pprof = NULL;
	struct gpu_report *gr = NULL;
	bool gr_built = false;
	size_t pprof_len = 0, nr = 0;
	int64_t from = (int64_t)pd.start_ns + pd.realtime_offset_ns;
	int64_t until = (int64_t)pd.end_ns + pd.realtime_offset_ns;

	if (!pd.realtime_offset_ns) {
		pd.realtime_offset_ns = e->realtime_offset_ns;
		from = (int64_t)pd.start_ns + pd.realtime_offset_ns;
		until = (int64_t)pd.end_ns + pd.realtime_offset_ns;
	}
	res[nr++] = "host.name";
	res[nr++] = e->host;
	for (size_t i = 0; i < e->nr_labels; i++) {
		res[nr++] = e->labels[i][0];
		res[nr++] = e->labels[i][1];
	}
	pd.resource_labels = res;
	pd.nr_resource_labels = nr / 2;
	for (size_t i = 0; i < e->n; i++) {
		struct sink *k = &e->sinks[i];
		struct item *it = calloc(1, sizeof(*it));
		int err = it ? 0 : -ENOMEM;

		if (!err && k->format == SINK_OTLP) {
			struct buf b = {0};

			/* One GPU report for every OTLP sink (its gpu_idle profile). */
			if (!gr_built && pd.mode != GPU_MODE_CPU)
				err = gpu_report__build(&pd, &gr);
			gr_built = !err;
			if (!err)
				err = otlp__encode(&pd, gr, &b);
			it->body = b.p;
			it->len = b.len;
		} else if (!err) {
			if (!pprof)
				err = encode_pprof(&pd, &pprof, &pprof_len);
			it->body = err ? NULL : malloc(pprof_len ? pprof_len : 1);
			if (!err && !it->body)
				err = -ENOMEM;
			if (!err) {
				memcpy(it->body, pprof, pprof_len);
				it->len = pprof_len;
			}
		}
		if (err) {
			log_warn("export to %s: encoding a slice failed: %s; it is dropped", k->url,
				 strerror(-err));
			pthread_mutex_lock(&e->lock);
			k->dropped++;
			pthread_mutex_unlock(&e->lock);
			item_free(it);
			continue;
		}
		it->from_s = (uint64_t)(from > 0 ? from : 0) / NS;
		it->until_s = ((uint64_t)(until > 0 ? until : 0) + NS - 1) / NS;
		pthread_mutex_lock(&e->lock);
		e->encoded++;
		e->encoded_bytes += it->len;
		if (!make_room(e, it->len)) {
			k->dropped++;
			if (!k->too_large++)
				log_warn(
					"export to %s: a slice of %zu KiB is larger than the whole "
					"queue (--export-queue-kb %zu): dropped as it came, as every "
					"such slice will be (counted in status)",
					k->url, it->len >> 10, e->cap_bytes >> 10);
			item_free(it);
		} else {
			*k->tail = it;
			k->tail = &it->next;
			k->queued++;
			k->queued_bytes += it->len;
			e->queued_bytes += it->len;
			/* A sink whose period has passed pushes it now, not at its next tick. */
			if (clock__mono_ns() >= k->next_ns)
				pthread_cond_signal(&e->wake);
		}
		pthread_mutex_unlock(&e->lock);
	}
	free(pprof);
	gpu_report__free(gr);
	pthread_mutex_lock(&e->lock);
	e->encode_ns += clock__mono_ns() - t0;
	pthread_mutex_unlock(&e->lock);
}

/* ---- pushing, on the thread */

static size_t discard(char *p, size_t size, size_t n, void *ctx)
{
	(void)p;
	(void)ctx;
	return size * n;
}

/* "k=v,k=v" for Pyroscope's name{...}: the host and the static labels. */
static void pyroscope_labels(const struct exporter *e, CURL *c, char *buf, size_t size)
{
	size_t len = 0;

	len += (size_t)snprintf(buf + len, size - len, "host=%s", e->host);
	for (size_t i = 0; i < e->nr_labels && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, ",%s=%s", e->labels[i][0],
					e->labels[i][1]);
	(void)c;
}

static char *base64(const uint8_t *p, size_t n)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out = malloc(4 * ((n + 2) / 3) + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
			     (i + 2 < n ? p[i + 2] : 0);

		*o++ = t[v >> 18 & 63];
		*o++ = t[v >> 12 & 63];
		*o++ = i + 1 < n ? t[v >> 6 & 63] : '=';
		*o++ = i + 2 < n ? t[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

/* The WriteRawRequest as gRPC-gateway JSON. */
static char *parca_body(const struct exporter *e, const struct sink *k, const struct item *it)
{
	struct json_object *req = json_object_new_object(), *series = json_object_new_array(),
			   *one = json_object_new_object(), *ls = json_object_new_object(),
			   *labels = json_object_new_array(), *samples = json_object_new_array(),
			   *sample = json_object_new_object();
	char *b64 = base64(it->body, it->len), *out = NULL;

#define LABEL(n, v)                                                            \
	do {                                                                   \
		struct json_object *l = json_object_new_object();              \
		json_object_object_add(l, "name", json_object_new_string(n));  \
		json_object_object_add(l, "value", json_object_new_string(v)); \
		json_object_array_add(labels, l);                              \
	} while (0)
	LABEL("__name__", k->name);
	LABEL("host", e->host);
	for (size_t i = 0; i < e->nr_labels; i++)
		LABEL(e->labels[i][0], e->labels[i][1]);
#undef LABEL
	json_object_object_add(ls, "labels", labels);
	json_object_object_add(one, "labels", ls);
	json_object_object_add(sample, "rawProfile", json_object_new_string(b64 ? b64 : ""));
	json_object_array_add(samples, sample);
	json_object_object_add(one, "samples", samples);
	json_object_array_add(series, one);
	json_object_object_add(req, "series", series);
	json_object_object_add(req, "normalized", json_object_new_boolean(true));
	if (b64)
		out = strdup(json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN));
	json_object_put(req);
	free(b64);
	return out;
}

/* One POST of it to k: 0 delivered, 1 refused for good, -1 to retry; err says why. */
static int push(struct exporter *e, struct sink *k, const struct item *it, char *err,
		size_t err_size)
{
	char url[1024], labels[512], auth[600], *json = NULL, *name = NULL;
	struct curl_slist *h = NULL;
	curl_mime *mime = NULL;
	CURL *c = curl_easy_init();
	long code = 0;
	CURLcode rc;
	int ret;

	if (!c) {
		snprintf(err, err_size, "libcurl: out of memory");
		return -1;
	}
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	if (k->ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, k->ca_file);
	if (k->cert) {
		curl_easy_setopt(c, CURLOPT_SSLCERT, k->cert);
		curl_easy_setopt(c, CURLOPT_SSLKEY, k->key);
	}
	if (k->token) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", k->token);
		h = curl_slist_append(h, auth);
	}
	if (k->basic) {
		curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
		curl_easy_setopt(c, CURLOPT_USERPWD, k->basic);
	}
	if (k->tenant) {
		snprintf(auth, sizeof(auth), "X-Scope-OrgID: %s", k->tenant);
		h = curl_slist_append(h, auth);
	}
	h = curl_slist_append(h, "Expect:");
	switch (k->format) {
	case SINK_OTLP:
		snprintf(url, sizeof(url), "%s", k->url);
		h = curl_slist_append(h, "Content-Type: application/x-protobuf");
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, it->body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)it->len);
		break;
	case SINK_PYROSCOPE: {
		curl_mimepart *part;
		char nl[700];

		pyroscope_labels(e, c, labels, sizeof(labels));
		snprintf(nl, sizeof(nl), "%s{%s}", k->name, labels);
		name = curl_easy_escape(c, nl, 0);
		snprintf(url, sizeof(url),
			 "%s%singest?name=%s&from=%llu&until=%llu&format=pprof&sampleRate=%u"
			 "&spyName=xsprof",
			 k->url, k->url[strlen(k->url) - 1] == '/' ? "" : "/", name ? name : "",
			 (unsigned long long)it->from_s, (unsigned long long)it->until_s,
			 e->freq_hz);
		mime = curl_mime_init(c);
		part = curl_mime_addpart(mime);
		curl_mime_name(part, "profile");
		curl_mime_filename(part, "profile.pprof");
		curl_mime_type(part, "application/octet-stream");
		curl_mime_data(part, (const char *)it->body, it->len);
		curl_easy_setopt(c, CURLOPT_MIMEPOST, mime);
		break;
	}
	case SINK_PARCA:
		snprintf(url, sizeof(url), "%s%sprofiles/writeraw", k->url,
			 k->url[strlen(k->url) - 1] == '/' ? "" : "/");
		json = parca_body(e, k, it);
		h = curl_slist_append(h, "Content-Type: application/json");
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, json ? json : "{}");
		break;
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	if (rc != CURLE_OK) {
		snprintf(err, err_size, "%s", curl_easy_strerror(rc));
		ret = -1;
	} else if (code >= 200 && code < 300) {
		ret = 0;
	} else {
		snprintf(err, err_size, "HTTP %ld", code);
		ret = code >= 500 || code == 408 || code == 429 ? -1 : 1;
	}
	curl_free(name);
	curl_mime_free(mime);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(json);
	return ret;
}

/* Pushes k's queue, oldest first, until it is empty or a push fails. Called locked. */
static void drain(struct exporter *e, struct sink *k, uint64_t now)
{
	while (k->head && !e->stop) {
		struct item *it = k->head;
		char err[160] = "";
		uint64_t t0 = clock__mono_ns();
		int rc;

		k->head_in_flight = true;
		pthread_mutex_unlock(&e->lock);
		rc = push(e, k, it, err, sizeof(err));
		pthread_mutex_lock(&e->lock);
		k->head_in_flight = false;
		if (rc < 0) {
			k->failures++;
			snprintf(k->last_error, sizeof(k->last_error), "%s", err);
			k->backoff_s = k->backoff_s ? k->backoff_s * 2 : 1;
			if (k->backoff_s > EXPORT_BACKOFF_MAX_S)
				k->backoff_s = EXPORT_BACKOFF_MAX_S;
			if (k->failures == 1 || !(k->failures % 16))
				log_warn("export to %s failed (%s): retrying in %llu s, %zu slices "
					 "queued",
					 k->url, err, (unsigned long long)k->backoff_s, k->queued);
			k->next_ns = clock__mono_ns() + k->backoff_s * NS;
			return;
		}
		if (rc > 0) {
			k->rejected++;
			snprintf(k->last_error, sizeof(k->last_error), "%.140s (slice refused)",
				 err);
			log_warn("export to %s: the store refused a slice (%s); it is dropped",
				 k->url, err);
		} else {
			k->pushed++;
			k->pushed_bytes += it->len;
			k->push_ns_total += clock__mono_ns() - t0;
		}
		k->backoff_s = 0;
		k->head = it->next;
		if (!k->head)
			k->tail = &k->head;
		k->queued--;
		k->queued_bytes -= it->len;
		e->queued_bytes -= it->len;
		item_free(it);
	}
	k->next_ns = now + (uint64_t)k->period_s * NS;
}

static void *run(void *arg)
{
	struct exporter *e = arg;

	pthread_mutex_lock(&e->lock);
	while (!e->stop) {
		uint64_t now = clock__mono_ns(), next = now + 3600 * NS;
		struct timespec ts;

		for (size_t i = 0; i < e->n && !e->stop; i++) {
			struct sink *k = &e->sinks[i];

			/* Due and empty: it waits for a slice (enqueueing wakes the thread). */
			if (now >= k->next_ns && k->head)
				drain(e, k, now);
			if (k->next_ns < next && (k->head || k->next_ns > now))
				next = k->next_ns;
		}
		if (e->stop)
			break;
		now = clock__mono_ns();
		if (next <= now)
			continue;
		ts.tv_sec = (time_t)(next / NS);
		ts.tv_nsec = (long)(next % NS);
		pthread_cond_timedwait(&e->wake, &e->lock, &ts);
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

int exporter__start(struct exporter *e)
{
	int err;

	if (!e->n)
		return 0;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	for (size_t i = 0; i < e->n; i++)
		e->sinks[i].next_ns = clock__mono_ns() + (uint64_t)e->sinks[i].period_s * NS;
	err = pthread_create(&e->thread, NULL, run, e);
	if (err)
		return -err;
	e->started = true;
	return 0;
}

struct json_object *exporter__json(struct exporter *e)
{
	struct json_object *j = json_object_new_object(), *a = json_object_new_array();
	uint64_t pushed = 0, dropped = 0, rejected = 0, failures = 0, queued = 0, too_large = 0;

	if (!e) {
		json_object_object_add(j, "sinks", a);
		json_object_object_add(j, "pushed", json_object_new_int64(0));
		json_object_object_add(j, "dropped", json_object_new_int64(0));
		json_object_object_add(j, "dropped_too_large", json_object_new_int64(0));
		json_object_object_add(j, "rejected", json_object_new_int64(0));
		json_object_object_add(j, "failed_pushes", json_object_new_int64(0));
		json_object_object_add(j, "queued", json_object_new_int64(0));
		json_object_object_add(j, "queued_bytes", json_object_new_int64(0));
		json_object_object_add(j, "cap_bytes", json_object_new_int64(0));
		return j;
	}
	pthread_mutex_lock(&e->lock);
	for (size_t i = 0; i < e->n; i++) {
		const struct sink *k = &e->sinks[i];
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "format",
				       json_object_new_string(format_names[k->format]));
		json_object_object_add(o, "url", json_object_new_string(k->url));
		json_object_object_add(o, "period_s", json_object_new_int64(k->period_s));
		json_object_object_add(o, "pushed", json_object_new_int64((int64_t)k->pushed));
		json_object_object_add(o, "pushed_bytes",
				       json_object_new_int64((int64_t)k->pushed_bytes));
		json_object_object_add(o, "dropped", json_object_new_int64((int64_t)k->dropped));
		json_object_object_add(o, "dropped_too_large",
				       json_object_new_int64((int64_t)k->too_large));
		json_object_object_add(o, "rejected", json_object_new_int64((int64_t)k->rejected));
		json_object_object_add(o, "failed_pushes",
				       json_object_new_int64((int64_t)k->failures));
		json_object_object_add(o, "queued", json_object_new_int64((int64_t)k->queued));
		json_object_object_add(o, "queued_bytes",
				       json_object_new_int64((int64_t)k->queued_bytes));
		json_object_object_add(
			o, "retry_in_s",
			json_object_new_int64((int64_t)(k->head ? k->backoff_s : 0)));
		json_object_object_add(
			o, "push_us_mean",
			json_object_new_int64(
				k->pushed ? (int64_t)(k->push_ns_total / k->pushed / 1000) : 0));
		json_object_object_add(o, "last_error", json_object_new_string(k->last_error));
		json_object_array_add(a, o);
		pushed += k->pushed;
		dropped += k->dropped;
		too_large += k->too_large;
		rejected += k->rejected;
		failures += k->failures;
		queued += k->queued;
	}
	json_object_object_add(j, "sinks", a);
	json_object_object_add(j, "pushed", json_object_new_int64((int64_t)pushed));
	json_object_object_add(j, "dropped", json_object_new_int64((int64_t)dropped));
	json_object_object_add(j, "dropped_too_large", json_object_new_int64((int64_t)too_large));
	json_object_object_add(j, "rejected", json_object_new_int64((int64_t)rejected));
	json_object_object_add(j, "failed_pushes", json_object_new_int64((int64_t)failures));
	json_object_object_add(j, "queued", json_object_new_int64((int64_t)queued));
	json_object_object_add(j, "queued_bytes", json_object_new_int64((int64_t)e->queued_bytes));
	json_object_object_add(j, "cap_bytes", json_object_new_int64((int64_t)e->cap_bytes));
	json_object_object_add(
		j, "encode_us_mean",
		json_object_new_int64(e->encoded ? (int64_t)(e->encode_ns / e->encoded / 1000)
						 : 0));
	json_object_object_add(
		j, "encoded_bytes_mean",
		json_object_new_int64(e->encoded ? (int64_t)(e->encoded_bytes / e->encoded) : 0));
	pthread_mutex_unlock(&e->lock);
	return j;
}
