// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "daemon/session/pid_uids.h"
#include "daemon/session/stack_names.h"
#include "daemon/stacks/stack_table.h"

struct pid_uid {
	uint32_t pid, uid;
};

#define UID_CACHE 256 /* processes without samples, looked up in /proc once: direct-mapped */

struct pid_uids {
	struct pid_uid *v; /* sorted by pid, one each */
	size_t n;
	/* Noted from GPU records (pid_uids__note): sorted and made one each when next read. */
	struct pid_uid *noted;
	size_t nr_noted, cap_noted;
	bool noted_sorted;
	uint32_t noted_recent[16];	 /* pids noted lately, direct-mapped: records interleave */
	struct pid_uid cache[UID_CACHE]; /* pid 0: empty */
	const struct stack_names *names;
	char buf[4][96]; /* pid_uids__comm's last four answers */
	unsigned int next;
};

static int cmp_pid(const void *a, const void *b)
{
	const struct pid_uid *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* A sampled stack's process and uid, and how late it was made (the image, then the entry). */
struct seen_uid {
	uint32_t pid, uid, gen, id;
};

struct seen_list {
	struct seen_uid *v;
	size_t n;
};

static int note_entry(void *ctx, const struct stack_entry *e)
{
	struct seen_list *l = ctx;

	l->v[l->n++] = (struct seen_uid){e->tgid, e->uid, e->gen, e->id};
	return 0;
}

/* By pid; a pid's latest first: its newest image (gen), then its last-made entry. */
static int cmp_seen(const void *a, const void *b)
{
	const struct seen_uid *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->gen != y->gen)
		return x->gen > y->gen ? -1 : 1;
	return x->id > y->id ? -1 : x->id < y->id;
}

struct pid_uids *pid_uids__new(const struct stack_table *st)
{
	struct pid_uids *u = calloc(1, sizeof(*u));
	size_t n = st ? stack_table__nr_entries(st) : 0;
	struct seen_list l = {NULL, 0};

	if (!u)
		return NULL;
	u->v = malloc((n ? n : 1) * sizeof(*u->v));
	l.v = malloc((n ? n : 1) * sizeof(*l.v));
	if (!u->v || !l.v) {
		free(l.v);
		free(u->v);
		free(u);
		errno = ENOMEM;
		return NULL;
	}
	if (n)
		stack_table__for_each(st, note_entry, &l);
	/* A process seen under two uids (setpriv or su before its exec, a setuid exec) is the
	 * uid it ran as last: its newest image's. Taking any one of them gave a member's
	 * process to root when a sample caught setpriv before it dropped to the member. */
	qsort(l.v, l.n, sizeof(*l.v), cmp_seen);
	for (size_t i = 0; i < l.n; i++)
		if (!u->n || u->v[u->n - 1].pid != l.v[i].pid)
			u->v[u->n++] = (struct pid_uid){l.v[i].pid, l.v[i].uid};
	free(l.v);
	return u;
}

void pid_uids__free(struct pid_uids *u)
{
	if (!u)
		return;
	free(u->v);
	free(u->noted);
	free(u);
}

int pid_uids__note(struct pid_uids *u, uint32_t pid, uint32_t uid)
{
	uint32_t *recent = &u->noted_recent[pid % 16];

	if (pid && *recent == pid)
		return 0;
	*recent = pid;
	if (u->nr_noted == u->cap_noted) {
		size_t cap = u->cap_noted ? 2 * u->cap_noted : 64;
		struct pid_uid *nv = realloc(u->noted, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		u->noted = nv;
		u->cap_noted = cap;
	}
	u->noted[u->nr_noted++] = (struct pid_uid){pid, uid};
	u->noted_sorted = false;
	return 0;
}

/* The noted uids sorted by pid, one each (a pid's records all come from one sender). */
static void sort_noted(struct pid_uids *u)
{
	size_t k = 0;

	if (u->noted_sorted)
		return;
	qsort(u->noted, u->nr_noted, sizeof(*u->noted), cmp_pid);
	for (size_t i = 0; i < u->nr_noted; i++)
		if (!k || u->noted[k - 1].pid != u->noted[i].pid)
			u->noted[k++] = u->noted[i];
	u->nr_noted = k;
	u->noted_sorted = true;
}

uint32_t pid_uids__get(struct pid_uids *u, uint32_t pid)
{
	struct pid_uid key = {.pid = pid}, *c = &u->cache[pid % UID_CACHE];
	const struct pid_uid *p = u->n ? bsearch(&key, u->v, u->n, sizeof(key), cmp_pid) : NULL;
	char path[32];
	struct stat sb;

	if (p)
		return p->uid;
	sort_noted(u);
	p = u->nr_noted ? bsearch(&key, u->noted, u->nr_noted, sizeof(key), cmp_pid) : NULL;
	if (p)
		return p->uid;
	/* Asked per GPU record and launch: /proc once per process. */
	if (pid && c->pid == pid)
		return c->uid;
	snprintf(path, sizeof(path), "/proc/%u", pid);
	*c = (struct pid_uid){pid, stat(path, &sb) ? 0u : (uint32_t)sb.st_uid};
	return c->uid;
}

void pid_uids__set_names(struct pid_uids *u, const struct stack_names *names)
{
	u->names = names;
}

const char *pid_uids__comm(void *ctx, uint32_t pid, uint32_t tid)
{
	struct pid_uids *u = ctx;
	const char *comm = u->names ? stack_names__comm((void *)u->names, pid, tid) : NULL;
	char *b = u->buf[u->next++ & 3];
	unsigned int uid = pid_uids__get(u, pid);

	if (comm)
		snprintf(b, sizeof(u->buf[0]), "uid:%u\x1f%s", uid, comm);
	else
		snprintf(b, sizeof(u->buf[0]), "uid:%u\x1fpid %u", uid, pid);
	return b;
}

int pid_uids__resolve(void *ctx, uint32_t pid, uint32_t stack_id, const char *const **ret_frames,
		      size_t *ret_n)
{
	struct pid_uids *u = ctx;

	return stack_names__resolve((void *)u->names, pid, stack_id, ret_frames, ret_n);
}
