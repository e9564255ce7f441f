// SPDX-License-Identifier: Apache-2.0
/* `xsprofctl status`'s lines, one function per part of the status document. */
#include <stdbool.h>
#include <stdio.h>

#include <json-c/json.h>

#include "daemon/ctl/ctl_internal.h"
#include "daemon/ctl/json_get.h"
#include "daemon/session/counters.h"

/* --max-cpu: the cost against the ceiling, what is shed now and what was, for how long. */
static void status_print_ceiling(struct json_object *k)
{
	struct json_object *now = jget(k, "shed_now"), *secs = jget(k, "shed_s");
	size_t n = now ? json_object_array_length(now) : 0;

	printf("ceiling: --max-cpu %g%% of %lld CPUs; cost %.2f%% now, %.2f%% on average (%.1f s "
	       "own CPU, %.1f s BPF%s); %lld steps shed, %lld restored\n",
	       jnum(k, "max_cpu_pct"), jint(k, "cpus"), jnum(k, "cost_pct"),
	       jnum(k, "avg_cost_pct"), jnum(k, "own_cpu_s"), jnum(k, "bpf_s"),
	       json_object_get_boolean(jget(k, "bpf_measured")) ? "" : ", not measured",
	       jint(k, "steps_shed"), jint(k, "steps_restored"));
	printf("  shed now: ");
	for (size_t i = 0; i < n; i++)
		printf("%s%s", i ? ", " : "",
		       json_object_get_string(json_object_array_get_idx(now, i)));
	printf("%s; sampling at %.0f Hz (a sample counts for %lld), launch stacks 1 in %lld\n",
	       n ? "" : "nothing", jnum(k, "freq_hz"), jint(k, "rate_divisor"),
	       jint(k, "launch_stack_every"));
	if (json_object_get_boolean(jget(k, "all_shed")) &&
	    jnum(k, "cost_pct") > jnum(k, "max_cpu_pct"))
		printf("  not held with every step shed: what is left costs %.2f%% (xsprofd's floor)\n",
		       jnum(k, "cost_pct"));
	if (secs) {
		bool any = false;

		printf("  shed in all:");
		json_object_object_foreach(secs, key, val)
		{
			if (json_object_get_double(val) <= 0)
				continue;
			printf("%s %s %.1f s", any ? "," : "", key, json_object_get_double(val));
			any = true;
		}
		printf("%s\n", any ? "" : " nothing");
	}
	if (jget(k, "launches_without_stack"))
		printf("  CUDA: %lld launches counted without their stack, %lld calls counted only\n",
		       jint(k, "launches_without_stack"), jint(k, "cuda_calls_counted_only"));
}

static void status_print_head(struct json_object *j)
{
	struct json_object *c = jget(j, "counters"), *st = jget(j, "store"), *m = jget(j, "memory"),
			   *k;

	printf("xsprofd %s, pid %lld, up %lld s\n", jstr(j, "version", "?"), jint(j, "pid"),
	       jint(j, "uptime_s"));
	if ((k = jget(j, "kernel"))) {
		struct json_object *fb = jget(k, "fallbacks");
		size_t n = fb && json_object_is_type(fb, json_type_array)
				   ? json_object_array_length(fb)
				   : 0;

		printf("kernel: %s, %s\n", jstr(k, "release", "?"),
		       n ? "fallbacks in use:" : "every BPF feature xsprofd uses is there");
		for (size_t i = 0; i < n; i++) {
			struct json_object *e = json_object_array_get_idx(fb, i);

			printf("  no %s (Linux %s): %s\n", jstr(e, "feature", "?"),
			       jstr(e, "since", "?"), jstr(e, "instead", "?"));
		}
	}
	printf("sampling: %lld Hz on %lld CPUs; %lld samples, %lld kept, %lld lost (ring buffer "
	       "full), %lld malformed\n",
	       jint(j, "freq_hz"), jint(j, "cpus"), jint(c, "samples"), jint(c, "kept"),
	       jint(c, "lost_ring_buffer_full"), jint(c, "malformed_records"));
	if ((k = jget(j, "cost")))
		printf("cost: xsprofd %.2f%% of one CPU (%.1f s since it started); BPF %.2f us per "
		       "sample (%.3f%% of one CPU), %.2f us per CUDA launch\n",
		       jnum(k, "own_cpu_pct"), jnum(k, "own_cpu_s"),
		       jnum(k, "bpf_ns_per_sample") / 1e3, jnum(k, "bpf_cpu_pct"),
		       jnum(k, "bpf_ns_per_launch") / 1e3);
	if ((k = jget(j, "ceiling")))
		status_print_ceiling(k);
	printf("window: %lld s kept; %lld samples in %lld slices, %lld of %lld KiB; %lld slices "
	       "dropped at the cap\n",
	       jint(j, "window_s"), jint(st, "samples"), jint(st, "slices"),
	       jint(st, "bytes") >> 10, jint(st, "cap_bytes") >> 10, jint(st, "dropped_slices"));
	printf("memory: %lld KiB resident; pprof frame sites %lld names, %lld of %lld KiB, emptied "
	       "%lld times at the cap, %lld refused\n",
	       jint(m, "rss_bytes") >> 10, jint(m, "frame_sites_names"),
	       jint(m, "frame_sites_bytes") >> 10, jint(m, "frame_sites_cap_bytes") >> 10,
	       jint(m, "frame_sites_resets"), jint(m, "frame_sites_refused"));
}

