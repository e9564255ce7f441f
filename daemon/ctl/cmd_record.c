// SPDX-License-Identifier: Apache-2.0
/*
 * xsprofctl record: a recording of the next seconds, of some processes, a job's or everyone's,
 * or of a command run under it until it exits.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon/base/clock.h"
#include "daemon/base/command.h"
#include "daemon/base/cupti_lib_path.h"
#include "daemon/base/job_filter.h"
#include "daemon/ctl/client.h"
#include "daemon/ctl/commands.h"
#include "daemon/ctl/ctl.h"
#include "daemon/ctl/ctl_internal.h"
#include "daemon/ctl/reply_buf.h"
#include "daemon/session/session_mode.h"
#include "output/output.h"

/* "1234" or "1,2,3" into arr; an empty item ("1,,2") or junk is refused. */
static int add_pid_list(const char *arg, struct json_object *arr)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	const char *p;
	long pid;
	int st = 0;

	if (!copy)
		return EXIT_DAEMON_ERROR;
	for (p = arg; *p; p++)
		if (*p == ',' && (p == arg || p[1] == ',' || !p[1]))
			st = ctl_usage_error("--pid '%s': an empty item in the list", arg);
	for (tok = strtok_r(copy, ",", &save); !st && tok; tok = strtok_r(NULL, ",", &save)) {
		if (!ctl_parse_pid(tok, &pid))
			st = ctl_usage_error("--pid '%s': not a process id", tok);
		else if (json_object_array_length(arr) >= 64)
			st = ctl_usage_error("--pid %s: at most 64 processes", tok);
		else
			json_object_array_add(arr, json_object_new_int64(pid));
	}
	if (!*arg)
		st = ctl_usage_error("--pid '%s': not a process id", arg);
	free(copy);
	return st;
}

/* CMD forked and held before its exec (base/command), with the CUDA injection library preset
 * unless the user set one; NULL with the exit status of a shell's "not found" in *ret_st. */
static struct command *spawn_held(char **cmd, int *ret_st)
{
	const char *lib = xsprof_cupti_lib_path(), *user = getenv(COMMAND_INJECTION_ENV);
	struct command *l;

	/* A recording asks for every GPU record (the library's own default is the service's
	 * always-on kernels policy); the user's choice stands. */
	setenv("XSPROF_CUPTI_POLICY", "full", 0);
	l = command__new(cmd, (user && *user) || access(lib, R_OK) ? NULL : lib,
			 access(xsprof_itt_lib_path(), R_OK) ? NULL : xsprof_itt_lib_path());
	if (!l) {
		fprintf(stderr, "xsprofctl: cannot run %s: %s\n", cmd[0],
			errno == ENOENT ? "command not found" : strerror(errno));
		*ret_st = errno == ENOENT ? 127 : 126;
	}
	return l;
}

/* record --job ID, --rank LIST: checked as xsprofd checks them, sent as "job" and "rank".
 * True when c was one of them (*ret_st: 2 for a bad value). */
static bool job_opt(int c, const char *arg, struct json_object *req, int *ret_st)
{
	struct job_filter f = {0};

	if (c != 'J' && c != 'R')
		return false;
	if (c == 'J' && job_filter__set_job(&f, arg))
		*ret_st = ctl_usage_error("--job '%s': expected " JOB_FILTER_JOB_HELP, arg);
	else if (c == 'R' && job_filter__set_ranks(&f, arg))
		*ret_st = ctl_usage_error("--rank '%s': expected " JOB_FILTER_RANK_HELP, arg);
	else
		json_object_object_add(req, c == 'J' ? "job" : "rank", json_object_new_string(arg));
	return true;
}

