// SPDX-License-Identifier: Apache-2.0
/* The flight recorder's dumps: pending ones cut from the ring when due, written by a thread of
 * their own, listed, and kept by count and bytes per owner in the dump directory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon/base/clock.h"
#include "daemon/base/vec.h"
#include "daemon/log.h"
#include "daemon/service/flight.h"
#include "daemon/service/flight_internal.h"
#include "daemon/session/dump.h"
#include "daemon/session/frozen.h"

static const char *const state_names[] = {"pending", "writing", "done", "failed"};

/* ---- the writer thread ---- */

static void job_free(struct job *j)
{
	for (size_t i = 0; j && i < j->nr_parts; i++)
		frozen__put(j->parts[i]);
	if (j) {
		free(j->parts);
		free(j->trigger_json);
		free(j);
	}
}

void *flight_dumps__writer(void *arg)
{
	struct flight *f = arg;

	pthread_mutex_lock(&f->lock);
	for (;;) {
		struct job *j, **tail;
		uint64_t one = 1;

		while (!f->todo && !f->stop)
			pthread_cond_wait(&f->cond, &f->lock);
		if (f->stop)
			break;
		j = f->todo;
		f->todo = j->next;
		pthread_mutex_unlock(&f->lock);
		j->err = dump__write(&j->req, &j->res, j->msg, sizeof(j->msg));
		pthread_mutex_lock(&f->lock);
		j->next = NULL;
		for (tail = &f->done; *tail; tail = &(*tail)->next)
			;
		*tail = j;
		if (write(f->efd, &one, sizeof(one)) < 0) {
			/* The counter is far from full: the loop reads it every dump. */
		}
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

/* ---- the dumps on disk ---- */

static int cmp_created(const void *a, const void *b)
{
	const struct dump_entry *x = a, *y = b;

	if (x->created_unix != y->created_unix)
		return x->created_unix < y->created_unix ? -1 : 1;
	return strcmp(x->name, y->name);
}

static enum flight_kind kind_of(const char *name)
{
	for (enum flight_kind k = 0; k < FLIGHT_NR_KINDS; k++)
		if (name && !strcmp(name, flight_kind__name(k)))
			return k;
	return FLIGHT_MANUAL;
}

/* The bundles a service before this one wrote; what a dump cut short left is removed. */
static void scan_dir(struct flight *f)
{
	DIR *d = opendir(f->dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char p[PATH_MAX];
		struct json_object *m, *t, *v;
		struct dump_entry de = {0};
		size_t len = strlen(e->d_name);

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (e->d_name[0] == '.' && len > 4 && !strcmp(e->d_name + len - 4, ".tmp")) {
			dump__remove(f->dir, e->d_name);
			continue;
		}
		if (e->d_name[0] == '.' || len >= sizeof(de.name))
			continue;
		snprintf(p, sizeof(p), "%s/%s/manifest.json", f->dir, e->d_name);
		m = json_object_from_file(p);
		if (!m)
			continue;
		memcpy(de.name, e->d_name, len + 1); /* len < sizeof(de.name): checked above */
		de.state = DUMP_DONE;
		if (json_object_object_get_ex(m, "trigger", &t)) {
			if (json_object_object_get_ex(t, "kind", &v))
				de.kind = kind_of(json_object_get_string(v));
			if (json_object_object_get_ex(t, "uid", &v))
				de.uid = (uint32_t)json_object_get_int64(v);
			if (json_object_object_get_ex(t, "all_users", &v))
				de.all = json_object_get_boolean(v);
			if (json_object_object_get_ex(t, "created_unix_s", &v))
				de.created_unix = json_object_get_double(v);
		}
		json_object_put(m);
		snprintf(p, sizeof(p), "%s/%s", f->dir, e->d_name);
		de.bytes = dump__bytes(p);
		if (!vec_reserve(&f->dumps, &f->cap_dumps, f->nr_dumps + 1))
			f->dumps[f->nr_dumps++] = de;
	}
	if (d)
		closedir(d);
	if (f->nr_dumps) /* none: no array (qsort wants one) */
		qsort(f->dumps, f->nr_dumps, sizeof(*f->dumps), cmp_created);
}

static void entry_remove(struct flight *f, size_t i)
{
	free(f->dumps[i].trigger_json);
	memmove(f->dumps + i, f->dumps + i + 1, (f->nr_dumps - i - 1) * sizeof(*f->dumps));
	f->nr_dumps--;
}

/* The oldest bundles past the count or the bytes go (the newest always stays); and the
 * failed ones listed past MAX_FAILED. */
/* A dump's owner is its uid: the user whose processes tripped it or who asked for it (a dump of
 * every user's is its asker's, root's). */
static bool same_owner(const struct dump_entry *a, const struct dump_entry *b)
{
	return a->uid == b->uid;
}

/* The done dumps of one uid past --dump-keep and --dump-keep-mb go, oldest first; its newest
 * stays. */
static void retain_owner(struct flight *f, uint32_t uid)
{
	const struct dump_entry who = {.uid = uid};
	size_t done = 0;
	uint64_t bytes = 0;

	for (size_t i = 0; i < f->nr_dumps; i++)
		if (f->dumps[i].state == DUMP_DONE && same_owner(&f->dumps[i], &who)) {
			done++;
			bytes += f->dumps[i].bytes;
		}
	for (size_t i = 0;
	     i < f->nr_dumps && done > 1 && (done > f->o.keep || bytes > f->o.keep_bytes);) {
		if (f->dumps[i].state != DUMP_DONE || !same_owner(&f->dumps[i], &who)) {
			i++;
			continue;
		}
		log_info("flight recorder: dump %s removed (keeping %u dumps, %llu MiB, of uid %u)",
			 f->dumps[i].name, f->o.keep, (unsigned long long)(f->o.keep_bytes >> 20),
			 uid);
		dump__remove(f->dir, f->dumps[i].name);
		bytes -= f->dumps[i].bytes;
		done--;
		f->st.dumps_removed++;
		entry_remove(f, i);
	}
}

/* Retention per uid: a uid's dumps count against that uid's --dump-keep and --dump-keep-mb only,
 * so another user's dumps never remove root's, nor its dumps of every user (issue 53 H2). */
static void retain(struct flight *f)
{
	uint32_t *owners = calloc(f->nr_dumps ? f->nr_dumps : 1, sizeof(*owners));
	size_t failed = 0, nr_owners = 0;

	/* The owners first (retain_owner removes entries): each once. */
	for (size_t i = 0; owners && i < f->nr_dumps; i++) {
		bool seen = false;

		for (size_t j = 0; j < nr_owners && !seen; j++)
			seen = owners[j] == f->dumps[i].uid;
		if (!seen && f->dumps[i].state == DUMP_DONE)
			owners[nr_owners++] = f->dumps[i].uid;
	}
	for (size_t j = 0; j < nr_owners; j++)
		retain_owner(f, owners[j]);
	free(owners);
	for (size_t i = 0; i < f->nr_dumps; i++)
		failed += f->dumps[i].state == DUMP_FAILED;
	for (size_t i = 0; i < f->nr_dumps && failed > MAX_FAILED;) {
		if (f->dumps[i].state == DUMP_FAILED) {
			entry_remove(f, i);
			failed--;
		} else {
			i++;
		}
	}
}

/* path and its missing parents (0755; path itself 0750, dumps are root's): 0 or -1, errno. */
static int make_dirs(const char *path)
{
	char p[PATH_MAX];
	size_t n = strlen(path);

	if (n >= sizeof(p)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(p, path, n + 1);
	for (char *c = p + 1; *c; c++) {
		if (*c != '/')
			continue;
		*c = '\0';
		if (mkdir(p, 0755) && errno != EEXIST)
			return -1;
		*c = '/';
	}
	return mkdir(p, 0750);
}

/* 0 when path is a directory of our user's that no other user may write; else -1 and why. */
static int dir_is_ours(const char *path, char *msg, size_t size)
{
	struct stat st;

	if (stat(path, &st)) {
		snprintf(msg, size, "the dump directory %s: %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(msg, size, "the dump directory %s is not a directory", path);
		return -1;
	}
	if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		snprintf(
			msg, size,
			"the dump directory %s is %s: xsprofd removes old dumps in it, so no other "
			"user may own or write it (chown %u and chmod go-w it, or name another "
			"with --dump-dir)",
			path, st.st_uid != geteuid() ? "another user's" : "writable by others",
			(unsigned)geteuid());
		return -1;
	}
	return 0;
}

/* ---- the directory at start, and at the end ---- */

int flight_dumps__open(struct flight *f, char *msg, size_t size)
{
	char probe[PATH_MAX];
	int fd;

	if (make_dirs(f->dir) && errno != EEXIST) {
		snprintf(msg, size, "the dump directory %s cannot be made: %s", f->dir,
			 strerror(errno));
		return -1;
	}
	/* xsprofd removes old dumps in it: someone else's directory, or one others may write,
	 * could have a bundle swapped for a link to what root must not remove. */
	if (dir_is_ours(f->dir, msg, size))
		return -1;
	/* Written now, not at the first dump: a directory we cannot write is said at start. */
	snprintf(probe, sizeof(probe), "%s/.xsprofd-write-test", f->dir);
	fd = open(probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(msg, size, "the dump directory %s cannot be written: %s", f->dir,
			 strerror(errno));
		return -1;
	}
	close(fd);
	unlink(probe);
	scan_dir(f);
	retain(f);
	return 0;
}

void flight_dumps__release(struct flight *f)
{
	while (f->todo) {
		struct job *j = f->todo;

		f->todo = j->next;
		job_free(j);
	}
	while (f->done) {
		struct job *j = f->done;

		f->done = j->next;
		job_free(j);
	}
	for (size_t i = 0; i < f->nr_dumps; i++)
		free(f->dumps[i].trigger_json);
	free(f->dumps);
}

/* ---- pending dumps ---- */

static double mono_to_unix(uint64_t mono)
{
	return (double)((int64_t)mono + clock__realtime_offset_ns()) / 1e9;
}

static void new_name(struct flight *f, enum flight_kind k, char *buf, size_t size)
{
	struct timespec ts;
	struct tm tm;
	char t[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(t, sizeof(t), "%Y%m%dT%H%M%S", &tm);
	snprintf(buf, size, "%s.%03ldZ-%s-%u", t, ts.tv_nsec / 1000000, flight_kind__name(k),
		 ++f->seq);
}

/*
 * A dump of [at - before, at + after] of uid's parts (all: everyone's), due at at + after:
 * made pending, its trigger's JSON taken (t). 0, -ENOSPC (pending full) or -ENOMEM.
 */
int flight_dumps__make_pending(struct flight *f, enum flight_kind k, uint32_t uid, bool all,
			       uint64_t at, double before_s, double after_s, struct json_object *t,
			       char *ret_name, size_t size)
{
	uint64_t before = (uint64_t)(before_s * 1e9), after = (uint64_t)(after_s * 1e9);
	uint64_t now = clock__mono_ns();
	struct dump_entry *e;

	if (f->st.pending >= FLIGHT_MAX_PENDING) {
		json_object_put(t);
		return -ENOSPC;
	}
	if (vec_reserve(&f->dumps, &f->cap_dumps, f->nr_dumps + 1)) {
		json_object_put(t);
		return -ENOMEM;
	}
	e = &f->dumps[f->nr_dumps];
	memset(e, 0, sizeof(*e));
	new_name(f, k, e->name, sizeof(e->name));
	e->kind = k;
	e->state = DUMP_PENDING;
	e->uid = uid;
	e->all = all;
	e->created_unix = mono_to_unix(now);
	e->from_ns = at > before ? at - before : 0;
	e->to_ns = at + after;
	e->due_ns = e->to_ns > now ? e->to_ns : now;
	json_object_object_add(t, "kind", json_object_new_string(flight_kind__name(k)));
	json_object_object_add(t, "uid", json_object_new_uint64(uid));
	json_object_object_add(t, "all_users", json_object_new_boolean(all));
	json_object_object_add(t, "at_mono_ns", json_object_new_uint64(at));
	json_object_object_add(t, "at_unix_s", json_object_new_double(mono_to_unix(at)));
	json_object_object_add(t, "created_unix_s", json_object_new_double(e->created_unix));
	json_object_object_add(t, "before_s", json_object_new_double(before_s));
	json_object_object_add(t, "after_s", json_object_new_double(after_s));
	e->trigger_json = strdup(json_object_to_json_string_ext(t, JSON_C_TO_STRING_PLAIN));
	json_object_put(t);
	if (!e->trigger_json)
		return -ENOMEM;
	f->nr_dumps++;
	f->st.pending++;
	if (ret_name)
		snprintf(ret_name, size, "%s", e->name);
	log_info("flight recorder: %s: dump %s of %.0f s before and %.1f s after, due in %.1f s",
		 flight_kind__name(k), e->name, before_s, after_s, (double)(e->due_ns - now) / 1e9);
	return 0;
}

/* ---- cutting and writing ---- */

uint64_t flight__next_due(const struct flight *f)
{
	uint64_t due = UINT64_MAX;

	for (size_t i = 0; i < f->nr_dumps; i++)
		if (f->dumps[i].state == DUMP_PENDING && f->dumps[i].due_ns < due)
			due = f->dumps[i].due_ns;
	return due;
}

/* The ring's parts of e's user (or everyone's) that overlap its span, referenced, into j. */
static int cut(struct flight *f, const struct dump_entry *e, struct job *j)
{
	j->parts = calloc(f->nr_ring ? f->nr_ring : 1, sizeof(*j->parts));
	if (!j->parts)
		return -ENOMEM;
	for (size_t i = 0; i < f->nr_ring; i++) {
		struct frozen *p = f->ring[i];

		if ((e->all || frozen__uid(p) == e->uid) && frozen__end_ns(p) > e->from_ns &&
		    frozen__start_ns(p) < e->to_ns)
			j->parts[j->nr_parts++] = frozen__get(p);
	}
	return 0;
}

static void settle_failed(struct dump_entry *e, const char *why)
{
	e->state = DUMP_FAILED;
	snprintf(e->error, sizeof(e->error), "%s", why);
}

void flight__start_due(struct flight *f, uint64_t now)
{
	for (size_t i = 0; i < f->nr_dumps; i++) {
		struct dump_entry *e = &f->dumps[i];
		struct job *j, **tail;

		if (e->state != DUMP_PENDING || e->due_ns > now)
			continue;
		f->st.pending--;
		/* No further back than the ring reaches. */
		if (now > f->o.max_age_ns && e->from_ns < now - f->o.max_age_ns)
			e->from_ns = now - f->o.max_age_ns;
		j = calloc(1, sizeof(*j));
		if (!j || cut(f, e, j)) {
			job_free(j);
			settle_failed(e, "out of memory");
			f->st.dumps_failed++;
			continue;
		}
		snprintf(j->name, sizeof(j->name), "%s", e->name);
		j->trigger_json = e->trigger_json;
		e->trigger_json = NULL;
		j->req = (struct dump_request){.dir = f->dir,
					       .name = j->name,
					       .slices = j->parts,
					       .nr_slices = j->nr_parts,
					       .from_ns = e->from_ns,
					       .to_ns = e->to_ns,
					       .trigger_json = j->trigger_json,
					       .host = f->host,
					       .max_bytes = f->o.keep_bytes};
		e->state = DUMP_WRITING;
		f->st.writing++;
		pthread_mutex_lock(&f->lock);
		for (tail = &f->todo; *tail; tail = &(*tail)->next)
			;
		*tail = j;
		pthread_cond_signal(&f->cond);
		pthread_mutex_unlock(&f->lock);
	}
}

int flight__fd(const struct flight *f)
{
	return f->efd;
}

void flight__reap(struct flight *f)
{
	uint64_t v;
	struct job *done;

	if (read(f->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
	pthread_mutex_lock(&f->lock);
	done = f->done;
	f->done = NULL;
	pthread_mutex_unlock(&f->lock);
	while (done) {
		struct job *j = done;

		done = j->next;
		for (size_t i = 0; i < f->nr_dumps; i++) {
			struct dump_entry *e = &f->dumps[i];

			if (e->state != DUMP_WRITING || strcmp(e->name, j->name))
				continue;
			f->st.writing--;
			if (j->err) {
				settle_failed(e, j->msg);
				f->st.dumps_failed++;
				log_err("flight recorder: dump %s failed: %s", e->name, j->msg);
			} else {
				e->state = DUMP_DONE;
				e->bytes = j->res.bytes;
				f->st.dumps_written[e->kind]++;
				log_info("flight recorder: dump %s written: %.1f s, %zu samples, "
					 "%zu kernels, %zu processes, %.1f MiB in %s/%s%s%s",
					 e->name, (double)(j->res.to_ns - j->res.from_ns) / 1e9,
					 j->res.samples, j->res.kernels, j->res.processes,
					 (double)j->res.bytes / (1 << 20), f->dir, e->name,
					 j->res.partial ? "; partial: " : "",
					 j->res.partial ? j->res.partial_why : "");
				if (j->res.partial)
					f->st.dumps_partial++;
			}
		}
		job_free(j);
	}
	retain(f);
}

static bool may_see(const struct dump_entry *e, uint32_t uid, bool all)
{
	return all || (e->uid == uid && !e->all);
}

static struct json_object *entry_json(const struct flight *f, const struct dump_entry *e)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "name", json_object_new_string(e->name));
	json_object_object_add(o, "trigger", json_object_new_string(flight_kind__name(e->kind)));
	json_object_object_add(o, "state", json_object_new_string(state_names[e->state]));
	json_object_object_add(o, "uid", json_object_new_uint64(e->uid));
	json_object_object_add(o, "all_users", json_object_new_boolean(e->all));
	json_object_object_add(o, "created_unix_s", json_object_new_double(e->created_unix));
	if (e->state == DUMP_DONE) {
		char p[PATH_MAX];

		snprintf(p, sizeof(p), "%s/%s", f->dir, e->name);
		json_object_object_add(o, "bytes", json_object_new_uint64(e->bytes));
		json_object_object_add(o, "path", json_object_new_string(p));
	}
	if (e->state == DUMP_PENDING)
		json_object_object_add(
			o, "due_in_s",
			json_object_new_double(e->due_ns > clock__mono_ns()
						       ? (double)(e->due_ns - clock__mono_ns()) /
								 1e9
						       : 0));
	if (e->state == DUMP_FAILED)
		json_object_object_add(o, "error", json_object_new_string(e->error));
	return o;
}

struct json_object *flight__list_json(struct flight *f, uint32_t uid, bool all)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = f->nr_dumps; a && i-- > 0;)
		if (may_see(&f->dumps[i], uid, all))
			json_object_array_add(a, entry_json(f, &f->dumps[i]));
	return a;
}

const char *flight__find(struct flight *f, const char *name, uint32_t uid, bool all, char *path,
			 size_t size, char *error, size_t esize)
{
	for (size_t i = 0; i < f->nr_dumps; i++) {
		const struct dump_entry *e = &f->dumps[i];

		if (strcmp(e->name, name) || !may_see(e, uid, all))
			continue;
		snprintf(path, size, "%s/%s", f->dir, e->name);
		snprintf(error, esize, "%s", e->error);
		return state_names[e->state];
	}
	return NULL;
}
