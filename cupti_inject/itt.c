// SPDX-License-Identifier: Apache-2.0
/*
 * libxsprof_itt.so, an Intel ITT collector. An application built with the ITT API (oneTBB,
 * oneDNN, OpenVINO, PyTorch's emit_itt, or its own __itt_task_begin calls) carries ITT's static
 * part, which at its first call opens the library named by $INTEL_LIBITTNOTIFY64 and, since
 * this one exports __itt_api_init, hands it its table of function pointers to fill. The ITT
 * calls then come here and go to xsprofd as ranges, the way NVTX ranges go (ranges.c):
 *
 *   __itt_domain_create, __itt_string_handle_create   domains (enabled) and names, kept
 *   __itt_task_begin / _fn / __itt_task_end            a push/pop range in the domain
 *   __itt_task_begin_overlapped / _end_overlapped     a start/end range, by task id
 *   __itt_frame_begin_v3 / __itt_frame_end_v3          a start/end range "frame", by id
 *   __itt_marker                                       an instant
 *   __itt_thread_set_name                              the thread's name (what ps, top and
 *                                                      xsprofd show), cut at 15 bytes
 *
 * Every other ITT call is left a no-op. No CUDA: it builds without a toolkit. Bounded: 128
 * domains (past them a domain is disabled, so the application skips its calls), 4096 names,
 * 4096 overlapped tasks and frames open; what a cap refuses is counted as the sender's drops.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cupti_inject/inject.h"
#include "cupti_inject/ranges.h"

#define MAX_DOMAINS 128
#define MAX_NAMES   4096
#define NAME_SLOTS  8192 /* a power of two, twice MAX_NAMES */
#define MAX_OPEN    4096 /* overlapped tasks and frames, a power of two */

/* The ITT API's types, as its public header (ittnotify.h) lays them out on Linux x86-64. */
struct itt_domain {
	volatile int flags; /* 0: disabled (the application's macros skip the call) */
	const char *nameA;
	void *nameW;
	int extra1;
	void *extra2; /* reserved to the collector: here, the interned name */
	struct itt_domain *next;
};

struct itt_string_handle {
	const char *strA;
	void *strW;
	int extra1;
	void *extra2;
	struct itt_string_handle *next;
};

struct itt_id {
	unsigned long long d1, d2, d3;
};

/* The static part's table: one entry a function, ended by a NULL name. */
struct itt_api_info {
	const char *name;
	void **func_ptr;
	void *init_func;
	void *null_func; /* what to leave for a function not collected (static part since 2010) */
	int group;
};

struct itt_api_info_2010 { /* before null_func */
	const char *name;
	void **func_ptr;
	void *init_func;
	int group;
};

/* The head of the static part's __itt_global that a collector reads. */
struct itt_global {
	unsigned char magic[8];
	unsigned long version_major, version_minor, version_build;
	volatile long api_initialized, mutex_initialized, atomic_counter;
	pthread_mutex_t mutex;
	void *lib;
	void *error_handler;
	const char **dll_path_ptr;
	void *api_list_ptr;
};

/* version_build of the first static part whose table has null_func. */
#define ITT_NULL_FUNC_SINCE 20101001ul

static struct {
	pthread_mutex_t lock; /* domains, names, open */
	struct itt_domain domains[MAX_DOMAINS];
	unsigned nr_domains;
	struct itt_string_handle names[MAX_NAMES];
	unsigned nr_names;
	uint16_t name_slot[NAME_SLOTS]; /* index + 1 into names, by hash of the string */
	struct {
		const struct itt_domain *d;
		struct itt_id id;
		uint64_t range; /* 0: free */
	} open[MAX_OPEN];
} c = {.lock = PTHREAD_MUTEX_INITIALIZER};

static struct itt_domain disabled_domain = {.flags = 0, .nameA = "[xsprof: too many domains]"};
static struct itt_string_handle overflow_name = {.strA = "[xsprof: too many names]"};

static const char *domain_of(const struct itt_domain *d)
{
	if (!d)
		return NULL;
	return d->extra2 ? (const char *)d->extra2 : ranges__domain(d->nameA);
}

