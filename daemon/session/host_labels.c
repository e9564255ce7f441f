// SPDX-License-Identifier: Apache-2.0
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/hashmap.h"
#include "daemon/base/keymap.h"
#include "daemon/base/proc_env.h"
#include "daemon/session/group_by.h"
#include "daemon/session/host_labels.h"

#define SET_LEN 512

struct host_labels {
	char proc[128], pods[128];
	size_t max_sets, nr_sets;
	uint64_t capped;
	struct keymap *sets;   /* set -> 1: its copy is the key */
	struct hashmap *procs; /* tgid -> the set's copy */
	size_t nr_procs;
	char scratch[SET_LEN];
};

struct host_labels *host_labels__new(const char *proc, const char *pods, size_t max_sets)
{
	struct host_labels *h = calloc(1, sizeof(*h));

	/* The sets interned (their strings are what host_labels__of returns), pid -> set. */
	if (h && (h->sets = keymap__new()) && (h->procs = hashmap__new())) {
		snprintf(h->proc, sizeof(h->proc), "%s", proc ? proc : "/proc");
		snprintf(h->pods, sizeof(h->pods), "%s", pods ? pods : "/var/log/pods");
		h->max_sets = max_sets ? max_sets : HOST_LABELS_MAX_SETS;
		return h;
	}
	host_labels__free(h);
	errno = ENOMEM;
	return NULL;
}

void host_labels__free(struct host_labels *h)
{
	if (h) {
		keymap__free(h->sets);
		hashmap__free(h->procs);
	}
	free(h);
}

void host_labels__pod_uid(const char *cg, char *buf, size_t size)
{
	const char *p = strstr(cg, "pod");

	buf[0] = '\0';
	for (; p; p = strstr(p + 3, "pod")) {
		/* Only kubepods' own components: "-pod<uid>.slice" or "/pod<uid>". */
		bool systemd = p > cg && p[-1] == '-', cgroupfs = p > cg && p[-1] == '/';
		size_t n = strspn(p + 3, "0123456789abcdef-_");

		if ((!systemd && !cgroupfs) || n < 32 || !strstr(cg, "kubepods"))
			continue;
		if (systemd && strncmp(p + 3 + n, ".slice", 6))
			continue;
		if (cgroupfs && p[3 + n] && p[3 + n] != '/')
			continue;
		snprintf(buf, size, "%.*s", (int)n, p + 3);
		for (char *c = buf; *c; c++)
			if (*c == '_')
				*c = '-';
		return;
	}
}

/* NAMESPACE_NAME_UID under the kubelet's log directory. */
static void pod_names(const struct host_labels *h, const char *uid, char *ns, char *name,
		      size_t size)
{
	size_t ulen = strlen(uid);
	struct dirent *e;
	DIR *d = opendir(h->pods);

	ns[0] = name[0] = '\0';
	while (d && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		const char *sep = strchr(e->d_name, '_');

		if (n <= ulen + 1 || strcmp(e->d_name + n - ulen, uid) ||
		    e->d_name[n - ulen - 1] != '_' || !sep || sep >= e->d_name + n - ulen - 1)
			continue;
		snprintf(ns, size, "%.*s", (int)(sep - e->d_name), e->d_name);
		snprintf(name, size, "%.*s", (int)(e->d_name + n - ulen - 1 - sep - 1), sep + 1);
		break;
	}
	if (d)
		closedir(d);
}

static void add(char *set, size_t size, const char *key, const char *val)
{
	size_t len = strlen(set);

	if (!val[0] || len >= size)
		return;
	/* A value may hold neither separator. */
	snprintf(set + len, size - len, "%s%s=%.*s", len ? "\x1f" : "", key,
		 (int)strcspn(val, "\x1f"), val);
}

static void lookup(const struct host_labels *h, uint32_t pid, char *set)
{
	char cg[1024], v[128], unit[128], uid[64], ns[96], name[128];
	struct proc_job job;
	const char *id;

	set[0] = '\0';
	group_by__cgroup_of(h->proc, pid, cg, sizeof(cg));
	group_by__unit_of(cg, unit, sizeof(unit));
	group_by__container_of(cg, v, sizeof(v));
	id = v[0] ? v + strlen("container ") : "";
	/* A runtime's scope (cri-containerd-ID.scope) is the container, not a service. */
	if (!id[0] || !strstr(unit, id))
		add(set, SET_LEN, "systemd.unit", unit);
	add(set, SET_LEN, "container.id", id);
	host_labels__pod_uid(cg, uid, sizeof(uid));
	if (uid[0]) {
		add(set, SET_LEN, "k8s.pod.uid", uid);
		pod_names(h, uid, ns, name, sizeof(ns));
		add(set, SET_LEN, "k8s.namespace.name", ns);
		add(set, SET_LEN, "k8s.pod.name", name);
	}
	if (proc_env__job(h->proc, pid, &job))
		return;
	add(set, SET_LEN, "job.id", job.job_id);
	if (job.rank >= 0) {
		snprintf(v, sizeof(v), "%lld", (long long)job.rank);
		add(set, SET_LEN, "job.rank", v);
	}
	if (job.local_rank >= 0) {
		snprintf(v, sizeof(v), "%lld", (long long)job.local_rank);
		add(set, SET_LEN, "job.local_rank", v);
	}
	if (job.world_size >= 0) {
		snprintf(v, sizeof(v), "%lld", (long long)job.world_size);
		add(set, SET_LEN, "job.world_size", v);
	}
	add(set, SET_LEN, "job.launcher", job.launcher ? job.launcher : "");
}

const char *host_labels__of(void *ctx, uint32_t tgid)
{
	struct host_labels *h = ctx;
	const char *set = hashmap__get(h->procs, tgid, 0);
	const void *copy = NULL;
	bool known, capped = false;

	if (set)
		return set;
	lookup(h, tgid, h->scratch);
	if (!h->scratch[0])
		snprintf(h->scratch, sizeof(h->scratch), "%s", HOST_LABELS_NONE);
	known = keymap__get(h->sets, h->scratch, strlen(h->scratch) + 1) != NULL;
	if (!known && h->nr_sets >= h->max_sets) {
		/* The cap on distinct sets: this process goes under the capped set, counted. */
		h->capped++;
		capped = true;
		snprintf(h->scratch, sizeof(h->scratch), "%s", HOST_LABELS_CAPPED);
	}
	if (keymap__put(h->sets, h->scratch, strlen(h->scratch) + 1, (void *)1, &copy))
		return h->scratch;
	if (!known && !capped)
		h->nr_sets++;
	if (h->nr_procs < HOST_LABELS_MAX_PROCS && !hashmap__put(h->procs, tgid, 0, (void *)copy))
		h->nr_procs++;
	return copy;
}

bool host_labels__forget(struct host_labels *h, uint32_t tgid)
{
	if (!h || !hashmap__remove(h->procs, tgid, 0))
		return false;
	h->nr_procs--;
	return true;
}

void host_labels__stats(const struct host_labels *h, size_t *ret_sets, uint64_t *ret_capped)
{
	*ret_sets = h->nr_sets;
	*ret_capped = h->capped;
}
