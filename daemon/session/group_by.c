// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/base/proc_env.h"
#include "daemon/session/group_by.h"
#include "daemon/base/hashmap.h"

#define NAME_LEN 96

struct group_by {
	enum session_group what;
	struct {
		uint32_t tgid;
		char name[NAME_LEN];
	} * procs;
	size_t n;
	struct hashmap *index;	/* tgid -> procs[i] */
	char scratch[NAME_LEN]; /* past the cap */
};

struct group_by *group_by__new(enum session_group what)
{
	struct group_by *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->what = what;
	g->procs = calloc(GROUP_BY_MAX_PROCS, sizeof(*g->procs));
	g->index = hashmap__new();
	if (!g->procs || !g->index) {
		group_by__free(g);
		errno = ENOMEM;
		return NULL;
	}
	return g;
}

void group_by__free(struct group_by *g)
{
	if (!g)
		return;
	hashmap__free(g->index);
	free(g->procs);
	free(g);
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && !memcmp(s + n - k, suffix, k);
}

/* The innermost component ending in .service or .scope (a unit), else nothing. */
void group_by__unit_of(const char *path, char *buf, size_t size)
{
	const char *p = path, *best = NULL;
	size_t best_len = 0;

	buf[0] = '\0';
	while (*p) {
		const char *end = strchr(p, '/');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (ends_with(p, n, ".service") || ends_with(p, n, ".scope"))
			best = p, best_len = n;
		p += n + (end ? 1 : 0);
	}
	if (best)
		snprintf(buf, size, "%.*s", (int)best_len, best);
}

/*
 * A container runtime's cgroup: docker-ID.scope, libpod-ID.scope, cri-containerd-ID.scope,
 * crio-ID.scope, or /docker/ID, /kubepods/.../ID; shown as "container" and 12 hex digits.
 */
void group_by__container_of(const char *path, char *buf, size_t size)
{
	static const char *const prefixes[] = {"docker-", "libpod-", "cri-containerd-", "crio-",
					       "containerd-"};
	const char *p = path;

	buf[0] = '\0';
	while (*p) {
		const char *end = strchr(p, '/'), *id = NULL;
		size_t n = end ? (size_t)(end - p) : strlen(p);

		for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]) && !id; i++)
			if (!strncmp(p, prefixes[i], strlen(prefixes[i])))
				id = p + strlen(prefixes[i]);
		if (!id && n >= 32 && strspn(p, "0123456789abcdef") >= 32)
			id = p; /* /docker/ID, kubepods' .../ID */
		if (id && strspn(id, "0123456789abcdef") >= 12) {
			snprintf(buf, size, "container %.12s", id);
			return;
		}
		p += n + (end ? 1 : 0);
	}
}

void group_by__cgroup_of(const char *proc, uint32_t pid, char *buf, size_t size)
{
	char path[192], line[1024];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "%s/%u/cgroup", proc ? proc : "/proc", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(buf, size, "%s", line + 3);
			break;
		}
	}
	fclose(f);
}

void group_by__unit_of_pid(uint32_t pid, char *buf, size_t size)
{
	char cg[1024];

	group_by__cgroup_of(NULL, pid, cg, sizeof(cg));
	group_by__unit_of(cg, buf, size);
}

/* "rank N" or "job ID" from pid's environment; "[no rank]", "[no job]", "[gone]". */
static void lookup_job(enum session_group what, uint32_t pid, char *name)
{
	struct proc_job job;
	int err = proc_env__job("/proc", pid, &job);

	if (err == -ENOENT || err == -ESRCH)
		snprintf(name, NAME_LEN, "[gone]");
	else if (what == SESSION_GROUP_RANK)
		snprintf(name, NAME_LEN, err || job.rank < 0 ? "[no rank]" : "rank %lld",
			 (long long)job.rank);
	else if (err || !job.job_id[0])
		snprintf(name, NAME_LEN, "[no job]");
	else
		snprintf(name, NAME_LEN, "job %s", job.job_id);
}

static void lookup(enum session_group what, uint32_t pid, char *name)
{
	char cg[1024], path[64];
	ssize_t n;
	int fd;

	if (what == SESSION_GROUP_RANK || what == SESSION_GROUP_JOB) {
		lookup_job(what, pid, name);
		return;
	}
	if (what == SESSION_GROUP_COMM) {
		snprintf(path, sizeof(path), "/proc/%u/comm", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		n = fd < 0 ? -1 : read(fd, name, NAME_LEN - 1);
		if (fd >= 0)
			close(fd);
		name[n > 0 ? n : 0] = '\0';
		name[strcspn(name, "\n")] = '\0';
		if (!name[0])
			snprintf(name, NAME_LEN, "[gone]");
		return;
	}
	group_by__cgroup_of(NULL, pid, cg, sizeof(cg));
	if (what == SESSION_GROUP_UNIT)
		group_by__unit_of(cg, name, NAME_LEN);
	else
		group_by__container_of(cg, name, NAME_LEN);
	if (!name[0])
		snprintf(name, NAME_LEN, "%s",
			 !cg[0]			      ? "[gone]"
			 : what == SESSION_GROUP_UNIT ? "[no unit]"
						      : "[host]");
}

static char *cached(struct group_by *g, uint32_t tgid)
{
	return hashmap__get(g->index, tgid, 0);
}

void group_by__note(void *ctx, uint32_t tgid)
{
	struct group_by *g = ctx;
	char name[NAME_LEN];

	if (cached(g, tgid) || g->n == GROUP_BY_MAX_PROCS)
		return;
	lookup(g->what, tgid, name);
	if (strcmp(name, "[gone]") && !hashmap__put(g->index, tgid, 0, g->procs[g->n].name)) {
		g->procs[g->n].tgid = tgid;
		memcpy(g->procs[g->n++].name, name, NAME_LEN);
	}
}

const char *group_by__root(void *ctx, uint32_t tgid)
{
	struct group_by *g = ctx;
	char *name = cached(g, tgid);

	/* A name may change at exec: the one now, while the process runs. */
	if (name && g->what == SESSION_GROUP_COMM) {
		lookup(g->what, tgid, g->scratch);
		if (strcmp(g->scratch, "[gone]"))
			memcpy(name, g->scratch, NAME_LEN);
	}
	if (name)
		return name;
	group_by__note(g, tgid);
	if ((name = cached(g, tgid)))
		return name;
	lookup(g->what, tgid, g->scratch);
	return g->scratch;
}

const char *const *group_by__labels(const struct group_by *g, size_t *ret_n)
{
	static const char *const
		unit[] = {"unit", "process"},
		*const container[] = {"container", "process"}, *const comm[] = {"comm", "process"},
		*const rank[] = {"rank", "process"}, *const job[] = {"job", "process"};

	*ret_n = 2;
	switch (g->what) {
	case SESSION_GROUP_UNIT:
		return unit;
	case SESSION_GROUP_CONTAINER:
		return container;
	case SESSION_GROUP_RANK:
		return rank;
	case SESSION_GROUP_JOB:
		return job;
	default:
		return comm;
	}
}