static struct itt_domain *domain_create(const char *name)
{
	struct itt_domain *d = NULL;

	if (!name)
		return NULL;
	pthread_mutex_lock(&c.lock);
	for (unsigned i = 0; i < c.nr_domains && !d; i++)
		if (!strcmp(c.domains[i].nameA, name))
			d = &c.domains[i];
	if (!d && c.nr_domains < MAX_DOMAINS) {
		const char *interned = ranges__domain(name);

		d = &c.domains[c.nr_domains++];
		d->nameA = interned;
		d->extra2 = (void *)interned;
		d->flags = 1;
	}
	pthread_mutex_unlock(&c.lock);
	if (!d) {
		inject__count_nvtx_drops(1);
		return &disabled_domain;
	}
	return d;
}

static uint32_t hash_str(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static struct itt_string_handle *string_handle_create(const char *name)
{
	struct itt_string_handle *h = NULL;
	uint32_t i;

	if (!name)
		return NULL;
	pthread_mutex_lock(&c.lock);
	for (i = hash_str(name) & (NAME_SLOTS - 1); c.name_slot[i]; i = (i + 1) & (NAME_SLOTS - 1))
		if (!strcmp(c.names[c.name_slot[i] - 1].strA, name)) {
			h = &c.names[c.name_slot[i] - 1];
			break;
		}
	if (!h && c.nr_names < MAX_NAMES) {
		const char *copy = ranges__string(name);

		if (copy) {
			h = &c.names[c.nr_names++];
			h->strA = copy;
			c.name_slot[i] = (uint16_t)c.nr_names;
		}
	}
	pthread_mutex_unlock(&c.lock);
	if (!h) {
		inject__count_nvtx_drops(1);
		return &overflow_name;
	}
	return h;
}

static void handle_name(char *dst, const void *src)
{
	const struct itt_string_handle *h = src;

	ranges__copy_name(dst, h && h->strA ? h->strA : "[itt task]");
}

/* A function's name by its address: its symbol, else the address. */
static void fn_name(char *dst, const void *fn)
{
	Dl_info info;

	if (fn && dladdr(fn, &info) && info.dli_sname)
		ranges__copy_name(dst, info.dli_sname);
	else
		snprintf(dst, RANGES_NAME_MAX, "[itt fn %p]", fn);
}

static void task_begin(const struct itt_domain *d, struct itt_id id, struct itt_id parent,
		       struct itt_string_handle *name)
{
	(void)id;
	(void)parent;
	ranges__push(domain_of(d), handle_name, name);
}

static void task_begin_fn(const struct itt_domain *d, struct itt_id id, struct itt_id parent,
			  void *fn)
{
	(void)id;
	(void)parent;
	ranges__push(domain_of(d), fn_name, fn);
}

static void task_end(const struct itt_domain *d)
{
	ranges__pop(domain_of(d));
}

/* ---- ranges by (domain, id): overlapped tasks and frames ---- */

static uint32_t open_slot(const struct itt_domain *d, const struct itt_id *id)
{
	uint64_t h = (uintptr_t)d ^ id->d1 * 0x9e3779b97f4a7c15ull ^
		     id->d2 * 0xbf58476d1ce4e5b9ull ^ id->d3;

	return (uint32_t)(h ^ h >> 29) & (MAX_OPEN - 1);
}

static void open_by_id(const struct itt_domain *d, const struct itt_id *id, ranges_name_fn name,
		       const void *src)
{
	uint64_t range = ranges__start(domain_of(d), name, src);
	bool kept = false;

	pthread_mutex_lock(&c.lock);
	for (uint32_t k = 0, i = open_slot(d, id); k < MAX_OPEN && !kept;
	     k++, i = (i + 1) & (MAX_OPEN - 1))
		if (!c.open[i].range) {
			c.open[i].d = d;
			c.open[i].id = *id;
			c.open[i].range = range;
			kept = true;
		}
	pthread_mutex_unlock(&c.lock);
	if (!kept) {
		inject__count_nvtx_drops(1);
		ranges__end(range); /* freed, not left open for ever */
	}
}

static void close_by_id(const struct itt_domain *d, const struct itt_id *id)
{
	uint64_t range = 0;

	pthread_mutex_lock(&c.lock);
	for (uint32_t k = 0, i = open_slot(d, id); k < MAX_OPEN; k++, i = (i + 1) & (MAX_OPEN - 1))
		if (c.open[i].range && c.open[i].d == d &&
		    !memcmp(&c.open[i].id, id, sizeof(*id))) {
			range = c.open[i].range;
			c.open[i].range = 0;
			break;
		}
	pthread_mutex_unlock(&c.lock);
	if (range)
		ranges__end(range);
}

static void task_begin_overlapped(const struct itt_domain *d, struct itt_id id,
				  struct itt_id parent, struct itt_string_handle *name)
{
	(void)parent;
	open_by_id(d, &id, handle_name, name);
}

static void task_end_overlapped(const struct itt_domain *d, struct itt_id id)
{
	close_by_id(d, &id);
}

static void frame_begin(const struct itt_domain *d, struct itt_id *id)
{
	static const struct itt_id none;

	open_by_id(d, id ? id : &none, ranges__copy_name, "frame");
}

static void frame_end(const struct itt_domain *d, struct itt_id *id)
{
	static const struct itt_id none;

	close_by_id(d, id ? id : &none);
}

static void marker(const struct itt_domain *d, struct itt_id id, struct itt_string_handle *name,
		   int scope)
{
	(void)id;
	(void)scope;
	ranges__mark(domain_of(d), handle_name, name);
}

static void thread_set_name(const char *name)
{
	char comm[16];

	if (!name)
		return;
	snprintf(comm, sizeof(comm), "%s", name);
	pthread_setname_np(pthread_self(), comm);
}

/* ---- the entry ---- */

static const struct {
	const char *name;
	void *fn;
} collected[] = {
	{"__itt_domain_create", (void *)domain_create},
	{"__itt_string_handle_create", (void *)string_handle_create},
	{"__itt_task_begin", (void *)task_begin},
	{"__itt_task_begin_fn", (void *)task_begin_fn},
	{"__itt_task_end", (void *)task_end},
	{"__itt_task_begin_overlapped", (void *)task_begin_overlapped},
	{"__itt_task_end_overlapped", (void *)task_end_overlapped},
	{"__itt_frame_begin_v3", (void *)frame_begin},
	{"__itt_frame_end_v3", (void *)frame_end},
	{"__itt_marker", (void *)marker},
	{"__itt_thread_set_name", (void *)thread_set_name},
};

static void *collector_of(const char *name)
{
	for (size_t i = 0; name && i < sizeof(collected) / sizeof(collected[0]); i++)
		if (!strcmp(collected[i].name, name))
			return collected[i].fn;
	return NULL;
}

/*
 * Called by the static part once, with its table: each function collected here gets ours;
 * every other one its null function (a no-op, or the static part's own for the few it has),
 * so the application's calls to them cost nothing.
 */
__attribute__((visibility("default"))) void __itt_api_init(struct itt_global *g, int init_groups)
{
	unsigned collecting = 0;

	(void)init_groups;
	if (!g || !g->api_list_ptr || ranges__init())
		return;
	if (g->version_build >= ITT_NULL_FUNC_SINCE) {
		for (struct itt_api_info *a = g->api_list_ptr; a->name; a++) {
			void *fn = collector_of(a->name);

			collecting += fn != NULL;
			if (a->func_ptr)
				*a->func_ptr = fn ? fn : a->null_func;
		}
	} else {
		for (struct itt_api_info_2010 *a = g->api_list_ptr; a->name; a++) {
			void *fn = collector_of(a->name);

			collecting += fn != NULL;
			if (a->func_ptr)
				*a->func_ptr = fn;
		}
	}
	if (inject__verbose())
		inject__say("ITT ranges go to xsprofd (%u functions collected, %s)", collecting,
			    ranges__sending() ? "connected" : "not listening yet");
}
