// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/base/atomic_file.h"
#include "daemon/log.h"
#include "daemon/session/counters.h"
#include "daemon/session/counters_report.h"

static int write_doc(FILE *f, void *ctx)
{
	fprintf(f, "%s\n",
		json_object_to_json_string_ext(ctx, JSON_C_TO_STRING_PRETTY |
							    JSON_C_TO_STRING_NOSLASHESCAPE));
	return ferror(f) ? -EIO : 0;
}

int counters_report__end(const struct counters_snapshot *c, const char *stats_path, bool verbose)
{
	struct json_object *doc = json_object_new_object();
	char *buf = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *f;
	int err = 0;

	if (!doc)
		return -ENOMEM;
	counters__json(c, doc);
	if (verbose && (f = open_memstream(&buf, &len))) {
		counters__print_lines(f, doc, NULL);
		if (!fclose(f))
			for (line = strtok_r(buf, "\n", &save); line;
			     line = strtok_r(NULL, "\n", &save))
				log_debug("%s", line);
		free(buf);
	}
	if (stats_path) {
		err = atomic_file__write(stats_path, write_doc, doc);
		if (err)
			log_err("--stats %s: %s", stats_path, strerror(-err));
	}
	json_object_put(doc);
	return err;
}
