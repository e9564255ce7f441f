/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the flight recorder's files share (flight.h is what the service sees): its state, and
 * what one of its files offers another. flight.c: its life, the ring of frozen slices and the
 * processes it knows; flight_triggers.c: the rules and what trips them; flight_dumps.c: the
 * pending dumps, the writer thread, the dump directory and its retention.
 */
#ifndef XSPROF_DAEMON_SERVICE_FLIGHT_INTERNAL_H
#define XSPROF_DAEMON_SERVICE_FLIGHT_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/service/flight.h"
#include "daemon/session/dump.h"

struct hashmap;
struct json_object;

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

/* flight.c: pid's entry, made when new (NULL: the table is full, counted, or no memory). */
struct known *flight__note_known(struct flight *f, uint32_t pid, uint32_t uid, const char *comm,
				 uint64_t now);

/* flight_dumps.c */
/* The dump directory made, checked ours and writable, its bundles listed and retained: 0, or -1
 * and why in msg. */
int flight_dumps__open(struct flight *f, char *msg, size_t size);
/* The writer thread (arg: the flight): jobs from f->todo written, moved to f->done. */
void *flight_dumps__writer(void *arg);
/* The jobs queued or done and the dumps listed let go (the writer stopped). */
void flight_dumps__release(struct flight *f);
/*
 * A dump of [at - before, at + after] of uid's parts (all: everyone's), due at at + after:
 * made pending, its trigger's JSON taken (t). 0, -ENOSPC (pending full) or -ENOMEM.
 */
int flight_dumps__make_pending(struct flight *f, enum flight_kind k, uint32_t uid, bool all,
			       uint64_t at, double before_s, double after_s, struct json_object *t,
			       char *ret_name, size_t size);

#endif
