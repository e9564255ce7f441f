// SPDX-License-Identifier: Apache-2.0
/* The flight recorder's triggers: its rules, what trips them (slow steps, hangs, GPU idle,
 * deaths), each user's cooldown and hourly limit, and the dumps asked for by hand. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "daemon/base/clock.h"
#include "daemon/base/hashmap.h"
#include "daemon/base/sort.h"
#include "daemon/log.h"
#include "daemon/service/flight.h"
#include "daemon/service/flight_internal.h"

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

/* ---- cooldowns and limits ---- */

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
	err = flight_dumps__make_pending(f, rs->r.kind, uid, false, at, rs->r.before_s,
					 rs->r.after_s, t, NULL, 0);
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
	flight__note_known(f, pid, uid, NULL, end_ns);
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
	    !(k = flight__note_known(f, pid, uid, NULL, entry_ns))) {
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

	flight__note_known(f, pid, uid, comm, end_ns);
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
	err = flight_dumps__make_pending(f, FLIGHT_MANUAL, uid, all, at_ns, before_s, after_s, t,
					 ret_name, size);
	if (err) {
		f->st.suppressed[FLIGHT_MANUAL]++;
		return err;
	}
	hour_ring__add(&u->asked, now);
	return 0;
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