int ctl_record_parse(int argc, char **argv, struct record_args *a)
{
	static const struct option lo[] = {{"pid", required_argument, NULL, 'p'},
					   {"duration", required_argument, NULL, 'd'},
					   {"freq", required_argument, NULL, 'F'},
					   {"output", required_argument, NULL, 'o'},
					   {"mode", required_argument, NULL, 'm'},
					   {"group-by", required_argument, NULL, 'G'},
					   {"range-domain", required_argument, NULL, 'D'},
					   {"job", required_argument, NULL, 'J'},
					   {"rank", required_argument, NULL, 'R'},
					   PROFILE_LONG_OPTS,
					   {}};
	const char *group = NULL, *domain = NULL;
	long freq = 0;
	bool wall = false;
	char *end;
	int c, st = 0;

	optind = 1;
	while (!st && (c = getopt_long(argc, argv, "+p:d:F:o:m:", lo, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (strcmp(optarg, "cpu") && strcmp(optarg, "offcpu") &&
			    strcmp(optarg, "wall"))
				st = ctl_usage_error("--mode '%s': expected cpu, offcpu or wall",
						     optarg);
			else
				json_object_object_add(a->req, "mode",
						       json_object_new_string(optarg));
			wall = !strcmp(optarg, "wall");
			break;
		case 'G':
			if (session_group__from_name(optarg, &(enum session_group){0}))
				st = ctl_usage_error(
					"--group-by '%s': expected unit, container, comm, rank, "
					"job, range or outer-range",
					optarg);
			else
				json_object_object_add(a->req, "group_by",
						       json_object_new_string(optarg));
			group = optarg;
			break;
		case 'D':
			domain = optarg;
			if (!*optarg)
				st = ctl_usage_error("%s",
						     "--range-domain: a domain's name, or default "
						     "for NVTX's default domain");
			else
				json_object_object_add(a->req, "range_domain",
						       json_object_new_string(optarg));
			break;
		case 'p':
			st = add_pid_list(optarg, a->pids);
			break;
		case 'd':
			a->duration = strtod(optarg, &end);
			if (end == optarg || *end || !isfinite(a->duration) || !(a->duration > 0) ||
			    a->duration > CTL_MAX_DURATION_S)
				st = ctl_usage_error(
					"--duration '%s': expected a number of seconds > 0 "
					"(at most a week)",
					optarg);
			break;
		case 'F':
			freq = ctl_parse_freq(optarg);
			if (!freq)
				st = ctl_usage_error("--freq '%s': expected 1..10000", optarg);
			break;
		case 'o':
			a->out = optarg;
			break;
		case 'N':
			json_object_object_add(a->req, "children", json_object_new_boolean(false));
			break;
		default:
			if (!ctl_profile_opt(c, optarg, a->req, &st) &&
			    !job_opt(c, optarg, a->req, &st))
				st = ctl_usage_error("%s",
						     "record takes --pid, --duration, --freq, "
						     "--mode, --group-by, --range-domain, --job, "
						     "--rank, --no-children, --gpu-mode, "
						     "--weight, --correlate, -o FILE [-- CMD "
						     "ARGS]");
		}
	}
	if (!st && domain && (!group || (strcmp(group, "range") && strcmp(group, "outer-range"))))
		st = ctl_usage_error("%s",
				     "--range-domain goes with --group-by range or outer-range");
	if (!st && optind < argc) {
		if (strcmp(argv[optind - 1], "--"))
			return ctl_usage_error("unexpected argument '%s' (put a command after --)",
					       argv[optind]);
		a->cmd = &argv[optind];
		if (json_object_array_length(a->pids))
			return ctl_usage_error("%s", "--pid and -- CMD do not mix");
	}
	if (!st)
		st = ctl_check_output(a->out, OUTPUT_IN_RECORDING, &a->fmt);
	/* Wall time's on-CPU part is sampled: 999 Hz keeps each share within a point. */
	if (!freq)
		freq = wall ? 999 : 99;
	json_object_object_add(a->req, "freq_hz", json_object_new_int64(freq));
	return st;
}

/* Start the recording; its id, or 0 after saying why (*ret_st). */
static long record_start(struct record_args *a, int *ret_st)
{
	struct json_object *r, *v;
	struct reply_buf b;
	long id;

	json_object_object_add(a->req, "duration_s", json_object_new_double(a->duration));
	json_object_object_add(a->req, "format",
			       json_object_new_string(output__format_name(a->fmt)));
	json_object_object_add(a->req, "pids", json_object_get(a->pids));
	*ret_st =
		ctl_request("POST", "/v1/recordings", json_object_to_json_string(a->req), &b, NULL);
	if (*ret_st)
		return 0;
	r = json_tokener_parse(b.data);
	id = r && json_object_object_get_ex(r, "id", &v) ? json_object_get_int64(v) : 0;
	json_object_put(r);
	free(b.data);
	if (!id) {
		fprintf(stderr, "xsprofctl: xsprofd did not say which recording it started\n");
		*ret_st = EXIT_DAEMON_ERROR;
	}
	return id;
}

int ctl_record(int argc, char **argv)
{
	struct record_args a = {
		.req = json_object_new_object(), .pids = json_object_new_array(), .duration = 10};
	struct progress prog = {.what = "recording"};
	struct reply_buf b = {};
	const struct ctl_opts *o = ctl_opts();
	struct command *child = NULL;
	int st, cmd_st = -1, err;
	bool released = false;
	char path[64];
	long id;

	st = ctl_record_parse(argc, argv, &a);
	if (st)
		goto out;
	if (a.cmd) {
		child = spawn_held(a.cmd, &st);
		if (!child)
			goto out;
		json_object_array_add(a.pids, json_object_new_int64(command__pid(child)));
		json_object_object_add(a.req, "until_exit", json_object_new_boolean(true));
		a.duration = 3600; /* until it exits, within the daemon's --max-record */
		prog.what = a.cmd[0];
	}
	id = record_start(&a, &st);
	if (!id)
		goto out;
	if (child) {
		/* Recording: let the command run. */
		err = command__release(child);
		released = true;
		if (err)
			fprintf(stderr, "xsprofctl: cannot run %s: %s\n", a.cmd[0], strerror(-err));
	}
	prog.total_s = a.cmd ? 0 : a.duration;
	prog.wait_s = a.duration;
	prog.start = clock__mono_s();
	snprintf(path, sizeof(path), "/v1/recordings/%ld", id);
	st = ctl_request("GET", path, NULL, &b, &prog);
	if (!st)
		st = ctl_save(a.out, &b, output__format_name(a.fmt));
	else if (child && released && !command__exited(child) &&
		 (st == EXIT_UNREACHABLE || st == EXIT_DAEMON_ERROR)) {
		/* Its watchdog continues what the daemon had stopped; SIGCONT to be sure. */
		command__kill(child, SIGCONT);
		fprintf(stderr,
			"xsprofctl: xsprofd went away during the recording: no profile; %s (pid %d) "
			"runs on, unprofiled, and xsprofctl waits for it as its parent (Ctrl-C "
			"stops it)\n",
			a.cmd[0], (int)command__pid(child));
	}
	free(b.data);
out:
	/* Never released (the recording did not start): killed and reaped by command__free. */
	if (child && released && command__reap(child, true, &cmd_st) == 1 && !o->json_out &&
	    !o->quiet)
		fprintf(stderr, "xsprofctl: %s exited with status %d\n", a.cmd[0], cmd_st);
	command__free(child);
	json_object_put(a.pids);
	json_object_put(a.req);
	/* Like env(1) and xsprofd: the command's status once the profile is saved. */
	return !st && cmd_st >= 0 ? cmd_st : st;
}
