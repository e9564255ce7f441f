/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests: what the writer tests read back, written once: a scratch folder for a suite (made
 * before each test, removed after), a file's whole text, and a profile written in a JSON
 * format and parsed.
 */
#ifndef XSPROF_TESTS_TEST_FILES_H
#define XSPROF_TESTS_TEST_FILES_H

#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "output/analyses.h"
#include "output/output.h"

/* static char dir[] (a fresh folder under /tmp for each test of suite) and the suite itself. */
#define TEST_SCRATCH_SUITE(suite, template)                   \
	static char dir[] = template;                         \
	static void scratch_make(void)                        \
	{                                                     \
		cr_assert(mkdtemp(dir), "mkdtemp %s", dir);   \
	}                                                     \
	static void scratch_remove(void)                      \
	{                                                     \
		char cmd[sizeof(dir) + 16];                   \
                                                              \
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir); \
		(void)!system(cmd);                           \
	}                                                     \
	TestSuite(suite, .init = scratch_make, .fini = scratch_remove)

/* The whole text of path, NUL-terminated (the caller frees it). */
static inline char *test_slurp(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf;
	long len;

	cr_assert(f, "open %s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	buf = calloc(1, len + 1);
	cr_assert_not_null(buf);
	cr_assert_eq(fread(buf, 1, len, f), (size_t)len);
	fclose(f);
	return buf;
}

/* pd written in fmt (a JSON one), with the analyses it needs built as a mode layer builds
 * them, parsed (the caller puts it). */
static inline struct json_object *test_written_json(const struct profile_data *pd,
						    enum output_format fmt)
{
	struct output_analyses an = {0};
	struct output_meta meta = {.an = &an};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct json_object *j;

	cr_assert(f);
	cr_assert_eq(output_analyses__build(pd, output_analyses__needs(fmt), &an), 0);
	cr_assert_eq(output__write_profile(pd, fmt, f, &meta), 0);
	cr_assert_eq(fclose(f), 0);
	output_analyses__release(&an);
	j = json_tokener_parse(buf);
	cr_assert(j, "not JSON: %.300s", buf);
	free(buf);
	return j;
}

/* o's member k, which must be there. */
static inline struct json_object *test_json_get(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;

	cr_assert(json_object_object_get_ex(o, k, &v), "no %s in %.300s", k,
		  json_object_to_json_string(o));
	return v;
}

#endif
