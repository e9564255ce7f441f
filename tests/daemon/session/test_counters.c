// SPDX-License-Identifier: Apache-2.0
/*
 * The table of counters (daemon/session/counters.c): one snapshot with a different value in
 * every field, rendered as the status JSON (and the one-shot's --stats file), /metrics text and
 * the lines of `xsprofctl status` and the one-shot's -v; each parsed back, every row has its
 * value in each, and a row without a form says why.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/session/counters.h"

static struct counters_snapshot snap;
static struct json_object *doc;

static void fill(void)
{
	uint64_t *w = (uint64_t *)&snap;

	/* Every 8-byte slot a different value (pointers in it are never read by the table). */
	for (size_t i = 0; i < sizeof(snap) / sizeof(*w); i++)
		w[i] = 1000 + 7 * i;
	for (int p = 0; p < COUNTERS_PARTS; p++)
		snap.has[p] = true;
	doc = json_object_new_object();
	counters__json(&snap, doc);
}

static void drop(void)
{
	json_object_put(doc);
}

static char *render(void (*fn)(FILE *f, struct json_object *doc))
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	cr_assert_not_null(f);
	fn(f, doc);
	fclose(f);
	return buf;
}

static void lines(FILE *f, struct json_object *d)
{
	counters__print_lines(f, d, "xsprofd: ");
}

TestSuite(counters, .init = fill, .fini = drop);

Test(counters, every_row_has_every_form_or_says_why)
{
	for (size_t i = 0; i < counters_nr_rows; i++) {
		const struct counters_row *r = &counters_rows[i];
		const char *at = r->words ? strstr(r->words, "%llu") : NULL;

		cr_expect(counters__part(r) < COUNTERS_PARTS, "%s: no part", r->path);
		cr_expect(r->metric || r->no_metric, "%s: no metric, and no why", r->path);
		cr_expect(r->line && at && !strstr(at + 4, "%"), "%s: no -v line words", r->path);
		for (size_t k = 0; k < i; k++) {
			const struct counters_row *o = &counters_rows[k];

			cr_expect(strcmp(o->path, r->path), "%s twice", r->path);
			if (!o->metric || !r->metric || strcmp(o->metric, r->metric))
				continue;
			cr_expect(o->type == r->type, "%s: members of two types", r->metric);
			cr_expect(o->labels && r->labels && strcmp(o->labels, r->labels),
				  "%s: two rows with the same labels", r->metric);
		}
	}
}

/* The status JSON (and the --stats file, the same function): the snapshot's values. */
Test(counters, json_holds_each_value)
{
	for (size_t i = 0; i < counters_nr_rows; i++) {
		const struct counters_row *r = &counters_rows[i];
		struct json_object *v = counters__find(doc, r);

		cr_assert_not_null(v, "%s not in the JSON", r->path);
		cr_expect_eq((uint64_t)json_object_get_int64(v), counters__value(r, &snap), "%s",
			     r->path);
	}
}

/* /metrics: each row's sample is its value times its scale; each family has its help. */
Test(counters, metrics_hold_each_value)
{
	char *text = render(counters__write_metrics);

	for (size_t i = 0; i < counters_nr_rows; i++) {
		const struct counters_row *r = &counters_rows[i];
		char want[256], help[256];
		const char *at;
		double got, v = (double)counters__value(r, &snap) * (r->scale ? r->scale : 1);

		if (!r->metric)
			continue;
		snprintf(want, sizeof(want), r->labels ? "\n%s{%s} " : "\n%s%s ", r->metric,
			 r->labels ? r->labels : "");
		at = strstr(text, want);
		cr_assert_not_null(at, "no '%s' in /metrics", want + 1);
		got = strtod(at + strlen(want), NULL);
		cr_expect(fabs(got - v) <= 1e-9 * fabs(v), "%s: %g, not %g", r->path, got, v);
		snprintf(help, sizeof(help), "# HELP %s ", r->metric);
		cr_expect(strstr(text, help), "%s: no help", r->metric);
	}
	free(text);
}

/* The lines of `xsprofctl status` and the one-shot's -v: each row's words, with its value,
 * on its line. */
Test(counters, lines_hold_each_value)
{
	char *text = render(lines);

	for (size_t i = 0; i < counters_nr_rows; i++) {
		const struct counters_row *r = &counters_rows[i];
		const char *at = strstr(r->words, "%llu");
		char head[128], frag[256];
		const char *line, *end, *hit;
		bool found;

		snprintf(head, sizeof(head), "xsprofd: %s ", r->line);
		snprintf(frag, sizeof(frag), "%.*s%llu%s", (int)(at - r->words), r->words,
			 (unsigned long long)counters__value(r, &snap), at + 4);
		/* Titles may begin alike ("CUDA:", "CUDA: launch stacks"): any line of the title. */
		for (line = text, found = false; !found && (line = strstr(line, head));
		     line = end) {
			end = strchr(line, '\n');
			hit = strstr(line + strlen(head) - 1, frag);
			found = hit && hit < end && hit[-1] == ' ' &&
				(hit[strlen(frag)] == ',' || hit[strlen(frag)] == '\n');
		}
		cr_expect(found, "%s: no '%s' on a line '%s'", r->path, frag, head);
	}
	free(text);
}

/* A part the recording did not have is in no rendering. */
Test(counters, absent_parts_are_left_out)
{
	struct json_object *d = json_object_new_object(), *v;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	snap.has[COUNTERS_CUDA] = false;
	counters__json(&snap, d);
	cr_expect(!json_object_object_get_ex(d, "cuda_probes", &v));
	f = open_memstream(&buf, &len);
	counters__write_metrics(f, d);
	counters__print_lines(f, d, NULL);
	fclose(f);
	cr_expect_null(strstr(buf, "xsprof_cuda_"), "%s", buf);
	cr_expect_null(strstr(buf, "CUDA"), "%s", buf);
	free(buf);
	json_object_put(d);
}
