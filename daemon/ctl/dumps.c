// SPDX-License-Identifier: Apache-2.0
/*
 * xsprofctl's flight recorder commands: dumps (list), dump (ask for one, wait for it), dump get
 * (fetch a bundle's files into a directory) and triggers (list, add, remove).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon/base/atomic_file.h"
#include "daemon/ctl/client.h"
#include "daemon/ctl/commands.h"
#include "daemon/ctl/ctl.h"
#include "daemon/ctl/reply_buf.h"

static void print_dump(struct json_object *d)
{
	struct json_object *v;
	const char *name = "", *trig = "", *state = "";
	double created = 0, bytes = 0;
	char when[32] = "";
	time_t t;
	struct tm tm;

	if (json_object_object_get_ex(d, "name", &v))
		name = json_object_get_string(v);
	if (json_object_object_get_ex(d, "trigger", &v))
		trig = json_object_get_string(v);
	if (json_object_object_get_ex(d, "state", &v))
		state = json_object_get_string(v);
	if (json_object_object_get_ex(d, "created_unix_s", &v))
		created = json_object_get_double(v);
	if (json_object_object_get_ex(d, "bytes", &v))
		bytes = json_object_get_double(v);
	t = (time_t)created;
	if (localtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	printf("%-44s %-9s %-8s %s", name, trig, state, when);
	if (bytes > 0)
		printf("  %.1f MiB", bytes / (1 << 20));
	if (json_object_object_get_ex(d, "error", &v))
		printf("  (%s)", json_object_get_string(v));
	putchar('\n');
}

/*
 * GET path: printed as it came with --json (*ret NULL), else its JSON array into *ret (put it).
 * An exit status.
 */
static int get_list(const char *path, bool json_out, struct json_object **ret)
{
	struct reply_buf b;
	struct json_object *a;
	int st = ctl_request("GET", path, NULL, &b, NULL);

	*ret = NULL;
	if (st)
		return st;
	if (json_out) {
		fputs(b.data, stdout);
		free(b.data);
		return EXIT_OK;
	}
	a = json_tokener_parse(b.data);
	free(b.data);
	if (!a || !json_object_is_type(a, json_type_array)) {
		json_object_put(a);
		fprintf(stderr, "xsprofctl: xsprofd sent a list that is not JSON\n");
		return EXIT_DAEMON_ERROR;
	}
	*ret = a;
	return EXIT_OK;
}

int ctl_dumps(int argc, char **argv)
{
	bool json_out = ctl_opts()->json_out;
	struct json_object *a;
	int st;

	(void)argv;
	if (argc != 1)
		return ctl_usage_error("%s", "dumps takes no arguments");
	st = get_list("/v1/dumps", json_out, &a);
	if (st || !a)
		return st;
	if (!json_object_array_length(a))
		fprintf(stderr, "xsprofctl: no dumps (xsprofctl dump makes one; xsprofctl triggers "
				"lists what makes them)\n");
	else
		printf("%-44s %-9s %-8s %s\n", "NAME", "TRIGGER", "STATE", "CREATED");
	for (size_t i = 0; i < json_object_array_length(a); i++)
		print_dump(json_object_array_get_idx(a, i));
	json_object_put(a);
	return EXIT_OK;
}

struct file_ctx {
	const char *data;
	size_t len;
};

static int write_data(FILE *f, void *ctx)
{
	const struct file_ctx *fc = ctx;

	errno = 0;
	if (fc->len && fwrite(fc->data, 1, fc->len, f) != fc->len)
		return errno ? -errno : -EIO;
	return 0;
}

