// SPDX-License-Identifier: Apache-2.0
/*
 * xsprofctl fleet's own logic, without hosts: host lines and their labels, the errors its
 * options give (exit status 2 and what to do), and how the hosts' GPU reports merge.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon/ctl/commands.h"
#include "daemon/ctl/fleet_internal.h"
#include "daemon/ctl/json_get.h"

Test(fleet_hosts, a_line_is_a_host_and_its_labels)
{
	struct fleet f = {0};
	char l1[] = "10.0.0.1:7717 rack=a job=train  # a comment", l2[] = "   ",
	     l3[] = "# only a comment", l4[] = "10.0.0.2 notalabel";

	cr_assert_eq(fleet__add_host_line(&f, l1), 0);
	cr_expect_eq(f.nr, 1);
	cr_expect_str_eq(f.hosts[0].addr, "10.0.0.1:7717");
	cr_assert_eq(f.hosts[0].nr_labels, 2);
	cr_expect_str_eq(f.hosts[0].labels[0], "rack=a");
	cr_expect_str_eq(f.hosts[0].labels[1], "job=train");
	cr_expect_eq(fleet__add_host_line(&f, l2), 1, "a blank line is no host");
	cr_expect_eq(fleet__add_host_line(&f, l3), 1, "a comment is no host");
	cr_expect_eq(fleet__add_host_line(&f, l4), -EINVAL, "a label is key=value");
	cr_expect_eq(f.nr, 1, "a refused line adds nothing");
	fleet__free(&f);
}

/* ctl_fleet ARGS: its exit status and stderr. */
static int fleet_status(char **argv, char *err, size_t size)
{
	FILE *tmp = tmpfile();
	int saved = dup(2), argc = 0, st;
	size_t n;

	while (argv[argc])
		argc++;
	cr_assert(tmp && saved >= 0);
	fflush(stderr);
	dup2(fileno(tmp), 2);
	st = ctl_fleet(argc, argv);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(err, 1, size - 1, tmp);
	err[n] = '\0';
	fclose(tmp);
	return st;
}

#define EXPECT_FLEET_USAGE(says, ...)                                                            \
	do {                                                                                     \
		char err[4096];                                                                  \
		int st = fleet_status((char *[]){"fleet", __VA_ARGS__, NULL}, err, sizeof(err)); \
		cr_expect_eq(st, FLEET_USAGE, "exit %d: %s", st, err);                           \
		cr_expect(strstr(err, says), "stderr lacks '%s':\n%s", says, err);               \
		cr_expect(strstr(err, "Try 'xsprofctl fleet --help'"), "%s", err);               \
	} while (0)

Test(fleet_args, errors_say_what_to_do)
{
	EXPECT_FLEET_USAGE("no hosts: give HOST[:PORT] arguments or --hosts FILE", "-o", "x.svg");
	EXPECT_FLEET_USAGE("--output FILE is needed", "h1:7717");
	EXPECT_FLEET_USAGE("--output: use .folded, .txt, .svg, .callgrind or .pb.gz", "-o", "x.dat",
			   "h1");
	EXPECT_FLEET_USAGE("--cert and --key go together", "-o", "x.svg", "--cert", "c.pem", "h1");
	EXPECT_FLEET_USAGE("bad host", "-o", "x.svg", "h1 h2");
	/* The straggler report across hosts (fleet_job.c). */
	EXPECT_FLEET_USAGE("--report: expected gpu or straggler", "--report", "slow", "h1");
	EXPECT_FLEET_USAGE("--rank: expected ranks and ranges", "-o", "x.svg", "--rank", "1-",
			   "h1");
	EXPECT_FLEET_USAGE("writes the job report to FILE.job.json", "--report", "straggler", "-o",
			   "x.json", "h1");
	EXPECT_FLEET_USAGE("the windows (--since) keep no job parts", "--report", "straggler",
			   "--since", "60", "h1");
	EXPECT_FLEET_USAGE("takes no --group-by", "--report", "straggler", "--group-by", "rank",
			   "h1");
	EXPECT_FLEET_USAGE("--job: expected a job id", "--report", "straggler", "--job", "", "h1");
	{
		struct fleet f = {.duration = 5, .job = "run 1&x", .rank = "0,2-3"};
		struct fleet_host h = {.addr = "h1:7717"};
		char url[512];

		fleet__host_url(&f, &h, url, sizeof(url));
		cr_expect_str_eq(url, "http://h1:7717/debug/pprof/profile?format=folded&seconds=5"
				      "&job=run%201%26x&rank=0,2-3");
	}
}

Test(fleet_report, hosts_reports_merge)
{
	struct json_object *merged = json_object_new_object();
	struct json_object *a = json_tokener_parse(
		"{\"devices\":[{\"active_ns\":100,\"busy_ns\":60,\"idle_by_cause\":{\"host_ns\":30,"
		"\"sync_ns\":10}}],\"memory\":[{\"peak_bytes\":1000}],"
		"\"findings\":[{\"kind\":\"input_bound\",\"severity\":\"medium\",\"summary\":\"s\"}]}");
	struct json_object *b = json_tokener_parse(
		"{\"devices\":[{\"active_ns\":50,\"busy_ns\":50,\"idle_by_cause\":{}}],"
		"\"findings\":[{\"kind\":\"input_bound\",\"severity\":\"high\",\"summary\":\"t\"}]}");
	struct json_object *k;

	cr_assert(merged && a && b);
	json_object_object_add(merged, "idle_by_cause", json_object_new_object());
	json_object_object_add(merged, "findings", json_object_new_object());
	fleet_gpu__merge(merged, a, "h1");
	fleet_gpu__merge(merged, b, "h2");
	cr_expect_eq(jint(merged, "devices"), 2);
	cr_expect_eq(jint(merged, "active_ns"), 150);
	cr_expect_eq(jint(merged, "busy_ns"), 110);
	cr_expect_eq(jint(jget(merged, "idle_by_cause"), "host_ns"), 30);
	cr_expect_eq(jint(jget(merged, "idle_by_cause"), "sync_ns"), 10);
	cr_expect_eq(jint(merged, "memory_peak_bytes"), 1000);
	k = jget(jget(merged, "findings"), "input_bound");
	cr_assert_not_null(k);
	cr_expect_str_eq(jstr(k, "severity", ""), "high", "the worst host's severity wins");
	cr_expect_eq(jlen(k, "hosts"), 2);
	cr_expect_str_eq(jstr(k, "example", ""), "s");
	json_object_put(merged);
	json_object_put(a);
	json_object_put(b);
}
