// SPDX-License-Identifier: Apache-2.0
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "daemon/log.h"

int log_max_level = LOG_INFO;
static int journal = -1;

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_max_level)
		return;
	/* Under systemd, stderr is the journal: a "<N>" prefix carries the priority. */
	if (journal < 0)
		journal = getenv("JOURNAL_STREAM") != NULL;
	/* The journal names the unit itself; a terminal needs to be told who is talking. */
	if (journal)
		fprintf(stderr, "<%d>%s", level,
			level <= LOG_ERR       ? "error: "
			: level == LOG_WARNING ? "warning: "
					       : "");
	else
		fputs(level <= LOG_ERR	     ? "xsprofd: error: "
		      : level == LOG_WARNING ? "xsprofd: warning: "
					     : "xsprofd: ",
		      stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
