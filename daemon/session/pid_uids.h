/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Whose a process is, for a window slice: the uid its samples had (the stack table's entries;
 * under several, its newest image's, its last-made entry's),
 * else the uid its GPU records came with (the CUPTI socket's SO_PEERCRED, pid_uids__note),
 * else its uid now, else 0 (gone, having sent nothing: root's alone to see). And its name as a slice's stacks carry
 * it before re-rooting, "uid:N\x1fcomm".
 */
#ifndef XSPROF_DAEMON_SESSION_PID_UIDS_H
#define XSPROF_DAEMON_SESSION_PID_UIDS_H

#include <stddef.h>
#include <stdint.h>

struct pid_uids;
struct stack_names;
struct stack_table;

/* st may be NULL (every uid from /proc). NULL and errno on failure. */
struct pid_uids *pid_uids__new(const struct stack_table *st);
void pid_uids__free(struct pid_uids *u);
uint32_t pid_uids__get(struct pid_uids *u, uint32_t pid);
/* pid's uid as its GPU records said it, for when it has no samples (per record: a run of one
 * pid's records costs a compare). 0 or -ENOMEM. */
int pid_uids__note(struct pid_uids *u, uint32_t pid, uint32_t uid);

/* The names pid_uids__comm reads the process names from (may be NULL: "pid N"). */
void pid_uids__set_names(struct pid_uids *u, const struct stack_names *names);
/* A profile_name_fn (ctx: the pid_uids): "uid:N\x1fcomm", or "uid:N\x1fpid P". */
const char *pid_uids__comm(void *ctx, uint32_t pid, uint32_t tid);

/* A profile_stack_fn (ctx: the pid_uids): the stack as the names resolve it. */
int pid_uids__resolve(void *ctx, uint32_t pid, uint32_t stack_id, const char *const **ret_frames,
		      size_t *ret_n);

#endif
