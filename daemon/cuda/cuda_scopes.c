// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "bpf/xsprof_events.h"
#include "daemon/base/hashmap.h"
#include "daemon/cuda/cuda_scopes.h"
#include "daemon/cuda/launch_store.h"

#define MAX_DEPTH   64
#define MAX_THREADS 4096
#define MAX_NAMES   4096
#define NAME_BYTES  120

struct open_scope {
	uint64_t name; /* its address in the process */
	uint64_t start_ns;
	const char *named; /* read at its begin, while the process surely runs */
};

struct thread_scopes {
	uint32_t tgid, tid;
	unsigned int depth; /* may pass MAX_DEPTH: those levels are counted only */
	struct open_scope s[MAX_DEPTH];
};

struct cuda_scopes {
	struct hashmap *threads; /* (tgid, tid) -> struct thread_scopes */
	struct hashmap *names;	 /* (tgid, address) -> char * */
	size_t nr_names;
	cuda_scopes_read_fn read;
	struct cuda_scopes_stats st;
};

/* The string at addr in tgid's memory, read now. */
static int read_process(uint32_t tgid, uint64_t addr, char *buf, size_t size)
{
	struct iovec local = {.iov_base = buf, .iov_len = size - 1};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = size - 1};
	ssize_t n = process_vm_readv((pid_t)tgid, &local, 1, &remote, 1, 0);

	if (n <= 0) {
		/* The string may end within a page of the end of its mapping: byte by byte. */
		for (n = 0; n < (ssize_t)size - 1; n++) {
			local = (struct iovec){.iov_base = buf + n, .iov_len = 1};
			remote = (struct iovec){.iov_base = (void *)(uintptr_t)(addr + n),
						.iov_len = 1};
			if (process_vm_readv((pid_t)tgid, &local, 1, &remote, 1, 0) != 1)
				break;
			if (!buf[n])
				break;
		}
		if (!n)
			return -errno;
	}
	buf[n < (ssize_t)size ? n : (ssize_t)size - 1] = '\0';
	return 0;
}

struct cuda_scopes *cuda_scopes__new(void)
{
	struct cuda_scopes *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->threads = hashmap__new();
	s->names = hashmap__new();
	s->read = read_process;
	if (!s->threads || !s->names) {
		cuda_scopes__free(s);
		return NULL;
	}
	return s;
}

static void free_val(void *v, void *ctx)
{
	(void)ctx;
	free(v);
}

void cuda_scopes__free(struct cuda_scopes *s)
{
	if (!s)
		return;
	if (s->threads)
		hashmap__for_each(s->threads, free_val, NULL);
	if (s->names)
		hashmap__for_each(s->names, free_val, NULL);
	hashmap__free(s->threads);
	hashmap__free(s->names);
	free(s);
}

void cuda_scopes__set_reader(struct cuda_scopes *s, cuda_scopes_read_fn fn)
{
	s->read = fn ? fn : read_process;
}

/* The name at (tgid, addr), read once; CUDA_SCOPES_UNREAD when it cannot be. */
static const char *name_of(struct cuda_scopes *s, uint32_t tgid, uint64_t addr)
{
	char buf[NAME_BYTES], *name = hashmap__get(s->names, tgid, addr);

	if (name)
		return name;
	if (s->nr_names >= MAX_NAMES) {
		s->st.names_capped++;
		return CUDA_SCOPES_UNREAD;
	}
	if (s->read(tgid, addr, buf, sizeof(buf)) || !buf[0]) {
		s->st.names_unread++;
		return CUDA_SCOPES_UNREAD;
	}
	name = strdup(buf);
	if (!name || hashmap__put(s->names, tgid, addr, name)) {
		free(name);
		return CUDA_SCOPES_UNREAD;
	}
	s->nr_names++;
	return name;
}

