// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "daemon/base/clock.h"
#include "daemon/base/hashmap.h"
#include "daemon/base/sort.h"
#include "daemon/base/vec.h"
#include "daemon/log.h"
#include "daemon/service/flight.h"
#include "daemon/session/dump.h"
#include "daemon/session/frozen.h"

#define NS	     1000000000ull
#define STEP_HISTORY 32
#define MAX_STEPS    256  /* (process, range name) pairs watched for slow steps */
#define MAX_WAITS    4096 /* waiting CUDA calls watched for hangs */
#define MAX_IDLE     256  /* (process, device) pairs watched for GPU idle */
#define IDLE_HISTORY 64	  /* slices each */
#define MAX_KNOWN    4096 /* processes known (death) */
#define MAX_USERS    64	  /* manual dumps' limits */
#define MAX_FAILED   16	  /* failed dumps listed */
#define OPEN_FIRED   64	  /* open ranges that tripped a hang already */

enum dump_state { DUMP_PENDING, DUMP_WRITING, DUMP_DONE, DUMP_FAILED };
static const char *const state_names[] = {"pending", "writing", "done", "failed"};

struct dump_entry {
	char name[FLIGHT_NAME_LEN];
	enum flight_kind kind;
	enum dump_state state;
	uint32_t uid;
	bool all;
	double created_unix;
	uint64_t from_ns, to_ns, due_ns;
	uint64_t bytes;
	char *trigger_json; /* pending: what the manifest says of its trigger */
	char error[200];
};

/* The last FLIGHT_MAX_PER_HOUR moments something happened: how many in the last hour. */
struct hour_ring {
	uint64_t t[FLIGHT_MAX_PER_HOUR];
	unsigned int n, next;
};

/*
 * Users a rule keeps a cooldown and an hourly count for: each user's trips are held back by
 * that user's own only (an outsider's dying process must not hold back root's death dump).
 * Past RULE_USERS, the user whose last trip is oldest is forgotten: that only ever lets a
 * trip through, never holds one back.
 */
#define RULE_USERS 32

struct rule_user {
	uint32_t uid;
	bool used;
	uint64_t last_ns;
	struct hour_ring fires;
};

struct rule_slot {
	unsigned int id; /* 0: free */
	struct flight_rule r;
	uint64_t fired, suppressed;
	struct rule_user users[RULE_USERS];
};

/* What an entry of a trigger's table starts with (watch_slot keeps the tables). */
struct watch_head {
	uint32_t pid, uid;
	uint64_t last_ns; /* when it was last told of */
};

struct step {
	struct watch_head h;
	char name[FLIGHT_RULE_RANGE_LEN];
	uint64_t durs[STEP_HISTORY];
	uint64_t n;
};

struct wait_call {
	uint32_t pid, tid, uid;
	char api[40];
	uint64_t entry_ns;
	bool fired;
};

struct idle_slice {
	uint64_t start_ns, end_ns, busy_ns, idle_ns;
};

struct idle_watch {
	struct watch_head h;
	uint32_t device;
	char comm[16];
	struct idle_slice slices[IDLE_HISTORY];
	unsigned int n, next;
};

struct known {
	uint32_t pid, uid;
	char comm[16];
	uint64_t last_ns;
	uint32_t waits; /* its calls in the waits table (kept while any) */
};

struct user_limit {
	uint32_t uid;
	struct hour_ring asked;
};

struct job {
	struct dump_request req;
	char name[FLIGHT_NAME_LEN];
	char *trigger_json;
	struct frozen **parts;
	size_t nr_parts;
	int err;
	char msg[200];
	struct dump_result res;
	struct job *next;
};

/* At most LOG_BURST lines of one trigger kind a minute: a flood (an outsider's 500 ranges left
 * open under a hang rule's name) is a few lines and a count, and journald's rate limit is left
 * for the daemon's other lines. */
#define LOG_BURST     5
#define LOG_WINDOW_NS (60ull * 1000000000ull)

struct log_gate {
	uint64_t since_ns; /* the window's start */
	uint32_t said;	   /* lines in it */
	uint64_t held;	   /* lines held back in it */
};

struct flight {
	struct flight_opts o;
	struct log_gate log_gate[FLIGHT_NR_KINDS];
	char *dir, *host;
	struct frozen **ring; /* oldest first */
	size_t nr_ring, cap_ring, ring_bytes;
	struct rule_slot rules[FLIGHT_MAX_RULES];
	unsigned int next_rule_id;
	struct dump_entry *dumps; /* oldest first */
	size_t nr_dumps, cap_dumps;
	unsigned int seq;
	struct step *steps;
	size_t nr_steps;
	struct hashmap *waits; /* tid -> struct wait_call */
	struct idle_watch *idle;
	size_t nr_idle;
	struct hashmap *known; /* pid -> struct known */
	uint64_t open_fired[OPEN_FIRED][2];
	unsigned int next_open;
	struct user_limit users[MAX_USERS];
	struct {
		uint32_t uid, n;
	} wait_users[MAX_USERS]; /* waiting calls watched, by uid: half the table at most */
	struct flight_stats st;
	/* The writer: jobs in, done jobs out, both under lock; efd says one is done. */
	pthread_t thread;
	bool thread_up, stop;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job *todo, *done;
	int efd;
};

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

