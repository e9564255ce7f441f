/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xsprof scopes (cupti_inject/include/xsprof/scope.h) as the probes report them: a begin or an
 * end of a thread, with the name's address. An end closes the innermost open begin of the
 * same name on its thread, and the range goes to the launch store of the moment; the name is
 * read from the process once per address. Scopes still open when their process exits end at
 * its exit, and those open when the recording ends end then: both counted. Bounded: 64 open
 * scopes per thread, 4096 threads with scopes open, 4096 names; what a cap refuses is counted.
 */
#ifndef XSPROF_DAEMON_CUDA_CUDA_SCOPES_H
#define XSPROF_DAEMON_CUDA_CUDA_SCOPES_H

#include <stddef.h>
#include <stdint.h>

struct launch_store;
struct xsprof_scope;
struct cuda_scopes;

/* The name of a scope whose name could not be read (the process had gone). */
#define CUDA_SCOPES_UNREAD "[xsprof scope]"

struct cuda_scopes_stats {
	uint64_t begins, ends;
	uint64_t ranges;	 /* begin and end paired, given to a store */
	uint64_t unpaired_ends;	 /* an end without its begin on that thread */
	uint64_t too_deep;	 /* begins past the per-thread depth, not kept */
	uint64_t threads_capped; /* begins of a thread past the thread cap, not kept */
	uint64_t names_unread;	 /* names that could not be read */
	uint64_t names_capped;	 /* names past the name cap (shown as CUDA_SCOPES_UNREAD) */
	uint64_t open;		 /* scopes open now */
	uint64_t ended_at_exit;	 /* open when their process exited: ended at its exit */
	uint64_t ended_at_end;	 /* open when the recording ended: ended at its end */
};

struct cuda_scopes *cuda_scopes__new(void);
void cuda_scopes__free(struct cuda_scopes *s);

/* One probe record; a closed range goes to ls. 0, -EBADMSG (malformed) or -ENOMEM. */
int cuda_scopes__add(struct cuda_scopes *s, struct launch_store *ls, const void *data, size_t size);

/*
 * Process tgid exited at time_ns (0: every process, the recording ended): its open scopes end
 * then, into ls, counted as ended at exit (at the end).
 */
void cuda_scopes__end_open(struct cuda_scopes *s, struct launch_store *ls, uint32_t tgid,
			   uint64_t time_ns);

/* For tests: the name read for (tgid, addr) comes from fn instead of the process. */
typedef int (*cuda_scopes_read_fn)(uint32_t tgid, uint64_t addr, char *buf, size_t size);
void cuda_scopes__set_reader(struct cuda_scopes *s, cuda_scopes_read_fn fn);

void cuda_scopes__stats(const struct cuda_scopes *s, struct cuda_scopes_stats *ret);

#endif