static int begin(struct cuda_scopes *s, const struct xsprof_scope *r)
{
	struct thread_scopes *t = hashmap__get(s->threads, r->tgid, r->tid);

	if (!t) {
		if (hashmap__count(s->threads) >= MAX_THREADS) {
			s->st.threads_capped++;
			return 0;
		}
		t = calloc(1, sizeof(*t));
		if (!t || hashmap__put(s->threads, r->tgid, r->tid, t)) {
			free(t);
			return -ENOMEM;
		}
		t->tgid = r->tgid;
		t->tid = r->tid;
	}
	if (t->depth >= MAX_DEPTH) {
		s->st.too_deep++;
		t->depth++;
		return 0;
	}
	t->s[t->depth++] = (struct open_scope){r->name, r->time_ns, name_of(s, r->tgid, r->name)};
	s->st.open++;
	return 0;
}

static int end(struct cuda_scopes *s, struct launch_store *ls, const struct xsprof_scope *r)
{
	struct thread_scopes *t = hashmap__get(s->threads, r->tgid, r->tid);
	struct launch_range range;
	int i;

	if (t && t->depth > MAX_DEPTH) {
		t->depth--;
		return 0;
	}
	/* The innermost open scope of that name: ends out of order close their own. */
	for (i = t ? (int)t->depth - 1 : -1; i >= 0 && t->s[i].name != r->name; i--)
		;
	if (i < 0) {
		s->st.unpaired_ends++;
		return 0;
	}
	range = (struct launch_range){
		.start_ns = t->s[i].start_ns,
		.end_ns = r->time_ns > t->s[i].start_ns ? r->time_ns : t->s[i].start_ns,
		.tgid = r->tgid,
		.tid = r->tid,
		.name = t->s[i].named,
	};
	memmove(&t->s[i], &t->s[i + 1], (t->depth - 1 - (unsigned int)i) * sizeof(t->s[0]));
	t->depth--;
	s->st.open--;
	if (!t->depth)
		free(hashmap__remove(s->threads, r->tgid, r->tid));
	if (ls && !launch_store__add_range(ls, &range))
		s->st.ranges++;
	return 0;
}

struct ending {
	uint32_t tgid; /* 0: every process */
	struct thread_scopes **v;
	size_t n;
};

static void collect_ending(void *val, void *ctx)
{
	struct thread_scopes *t = val;
	struct ending *e = ctx;

	if (!e->tgid || t->tgid == e->tgid)
		e->v[e->n++] = t;
}

void cuda_scopes__end_open(struct cuda_scopes *s, struct launch_store *ls, uint32_t tgid,
			   uint64_t time_ns)
{
	struct ending e = {.tgid = tgid};
	size_t nr = hashmap__count(s->threads);

	if (!nr)
		return;
	e.v = malloc(nr * sizeof(*e.v));
	if (!e.v)
		return; /* they stay open, as they were */
	hashmap__for_each(s->threads, collect_ending, &e);
	for (size_t i = 0; i < e.n; i++) {
		struct thread_scopes *t = e.v[i];
		unsigned int kept = t->depth < MAX_DEPTH ? t->depth : MAX_DEPTH;

		/* Innermost first, as their ends would have come. */
		for (unsigned int k = kept; k-- > 0;) {
			struct launch_range range = {
				.start_ns = t->s[k].start_ns,
				.end_ns = time_ns > t->s[k].start_ns ? time_ns : t->s[k].start_ns,
				.tgid = t->tgid,
				.tid = t->tid,
				.name = t->s[k].named,
			};

			if (tgid)
				s->st.ended_at_exit++;
			else
				s->st.ended_at_end++;
			s->st.open--;
			if (ls && !launch_store__add_range(ls, &range))
				s->st.ranges++;
		}
		free(hashmap__remove(s->threads, t->tgid, t->tid));
	}
	free(e.v);
}

int cuda_scopes__add(struct cuda_scopes *s, struct launch_store *ls, const void *data, size_t size)
{
	const struct xsprof_scope *r = data;

	if (size < sizeof(*r) || r->type != XSPROF_REC_SCOPE || r->end > 1)
		return -EBADMSG;
	if (r->end) {
		s->st.ends++;
		return end(s, ls, r);
	}
	s->st.begins++;
	return begin(s, r);
}

void cuda_scopes__stats(const struct cuda_scopes *s, struct cuda_scopes_stats *ret)
{
	*ret = s->st;
}