static void *writer_main(void *arg)
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

/* ---- life ---- */

struct flight *flight__new(const struct flight_opts *o, char *msg, size_t size)
{
	struct flight *f = calloc(1, sizeof(*f));
	char probe[PATH_MAX];
	int fd;

	if (!f) {
		snprintf(msg, size, "out of memory");
		return NULL;
	}
	f->o = *o;
	f->dir = strdup(o->dir);
	f->host = strdup(o->host ? o->host : "");
	f->waits = hashmap__new();
	f->known = hashmap__new();
	f->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	f->next_rule_id = 1;
	pthread_mutex_init(&f->lock, NULL);
	pthread_cond_init(&f->cond, NULL);
	if (!f->dir || !f->host || !f->waits || !f->known || f->efd < 0) {
		snprintf(msg, size, "out of memory");
		goto fail;
	}
	if (make_dirs(f->dir) && errno != EEXIST) {
		snprintf(msg, size, "the dump directory %s cannot be made: %s", f->dir,
			 strerror(errno));
		goto fail;
	}
	/* xsprofd removes old dumps in it: someone else's directory, or one others may write,
	 * could have a bundle swapped for a link to what root must not remove. */
	if (dir_is_ours(f->dir, msg, size))
		goto fail;
	/* Written now, not at the first dump: a directory we cannot write is said at start. */
	snprintf(probe, sizeof(probe), "%s/.xsprofd-write-test", f->dir);
	fd = open(probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(msg, size, "the dump directory %s cannot be written: %s", f->dir,
			 strerror(errno));
		goto fail;
	}
	close(fd);
	unlink(probe);
	scan_dir(f);
	retain(f);
	if (pthread_create(&f->thread, NULL, writer_main, f)) {
		snprintf(msg, size, "starting the dump writer thread failed");
		goto fail;
	}
	f->thread_up = true;
	return f;
fail:
	flight__free(f);
	return NULL;
}

static void free_val(void *val, void *ctx)
{
	(void)ctx;
	free(val);
}

void flight__free(struct flight *f)
{
	if (!f)
		return;
	if (f->thread_up) {
		pthread_mutex_lock(&f->lock);
		f->stop = true;
		pthread_cond_signal(&f->cond);
		pthread_mutex_unlock(&f->lock);
		pthread_join(f->thread, NULL);
	}
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
	for (size_t i = 0; i < f->nr_ring; i++)
		frozen__put(f->ring[i]);
	for (size_t i = 0; i < f->nr_dumps; i++)
		free(f->dumps[i].trigger_json);
	if (f->waits)
		hashmap__for_each(f->waits, free_val, NULL);
	if (f->known)
		hashmap__for_each(f->known, free_val, NULL);
	hashmap__free(f->waits);
	hashmap__free(f->known);
	if (f->efd >= 0)
		close(f->efd);
	pthread_mutex_destroy(&f->lock);
	pthread_cond_destroy(&f->cond);
	free(f->ring);
	free(f->dumps);
	free(f->steps);
	free(f->idle);
	free(f->dir);
	free(f->host);
	free(f);
}

int flight__add_rule(struct flight *f, const struct flight_rule *r, unsigned int *ret_id)
{
	for (int i = 0; i < FLIGHT_MAX_RULES; i++)
		if (!f->rules[i].id) {
			f->rules[i] = (struct rule_slot){.id = f->next_rule_id++, .r = *r};
			if (ret_id)
				*ret_id = f->rules[i].id;
			return 0;
		}
	return -ENOSPC;
}

int flight__remove_rule(struct flight *f, unsigned int id)
{
	for (int i = 0; i < FLIGHT_MAX_RULES; i++)
		if (id && f->rules[i].id == id) {
			f->rules[i].id = 0;
			return 0;
		}
	return -ENOENT;
}

/* ---- the ring ---- */

/* pid's entry, made when new (NULL: the table is full, counted, or no memory). */
static struct known *note_known(struct flight *f, uint32_t pid, uint32_t uid, const char *comm,
				uint64_t now)
{
	struct known *k = hashmap__get(f->known, pid, 0);

	if (!k) {
		if (hashmap__count(f->known) >= MAX_KNOWN) {
			f->st.tables_full++;
			return NULL;
		}
		k = calloc(1, sizeof(*k));
		if (!k || hashmap__put(f->known, pid, 0, k)) {
			free(k);
			return NULL;
		}
	}
	k->pid = pid;
	k->uid = uid;
	if (comm && comm[0])
		snprintf(k->comm, sizeof(k->comm), "%s", comm);
	k->last_ns = now;
	return k;
}

