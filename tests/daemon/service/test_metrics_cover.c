// SPDX-License-Identifier: Apache-2.0
/*
 * Every number of a real status document (GET /v1/status) has a metric in GET /metrics: the
 * document in $XSPROF_STATUS_JSON (tests/daemon/service/metrics.sh saves the running daemon's),
 * else tests/fixtures/status_service.json (one a daemon with --max-cpu and the flight recorder
 * sent).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/service/internal.h"

static size_t nr_leaves;

/* Numbers reached through objects; an array's elements are written by family (per uid, per
 * state) or are not counters (the attached pids). */
static void check(struct json_object *o, char *path, size_t len)
{
	json_object_object_foreach(o, key, v)
	{
		size_t n = (size_t)snprintf(path + len, 512 - len, "%s%s", len ? "." : "", key);

		if (json_object_is_type(v, json_type_object))
			check(v, path, len + n);
		else if (json_object_is_type(v, json_type_int) ||
			 json_object_is_type(v, json_type_double)) {
			nr_leaves++;
			cr_expect(metrics__covers(path), "status %s has no metric", path);
		}
		path[len] = '\0';
	}
}

Test(metrics_cover, every_status_number_has_a_metric)
{
	const char *file = getenv("XSPROF_STATUS_JSON");
	struct json_object *st = json_object_from_file(
		file ? file : XSPROF_TEST_SOURCE_DIR "/fixtures/status_service.json");
	char path[512] = "";
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	cr_assert_not_null(st, "no status document: %s", json_util_get_last_err());
	check(st, path, 0);
	cr_expect(nr_leaves > 100, "only %zu numbers", nr_leaves);
	/* And the metrics of it are written. */
	f = open_memstream(&buf, &len);
	metrics__write(f, st);
	fclose(f);
	cr_expect(strstr(buf, "\nxsprof_samples_total "), "%s", buf);
	free(buf);
	json_object_put(st);
}