/* Every file of dump name's manifest into out (made when missing). */
static int dump_get(const char *name, const char *out, bool json_out)
{
	struct reply_buf b;
	struct json_object *j, *m, *files;
	char path[PATH_MAX];
	int st;

	snprintf(path, sizeof(path), "/v1/dumps/%s", name);
	st = ctl_request("GET", path, NULL, &b, NULL);
	if (st)
		return st;
	j = json_tokener_parse(b.data);
	free(b.data);
	if (!j || !json_object_object_get_ex(j, "manifest", &m) ||
	    !json_object_object_get_ex(m, "files", &files)) {
		struct json_object *s;

		fprintf(stderr, "xsprofctl: dump %s is not written%s%s\n", name,
			j && json_object_object_get_ex(j, "state", &s) ? ": it is " : "",
			j && json_object_object_get_ex(j, "state", &s) ? json_object_get_string(s)
								       : "");
		json_object_put(j);
		return EXIT_DAEMON_ERROR;
	}
	if (mkdir(out, 0755) && errno != EEXIST) {
		fprintf(stderr, "xsprofctl: cannot make %s: %s\n", out, strerror(errno));
		json_object_put(j);
		return EXIT_DAEMON_ERROR;
	}
	for (size_t i = 0; !st && i < json_object_array_length(files); i++) {
		const char *file = json_object_get_string(json_object_array_get_idx(files, i));
		struct file_ctx fc;
		char dest[PATH_MAX];
		int err;

		if (!file || strchr(file, '/') || file[0] == '.')
			continue; /* only plain names: nothing lands outside out */
		snprintf(path, sizeof(path), "/v1/dumps/%s/%s", name, file);
		st = ctl_request("GET", path, NULL, &b, NULL);
		if (st)
			break;
		fc.data = b.data;
		fc.len = b.len;
		if (snprintf(dest, sizeof(dest), "%s/%s", out, file) >= (int)sizeof(dest))
			err = -ENAMETOOLONG;
		else
			err = atomic_file__write(dest, write_data, &fc);
		free(b.data);
		if (err) {
			fprintf(stderr, "xsprofctl: writing %s: %s\n", dest, strerror(-err));
			st = EXIT_DAEMON_ERROR;
		} else if (!json_out) {
			fprintf(stderr, "xsprofctl: %s\n", dest);
		}
	}
	json_object_put(j);
	return st;
}

/* Wait until dump name is written or has failed (its state), within timeout_s. */
static int dump_wait(const char *name, double timeout_s, bool json_out)
{
	char path[PATH_MAX];
	struct timespec t0, now;

	snprintf(path, sizeof(path), "/v1/dumps/%s", name);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct reply_buf b;
		struct json_object *j, *v;
		const char *state;
		int st = ctl_request("GET", path, NULL, &b, NULL);

		if (st)
			return st;
		j = json_tokener_parse(b.data);
		state = j && json_object_object_get_ex(j, "state", &v) ? json_object_get_string(v)
								       : "";
		if (!strcmp(state, "done") || !strcmp(state, "failed")) {
			bool ok = !strcmp(state, "done");

			if (json_out)
				fputs(b.data, stdout);
			else if (ok && json_object_object_get_ex(j, "path", &v))
				printf("%s\n", json_object_get_string(v));
			else if (!ok && json_object_object_get_ex(j, "error", &v))
				fprintf(stderr, "xsprofctl: dump %s failed: %s\n", name,
					json_object_get_string(v));
			free(b.data);
			json_object_put(j);
			return ok ? EXIT_OK : EXIT_DAEMON_ERROR;
		}
		free(b.data);
		json_object_put(j);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((double)(now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9 >
		    timeout_s) {
			fprintf(stderr, "xsprofctl: dump %s is still %s after %.0f s\n", name,
				state, timeout_s);
			return EXIT_DAEMON_ERROR;
		}
		usleep(200000);
	}
}

