// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "output/history/history_store_db.h"

/* Which backend a store's URL names, and whether this build has it. */

int hist_db__fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* A libpq connection string ("host=... dbname=...") rather than a path. */
static bool is_conninfo(const char *url)
{
	static const char *const keys[] = {
		"host=", "hostaddr=", "dbname=", "user=", "port=", "service="};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strncmp(url, keys[i], strlen(keys[i])))
			return true;
	return false;
}

int hist_db__open(const char *url, struct hist_db **ret, char *err, size_t errlen)
{
	if (!url || !*url)
		return hist_db__fail(err, errlen, -EINVAL,
				     "no store named: give a path (SQLite) or a postgresql:// URL");
	if (!strncmp(url, "postgresql://", 13) || !strncmp(url, "postgres://", 11) ||
	    is_conninfo(url)) {
#ifdef XSPROF_HISTORY_PG
		return hist_db__open_pg(url, ret, err, errlen);
#else
		return hist_db__fail(
			err, errlen, -ENOTSUP,
			"the store is a PostgreSQL database, but this xsprof was built "
			"without libpq: install libpq-dev and build it again");
#endif
	}
	if (!strncmp(url, "sqlite:", 7))
		url += 7;
#ifdef XSPROF_HISTORY_SQLITE
	return hist_db__open_sqlite(url, ret, err, errlen);
#else
	return hist_db__fail(err, errlen, -ENOTSUP,
			     "%s would be an SQLite store, but this xsprof was built without "
			     "SQLite: install libsqlite3-dev and build it again",
			     url);
#endif
}
