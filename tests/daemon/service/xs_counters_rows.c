// SPDX-License-Identifier: Apache-2.0
/*
 * Prints the table of counters (daemon/session/counters.c) as JSON, one object per row: its
 * path in the status document, metric, labels, scale, type, and the -v / `xsprofctl status`
 * line and words. tests/daemon/service/counters_agree.sh reads every rendering of one run with it.
 */
#include <stdio.h>

#include <json-c/json.h>

#include "daemon/session/counters.h"

static void add_str(struct json_object *o, const char *k, const char *v)
{
	if (v)
		json_object_object_add(o, k, json_object_new_string(v));
}

int main(void)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; i < counters_nr_rows; i++) {
		const struct counters_row *r = &counters_rows[i];
		struct json_object *o = json_object_new_object();

		add_str(o, "path", r->path);
		add_str(o, "metric", r->metric);
		add_str(o, "labels", r->labels);
		add_str(o, "line", r->line);
		add_str(o, "words", r->words);
		json_object_object_add(o, "scale", json_object_new_double(r->scale ? r->scale : 1));
		json_object_object_add(o, "counter",
				       json_object_new_boolean(r->type == COUNTERS_COUNTER));
		json_object_array_add(a, o);
	}
	puts(json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN));
	json_object_put(a);
	return 0;
}
