/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading a host's job parts (output/job/job_parts.h) without building the document: a scan of
 * the top-level object into its fields' spans, and the row arrays (gpu, launches, joins,
 * samples, stacks) read row by row straight from the text. A document of tens of MiB then
 * costs its records and not a tree of objects ten times its size (issue 53, H10). Nesting
 * deeper than JP_MAX_DEPTH is refused while scanning, without recursion.
 */
#ifndef XSPROF_OUTPUT_JOB_PARTS_READ_H
#define XSPROF_OUTPUT_JOB_PARTS_READ_H

#include <stddef.h>
#include <stdint.h>

#define JP_MAX_DEPTH 64

struct jp_span {
	const char *p;
	size_t len;
};

/* The value of the top-level object's field key: its last occurrence. */
struct jp_field {
	const char *key; /* as asked */
	struct jp_span val;
	int found;
};

/*
 * Scan json (len bytes: one object, whitespace after it) and fill each asked field's span.
 * 0, or -EINVAL with why (not JSON, too deep, not an object).
 */
int jp_scan(const char *json, size_t len, struct jp_field *fields, size_t nr_fields, char *why,
	    size_t why_size);

/* An array of rows, each an array of integers (one of them may be an array of integers). */
struct jp_rows {
	const char *p, *end;
	size_t n; /* rows read so far */
	int first;
};

/* 0, or -EINVAL when span is not an array. */
int jp_rows_begin(struct jp_rows *r, struct jp_span span);
/*
 * The next row: its first max integers in v (*n: how many it had, at most max), and, when
 * inner is not NULL, the first nested array of integers met in the row into inner (up to
 * max_inner; *n_inner: how many). 1: a row; 0: the end; -EINVAL: not rows of integers
 * (a number out of int64's range, a float, a string, deeper nesting).
 */
int jp_row_next(struct jp_rows *r, int64_t *v, size_t max, size_t *n, int64_t *inner,
		size_t max_inner, size_t *n_inner);

#endif