static void ring_drop(struct flight *f, size_t i)
{
	f->ring_bytes -= frozen__bytes(f->ring[i]);
	frozen__put(f->ring[i]);
	memmove(f->ring + i, f->ring + i + 1, (f->nr_ring - i - 1) * sizeof(*f->ring));
	f->nr_ring--;
}

/* At the cap, the oldest part of the user holding the most goes. */
static void ring_fit(struct flight *f)
{
	while (f->nr_ring > 1 && f->ring_bytes > f->o.max_bytes) {
		uint32_t uids[MAX_USERS];
		size_t bytes[MAX_USERS], nu = 0, most = 0;

		for (size_t i = 0; i < f->nr_ring; i++) {
			uint32_t uid = frozen__uid(f->ring[i]);
			size_t u = 0;

			while (u < nu && uids[u] != uid)
				u++;
			if (u == nu && nu < MAX_USERS) {
				uids[nu] = uid;
				bytes[nu++] = 0;
			}
			if (u < nu)
				bytes[u] += frozen__bytes(f->ring[i]);
		}
		for (size_t u = 1; u < nu; u++)
			if (bytes[u] > bytes[most])
				most = u;
		for (size_t i = 0; i < f->nr_ring; i++)
			if (frozen__uid(f->ring[i]) == uids[most]) {
				ring_drop(f, i);
				f->st.evicted_cap++;
				break;
			}
	}
}

void flight__keep(struct flight *f, struct frozen *part)
{
	size_t n;
	const uint32_t *pids = frozen__pids(part, &n);

	for (size_t i = 0; i < n; i++)
		note_known(f, pids[i], frozen__uid(part), frozen__comm(part, pids[i]),
			   frozen__end_ns(part));
	if (frozen__empty(part) || vec_reserve(&f->ring, &f->cap_ring, f->nr_ring + 1)) {
		frozen__put(part);
		return;
	}
	f->ring[f->nr_ring++] = part;
	f->ring_bytes += frozen__bytes(part);
	f->st.kept++;
	ring_fit(f);
}

struct forget {
	uint64_t before;
	uint32_t pids[256];
	size_t n;
};

static void old_known(void *val, void *ctx)
{
	struct forget *g = ctx;
	const struct known *k = val;

	if (k->last_ns < g->before && !k->waits && g->n < 256)
		g->pids[g->n++] = k->pid;
}

void flight__expire(struct flight *f, uint64_t now)
{
	uint64_t age = f->o.max_age_ns;
	struct forget g = {.before = now > age ? now - age : 0};

	while (f->nr_ring && now > age && frozen__end_ns(f->ring[0]) < now - age) {
		ring_drop(f, 0);
		f->st.evicted_age++;
	}
	/* Processes not seen for the ring's age are forgotten (a few at a time). */
	hashmap__for_each(f->known, old_known, &g);
	for (size_t i = 0; i < g.n; i++)
		free(hashmap__remove(f->known, g.pids[i], 0));
}

/* ---- triggers ---- */

static double mono_to_unix(uint64_t mono)
{
	return (double)((int64_t)mono + clock__realtime_offset_ns()) / 1e9;
}

static unsigned int hour_ring__count(const struct hour_ring *h, uint64_t now)
{
	unsigned int c = 0;

	for (unsigned int i = 0; i < h->n; i++)
		c += now < h->t[i] + 3600 * NS;
	return c;
}

