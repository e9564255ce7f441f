/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What both injected libraries (libxsprof_cupti.so, libxsprof_itt.so) read from their
 * environment, and how they speak on stderr. Header-only: each library keeps its own copy.
 */
#ifndef XSPROF_CUPTI_INJECT_ENV_H
#define XSPROF_CUPTI_INJECT_ENV_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* $name as a number in [min, max], else def (unset, empty or not one). */
static inline unsigned env_uint(const char *name, unsigned def, unsigned min, unsigned max)
{
	const char *s = getenv(name);
	unsigned long v;
	char *end;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return def;
	return (unsigned)v;
}

/* $name set, and not "0". */
static inline bool env_true(const char *name)
{
	const char *s = getenv(name);

	return s && *s && strcmp(s, "0") != 0;
}

/* One line on stderr: "WHO[PID]: ...". */
static inline void env_vsay(const char *who, const char *fmt, va_list ap)
{
	char line[512];

	vsnprintf(line, sizeof(line), fmt, ap);
	fprintf(stderr, "%s[%d]: %s\n", who, (int)getpid(), line);
}

#endif
