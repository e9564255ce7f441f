// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "output/history/history_store_db.h"

#define BUSY_TIMEOUT_MS 10000 /* another writer's run: wait this long for its lock */
#define MAX_COLS	16

struct sqlite_db {
	struct hist_db db; /* first: the store sees only this */
	sqlite3 *h;
};

/* The failure of rc as a sentence in db.err; its -errno. */
static int sqlite_fail(struct sqlite_db *s, int rc)
{
	const char *msg = s->h ? sqlite3_errmsg(s->h) : sqlite3_errstr(rc);
	char *err = s->db.err;
	size_t len = sizeof(s->db.err);

	switch (rc & 0xff) {
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		snprintf(
			err, len,
			"%s is not an SQLite database, or it is corrupt (%s): give another path, or "
			"move the file away to start a new history",
			s->db.where, msg);
		return -EUCLEAN;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		snprintf(err, len,
			 "%s stayed locked by another writer for %d s (%s): try again when it is "
			 "done",
			 s->db.where, BUSY_TIMEOUT_MS / 1000, msg);
		return -EBUSY;
	case SQLITE_READONLY:
	case SQLITE_CANTOPEN:
	case SQLITE_PERM:
		snprintf(err, len, "%s: %s (can you write the file and its folder?)", s->db.where,
			 msg);
		return (rc & 0xff) == SQLITE_CANTOPEN ? -ENOENT : -EACCES;
	case SQLITE_NOMEM:
		snprintf(err, len, "%s: out of memory", s->db.where);
		return -ENOMEM;
	case SQLITE_FULL:
		snprintf(err, len, "%s: %s (free some disk space)", s->db.where, msg);
		return -ENOSPC;
	case SQLITE_CONSTRAINT:
		snprintf(err, len, "%s: %s", s->db.where, msg);
		return -EINVAL;
	default:
		snprintf(err, len, "%s: %s", s->db.where, msg);
		return -EIO;
	}
}

/* SQLite writes doubles as text with 15 digits; 17 keep the value exact. */
static const char *column(sqlite3_stmt *st, int c, char *num, size_t len)
{
	if (sqlite3_column_type(st, c) != SQLITE_FLOAT)
		return (const char *)sqlite3_column_text(st, c);
	snprintf(num, len, "%.17g", sqlite3_column_double(st, c));
	return num;
}

static int sqlite_query(struct hist_db *db, const char *sql, const char *const *params, size_t n,
			hist_db_row_fn row, void *ctx)
{
	struct sqlite_db *s = (struct sqlite_db *)db;
	const char *cols[MAX_COLS];
	char num[MAX_COLS][32];
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(s->h, sql, -1, &st, NULL), ret = 0;

	for (size_t i = 0; i < n && rc == SQLITE_OK; i++)
		rc = params[i] ? sqlite3_bind_text(st, (int)i + 1, params[i], -1, SQLITE_STATIC)
			       : sqlite3_bind_null(st, (int)i + 1);
	while (rc == SQLITE_OK || rc == SQLITE_ROW) {
		int nc;

		rc = sqlite3_step(st);
		if (rc != SQLITE_ROW)
			break;
		nc = sqlite3_column_count(st);
		if (nc > MAX_COLS) {
			sqlite3_finalize(st);
			snprintf(db->err, sizeof(db->err), "%s: a query of %d columns", db->where,
				 nc);
			return -E2BIG;
		}
		for (int c = 0; c < nc; c++)
			cols[c] = column(st, c, num[c], sizeof(num[c]));
		if (row && (ret = row(ctx, cols, (size_t)nc)))
			break;
	}
	if (!ret && rc != SQLITE_DONE)
		ret = sqlite_fail(s, rc);
	sqlite3_finalize(st);
	return ret;
}

static int sqlite_begin_write(struct hist_db *db, int schema)
{
	/* The write lock now, while busy_timeout can wait for it, not at the first write. */
	return sqlite_query(db, "BEGIN IMMEDIATE", NULL, 0, NULL, NULL);
}

static void sqlite_close(struct hist_db *db)
{
	struct sqlite_db *s = (struct sqlite_db *)db;

	sqlite3_close(s->h);
	free(s);
}

static const struct hist_db_ops sqlite_ops = {
	.what = "SQLite",
	.id_column = "INTEGER PRIMARY KEY",
	.has_meta_sql = "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
			"name = 'xsprof_meta'",
	.begin_write = sqlite_begin_write,
	.query = sqlite_query,
	.close = sqlite_close,
};

int hist_db__open_sqlite(const char *path, struct hist_db **ret, char *err, size_t errlen)
{
	struct sqlite_db *s = calloc(1, sizeof(*s));
	int rc, r;

	if (!s)
		return hist_db__fail(err, errlen, -ENOMEM, "opening %s: out of memory", path);
	s->db.ops = &sqlite_ops;
	snprintf(s->db.where, sizeof(s->db.where), "%s", path);
	/* Made when missing; the file's own locks keep two writers apart. */
	rc = sqlite3_open_v2(path, &s->h,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
			     NULL);
	if (rc == SQLITE_OK) {
		sqlite3_extended_result_codes(s->h, 1);
		sqlite3_busy_timeout(s->h, BUSY_TIMEOUT_MS);
		/* SQLite reads a file at its first statement: a file that is no database fails
		 * here, before anything is written to it. */
		r = sqlite_query(&s->db, "SELECT count(*) FROM sqlite_master", NULL, 0, NULL, NULL);
		if (!r)
			r = sqlite_query(&s->db, "PRAGMA foreign_keys = ON", NULL, 0, NULL, NULL);
	} else {
		r = sqlite_fail(s, rc);
	}
	if (r) {
		hist_db__fail(err, errlen, r, "%s", s->db.err);
		sqlite_close(&s->db);
		return r;
	}
	*ret = &s->db;
	return 0;
}