static void hour_ring__add(struct hour_ring *h, uint64_t now)
{
	h->t[h->next] = now;
	h->next = (h->next + 1) % FLIGHT_MAX_PER_HOUR;
	if (h->n < FLIGHT_MAX_PER_HOUR)
		h->n++;
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
static int make_pending(struct flight *f, enum flight_kind k, uint32_t uid, bool all, uint64_t at,
			double before_s, double after_s, struct json_object *t, char *ret_name,
			size_t size)
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

/* Whether a line of kind k may be said now (see LOG_BURST); the first line after a window with
 * lines held back says how many. */
static bool may_log(struct flight *f, enum flight_kind k)
{
	struct log_gate *g = &f->log_gate[k];
	uint64_t now = clock__mono_ns();

	if (!g->since_ns || now - g->since_ns >= LOG_WINDOW_NS) {
		if (g->held)
			log_warn(
				"flight recorder: %llu more %s lines were held back in the last %.0f s "
				"(at most %d a minute; status: flight.log_lines_held_back)",
				(unsigned long long)g->held, flight_kind__name(k),
				(double)(now - g->since_ns) / 1e9, LOG_BURST);
		g->since_ns = now;
		g->said = 0;
		g->held = 0;
	}
	if (g->said < LOG_BURST) {
		g->said++;
		return true;
	}
	g->held++;
	f->st.log_lines_held_back++;
	return false;
}

/* uid's cooldown state in rs: its own, else a free one, else the one fired longest ago. */
static struct rule_user *rule_user(struct rule_slot *rs, uint32_t uid)
{
	struct rule_user *oldest = &rs->users[0];

	for (int i = 0; i < RULE_USERS; i++) {
		struct rule_user *u = &rs->users[i];

		if (u->used && u->uid == uid)
			return u;
		if (!u->used || (oldest->used && u->last_ns < oldest->last_ns))
			oldest = u;
	}
	*oldest = (struct rule_user){.uid = uid, .used = true};
	return oldest;
}

/* The rule slot trips at at_ns (uid's cooldown and hourly limit in it allowing): a pending dump.
 * Whether it did. */
static bool trip(struct flight *f, struct rule_slot *rs, uint32_t uid, uint64_t at,
		 struct json_object *t)
{
	uint64_t now = clock__mono_ns();
	struct rule_user *u = rule_user(rs, uid);
	char spec[256];
	int err;

	if ((u->last_ns && now < u->last_ns + (uint64_t)(rs->r.cooldown_s * 1e9)) ||
	    hour_ring__count(&u->fires, now) >= rs->r.per_hour) {
		rs->suppressed++;
		f->st.suppressed[rs->r.kind]++;
		json_object_put(t);
		return false;
	}
	flight_rule__format(&rs->r, spec, sizeof(spec));
	json_object_object_add(t, "rule", json_object_new_string(spec));
	json_object_object_add(t, "rule_id", json_object_new_uint64(rs->id));
	err = make_pending(f, rs->r.kind, uid, false, at, rs->r.before_s, rs->r.after_s, t, NULL,
			   0);
	if (err) {
		rs->suppressed++;
		f->st.suppressed[rs->r.kind]++;
		if (may_log(f, rs->r.kind))
			log_warn("flight recorder: %s tripped but no dump was made: %s",
				 flight_kind__name(rs->r.kind),
				 err == -ENOSPC ? "too many dumps pending" : strerror(-err));
		return false;
	}
	u->last_ns = now;
	rs->fired++;
	hour_ring__add(&u->fires, now);
	return true;
}

static struct json_object *process_json(struct json_object *t, uint32_t pid, const char *comm)
{
	char buf[32] = "", path[32];
	FILE *fp;

	/* A process the ring does not know yet (it tripped before a slice closed): its name now. */
	if (!comm || !comm[0]) {
		snprintf(path, sizeof(path), "/proc/%u/comm", pid);
		fp = fopen(path, "re");
		if (fp && fgets(buf, sizeof(buf), fp))
			buf[strcspn(buf, "\n")] = '\0';
		if (fp)
			fclose(fp);
		comm = buf;
	}
	json_object_object_add(t, "pid", json_object_new_uint64(pid));
	json_object_object_add(t, "comm", json_object_new_string(comm ? comm : ""));
	return t;
}

static const char *comm_of(const struct flight *f, uint32_t pid)
{
	const struct known *k = hashmap__get(f->known, pid, 0);

	return k ? k->comm : "";
}

bool flight__watches_open_ranges(const struct flight *f)
{
	for (int i = 0; i < FLIGHT_MAX_RULES; i++)
		if (f->rules[i].id && f->rules[i].r.kind == FLIGHT_HANG && f->rules[i].r.range[0])
			return true;
	return false;
}

bool flight__watches(const struct flight *f, enum flight_kind kind, const char *range)
{
	for (int i = 0; i < FLIGHT_MAX_RULES; i++)
		if (f->rules[i].id && f->rules[i].r.kind == kind &&
		    (!range || !strcmp(f->rules[i].r.range, range)))
			return true;
	return false;
}

/*
 * A new entry of pid (uid's) in a table of *n of cap entries of size bytes, each starting
 * with a watch_head (the table is made at the first). Full, the one idle longest goes; a user
 * holding half the table already loses their own (a member's thousand range names cannot push
 * out another user's steps). Either is counted. NULL: no memory.
 */
static void *watch_slot(struct flight *f, void **table, size_t *n, size_t cap, size_t size,
			uint32_t pid, uint32_t uid, uint64_t now)
{
	struct watch_head *oldest = NULL, *own = NULL, *e;
	size_t mine = 0;

	if (!*table && !(*table = calloc(cap, size)))
		return NULL;
	for (size_t i = 0; i < *n; i++) {
		e = (struct watch_head *)((char *)*table + i * size);
		if (e->uid == uid && (mine++, !own || e->last_ns < own->last_ns))
			own = e;
		if (!oldest || e->last_ns < oldest->last_ns)
			oldest = e;
	}
	if (mine >= cap / 2) {
		e = own;
		f->st.tables_full++;
	} else if (*n < cap) {
		e = (struct watch_head *)((char *)*table + (*n)++ * size);
	} else {
		e = oldest;
		f->st.tables_full++;
	}
	memset(e, 0, size);
	*e = (struct watch_head){.pid = pid, .uid = uid, .last_ns = now};
	return e;
}

/* The entry of (pid, name), made when new (watch_slot). */
static struct step *step_of(struct flight *f, uint32_t pid, uint32_t uid, const char *name,
			    uint64_t now)
{
	struct step *e;

	for (size_t i = 0; i < f->nr_steps; i++)
		if (f->steps[i].h.pid == pid && !strcmp(f->steps[i].name, name))
			return &f->steps[i];
	e = watch_slot(f, (void **)&f->steps, &f->nr_steps, MAX_STEPS, sizeof(*e), pid, uid, now);
	if (e)
		snprintf(e->name, sizeof(e->name), "%s", name);
	return e;
}

void flight__on_range(struct flight *f, uint32_t pid, uint32_t uid, const char *name,
		      uint64_t start_ns, uint64_t end_ns)
{
	struct step *s;
	uint64_t dur = end_ns - start_ns, sorted[STEP_HISTORY], median = 0;
	size_t n;

	if (!name || end_ns <= start_ns || !flight__watches(f, FLIGHT_SLOW_STEP, name))
		return;
	note_known(f, pid, uid, NULL, end_ns);
	s = step_of(f, pid, uid, name, end_ns);
	if (!s)
		return;
	n = s->n < STEP_HISTORY ? (size_t)s->n : STEP_HISTORY;
	memcpy(sorted, s->durs, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_u64);
	if (n)
		median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
	for (int i = 0; i < FLIGHT_MAX_RULES; i++) {
		struct rule_slot *rs = &f->rules[i];
		struct json_object *t, *r;

		/* Slower by a millisecond at least: a range of microseconds is all noise. */
		if (!rs->id || rs->r.kind != FLIGHT_SLOW_STEP || strcmp(rs->r.range, name) ||
		    s->n < rs->r.min_steps || !median || (double)dur <= rs->r.factor * median ||
		    dur < median + 1000000)
			continue;
		t = process_json(json_object_new_object(), pid, comm_of(f, pid));
		r = json_object_new_object();
		json_object_object_add(r, "name", json_object_new_string(name));
		json_object_object_add(r, "start_mono_ns", json_object_new_uint64(start_ns));
		json_object_object_add(r, "end_mono_ns", json_object_new_uint64(end_ns));
		json_object_object_add(r, "seconds", json_object_new_double((double)dur / 1e9));
		json_object_object_add(r, "median_s", json_object_new_double((double)median / 1e9));
		json_object_object_add(r, "times_median",
				       json_object_new_double((double)dur / (double)median));
		json_object_object_add(r, "steps_seen", json_object_new_uint64(s->n));
		json_object_object_add(t, "step", r);
		if (trip(f, rs, uid, end_ns, t) && may_log(f, FLIGHT_SLOW_STEP))
			log_info("flight recorder: pid %u's %s took %.3f s, %.1f times its median "
				 "%.3f s",
				 pid, name, (double)dur / 1e9, (double)dur / (double)median,
				 (double)median / 1e9);
	}
	s->durs[s->n % STEP_HISTORY] = dur;
	s->n++;
	s->h.last_ns = end_ns;
}

/* uid's count of waiting calls watched, changed by d: whether it may hold one more (d 0). */
static bool wait_user(struct flight *f, uint32_t uid, int d)
{
	int free_slot = -1;

	for (int i = 0; i < MAX_USERS; i++) {
		if (f->wait_users[i].n && f->wait_users[i].uid == uid) {
			f->wait_users[i].n += (uint32_t)d;
			return f->wait_users[i].n < MAX_WAITS / 2;
		}
		if (!f->wait_users[i].n && free_slot < 0)
			free_slot = i;
	}
	if (d > 0 && free_slot >= 0) {
		f->wait_users[free_slot].uid = uid;
		f->wait_users[free_slot].n = (uint32_t)d;
	}
	return free_slot >= 0;
}

/* A waiting call leaves the table (its return, or its process's exit). */
static void wait_gone(struct flight *f, struct wait_call *w)
{
	struct known *k = hashmap__get(f->known, w->pid, 0);

	if (k && k->waits)
		k->waits--;
	wait_user(f, w->uid, -1);
	free(hashmap__remove(f->waits, w->tid, 0));
}

void flight__on_wait(struct flight *f, uint32_t pid, uint32_t tid, uint32_t uid, const char *api,
		     uint64_t entry_ns, uint64_t return_ns)
{
	struct wait_call *w = hashmap__get(f->waits, tid, 0);
	struct known *k;

	if (return_ns) {
		if (w && w->entry_ns <= entry_ns)
			wait_gone(f, w);
		return;
	}
	if (!flight__watches(f, FLIGHT_HANG, ""))
		return;
	if (w)
		wait_gone(f, w); /* a thread is in one call at a time: that one returned unseen */
	if (hashmap__count(f->waits) >= MAX_WAITS || !wait_user(f, uid, 0) ||
	    !(k = note_known(f, pid, uid, NULL, entry_ns))) {
		f->st.tables_full++;
		return;
	}
	w = calloc(1, sizeof(*w));
	if (!w || hashmap__put(f->waits, tid, 0, w)) {
		free(w);
		return;
	}
	*w = (struct wait_call){.pid = pid, .tid = tid, .uid = uid, .entry_ns = entry_ns};
	snprintf(w->api, sizeof(w->api), "%s", api ? api : "?");
	wait_user(f, uid, 1);
	k->waits++;
}

struct tick {
	struct flight *f;
	uint64_t now;
	uint64_t after_ns; /* the shortest hang rule's: a wait younger is not due */
	struct wait_call *due[32];
	size_t n;
};

static void wait_due(void *val, void *ctx)
{
	struct tick *t = ctx;
	struct wait_call *w = val;

	if (!w->fired && t->now >= w->entry_ns + t->after_ns && t->n < 32)
		t->due[t->n++] = w;
}

void flight__tick(struct flight *f, uint64_t now)
{
	struct tick t = {.f = f, .now = now};

	flight__expire(f, now);
	if (!hashmap__count(f->waits))
		return;
	t.after_ns = UINT64_MAX / 2;
	for (int r = 0; r < FLIGHT_MAX_RULES; r++)
		if (f->rules[r].id && f->rules[r].r.kind == FLIGHT_HANG &&
		    !f->rules[r].r.range[0] && (uint64_t)(f->rules[r].r.seconds * 1e9) < t.after_ns)
			t.after_ns = (uint64_t)(f->rules[r].r.seconds * 1e9);
	/* 32 a tick at most (each trips once): the rest are taken at the next ticks. */
	hashmap__for_each(f->waits, wait_due, &t);
	for (size_t i = 0; i < t.n; i++) {
		struct wait_call *w = t.due[i];

		for (int r = 0; r < FLIGHT_MAX_RULES; r++) {
			struct rule_slot *rs = &f->rules[r];
			struct json_object *j, *c;

			if (!rs->id || rs->r.kind != FLIGHT_HANG || rs->r.range[0] ||
			    now < w->entry_ns + (uint64_t)(rs->r.seconds * 1e9))
				continue;
			w->fired = true;
			j = process_json(json_object_new_object(), w->pid, comm_of(f, w->pid));
			c = json_object_new_object();
			json_object_object_add(c, "api", json_object_new_string(w->api));
			json_object_object_add(c, "tid", json_object_new_uint64(w->tid));
			json_object_object_add(c, "entry_mono_ns",
					       json_object_new_uint64(w->entry_ns));
			json_object_object_add(
				c, "waited_s",
				json_object_new_double((double)(now - w->entry_ns) / 1e9));
			json_object_object_add(j, "call", c);
			if (may_log(f, FLIGHT_HANG))
				log_warn(
					"flight recorder: pid %u thread %u has waited in %s for %.0f s",
					w->pid, w->tid, w->api, (double)(now - w->entry_ns) / 1e9);
			trip(f, rs, w->uid, now, j);
		}
	}
}

void flight__on_open_range(struct flight *f, uint32_t pid, uint32_t uid, uint32_t tid,
			   const char *name, uint64_t start_ns, uint64_t now)
{
	uint64_t key = (uint64_t)pid << 32 | tid;

	for (int i = 0; i < OPEN_FIRED; i++)
		if (f->open_fired[i][0] == key && f->open_fired[i][1] == start_ns)
			return;
	for (int r = 0; r < FLIGHT_MAX_RULES; r++) {
		struct rule_slot *rs = &f->rules[r];
		struct json_object *j, *c;

		if (!rs->id || rs->r.kind != FLIGHT_HANG || !name || strcmp(rs->r.range, name) ||
		    now < start_ns + (uint64_t)(rs->r.seconds * 1e9))
			continue;
		f->open_fired[f->next_open][0] = key;
		f->open_fired[f->next_open][1] = start_ns;
		f->next_open = (f->next_open + 1) % OPEN_FIRED;
		j = process_json(json_object_new_object(), pid, comm_of(f, pid));
		c = json_object_new_object();
		json_object_object_add(c, "name", json_object_new_string(name));
		json_object_object_add(c, "tid", json_object_new_uint64(tid));
		json_object_object_add(c, "start_mono_ns", json_object_new_uint64(start_ns));
		json_object_object_add(c, "open_s",
				       json_object_new_double((double)(now - start_ns) / 1e9));
		json_object_object_add(j, "range", c);
		if (may_log(f, FLIGHT_HANG))
			log_warn("flight recorder: pid %u's range %s has been open for %.0f s", pid,
				 name, (double)(now - start_ns) / 1e9);
		trip(f, rs, uid, now, j);
	}
}

/* The entry of (pid, device), made when new (watch_slot). */
static struct idle_watch *idle_of(struct flight *f, uint32_t pid, uint32_t uid, uint32_t device,
				  uint64_t now)
{
	struct idle_watch *e;

	for (size_t i = 0; i < f->nr_idle; i++)
		if (f->idle[i].h.pid == pid && f->idle[i].device == device)
			return &f->idle[i];
	e = watch_slot(f, (void **)&f->idle, &f->nr_idle, MAX_IDLE, sizeof(*e), pid, uid, now);
	if (e)
		e->device = device;
	return e;
}

void flight__on_gpu_figures(struct flight *f, uint32_t pid, uint32_t uid, const char *comm,
			    uint32_t device, uint64_t start_ns, uint64_t end_ns, uint64_t busy_ns,
			    uint64_t idle_ns)
{
	struct idle_watch *w;

	note_known(f, pid, uid, comm, end_ns);
	if (!flight__watches(f, FLIGHT_GPU_IDLE, NULL) ||
	    !(w = idle_of(f, pid, uid, device, end_ns)))
		return;
	snprintf(w->comm, sizeof(w->comm), "%s", comm ? comm : "");
	w->slices[w->next] = (struct idle_slice){start_ns, end_ns, busy_ns, idle_ns};
	w->next = (w->next + 1) % IDLE_HISTORY;
	if (w->n < IDLE_HISTORY)
		w->n++;
	w->h.last_ns = end_ns;
	for (int r = 0; r < FLIGHT_MAX_RULES; r++) {
		struct rule_slot *rs = &f->rules[r];
		uint64_t span = (uint64_t)(rs->r.seconds * 1e9), covered = 0, busy = 0, idle = 0;
		uint64_t since = end_ns > span ? end_ns - span : 0;
		struct json_object *j, *g;
		double share;

		if (!rs->id || rs->r.kind != FLIGHT_GPU_IDLE)
			continue;
		for (unsigned int i = 0; i < w->n; i++) {
			const struct idle_slice *s = &w->slices[i];

			if (s->end_ns <= since)
				continue;
			covered += s->end_ns - (s->start_ns > since ? s->start_ns : since);
			busy += s->busy_ns;
			idle += s->idle_ns;
		}
		/* The span seen whole (a slice's edges aside), and the GPU used in it. */
		if (covered * 10 < span * 9 || !busy || busy + idle == 0)
			continue;
		share = 100.0 * (double)idle / (double)(busy + idle);
		if (share <= rs->r.percent)
			continue;
		j = process_json(json_object_new_object(), pid, w->comm);
		g = json_object_new_object();
		json_object_object_add(g, "device", json_object_new_uint64(device));
		json_object_object_add(g, "idle_percent", json_object_new_double(share));
		json_object_object_add(g, "busy_s", json_object_new_double((double)busy / 1e9));
		json_object_object_add(g, "idle_s", json_object_new_double((double)idle / 1e9));
		json_object_object_add(g, "over_s", json_object_new_double((double)covered / 1e9));
		json_object_object_add(j, "gpu", g);
		if (trip(f, rs, uid, end_ns, j) && may_log(f, FLIGHT_GPU_IDLE))
			log_info("flight recorder: pid %u's GPU %u idled %.0f%% of the last %.0f s",
				 pid, device, share, (double)covered / 1e9);
	}
}

bool flight__knows(const struct flight *f, uint32_t pid, uint32_t *ret_uid)
{
	const struct known *k = hashmap__get(f->known, pid, 0);

	if (k && ret_uid)
		*ret_uid = k->uid;
	return k != NULL;
}

struct pid_waits {
	uint32_t pid;
	uint64_t tids[256];
	size_t n;
};

static void waits_of(void *val, void *ctx)
{
	struct pid_waits *p = ctx;
	const struct wait_call *w = val;

	if (w->pid == p->pid && p->n < 256)
		p->tids[p->n++] = w->tid;
}

void flight__on_exit(struct flight *f, uint32_t pid, uint32_t uid, const char *comm, int signal,
		     uint64_t time_ns, bool gpu)
{
	struct known *k = hashmap__get(f->known, pid, 0);
	struct pid_waits pw = {.pid = pid};
	char name[16];

	/* Its calls that never returned are no one's to watch now (looked for only when it had
	 * some: every process's exit comes here). */
	while (k && k->waits) {
		pw.n = 0;
		hashmap__for_each(f->waits, waits_of, &pw);
		if (!pw.n)
			break;
		for (size_t i = 0; i < pw.n; i++)
			wait_gone(f, hashmap__get(f->waits, pw.tids[i], 0));
	}

	snprintf(name, sizeof(name), "%s", comm && comm[0] ? comm : k ? k->comm : "");
	if (k) {
		uid = k->uid;
		hashmap__remove(f->known, pid, 0);
		free(k);
	}
	if (!signal || !(gpu || k))
		return;
	for (int r = 0; r < FLIGHT_MAX_RULES; r++) {
		struct rule_slot *rs = &f->rules[r];
		struct json_object *j;

		if (!rs->id || rs->r.kind != FLIGHT_DEATH)
			continue;
		j = process_json(json_object_new_object(), pid, name);
		json_object_object_add(j, "signal", json_object_new_int(signal));
		json_object_object_add(
			j, "signal_name",
			json_object_new_string(sigabbrev_np(signal) ? sigabbrev_np(signal) : "?"));
		if (may_log(f, FLIGHT_DEATH))
			log_warn("flight recorder: pid %u (%s) was killed by SIG%s", pid, name,
				 sigabbrev_np(signal) ? sigabbrev_np(signal) : "?");
		trip(f, rs, uid, time_ns, j);
	}
}

/* ---- manual dumps ---- */

int flight__request(struct flight *f, uint32_t uid, bool all, double before_s, double after_s,
		    const char *note, uint64_t at_ns, char *ret_name, size_t size)
{
	unsigned int limit = uid ? 6 : FLIGHT_MAX_PER_HOUR, max_pending = uid ? 2 : 4, mine = 0;
	uint64_t now = clock__mono_ns();
	struct user_limit *u = NULL;
	struct json_object *t;
	int err;

	for (int i = 0; i < MAX_USERS && !u; i++)
		if (f->users[i].uid == uid && f->users[i].asked.n)
			u = &f->users[i];
	/* A new user takes a slot no one asked from this hour. */
	for (int i = 0; i < MAX_USERS && !u; i++)
		if (!hour_ring__count(&f->users[i].asked, now)) {
			u = &f->users[i];
			memset(u, 0, sizeof(*u));
			u->uid = uid;
		}
	for (size_t i = 0; i < f->nr_dumps; i++)
		mine += f->dumps[i].state == DUMP_PENDING && f->dumps[i].uid == uid &&
			f->dumps[i].kind == FLIGHT_MANUAL;
	if (!u || hour_ring__count(&u->asked, now) >= limit || mine >= max_pending) {
		f->st.suppressed[FLIGHT_MANUAL]++;
		return -EAGAIN;
	}
	t = json_object_new_object();
	if (note && note[0])
		json_object_object_add(t, "note", json_object_new_string(note));
	err = make_pending(f, FLIGHT_MANUAL, uid, all, at_ns, before_s, after_s, t, ret_name, size);
	if (err) {
		f->st.suppressed[FLIGHT_MANUAL]++;
		return err;
	}
	hour_ring__add(&u->asked, now);
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

/* ---- what it says ---- */

void flight__stats(const struct flight *f, struct flight_stats *ret)
{
	uint32_t uids[MAX_USERS];
	size_t nu = 0;

	*ret = f->st;
	ret->parts = f->nr_ring;
	ret->bytes = f->ring_bytes;
	ret->oldest_ns = f->nr_ring ? frozen__start_ns(f->ring[0]) : 0;
	for (size_t i = 0; i < f->nr_ring; i++) {
		uint32_t uid = frozen__uid(f->ring[i]);
		size_t u = 0;

		while (u < nu && uids[u] != uid)
			u++;
		if (u == nu && nu < MAX_USERS)
			uids[nu++] = uid;
	}
	ret->users = nu;
	ret->dumps = ret->dump_bytes = 0;
	for (size_t i = 0; i < f->nr_dumps; i++)
		if (f->dumps[i].state == DUMP_DONE) {
			ret->dumps++;
			ret->dump_bytes += f->dumps[i].bytes;
		}
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

struct json_object *flight__rules_json(struct flight *f)
{
	struct json_object *a = json_object_new_array();

	for (int i = 0; a && i < FLIGHT_MAX_RULES; i++) {
		const struct rule_slot *rs = &f->rules[i];
		struct json_object *o;
		char spec[256];

		if (!rs->id)
			continue;
		o = json_object_new_object();
		flight_rule__format(&rs->r, spec, sizeof(spec));
		json_object_object_add(o, "id", json_object_new_uint64(rs->id));
		json_object_object_add(o, "kind",
				       json_object_new_string(flight_kind__name(rs->r.kind)));
		json_object_object_add(o, "spec", json_object_new_string(spec));
		json_object_object_add(o, "fired", json_object_new_uint64(rs->fired));
		json_object_object_add(o, "suppressed", json_object_new_uint64(rs->suppressed));
		json_object_array_add(a, o);
	}
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
