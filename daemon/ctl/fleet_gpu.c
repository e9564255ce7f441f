// SPDX-License-Identifier: Apache-2.0
/* xsprofctl fleet --report gpu: every host's GPU report, side by side and merged. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/base/atomic_file.h"
#include "daemon/ctl/fleet_internal.h"
#include "daemon/ctl/json_get.h"

static int severity_rank(const char *s)
{
	return !strcmp(s, "high") ? 3 : !strcmp(s, "medium") ? 2 : 1;
}

/* One host's report into the merge: device times summed, findings by kind with their hosts. */
void fleet_gpu__merge(struct json_object *merged, struct json_object *r, const char *host)
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
int fleet_gpu__report(const struct fleet *f, size_t ok)
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
			fleet_gpu__merge(merged, r, h->addr);
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
