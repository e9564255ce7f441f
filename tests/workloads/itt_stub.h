/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An application's side of the ITT API, written from its documented protocol (no Intel code):
 * what the static part that oneTBB, oneDNN or an application links does at the first ITT call.
 * It opens the collector named by $INTEL_LIBITTNOTIFY64; a collector that exports
 * __itt_api_init gets the table of the static part's function pointers to fill, one that only
 * exports the functions by name gets them looked up. A call then goes through its pointer when
 * its domain is enabled and the pointer is set, as ittnotify.h's macros do. Without a collector
 * every call is a no-op.
 */
#ifndef XSPROF_TESTS_WORKLOADS_ITT_STUB_H
#define XSPROF_TESTS_WORKLOADS_ITT_STUB_H

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct xs_itt_domain {
	volatile int flags;
	const char *nameA;
	void *nameW;
	int extra1;
	void *extra2;
	struct xs_itt_domain *next;
};

struct xs_itt_string_handle {
	const char *strA;
	void *strW;
	int extra1;
	void *extra2;
	struct xs_itt_string_handle *next;
};

struct xs_itt_id {
	unsigned long long d1, d2, d3;
};

static struct {
	struct xs_itt_domain *(*domain_create)(const char *);
	struct xs_itt_string_handle *(*string_handle_create)(const char *);
	void (*task_begin)(const struct xs_itt_domain *, struct xs_itt_id, struct xs_itt_id,
			   struct xs_itt_string_handle *);
	void (*task_end)(const struct xs_itt_domain *);
	void (*task_begin_overlapped)(const struct xs_itt_domain *, struct xs_itt_id,
				      struct xs_itt_id, struct xs_itt_string_handle *);
	void (*task_end_overlapped)(const struct xs_itt_domain *, struct xs_itt_id);
	void (*frame_begin_v3)(const struct xs_itt_domain *, struct xs_itt_id *);
	void (*frame_end_v3)(const struct xs_itt_domain *, struct xs_itt_id *);
	void (*marker)(const struct xs_itt_domain *, struct xs_itt_id,
		       struct xs_itt_string_handle *, int);
	void (*thread_set_name)(const char *);
} xs_itt;

/* The static part's table entry and the head of its global, as a collector reads them. */
struct xs_itt_api_info {
	const char *name;
	void **func_ptr;
	void *init_func;
	void *null_func;
	int group;
};

struct xs_itt_global {
	unsigned char magic[8];
	unsigned long version_major, version_minor, version_build;
	volatile long api_initialized, mutex_initialized, atomic_counter;
	pthread_mutex_t mutex;
	void *lib;
	void *error_handler;
	const char **dll_path_ptr;
	struct xs_itt_api_info *api_list_ptr;
	struct xs_itt_global *next;
	void *thread_list, *domain_list, *string_list;
	int state;
	void *counter_list;
	unsigned int ipt_collect_events;
};

#define XS_ITT_ENTRY(n)                                         \
	{                                                       \
		"__itt_" #n, (void **)&xs_itt.n, NULL, NULL, -1 \
	}

static struct xs_itt_api_info xs_itt_api_list[] = {
	XS_ITT_ENTRY(domain_create),
	XS_ITT_ENTRY(string_handle_create),
	XS_ITT_ENTRY(task_begin),
	XS_ITT_ENTRY(task_end),
	XS_ITT_ENTRY(task_begin_overlapped),
	XS_ITT_ENTRY(task_end_overlapped),
	XS_ITT_ENTRY(frame_begin_v3),
	XS_ITT_ENTRY(frame_end_v3),
	XS_ITT_ENTRY(marker),
	XS_ITT_ENTRY(thread_set_name),
	{NULL, NULL, NULL, NULL, 0},
};

static struct xs_itt_global xs_itt_global = {
	/* As the static part of oneDNN 2.x says it (a table with null_func). */
	.version_major = 3,
	.version_minor = 22,
	.version_build = 20180723,
	.mutex = PTHREAD_MUTEX_INITIALIZER,
	.api_list_ptr = xs_itt_api_list,
};

/* The first call's work: 1 when a collector took the table or gave its functions. */
static int xs_itt_load(void)
{
	const char *path = getenv("INTEL_LIBITTNOTIFY64");
	void (*api_init)(struct xs_itt_global *, int);
	void *lib;

	if (!path || !*path || !(lib = dlopen(path, RTLD_LAZY)))
		return 0;
	xs_itt_global.lib = lib;
	*(void **)&api_init = dlsym(lib, "__itt_api_init");
	if (api_init) {
		api_init(&xs_itt_global, -1);
	} else {
		for (struct xs_itt_api_info *a = xs_itt_api_list; a->name; a++)
			*a->func_ptr = dlsym(lib, a->name);
	}
	xs_itt_global.api_initialized = 1;
	return xs_itt.task_begin != NULL;
}

static const struct xs_itt_id xs_itt_null = {0, 0, 0};

static inline void xs_itt_task_begin(const struct xs_itt_domain *d, struct xs_itt_string_handle *n)
{
	if (d && d->flags && xs_itt.task_begin)
		xs_itt.task_begin(d, xs_itt_null, xs_itt_null, n);
}

static inline void xs_itt_task_end(const struct xs_itt_domain *d)
{
	if (d && d->flags && xs_itt.task_end)
		xs_itt.task_end(d);
}

#endif
