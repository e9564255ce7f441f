// SPDX-License-Identifier: Apache-2.0
/* The usage error, and the readers of the arguments several of xsprofctl's commands take. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon/ctl/ctl.h"
#include "output/output.h"

int ctl_usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "xsprofctl: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'xsprofctl --help' for more information.\n");
	return EXIT_USAGE;
}

bool ctl_parse_pid(const char *s, long *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || !*s || v <= 0 || v > INT_MAX)
		return false;
	*ret = v;
	return true;
}

long ctl_parse_freq(const char *arg)
{
	char *end;
	long freq = strtol(arg, &end, 10);

	return end == arg || *end || freq < 1 || freq > 10000 ? 0 : freq;
}

unsigned long ctl_parse_duration(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	/* NaN and infinity are numbers to strtod, not durations. */
	if (end == s || !isfinite(v) || !(v > 0) || v > CTL_MAX_DURATION_S)
		return 0;
	if (!strcmp(end, "") || !strcmp(end, "s"))
		return (unsigned long)v;
	if (!strcmp(end, "m"))
		return (unsigned long)(v * 60);
	if (!strcmp(end, "h"))
		return (unsigned long)(v * 3600);
	return 0;
}

/* Refused before anything starts: a recording whose result cannot be written is wasted. */
int ctl_check_writable(const char *out)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(out, '/');
	struct stat st;

	if (!strcmp(out, "-"))
		return 0;
	if (!stat(out, &st) && S_ISDIR(st.st_mode))
		return ctl_usage_error("-o '%s' is a directory; name a file", out);
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == out)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - out), out);
	if (access(dir, W_OK | X_OK)) {
		fprintf(stderr,
			"xsprofctl: cannot write %s: %s: %s (create the directory or choose another "
			"path)\n",
			out, dir, strerror(errno));
		return EXIT_USAGE;
	}
	return 0;
}

/* -o FILE of a command whose answer comes from where (enum output_where): the window's
 * (flamegraph) or a recording's (record). */
int ctl_check_output(const char *out, unsigned int where, enum output_format *ret)
{
	char list[200], msg[400];

	output__format_list(where, true, list, sizeof(list));
	if (!out) {
		snprintf(msg, sizeof(msg),
			 "an output file is needed: -o FILE (%s; '-': folded stacks)", list);
		return ctl_usage_error("%s", msg);
	}
	if (!strcmp(out, "-")) {
		*ret = OUTPUT_FOLDED;
		return 0;
	}
	if (output__format_from_path(out, ret)) {
		snprintf(msg, sizeof(msg),
			 "cannot tell the format of '%s' from its extension; name it %s", out,
			 list);
		return ctl_usage_error("%s", msg);
	}
	if (!output__format_allowed(*ret, where)) {
		snprintf(msg, sizeof(msg), "'%s': %s is not answered here; name it %s", out,
			 output__format_name(*ret), list);
		return ctl_usage_error("%s", msg);
	}
	return ctl_check_writable(out);
}

/* The profile options every command that returns a profile takes; 1 if c was one of them. */
int ctl_profile_opt(int c, const char *arg, struct json_object *req, int *ret_st)
{
	static const char *const modes[] = {"cpu", "gpu", "merged", NULL};
	static const char *const units[] = {"samples", "us", NULL};
	static const char *const strategies[] = {"auto", "id", "timestamp", "stream", NULL};
	const char *const *set = c == 'M' ? modes : c == 'W' ? units : c == 'C' ? strategies : NULL;
	const char *key = c == 'M' ? "gpu_mode" : c == 'W' ? "weight" : "correlate";

	if (!set)
		return 0;
	for (int i = 0; set[i]; i++)
		if (!strcmp(arg, set[i])) {
			json_object_object_add(req, key, json_object_new_string(arg));
			*ret_st = 0;
			return 1;
		}
	*ret_st = ctl_usage_error(
		c == 'M'   ? "--gpu-mode '%s': expected cpu, gpu or merged"
		: c == 'W' ? "--weight '%s': expected samples or us"
			   : "--correlate '%s': expected auto, id, timestamp or stream",
		arg);
	return 1;
}
