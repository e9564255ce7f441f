// SPDX-License-Identifier: Apache-2.0
/*
 * xsprofctl attach and detach (a process profiled until detached), flamegraph (the rolling
 * window's or an attachment's profile) and report (why the GPUs waited in either).
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <json-c/json.h>

#include "daemon/ctl/client.h"
#include "daemon/ctl/commands.h"
#include "daemon/ctl/ctl.h"
#include "daemon/ctl/ctl_internal.h"
#include "daemon/ctl/reply_buf.h"
#include "output/output.h"

/* attach PID [options], or detach PID. */
static int attach_or_detach(int argc, char **argv, bool attach)
{
	static const struct option lo[] = {{"freq", required_argument, NULL, 'F'},
					   {"no-children", no_argument, NULL, 'N'},
					   {"group-by", required_argument, NULL, 'G'},
					   {"range-domain", required_argument, NULL, 'D'},
					   {}};
	struct json_object *req = json_object_new_object(), *j, *v;
	const char *pid_arg = NULL, *group = NULL, *domain = NULL;
	long pid, freq = 0;
	bool children = true;
	struct reply_buf b;
	int c, st = 0;

	optind = 1;
	/* The pid may come before or after the options: "attach 12 --freq 499". */
	while (!st && optind < argc) {
		if (argv[optind][0] != '-') {
			if (pid_arg)
				st = ctl_usage_error("%s takes one PID",
						     attach ? "attach" : "detach");
			pid_arg = argv[optind++];
			continue;
		}
		c = getopt_long(argc, argv, "F:", lo, NULL);
		if (c == -1)
			break;
		if (c == 'F' && attach && !(freq = ctl_parse_freq(optarg)))
			st = ctl_usage_error("--freq '%s': expected 1..10000", optarg);
		else if (c == 'N' && attach)
			children = false;
		else if (c == 'G' && attach && strcmp(optarg, "range") &&
			 strcmp(optarg, "outer-range"))
			st = ctl_usage_error(
				"--group-by '%s': an attachment groups by range or "
				"outer-range (unit, container, comm, rank, job: record --group-by)",
				optarg);
		else if (c == 'G' && attach)
			group = optarg;
		else if (c == 'D' && attach)
			domain = optarg;
		else if ((c != 'F' && c != 'D' && c != 'G') || !attach)
			st = ctl_usage_error("%s",
					     attach ? "attach takes PID, --freq HZ, --no-children, "
						      "--group-by range|outer-range and "
						      "--range-domain DOMAIN"
						    : "detach takes exactly one PID");
	}
	if (!st && domain && !group)
		st = ctl_usage_error("%s",
				     "--range-domain goes with --group-by range or outer-range");
	if (!st && optind < argc)
		st = ctl_usage_error("unexpected argument '%s'", argv[optind]);
	if (!st && !pid_arg)
		st = ctl_usage_error("%s needs a PID", attach ? "attach" : "detach");
	if (!st && !ctl_parse_pid(pid_arg, &pid))
		st = ctl_usage_error("'%s' is not a process id", pid_arg);
	if (st)
		goto out;
	json_object_object_add(req, "pid", json_object_new_int64(pid));
	if (freq)
		json_object_object_add(req, "freq_hz", json_object_new_int64(freq));
	if (attach)
		json_object_object_add(req, "children", json_object_new_boolean(children));
	if (group)
		json_object_object_add(req, "group_by", json_object_new_string(group));
	if (domain)
		json_object_object_add(req, "range_domain", json_object_new_string(domain));
	st = ctl_request("POST", attach ? "/v1/attach" : "/v1/detach",
			 json_object_to_json_string(req), &b, NULL);
	if (st)
		goto out;
	if (ctl_opts()->json_out) {
		fputs(b.data, stdout);
	} else if (attach) {
		j = json_tokener_parse(b.data);
		if (j && json_object_object_get_ex(j, "freq_hz", &v))
			freq = (long)json_object_get_int64(v);
		fprintf(stderr,
			"xsprofctl: attached %ld at %ld Hz%s%s%s; fetch with: xsprofctl flamegraph "
			"--pid %ld%s%s -o FILE\n",
			pid, freq, children ? ", descendants followed" : "",
			group ? ", grouped by " : "", group ? group : "", pid,
			group ? " --group-by " : "", group ? group : "");
		json_object_put(j);
	} else {
		fprintf(stderr, "xsprofctl: detached %ld\n", pid);
	}
	free(b.data);
out:
	json_object_put(req);
	return st;
}

int ctl_attach(int argc, char **argv)
{
	return attach_or_detach(argc, argv, true);
}

int ctl_detach(int argc, char **argv)
{
	return attach_or_detach(argc, argv, false);
}

/* --since, -o and --pid, as flamegraph and report read them: true when c was one of them. */
static bool window_opt(int c, const char *arg, unsigned long *since, const char **out, long *pid,
		       int *st)
{
	if (c == 'S') {
		*since = ctl_parse_duration(arg);
		if (!*since)
			*st = ctl_usage_error("--since '%s': expected e.g. 90s, 5m or 1h", arg);
	} else if (c == 'o') {
		*out = arg;
	} else if (c == 'p') {
		if (!ctl_parse_pid(arg, pid))
			*st = ctl_usage_error(
				"--pid '%s': expected one process id (an attached one)", arg);
	} else {
		return false;
	}
	return true;
}