int ctl_dump(int argc, char **argv)
{
	bool json_out = ctl_opts()->json_out;
	double timeout_s = ctl_opts()->timeout_s;
	static const struct option lo[] = {
		{"before", required_argument, NULL, 'B'}, {"after", required_argument, NULL, 'A'},
		{"note", required_argument, NULL, 'N'},	  {"output", required_argument, NULL, 'o'},
		{"no-wait", no_argument, NULL, 'W'},	  {}};
	struct json_object *req, *j, *v;
	const char *out = NULL;
	bool wait = true;
	struct reply_buf b;
	char name[128];
	int c, st = 0;

	if (argc > 1 && !strcmp(argv[1], "get")) {
		/* "get" as the command: its options follow. */
		argc--;
		argv++;
		optind =
			0; /* glibc: 0 re-initialises getopt (main stopped at the command with "+") */
		while ((c = getopt_long(argc, argv, "o:", lo, NULL)) != -1)
			if (c == 'o')
				out = optarg;
			else
				return ctl_usage_error("%s", "dump get NAME [-o DIR]");
		if (optind != argc - 1)
			return ctl_usage_error("%s", "dump get takes one NAME (xsprofctl dumps "
						     "lists them) and -o DIR");
		return dump_get(argv[optind], out ? out : argv[optind], json_out);
	}
	req = json_object_new_object();
	optind = 0;
	while (!st && (c = getopt_long(argc, argv, "o:", lo, NULL)) != -1) {
		unsigned long s;

		switch (c) {
		case 'B':
		case 'A':
			s = ctl_parse_duration(optarg);
			if (!s && strcmp(optarg, "0") && strcmp(optarg, "0s"))
				st = ctl_usage_error("'%s': expected a duration (90, 90s, 5m)",
						     optarg);
			else
				json_object_object_add(req, c == 'B' ? "before_s" : "after_s",
						       json_object_new_int64((int64_t)s));
			break;
		case 'N':
			json_object_object_add(req, "note", json_object_new_string(optarg));
			break;
		case 'o':
			out = optarg;
			break;
		case 'W':
			wait = false;
			break;
		default:
			st = ctl_usage_error("%s", "dump takes --before D, --after D, --note TEXT, "
						   "--no-wait, -o DIR; or: dump get NAME [-o DIR]");
		}
	}
	if (!st && optind < argc)
		st = ctl_usage_error("unexpected argument '%s'", argv[optind]);
	if (st) {
		json_object_put(req);
		return st;
	}
	st = ctl_request("POST", "/v1/dumps", json_object_to_json_string(req), &b, NULL);
	json_object_put(req);
	if (st)
		return st;
	j = json_tokener_parse(b.data);
	free(b.data);
	if (!j || !json_object_object_get_ex(j, "name", &v)) {
		json_object_put(j);
		fprintf(stderr, "xsprofctl: xsprofd's answer names no dump\n");
		return EXIT_DAEMON_ERROR;
	}
	snprintf(name, sizeof(name), "%s", json_object_get_string(v));
	json_object_put(j);
	if (!json_out)
		fprintf(stderr, "xsprofctl: dump %s asked for\n", name);
	if (!wait) {
		if (json_out)
			printf("{\"name\":\"%s\"}\n", name);
		return EXIT_OK;
	}
	st = dump_wait(name, timeout_s + 60, json_out && !out);
	if (!st && out)
		st = dump_get(name, out, json_out);
	return st;
}

int ctl_triggers(int argc, char **argv)
{
	bool json_out = ctl_opts()->json_out;
	struct json_object *req = NULL, *a;
	struct reply_buf b;
	int st;

	if (argc == 3 && !strcmp(argv[1], "add")) {
		req = json_object_new_object();
		json_object_object_add(req, "add", json_object_new_string(argv[2]));
	} else if (argc == 3 && !strcmp(argv[1], "remove")) {
		long id;

		if (!ctl_parse_pid(argv[2], &id))
			return ctl_usage_error("'%s' is not a trigger id (xsprofctl triggers lists "
					       "them)",
					       argv[2]);
		req = json_object_new_object();
		json_object_object_add(req, "remove", json_object_new_int64(id));
	} else if (argc != 1) {
		return ctl_usage_error("%s", "triggers [add SPEC | remove ID]");
	}
	if (req) {
		st = ctl_request("POST", "/v1/triggers", json_object_to_json_string(req), &b, NULL);
		json_object_put(req);
		if (st)
			return st;
		if (json_out)
			fputs(b.data, stdout);
		else if (!strcmp(argv[1], "add")) {
			struct json_object *j = json_tokener_parse(b.data), *v;

			fprintf(stderr, "xsprofctl: trigger %lld added: %s\n",
				j && json_object_object_get_ex(j, "id", &v)
					? (long long)json_object_get_int64(v)
					: 0ll,
				argv[2]);
			json_object_put(j);
		} else {
			fprintf(stderr, "xsprofctl: trigger %s removed\n", argv[2]);
		}
		free(b.data);
		return EXIT_OK;
	}
	st = get_list("/v1/triggers", json_out, &a);
	if (st || !a)
		return st;
	if (!a || !json_object_array_length(a))
		fprintf(stderr, "xsprofctl: no triggers (xsprofctl triggers add SPEC, or trigger = "
				"in xsprofd.conf)\n");
	for (size_t i = 0; a && i < json_object_array_length(a); i++) {
		struct json_object *t = json_object_array_get_idx(a, i), *v;
		int64_t id = 0, fired = 0, held = 0;
		const char *spec = "";

		if (json_object_object_get_ex(t, "id", &v))
			id = json_object_get_int64(v);
		if (json_object_object_get_ex(t, "spec", &v))
			spec = json_object_get_string(v);
		if (json_object_object_get_ex(t, "fired", &v))
			fired = json_object_get_int64(v);
		if (json_object_object_get_ex(t, "suppressed", &v))
			held = json_object_get_int64(v);
		printf("%3lld  %s  (tripped %lld, held back %lld)\n", (long long)id, spec,
		       (long long)fired, (long long)held);
	}
	json_object_put(a);
	return EXIT_OK;
}
