/* SPDX-License-Identifier: Apache-2.0 */
/* Choosing an output format and writing a profile to a file atomically. */
#ifndef XSPROF_OUTPUT_OUTPUT_H
#define XSPROF_OUTPUT_OUTPUT_H

#include <stdint.h>
#include <stdio.h>

struct calltree;

enum output_format {
	OUTPUT_FOLDED = 1, /* comm;outer;...;inner COUNT */
	OUTPUT_SVG,	   /* self-contained interactive flamegraph */
};

/* What the writers print besides the stacks (title, units). */
struct output_meta {
	const char *title;    /* e.g. "xsprof: 4 CPUs, 10 s at 99 Hz"; NULL for a default */
	const char *subtitle; /* e.g. host and date; may be NULL */
	const char *unit;     /* "samples" (default when NULL) */
};

/* By extension: ".folded"/".txt" -> folded, ".svg" -> svg. -EINVAL when unknown. */
int output__format_from_path(const char *path, enum output_format *ret_fmt);
/* By name: "folded", "svg". -EINVAL when unknown. */
int output__format_from_name(const char *name, enum output_format *ret_fmt);
const char *output__format_name(enum output_format fmt);

/* Stream the tree to f in fmt (e.g. an HTTP response). f is neither flushed nor closed. */
int output__write(const struct calltree *t, enum output_format fmt, FILE *f,
		  const struct output_meta *meta);

/*
 * Write the tree to path atomically: a temporary file in the same directory, fsync, rename.
 * On any error (ENOSPC, EACCES, ...) the temporary file is removed, an existing file at path is
 * left as it was, and -errno is returned.
 */
int output__write_file(const struct calltree *t, enum output_format fmt, const char *path,
		       const struct output_meta *meta);

#endif
