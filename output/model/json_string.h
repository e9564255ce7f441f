/* SPDX-License-Identifier: Apache-2.0 */
/* A string as JSON, for the writers that stream JSON to a file (the Chrome trace, the GPU
 * report, the GPU timeline): one escaping for all of them. */
#ifndef XSPROF_OUTPUT_JSON_STRING_H
#define XSPROF_OUTPUT_JSON_STRING_H

#include <stdio.h>

/* s as a JSON string (quotes included; NULL: ""): control characters and invalid UTF-8
 * escaped. 0 or -errno. */
int json__put_string(FILE *f, const char *s);

#endif
