/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The store's database, SQLite or PostgreSQL, behind one small table of calls: a statement
 * with '?' parameters (the PostgreSQL side numbers them $1, $2, ...), every value and result as
 * text, rows handed to a callback. Private to history_store*.c and its tests.
 */
#ifndef XSPROF_OUTPUT_HISTORY_STORE_DB_H
#define XSPROF_OUTPUT_HISTORY_STORE_DB_H

#include <stddef.h>

struct hist_db;

/* One row: cols[i] is NULL for SQL NULL. Not 0 stops the query, which returns it. */
typedef int (*hist_db_row_fn)(void *ctx, const char *const *cols, size_t ncols);

struct hist_db_ops {
	const char *what;	  /* "SQLite", "PostgreSQL" */
	const char *id_column;	  /* an auto-numbered 64-bit primary key's declaration */
	const char *has_meta_sql; /* one row, one column: 1 when xsprof_meta exists, else 0 */
	/* A transaction that writes; schema: one that migrates, which the store's other
	 * migrators wait for. */
	int (*begin_write)(struct hist_db *db, int schema);
	/* sql with n params (NULL: SQL NULL); row() per row, when not NULL. 0 or -errno. */
	int (*query)(struct hist_db *db, const char *sql, const char *const *params, size_t n,
		     hist_db_row_fn row, void *ctx);
	void (*close)(struct hist_db *db);
};

struct hist_db {
	const struct hist_db_ops *ops;
	char where[256]; /* the store as a sentence names it: a path, or a database on a host */
	char err[512];	 /* the last failure, a sentence with where in it */
};

/* code, with the sentence fmt says in err (when err is not NULL). */
int hist_db__fail(char *err, size_t errlen, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* url: as hist_store__open takes it. 0, or -errno with a sentence in err. */
int hist_db__open(const char *url, struct hist_db **ret, char *err, size_t errlen);
int hist_db__open_sqlite(const char *path, struct hist_db **ret, char *err, size_t errlen);
int hist_db__open_pg(const char *conninfo, struct hist_db **ret, char *err, size_t errlen);

static inline int hist_db__query(struct hist_db *db, const char *sql, const char *const *params,
				 size_t n, hist_db_row_fn row, void *ctx)
{
	return db->ops->query(db, sql, params, n, row, ctx);
}

static inline int hist_db__exec(struct hist_db *db, const char *sql)
{
	return db->ops->query(db, sql, NULL, 0, NULL, NULL);
}

static inline void hist_db__close(struct hist_db *db)
{
	if (db)
		db->ops->close(db);
}

#endif