int ctl_flamegraph(int argc, char **argv)
{
	static const struct option lo[] = {{"since", required_argument, NULL, 'S'},
					   {"output", required_argument, NULL, 'o'},
					   {"pid", required_argument, NULL, 'p'},
					   {"group-by", required_argument, NULL, 'G'},
					   PROFILE_LONG_OPTS,
					   {}};
	struct json_object *opts = json_object_new_object(), *v;
	unsigned long since = 300;
	long pid = 0;
	const char *out = NULL, *group = NULL;
	enum output_format fmt;
	char path[256];
	struct reply_buf b;
	int c, st = 0;

	optind = 1;
	while (!st && (c = getopt_long(argc, argv, "+S:o:p:", lo, NULL)) != -1) {
		if (window_opt(c, optarg, &since, &out, &pid, &st))
			continue;
		if (c == 'G') {
			group = optarg;
			if (strcmp(optarg, "range") && strcmp(optarg, "outer-range"))
				st = ctl_usage_error(
					"--group-by '%s': expected range or outer-range (an "
					"attachment's, or the window's with xsprofd "
					"--window-group-by; record --group-by has the others)",
					optarg);
		} else if (!ctl_profile_opt(c, optarg, opts, &st)) {
			st = ctl_usage_error("%s", "flamegraph takes --since DURATION, --pid PID, "
						   "--group-by range|outer-range, --gpu-mode, "
						   "--weight and -o FILE");
		}
	}
	if (!st && optind < argc)
		st = ctl_usage_error("unexpected argument '%s'", argv[optind]);
	if (!st)
		st = ctl_check_output(out, OUTPUT_IN_WINDOW, &fmt);
	if (st)
		goto out;
	snprintf(path, sizeof(path), "/v1/profile?since_s=%lu&format=%s", since,
		 output__format_name(fmt));
	if (pid)
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "&pid=%ld", pid);
	if (group)
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "&group_by=%s", group);
	if (json_object_object_get_ex(opts, "gpu_mode", &v))
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "&gpu_mode=%s",
			 json_object_get_string(v));
	if (json_object_object_get_ex(opts, "weight", &v))
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "&weight=%s",
			 json_object_get_string(v));
	st = ctl_request("GET", path, NULL, &b, NULL);
	if (!st) {
		st = ctl_save(out, &b, output__format_name(fmt));
		free(b.data);
	}
out:
	json_object_put(opts);
	return st;
}

/* A GPU report's file: .gpu.json (JSON) or .txt / .gpu.txt (text); NULL for another. */
const char *ctl_report_format(const char *out)
{
	size_t n = strlen(out);

	if (n > 9 && !strcasecmp(out + n - 9, ".gpu.json"))
		return "gpu-report";
	if (n > 4 && !strcasecmp(out + n - 4, ".txt"))
		return "gpu-text";
	return NULL;
}

int ctl_report(int argc, char **argv)
{
	static const struct option lo[] = {{"since", required_argument, NULL, 'S'},
					   {"output", required_argument, NULL, 'o'},
					   {"pid", required_argument, NULL, 'p'},
					   {}};
	const char *out = NULL, *fmt = "gpu-text";
	unsigned long since = 300;
	long pid = 0;
	char path[160];
	struct reply_buf b;
	int c, st = 0;

	optind = 1;
	while (!st && (c = getopt_long(argc, argv, "+S:o:p:", lo, NULL)) != -1) {
		if (!window_opt(c, optarg, &since, &out, &pid, &st))
			st = ctl_usage_error("%s", "report takes --since DURATION, --pid PID and "
						   "-o FILE");
	}
	if (!st && optind < argc)
		st = ctl_usage_error("unexpected argument '%s'", argv[optind]);
	if (!st && out && strcmp(out, "-") && !(fmt = ctl_report_format(out)))
		st = ctl_usage_error(
			"cannot tell the format of '%s' from its extension; name it "
			".gpu.json (JSON) or .gpu.txt (text), or leave -o out for text "
			"on stdout",
			out);
	if (!st && out && strcmp(out, "-"))
		st = ctl_check_writable(out);
	if (st)
		return st;
	snprintf(path, sizeof(path), "/v1/profile?since_s=%lu&format=%s", since, fmt);
	if (pid)
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "&pid=%ld", pid);
	st = ctl_request("GET", path, NULL, &b, NULL);
	if (st)
		return st;
	if (out && strcmp(out, "-")) {
		st = ctl_save(out, &b, strcmp(fmt, "gpu-text") ? "GPU report, JSON" : "GPU report");
	} else if (b.len && fwrite(b.data, 1, b.len, stdout) != b.len) {
		fprintf(stderr, "xsprofctl: writing the report failed: %s\n", strerror(errno));
		st = EXIT_DAEMON_ERROR;
	}
	free(b.data);
	return st;
}
