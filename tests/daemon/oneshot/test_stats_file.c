// SPDX-License-Identifier: Apache-2.0
/*
 * The real xsprofd's --stats FILE and its -v lines say the same figures: `xsprofd -f -d 2
 * --stats s.json -v -o x.folded`, then every line the table renders from s.json is in the log,
 * word for word. Needs root and BTF.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon/base/fileio.h"
#include "daemon/session/counters.h"

Test(stats_file, the_v_lines_say_the_file_figures, .timeout = 120)
{
	char dir[] = "/tmp/xs_stats_XXXXXX", cmd[1024], path[256], *log = NULL, *lines = NULL,
	     *line, *save = NULL;
	struct json_object *doc, *c, *v;
	size_t len = 0, n = 0;
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd),
		 "cd %s && %s -f -d 2 --stats s.json -v -o x.folded 2>log.txt >/dev/null", dir,
		 XSPROFD_PATH);
	cr_assert_eq(system(cmd), 0, "xsprofd failed: see %s/log.txt", dir);
	snprintf(path, sizeof(path), "%s/s.json", dir);
	doc = json_object_from_file(path);
	cr_assert_not_null(doc, "no --stats file: %s", json_util_get_last_err());
	cr_assert(json_object_object_get_ex(doc, "counters", &c) &&
			  json_object_object_get_ex(c, "samples", &v) &&
			  json_object_get_int64(v) > 0,
		  "no samples in %s", json_object_to_json_string(doc));
	snprintf(path, sizeof(path), "%s/log.txt", dir);
	cr_assert_eq(file__read_all(path, 1 << 24, &log, &len), 0);
	f = open_memstream(&lines, &len);
	counters__print_lines(f, doc, "xsprofd: ");
	fclose(f);
	for (line = strtok_r(lines, "\n", &save); line; line = strtok_r(NULL, "\n", &save), n++)
		cr_expect(strstr(log, line), "not in the -v log: '%s'", line);
	cr_expect(n >= 10, "only %zu lines", n);
	free(lines);
	free(log);
	json_object_put(doc);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}
