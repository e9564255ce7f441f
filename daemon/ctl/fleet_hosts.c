// SPDX-License-Identifier: Apache-2.0
/*
 * xsprofctl fleet's hosts: the list (arguments, --hosts FILE) with their labels, --select, and
 * what every request to a host takes; below the rest of fleet, which all use it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "daemon/base/vec.h"
#include "daemon/ctl/fleet_internal.h"

int fleet_usage_error(const char *msg, const char *arg)
{
	fprintf(stderr, "xsprofctl fleet: %s%s%s\nTry 'xsprofctl fleet --help'.\n", msg,
		arg ? ": " : "", arg ? arg : "");
	return FLEET_USAGE;
}

/* A host and its labels from one line (spaces between); 0, 1 for an empty line, or -EINVAL. */
int fleet__add_host_line(struct fleet *f, char *line)
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

int fleet__read_hosts(struct fleet *f, const char *path)
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
		err = fleet__add_host_line(f, line);
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
const char *fleet__label_of(const struct fleet_host *h, const char *key)
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
		v = fleet__label_of(h, key);
		if (!v || strcmp(v, eq + 1))
			return false;
	}
	return true;
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

void fleet__free(struct fleet *f)
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
void fleet__apply_select(struct fleet *f)
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