/* The files without an unwind table, by name: the table's lines have only their count. */
static void status_print_unwind(struct json_object *k)
{
	struct json_object *files = jget(k, "files_without_table_named");
	long long named = (long long)jlen(k, "files_without_table_named");

	for (long long i = 0; i < named; i++) {
		struct json_object *f = json_object_array_get_idx(files, i);

		printf("unwind: no table for %s (%s): frame pointers there\n", jstr(f, "path", "?"),
		       jstr(f, "why", "?"));
	}
	if (jint(k, "files_without_table") > named)
		printf("unwind: and %lld more files without a table\n",
		       jint(k, "files_without_table") - named);
}

static void status_print_parts(struct json_object *j)
{
	struct json_object *k;

	if ((k = jget(j, "export")) && jlen(k, "sinks"))
		printf("export: %lld slices pushed to %lld sinks, %lld queued (%lld KiB of %lld), "
		       "%lld failed pushes retried, %lld dropped past the queue cap, %lld refused by "
		       "a store\n",
		       jint(k, "pushed"), (long long)jlen(k, "sinks"), jint(k, "queued"),
		       jint(k, "queued_bytes") >> 10, jint(k, "cap_bytes") >> 10,
		       jint(k, "failed_pushes"), jint(k, "dropped"), jint(k, "rejected"));
	if ((k = jget(j, "gpu")))
		printf("gpu socket: %lld connections, %lld refused at the caps, %lld closed idle, "
		       "%lld malformed; %lld records held, %lld evicted, %lld dropped by senders\n",
		       jint(k, "connections"), jint(k, "refused_connections"),
		       jint(k, "idle_connections_closed"), jint(k, "malformed_connections"),
		       jint(k, "records_held"), jint(k, "records_evicted"),
		       jint(k, "sender_dropped"));
}

static void status_print_recordings(struct json_object *j)
{
	struct json_object *v = jget(j, "attached");

	if (v && json_object_array_length(v)) {
		printf("attached:");
		for (size_t i = 0; i < json_object_array_length(v); i++)
			printf(" %s", json_object_get_string(json_object_array_get_idx(v, i)));
		putchar('\n');
	}
	v = jget(j, "recordings");
	for (size_t i = 0; v && i < json_object_array_length(v); i++) {
		struct json_object *r = json_object_array_get_idx(v, i), *x;

		printf("recording %lld: %s", jint(r, "id"), jstr(r, "state", "?"));
		if ((x = jget(r, "left_out_other_users")))
			printf("; left out as another user's: %lld samples, %lld off-CPU, %lld CUDA "
			       "calls, %lld launches",
			       jint(x, "samples"), jint(x, "offcpu"), jint(x, "cuda_calls"),
			       jint(x, "launches"));
		if ((x = jget(r, "note")))
			printf("; %s", json_object_get_string(x));
		putchar('\n');
	}
}

/* The status document as `xsprofctl status` prints it. */
void ctl_status_print(struct json_object *j)
{
	struct json_object *k;

	status_print_head(j);
	/* A recording's counters, a line per part of the table (daemon/session/counters.c). */
	counters__print_lines(stdout, j, NULL);
	if ((k = jget(j, "unwind")))
		status_print_unwind(k);
	status_print_parts(j);
	status_print_recordings(j);
}
