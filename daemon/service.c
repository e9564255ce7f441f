// SPDX-License-Identifier: Apache-2.0
/*
 * The service: an always-on recording folded into the rolling store every slice, recordings on
 * request, and the control API, all on one sd-event loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "cupti_inject/xsprof_wire.h"
#include "daemon/cuda_probes.h"
#include "daemon/cupti_server.h"
#include "daemon/fold.h"
#include "daemon/gpu_join.h"
#include "daemon/group_by.h"
#include "daemon/launch_store.h"
#include "daemon/http.h"
#include "daemon/log.h"
#include "daemon/oneshot.h"
#include "daemon/options.h"
#include "daemon/preflight.h"
#include "daemon/recording.h"
#include "daemon/sampler.h"
#include "daemon/service.h"
#include "daemon/service_gpu.h"
#include "daemon/stack_table.h"
#include "daemon/stack_names.h"
#include "daemon/store.h"
#include "daemon/symbolize/symbolizer.h"
#include "daemon/unwind/unwinder.h"
#include "output/calltree.h"
#include "output/output.h"
#include "output/profile.h"

#define SLICE_US	(10 * 1000000ull) /* rolling store granularity */
#define MAX_BODY	(64 * 1024)
#define MAX_RECORDINGS	4   /* running at once */
#define MAX_FINISHED	16  /* kept for fetching */
#define FINISHED_KEEP_S 300 /* a finished result is kept this long, or until fetched */
#define MAX_WAITERS	8
#define MAX_ATTACHED	1024
/* What one user other than root may hold, so that root and other users always find room. */
#define RECORDINGS_PER_UID    2
#define RECORDINGS_ROOT_SLOTS 1 /* of MAX_RECORDINGS, only root may take */
#define FINISHED_PER_UID      4
#define ATTACHED_PER_UID      64
#define ATTACHED_ROOT_SLOTS   64
#define WAIT_GRACE_S	      60 /* a client waits for a recording this long past its end */
#define MAX_SINCE_S	      (7 * 24 * 3600u)
#define OWNER_CHECK_US	      (1000 * 1000ull)
#define MAX_REQUEST_PIDS      64
#define RECORD_MAX_TIMELINE   (2u * 1000 * 1000) /* samples kept for a trace: ~50 MiB */

enum rec_state { REC_RUNNING, REC_DONE, REC_FAILED };

/* The correlation strategies a session may ask for; their counters are kept per name. */
static const char *const strategies[] = {"auto", "id", "timestamp", "stream"};
#define NR_STRATEGIES 4

static int strategy_index(const char *name)
{
	for (int i = 0; i < NR_STRATEGIES; i++)
		if (name && !strcmp(name, strategies[i]))
			return i;
	return -1;
}

/* An attached process, and who attached it (a non-root user only its own, while it is). */
struct attachment {
	pid_t pid;
	uid_t by;
	bool by_root;
	uint64_t start; /* its start time: a reused pid is another process */
};

/* A recording asked for through the API. */
struct svc_rec {
	unsigned int id;
	uid_t owner;
	bool owner_root;
	enum rec_state state;
	enum output_format format;
	unsigned int freq_hz;
	double duration_s;
	pid_t pids[MAX_REQUEST_PIDS];
	uint64_t pid_starts[MAX_REQUEST_PIDS]; /* start times: a reused pid is another process */
	int nr_pids;
	bool children;		  /* descendants followed (in the kernel) */
	struct session_view view; /* --gpu-mode, --weight, --correlate */
	uint32_t *launch_pids;	  /* at the end: processes that launched, sorted */
	size_t nr_launch_pids;
	uint64_t started_ns, finished_ns;
	struct recording *rec;
	sd_event_source *end, *exit_watch;
	int pidfd;
	char *result;
	size_t result_len;
	char error[256];
	char note[128]; /* why it ended early, if it did */
	struct MHD_Connection *waiters[MAX_WAITERS];
	int nr_waiters;
	struct svc_rec *next;
};

/* Requests refused at a cap, and recordings ended because their process changed hands. */
struct refusals {
	uint64_t recordings_full, recordings_uid, record_seconds_uid;
	uint64_t attach_full, attach_uid;
	uint64_t attach_dead_pruned;
	uint64_t ended_owner_changed, detached_owner_changed;
};

struct service {
	struct xsprofd_opts *opts;
	int argc;
	char **argv;
	sd_event *ev;
	struct symbolizer *sym;
	struct recording *always; /* whole machine, low frequency */
	struct store *store;
	struct store *gpu_window; /* GPU work of the same slices, under the same uid roots */
	struct correlate_stats corr[NR_STRATEGIES]; /* per strategy, every session together */
	sd_event_source *slice_timer;
	uint64_t slice_start_ns;
	struct http_server *unix_http, *tcp_http;
	struct cupti_server *cupti; /* GPU timing from CUDA processes; NULL when off */
	sd_event_source *cupti_io;
	uint64_t cupti_malformed_seen;
	char *token;
	gid_t group;
	uint64_t started_ns;
	struct svc_rec *recs;
	unsigned int next_id;
	struct attachment attached[MAX_ATTACHED];
	int nr_attached;
	struct http_unix_socket unix_sock;
	sd_event_source *owner_timer;
	struct refusals refused;
	bool stopping;
	struct xsprof_cpu_stats totals; /* BPF counters of always-on recordings already retired */
	uint64_t totals_bad;
};

/* Per request: the body read so far and who sent it. */
struct req {
	char *body;
	size_t len;
	bool too_big;
	bool tcp;
	bool authed; /* root, or a valid TCP token */
	bool member;
	uid_t uid;
	struct svc_rec *waiting; /* set while suspended on a recording */
	bool resumed;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* ---- replies ---- */

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status, const char *type,
			     const void *body, size_t len)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_json(struct MHD_Connection *c, unsigned int status,
				  struct json_object *j)
{
	const char *s = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY |
								  JSON_C_TO_STRING_NOSLASHESCAPE);
	enum MHD_Result ret = reply(c, status, "application/json", s, strlen(s));

	json_object_put(j);
	return ret;
}

static enum MHD_Result reply_error(struct MHD_Connection *c, unsigned int status, const char *error,
				   const char *hint)
{
	struct json_object *j = json_object_new_object();

	json_object_object_add(j, "error", json_object_new_string(error));
	if (hint)
		json_object_object_add(j, "hint", json_object_new_string(hint));
	return reply_json(c, status, j);
}

static const char *content_type(enum output_format f)
{
	switch (f) {
	case OUTPUT_SVG:
		return "image/svg+xml";
	case OUTPUT_PPROF:
		return "application/octet-stream";
	case OUTPUT_CHROME_JSON:
		return "application/json";
	default:
		return "text/plain; charset=utf-8";
	}
}

/*
 * Formats of the rolling window, which holds aggregated stacks only: no Chrome trace, which
 * needs a timeline (recordings keep one when asked for it).
 */
static bool window_format(const char *name, enum output_format *ret)
{
	return !output__format_from_name(name, ret) && *ret != OUTPUT_CHROME_JSON;
}

/* A recording's timeline for the Chrome trace: its samples and their named stacks. */
struct timeline {
	const struct profile_sample *samples;
	size_t n;
	struct stack_names *names;
};

/* A profile in any format; tl is needed for the Chrome trace only (NULL otherwise). */
static int write_tree(const struct calltree *tree, enum output_format fmt, FILE *f,
		      const struct output_meta *meta, unsigned int freq_hz, uint64_t start_ns,
		      uint64_t end_ns, const struct timeline *tl)
{
	struct profile_data pd = {
		.cpu_tree = tree,
		.sample_period_ns = 1000000000ull / (freq_hz ? freq_hz : 1),
		.mode = GPU_MODE_CPU,
		.unit = WEIGHT_SAMPLES,
		.start_ns = start_ns,
		.end_ns = end_ns,
	};
	struct timespec rt, mt;

	/* Outputs that show wall time get one (realtime - monotonic) pair per profile. */
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mt);
	pd.realtime_offset_ns =
		(int64_t)(rt.tv_sec - mt.tv_sec) * 1000000000 + (rt.tv_nsec - mt.tv_nsec);
	if (tl && tl->names) {
		pd.samples = tl->samples;
		pd.nr_samples = tl->n;
		pd.stack = stack_names__resolve;
		pd.name = stack_names__comm;
		pd.ctx = tl->names;
	}
	if (fmt == OUTPUT_FOLDED || fmt == OUTPUT_SVG)
		return output__write(tree, fmt, f, meta);
	return output__write_profile(&pd, fmt, f, meta);
}

/* ---- permissions ---- */

static int pid_owner(pid_t pid, uid_t *ret)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (stat(path, &st))
		return -errno;
	*ret = st.st_uid;
	return 0;
}

/* Owner and start time (clock ticks since boot) of pid: who it is now, and which process. */
static int pid_identity(pid_t pid, uid_t *ret_uid, uint64_t *ret_start)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	struct stat st;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = fstat(fd, &st) ? -1 : read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	/* The command name may hold anything: fields count from its closing parenthesis. */
	p = strrchr(buf, ')');
	for (field = 2; p && *p && field < 22; p++)
		field += *p == ' ';
	if (!p || sscanf(p, "%llu", &start) != 1)
		return -EIO;
	*ret_uid = st.st_uid;
	*ret_start = start;
	return 0;
}

/* 0, or an error already replied through *ret (for the caller to return). */
static bool may_profile(struct req *q, struct MHD_Connection *c, const pid_t *pids, int n,
			enum MHD_Result *ret)
{
	char msg[160];
	uid_t owner = 0;

	for (int i = 0; i < n; i++) {
		if (pid_owner(pids[i], &owner)) {
			snprintf(msg, sizeof(msg), "no such process: %d", (int)pids[i]);
			*ret = reply_error(c, 404, msg, "check the pid with ps");
			return false;
		}
		if (!q->authed && owner != q->uid) {
			snprintf(msg, sizeof(msg), "process %d belongs to another user",
				 (int)pids[i]);
			*ret = reply_error(c, 403, msg,
					   "members of group xsprof may profile only their own "
					   "processes; ask root for others");
			return false;
		}
	}
	if (!n && !q->authed) {
		*ret = reply_error(c, 403, "whole-machine recordings need root",
				   "name your own processes with pids (xsprofctl record --pid)");
		return false;
	}
	return true;
}

/* ---- status ---- */

static void add_u64(struct json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_int64((int64_t)v));
}

static long rss_bytes(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * sysconf(_SC_PAGESIZE);
}

/* Counters since start: recordings retired by reloads plus the running one, read live. */
static void always_counters(struct service *s, struct xsprof_cpu_stats *ret, uint64_t *ret_bad)
{
	struct xsprof_cpu_stats now;
	struct sampler_stats us;

	*ret = s->totals;
	*ret_bad = s->totals_bad;
	if (!s->always)
		return;
	if (!sampler__read_stats(recording__sampler(s->always), NULL, &now))
		xsprof_cpu_stats__add(ret, &now);
	sampler__user_stats(recording__sampler(s->always), &us);
	*ret_bad += us.bad_records;
}

/* How the always-on recording walked user stacks (--unwind), and its tables. */
static void status_unwind(struct service *s, struct json_object *j)
{
	struct xsprof_unwind_stats b;
	struct unwinder_stats t;
	struct json_object *u;

	if (!s->always || recording__unwind_stats(s->always, &b, &t))
		return;
	u = json_object_new_object();
	add_u64(u, "walks_with_tables", b.walks_cfi);
	add_u64(u, "walks_frame_pointers_only", b.walks_fp);
	add_u64(u, "frames_from_tables", b.frames_cfi);
	add_u64(u, "frames_from_frame_pointers", b.frames_fp);
	add_u64(u, "end_outermost", b.end_outermost);
	add_u64(u, "end_frame_pointer_chain", b.end_fp_chain);
	add_u64(u, "end_no_table", b.end_no_table);
	add_u64(u, "end_no_rule", b.end_invalid);
	add_u64(u, "end_unreadable", b.end_unreadable);
	add_u64(u, "end_bad_cfa", b.end_bad_cfa);
	add_u64(u, "end_depth_cap", b.end_depth);
	add_u64(u, "tables", t.tables);
	add_u64(u, "table_rows", t.rows);
	add_u64(u, "table_rows_cap", t.max_rows);
	add_u64(u, "tables_evicted", t.tables_evicted);
	add_u64(u, "bpf_map_bytes", t.map_bytes);
	json_object_object_add(j, "unwind", u);
}
static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* The control API's connections and what its caps refused, both servers together. */
static struct json_object *api_json(struct service *s)
{
	struct http_server_stats t = {}, u;
	struct http_server *servers[] = {s->unix_http, s->tcp_http};
	struct json_object *o = json_object_new_object();

	for (size_t i = 0; i < 2; i++) {
		if (!servers[i])
			continue;
		http_server__stats(servers[i], &u);
		t.conns += u.conns;
		t.accepted += u.accepted;
		t.refused_full += u.refused_full;
		t.refused_share += u.refused_share;
		t.header_timeouts += u.header_timeouts;
		t.wait_timeouts += u.wait_timeouts;
		t.waiters_hung_up += u.waiters_hung_up;
		t.accept_errors += u.accept_errors;
	}
	add_u64(o, "connections", t.conns);
	add_u64(o, "accepted", t.accepted);
	add_u64(o, "refused_at_limit", t.refused_full);
	add_u64(o, "refused_over_share", t.refused_share);
	add_u64(o, "header_timeouts", t.header_timeouts);
	add_u64(o, "wait_timeouts", t.wait_timeouts);
	add_u64(o, "waiters_hung_up", t.waiters_hung_up);
	add_u64(o, "accept_errors", t.accept_errors);
	add_u64(o, "recordings_refused_full", s->refused.recordings_full);
	add_u64(o, "recordings_refused_user_cap", s->refused.recordings_uid);
	add_u64(o, "recordings_refused_user_seconds", s->refused.record_seconds_uid);
	add_u64(o, "recordings_ended_owner_changed", s->refused.ended_owner_changed);
	add_u64(o, "attach_refused_full", s->refused.attach_full);
	add_u64(o, "attach_refused_user_cap", s->refused.attach_uid);
	add_u64(o, "attach_gone_pruned", s->refused.attach_dead_pruned);
	add_u64(o, "detached_owner_changed", s->refused.detached_owner_changed);
	return o;
}

/* Every cap a client can run into, so a refusal can be explained. */
static struct json_object *limits_json(struct service *s)
{
	struct json_object *o = json_object_new_object();

	add_u64(o, "connections", HTTP_MAX_CONNECTIONS);
	add_u64(o, "connections_root_only", HTTP_ROOT_RESERVE);
	add_u64(o, "connections_per_user", HTTP_MAX_CONNECTIONS_PER_PEER);
	add_u64(o, "request_deadline_s", HTTP_HEADER_DEADLINE_S);
	add_u64(o, "recordings", MAX_RECORDINGS);
	add_u64(o, "recordings_root_only", RECORDINGS_ROOT_SLOTS);
	add_u64(o, "recordings_per_user", RECORDINGS_PER_UID);
	add_u64(o, "recorded_seconds_per_user", s->opts->max_record_s);
	add_u64(o, "results_kept", MAX_FINISHED);
	add_u64(o, "results_kept_per_user", FINISHED_PER_UID);
	add_u64(o, "attached", MAX_ATTACHED);
	add_u64(o, "attached_root_only", ATTACHED_ROOT_SLOTS);
	add_u64(o, "attached_per_user", ATTACHED_PER_UID);
	return o;
}

/* Launches joined to GPU work, per strategy, over every session so far. */
static struct json_object *correlation_json(struct service *s)
{
	struct json_object *o = json_object_new_object();

	for (int i = 0; i < NR_STRATEGIES; i++) {
		const struct correlate_stats *c = &s->corr[i];
		struct json_object *k = json_object_new_object();

		add_u64(k, "matched", c->matched);
		add_u64(k, "unmatched_launches", c->unmatched_cpu);
		add_u64(k, "unmatched_gpu", c->unmatched_gpu);
		add_u64(k, "late_launches", c->late_cpu);
		add_u64(k, "late_gpu", c->late_gpu);
		json_object_object_add(o, strategies[i], k);
	}
	return o;
}

static struct json_object *status_json(struct service *s)
{
	struct json_object *j = json_object_new_object(), *a, *recs, *cnt, *st, *mem;
	struct xsprof_cpu_stats c;
	struct store_stats ss;
	uint64_t bad;

	json_object_object_add(j, "version", json_object_new_string(XSPROF_VERSION));
	add_u64(j, "pid", (uint64_t)getpid());
	add_u64(j, "uptime_s", (now_ns() - s->started_ns) / 1000000000ull);
	add_u64(j, "freq_hz", s->opts->freq_hz);
	add_u64(j, "window_s", s->opts->window_s);
	add_u64(j, "cpus", s->always ? (uint64_t)recording__nr_attached(s->always) : 0);
	a = json_object_new_array();
	for (int i = 0; i < s->nr_attached; i++)
		json_object_array_add(a, json_object_new_int(s->attached[i].pid));
	json_object_object_add(j, "attached", a);
	recs = json_object_new_array();
	for (struct svc_rec *r = s->recs; r; r = r->next) {
		struct json_object *o = json_object_new_object();

		add_u64(o, "id", r->id);
		json_object_object_add(o, "state",
				       json_object_new_string(r->state == REC_RUNNING ? "running"
							      : r->state == REC_DONE  ? "done"
										      : "failed"));
		add_u64(o, "owner_uid", r->owner);
		if (r->note[0])
			json_object_object_add(o, "note", json_object_new_string(r->note));
		json_object_array_add(recs, o);
	}
	json_object_object_add(j, "recordings", recs);
	always_counters(s, &c, &bad);
	cnt = json_object_new_object();
	add_u64(cnt, "samples", c.samples);
	add_u64(cnt, "kept", c.emitted);
	add_u64(cnt, "idle", c.idle);
	add_u64(cnt, "lost_ring_buffer_full", c.drop_ringbuf);
	add_u64(cnt, "malformed_records", bad);
	add_u64(cnt, "kernel_stack_unreadable", c.kstack_err);
	add_u64(cnt, "user_stack_unreadable", c.ustack_err);
	json_object_object_add(j, "counters", cnt);
	status_unwind(s, j);
	store__stats(s->store, &ss);
	st = json_object_new_object();
	add_u64(st, "slices", ss.slices);
	add_u64(st, "samples", ss.samples);
	add_u64(st, "bytes", ss.bytes);
	add_u64(st, "cap_bytes", ss.cap_bytes);
	add_u64(st, "expired_slices", ss.expired_slices);
	add_u64(st, "dropped_slices", ss.dropped_slices);
	add_u64(st, "dropped_samples", ss.dropped_samples);
	add_u64(st, "span_s", ss.newest_ns ? (ss.newest_ns - ss.oldest_ns) / 1000000000ull : 0);
	json_object_object_add(j, "store", st);
	mem = json_object_new_object();
	add_u64(mem, "rss_bytes", (uint64_t)rss_bytes());
	json_object_object_add(j, "memory", mem);
	json_object_object_add(j, "correlation", correlation_json(s));
	json_object_object_add(j, "api", api_json(s));
	json_object_object_add(j, "limits", limits_json(s));
	if (s->always && recording__cuda(s->always)) {
		struct cuda_probes_stats ps;
		struct json_object *g = json_object_new_object();

		cuda_probes__stats(recording__cuda(s->always), &ps);
		add_u64(g, "probed_files", ps.targets);
		add_u64(g, "uprobes", ps.links);
		add_u64(g, "calls", ps.bpf.calls);
		add_u64(g, "attach_failed", ps.attach_failed);
		add_u64(g, "bad_records", ps.bad_records);
		add_u64(g, "store_failures", ps.store_failures);
		/* Emptied with each window slice: it never fills. */
		add_u64(g, "launches_in_slice",
			launch_store__nr_events(cuda_probes__store(recording__cuda(s->always))));
		json_object_object_add(j, "cuda_probes", g);
	}
	if (s->cupti) {
		struct cupti_server_stats cs;
		struct json_object *g = json_object_new_object();

		cupti_server__stats(s->cupti, &cs);
		add_u64(g, "connections", cs.conns);
		add_u64(g, "accepted", cs.accepted);
		add_u64(g, "malformed_connections", cs.malformed);
		add_u64(g, "kernels", cs.records[XSPROF_WIRE_KERNEL]);
		add_u64(g, "memcpys", cs.records[XSPROF_WIRE_MEMCPY]);
		add_u64(g, "memsets", cs.records[XSPROF_WIRE_MEMSET]);
		add_u64(g, "api_calls", cs.records[XSPROF_WIRE_API]);
		add_u64(g, "sender_dropped",
			sat_add(sat_add(cs.sender_dropped_full, cs.sender_dropped_cupti),
				cs.sender_dropped_other));
		add_u64(g, "refused_connections", cs.rejected);
		add_u64(g, "records_held", cs.store.records);
		add_u64(g, "records_evicted", cs.store.evicted);
		json_object_object_add(j, "gpu", g);
	}
	return j;
}

static void notify_status(struct service *s)
{
	struct xsprof_cpu_stats c;
	struct store_stats ss;
	uint64_t bad;

	always_counters(s, &c, &bad);
	store__stats(s->store, &ss);
	sd_notifyf(0,
		   "STATUS=%u Hz on %d CPUs; %llu samples (%llu lost); window holds %llu samples "
		   "in %zu slices, %zu KiB of %zu",
		   s->opts->freq_hz, s->always ? recording__nr_attached(s->always) : 0,
		   (unsigned long long)c.samples, (unsigned long long)(c.drop_ringbuf + bad),
		   (unsigned long long)ss.samples, ss.slices, ss.bytes >> 10, ss.cap_bytes >> 10);
}

/* ---- the always-on recording and its slices ---- */

static int start_always(struct service *s)
{
	struct recording_opts ro = {
		.freq_hz = s->opts->freq_hz,
		.include_idle = s->opts->include_idle,
		.ring_bytes = s->opts->ring_buffer_bytes,
		.max_stacks = s->opts->max_stacks,
		.pids = s->opts->pids,
		.nr_pids = s->opts->nr_pids,
		.proc_events = true, /* the one recording that feeds exec/exit to s->sym */
		.unwind_mode = s->opts->unwind,
		/* CUDA probes for attached processes (and --cuda-lib files) only: none otherwise. */
		.cuda = !s->opts->no_cuda,
		.cuda_libs = s->opts->cuda_libs,
		.nr_cuda_libs = s->opts->nr_cuda_libs,
	};
	const char *what;
	int err;

	s->always = recording__new(s->ev, &ro, s->sym, &what);
	if (!s->always) {
		err = -errno;
		preflight__explain_bpf_error(what, err);
		return err;
	}
	err = recording__start(s->always);
	if (err) {
		preflight__explain_bpf_error("attaching the sampler to perf events", err);
		recording__free(s->always);
		s->always = NULL;
		return err;
	}
	s->slice_start_ns = now_ns();
	return 0;
}

static int take_old(void *ctx, const struct gpu_activity *a)
{
	return a->end_ns < *(const uint64_t *)ctx ? 0 : 1;
}

/*
 * The slice's GPU work: the always-on launches joined to the GPU records that ended in it,
 * into the GPU window. The launches go with the slice, so their store never fills; records are
 * let go once no running recording may still want them.
 */
static void close_gpu_slice(struct service *s, uint64_t start, uint64_t end)
{
	struct cuda_probes *cp = s->always ? recording__cuda(s->always) : NULL;
	struct gpu_store *gs = s->cupti ? cupti_server__store(s->cupti) : NULL;
	struct gpu_join_scope scope = {.since_ns = start};
	struct launch_store *ls = NULL;
	struct calltree *tree = NULL;
	uint64_t cutoff = end;
	int err = 0;

	if (cp && cuda_probes__rotate_store(cp, &ls))
		log_warn("could not start a new launch slice (out of memory); launches go on into "
			 "the current one");
	if (gs)
		while (cupti_server__process(s->cupti) > 0)
			;
	if (ls || gs)
		err = gpu_slice__tree(ls, gs, &scope, s->sym, "auto", s->opts->freq_hz, &tree,
				      &s->corr[0]);
	if (!err && tree) {
		err = store__add(s->gpu_window, start, end, tree);
		tree = NULL;
	}
	if (err && err != -E2BIG)
		log_warn("joining the slice's GPU work failed: %s", strerror(-err));
	calltree__free(tree);
	launch_store__free(ls);
	for (struct svc_rec *r = s->recs; r; r = r->next)
		if (r->state == REC_RUNNING && r->started_ns < cutoff)
			cutoff = r->started_ns;
	if (gs)
		gpu_store__take(gs, 0, take_old, &cutoff);
	store__expire(s->gpu_window, end);
}

/* Fold what the always-on recording counted since the last slice into the store. */
static void close_slice(struct service *s)
{
	struct stack_table *st;
	struct calltree *tree;
	uint32_t *pids;
	size_t n;
	uint64_t end = now_ns();
	int err;

	if (!s->always || recording__rotate(s->always, &st, &pids, &n)) {
		log_warn("could not start a new slice (out of memory); the current one goes on");
		return;
	}
	tree = calltree__new();
	err = tree ? fold_stacks_by_uid(st, s->sym, tree, NULL) : -ENOMEM;
	if (!err) {
		err = store__add(s->store, s->slice_start_ns, end, tree);
		if (err == -E2BIG)
			log_warn("a %llu s slice is larger than --store-mb %u on its own: dropped "
				 "(raise --store-mb)",
				 (unsigned long long)((end - s->slice_start_ns) / 1000000000ull),
				 s->opts->store_mb);
	} else {
		log_err("naming a slice failed: %s; its samples are lost", strerror(-err));
		calltree__free(tree);
	}
	close_gpu_slice(s, s->slice_start_ns, end);
	/* Named: their mappings can go; a process still running is snapshotted again. */
	for (size_t i = 0; i < n; i++)
		symbolizer__forget_process(s->sym, (pid_t)pids[i]);
	free(pids);
	stack_table__free(st);
	store__expire(s->store, end);
	s->slice_start_ns = end;
}

static void prune_recordings(struct service *s);

static int on_slice(sd_event_source *src, uint64_t usec, void *ctx)
{
	struct service *s = ctx;

	close_slice(s);
	prune_recordings(s);
	notify_status(s);
	/* A time source fires once: re-arm it, or the window is cut only by queries. */
	sd_event_source_set_time_relative(src, SLICE_US);
	return sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
}

/* ---- recordings ---- */

static struct svc_rec *find_rec(struct service *s, unsigned int id)
{
	for (struct svc_rec *r = s->recs; r; r = r->next)
		if (r->id == id)
			return r;
	return NULL;
}

static void wake_waiters(struct service *s, struct svc_rec *r)
{
	if (!r->nr_waiters)
		return;
	for (int i = 0; i < r->nr_waiters; i++)
		http__resume(r->waiters[i]);
	r->nr_waiters = 0;
	/* Resumed connections are only served when MHD runs again: run it now. */
	http_server__run(s->unix_http);
	http_server__run(s->tcp_http);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The processes of r that launched CUDA work (descendants included), to take their records. */
static void rec_launch_pids(struct svc_rec *r, const struct launch_store *ls)
{
	const struct launch_event *ev = ls ? launch_store__events(ls) : NULL;
	size_t n = ls ? launch_store__nr_events(ls) : 0, k = 0;

	r->launch_pids = malloc((n + r->nr_pids + 1) * sizeof(uint32_t));
	if (!r->launch_pids)
		return;
	for (int i = 0; i < r->nr_pids; i++)
		r->launch_pids[k++] = (uint32_t)r->pids[i];
	for (size_t i = 0; i < n; i++)
		if (!k || r->launch_pids[k - 1] != ev[i].tgid)
			r->launch_pids[k++] = ev[i].tgid;
	qsort(r->launch_pids, k, sizeof(uint32_t), cmp_u32);
	r->nr_launch_pids = k;
}

static bool rec_accepts(void *ctx, uint32_t pid)
{
	const struct svc_rec *r = ctx;

	if (!r->nr_pids)
		return true; /* whole machine */
	return bsearch(&pid, r->launch_pids, r->nr_launch_pids, sizeof(pid), cmp_u32);
}

/* A stopped recording's profile in its format, into r->result. */
static int rec_render(struct service *s, struct svc_rec *r, uint64_t *ret_samples)
{
	struct output_meta meta = {.unit = profile__unit_name(r->view.cpu_mode != XSPROFD_MODE_CPU
								      ? WEIGHT_US
								      : r->view.unit)};
	struct gpu_join_scope scope = {
		.accept_pid = rec_accepts, .ctx = r, .since_ns = r->started_ns};
	struct cuda_probes *cp = recording__cuda(r->rec);
	struct session_profile sp;
	struct timespec rt, mt;
	char title[160];
	uint64_t dropped = 0;
	FILE *f;
	int err, si = strategy_index(r->view.strategy);

	/* What the processes sent before exiting is still queued. */
	while (s->cupti && cupti_server__process(s->cupti) > 0)
		;
	rec_launch_pids(r, cp ? cuda_probes__store(cp) : NULL);
	err = session_profile__build(&sp, r->rec, s->sym,
				     s->cupti ? cupti_server__store(s->cupti) : NULL, &scope,
				     &r->view, &s->corr[si < 0 ? 0 : si]);
	snprintf(title, sizeof(title), "xsprof recording %u: %.1f s %s at %u Hz", r->id,
		 (r->finished_ns - r->started_ns) / 1e9,
		 r->view.cpu_mode == XSPROFD_MODE_OFFCPU ? "off-CPU time"
		 : r->view.cpu_mode == XSPROFD_MODE_WALL ? "wall time"
							 : "on-CPU samples",
		 r->freq_hz);
	meta.title = title;
	sp.pd.start_ns = r->started_ns;
	sp.pd.end_ns = r->finished_ns;
	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mt);
	sp.pd.realtime_offset_ns =
		(int64_t)(rt.tv_sec - mt.tv_sec) * 1000000000 + (rt.tv_nsec - mt.tv_nsec);
	recording__timeline(r->rec, &(size_t){0}, &dropped);
	if (dropped)
		log_warn("recording %u: %llu samples left off its trace (at most %u)", r->id,
			 (unsigned long long)dropped, RECORD_MAX_TIMELINE);
	f = err ? NULL : open_memstream(&r->result, &r->result_len);
	if (!err)
		err = f ? output__write_profile(&sp.pd, r->format, f, &meta) : -errno;
	if (f && fclose(f) && !err)
		err = -EIO;
	if (sp.tree)
		*ret_samples = calltree__total(sp.tree);
	if (sp.pd.nr_launches || sp.pd.nr_gpu)
		log_info("recording %u: %zu launches, %zu GPU records, %zu joined (%s)", r->id,
			 sp.pd.nr_launches, sp.pd.nr_gpu, sp.pd.nr_joins, r->view.strategy);
	session_profile__release(&sp);
	return err;
}

static void finish_rec(struct service *s, struct svc_rec *r)
{
	uint64_t samples = 0;
	int err;

	if (r->state != REC_RUNNING)
		return;
	recording__stop(r->rec);
	sd_event_source_disable_unref(r->end);
	sd_event_source_disable_unref(r->exit_watch);
	r->end = r->exit_watch = NULL;
	if (r->pidfd >= 0)
		close(r->pidfd);
	r->pidfd = -1;
	r->finished_ns = now_ns();
	err = rec_render(s, r, &samples);
	if (err) {
		r->state = REC_FAILED;
		snprintf(r->error, sizeof(r->error), "building the profile failed: %s",
			 strerror(-err));
	} else {
		r->state = REC_DONE;
		log_info("recording %u done: %llu samples", r->id, (unsigned long long)samples);
	}
	/* Detach its BPF now; only the result is kept. */
	recording__free(r->rec);
	r->rec = NULL;
	free(r->launch_pids);
	r->launch_pids = NULL;
	for (int i = 0; i < r->nr_pids; i++)
		symbolizer__forget_process(s->sym, r->pids[i]);
	wake_waiters(s, r);
}

static void free_rec(struct svc_rec *r)
{
	recording__free(r->rec);
	group_by__free(r->view.groups);
	sd_event_source_disable_unref(r->end);
	sd_event_source_disable_unref(r->exit_watch);
	if (r->pidfd >= 0)
		close(r->pidfd);
	free(r->result);
	free(r->launch_pids);
	free(r);
}

static void prune_recordings(struct service *s)
{
	struct svc_rec **pp = &s->recs;
	uint64_t now = now_ns();
	int kept = 0;

	/* Newest first: past the caps, older results go, and one user's only push out its own. */
	while (*pp) {
		struct svc_rec *r = *pp;
		int mine = 0;
		bool old;

		for (struct svc_rec *o = s->recs; o != r; o = o->next)
			mine += o->state != REC_RUNNING && !o->owner_root && !r->owner_root &&
				o->owner == r->owner;
		old = r->state != REC_RUNNING &&
		      (now - r->finished_ns > FINISHED_KEEP_S * 1000000000ull ||
		       kept >= MAX_FINISHED || mine >= FINISHED_PER_UID);

		if (old && !r->nr_waiters) {
			*pp = r->next;
			free_rec(r);
			continue;
		}
		if (r->state != REC_RUNNING)
			kept++;
		pp = &r->next;
	}
}

struct rec_ctx {
	struct service *s;
	struct svc_rec *r;
};

static int on_rec_timer(sd_event_source *src, uint64_t usec, void *ctx)
{
	struct rec_ctx *rc = ctx;

	finish_rec(rc->s, rc->r);
	return 0;
}

static int on_rec_exit(sd_event_source *src, int fd, uint32_t revents, void *ctx)
{
	struct rec_ctx *rc = ctx;

	log_info("recording %u: process %d exited", rc->r->id, (int)rc->r->pids[0]);
	finish_rec(rc->s, rc->r);
	return 0;
}

/* Caps on running recordings: in all, per user, and a user's recorded seconds. */
static bool recording_allowed(struct service *s, struct req *q, double duration_s,
			      struct MHD_Connection *c, enum MHD_Result *ret)
{
	unsigned int all = 0, mine = 0;
	double seconds = duration_s;
	char msg[200];

	for (struct svc_rec *r = s->recs; r; r = r->next) {
		if (r->state != REC_RUNNING)
			continue;
		all++;
		if (!r->owner_root && r->owner == q->uid) {
			mine++;
			seconds += r->duration_s;
		}
	}
	if (all >= MAX_RECORDINGS ||
	    (!q->authed && all >= MAX_RECORDINGS - RECORDINGS_ROOT_SLOTS)) {
		s->refused.recordings_full++;
		*ret = reply_error(c, 429, "too many recordings running",
				   "wait for one to finish (xsprofctl status lists them)");
		return false;
	}
	if (q->authed)
		return true;
	if (mine >= RECORDINGS_PER_UID) {
		s->refused.recordings_uid++;
		snprintf(msg, sizeof(msg),
			 "you already have %u recordings running (at most %u per "
			 "user)",
			 mine, RECORDINGS_PER_UID);
		*ret = reply_error(c, 429, msg, "wait for one to finish");
		return false;
	}
	if (seconds > s->opts->max_record_s) {
		s->refused.record_seconds_uid++;
		snprintf(msg, sizeof(msg),
			 "your running recordings would add up to %.0f s, over %u s per user",
			 seconds, s->opts->max_record_s);
		*ret = reply_error(c, 429, msg, "record for less time, or wait for one to finish");
		return false;
	}
	return true;
}

/* children, gpu_mode, weight and correlate of a request (all optional) into r. */
static int parse_view(struct json_object *body, struct svc_rec *r, char *msg, size_t size)
{
	struct json_object *v;
	const char *str;

	r->children = true;
	r->view.strategy = "auto";
	r->view.freq_hz = r->freq_hz;
	if (body && json_object_object_get_ex(body, "children", &v))
		r->children = json_object_get_boolean(v);
	if (body && json_object_object_get_ex(body, "gpu_mode", &v)) {
		str = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
		if (profile__mode_from_name(str, &r->view.mode)) {
			snprintf(msg, size, "gpu_mode must be cpu, gpu or merged");
			return -EINVAL;
		}
		r->view.mode_set = true;
	}
	if (body && json_object_object_get_ex(body, "weight", &v)) {
		str = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
		if (profile__unit_from_name(str, &r->view.unit)) {
			snprintf(msg, size, "weight must be samples or us");
			return -EINVAL;
		}
	}
	if (body && json_object_object_get_ex(body, "mode", &v)) {
		str = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
		if (xsprofd_mode__from_name(str, &r->view.cpu_mode)) {
			snprintf(msg, size, "mode must be cpu, offcpu or wall");
			return -EINVAL;
		}
	}
	if (body && json_object_object_get_ex(body, "group_by", &v)) {
		static const char *const groups[] = {"", "unit", "container", "comm"};

		str = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
		for (int g = XSPROFD_GROUP_UNIT; g <= XSPROFD_GROUP_COMM && !r->view.group_by; g++)
			if (!strcmp(str, groups[g]))
				r->view.group_by = g;
		if (!r->view.group_by) {
			snprintf(msg, size, "group_by must be unit, container or comm");
			return -EINVAL;
		}
	}
	if (body && json_object_object_get_ex(body, "correlate", &v)) {
		int i = strategy_index(
			json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "");

		if (i < 0) {
			snprintf(msg, size, "correlate must be auto, id, timestamp or stream");
			return -EINVAL;
		}
		r->view.strategy = strategies[i];
	}
	return 0;
}

static enum MHD_Result api_record_start(struct service *s, struct req *q, struct MHD_Connection *c)
{
	struct json_object *body = NULL, *v, *out;
	struct recording_opts ro = {.max_stacks = s->opts->max_stacks,
				    .unwind_mode = s->opts->unwind};
	struct svc_rec *r = NULL;
	struct rec_ctx *rc = NULL;
	enum MHD_Result ret;
	const char *what, *fmt = "folded";
	bool until_exit = false;
	char msg[200];
	int err;

	if (q->len) {
		body = json_tokener_parse(q->body);
		if (!body || !json_object_is_type(body, json_type_object)) {
			json_object_put(body);
			return reply_error(c, 400, "the body is not a JSON object",
					   "send e.g. {\"duration_s\": 10, \"pids\": [1234]}");
		}
	}
	r = calloc(1, sizeof(*r));
	rc = calloc(1, sizeof(*rc));
	if (!r || !rc) {
		ret = reply_error(c, 500, "out of memory", NULL);
		goto out;
	}
	r->pidfd = -1;
	r->freq_hz = XSPROFD_ONESHOT_FREQ;
	r->duration_s = 10;
	if (body && json_object_object_get_ex(body, "duration_s", &v)) {
		r->duration_s = json_object_get_double(v);
		if (!json_object_is_type(v, json_type_int) &&
		    !json_object_is_type(v, json_type_double))
			r->duration_s = -1;
	}
	if (body && json_object_object_get_ex(body, "freq_hz", &v))
		r->freq_hz = json_object_is_type(v, json_type_int) ? json_object_get_int(v) : 0;
	if (body && json_object_object_get_ex(body, "format", &v))
		fmt = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
	if (body && json_object_object_get_ex(body, "until_exit", &v))
		until_exit = json_object_get_boolean(v);
	err = parse_view(body, r, msg, sizeof(msg));
	if (err) {
		ret = reply_error(c, 400, msg, NULL);
		goto out;
	}
	if (body && json_object_object_get_ex(body, "pids", &v)) {
		if (!json_object_is_type(v, json_type_array) ||
		    json_object_array_length(v) > MAX_REQUEST_PIDS) {
			ret = reply_error(c, 400, "pids must be an array of at most 64 process ids",
					  NULL);
			goto out;
		}
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			struct json_object *p = json_object_array_get_idx(v, i);
			int64_t pid = json_object_get_int64(p);

			if (!json_object_is_type(p, json_type_int) || pid <= 0 || pid > INT32_MAX) {
				ret = reply_error(c, 400, "pids must be positive integers", NULL);
				goto out;
			}
			r->pids[r->nr_pids++] = (pid_t)pid;
		}
	}
	/* NaN compares false with everything: only a finite number in range passes. */
	if (!isfinite(r->duration_s) || !(r->duration_s > 0) ||
	    r->duration_s > s->opts->max_record_s) {
		snprintf(msg, sizeof(msg),
			 "duration_s must be a finite number of seconds in (0, %u]",
			 s->opts->max_record_s);
		ret = reply_error(c, 400, msg, "the daemon's --max-record sets the limit");
		goto out;
	}
	if (r->freq_hz < 1 || r->freq_hz > 10000) {
		ret = reply_error(c, 400, "freq_hz must be 1..10000", NULL);
		goto out;
	}
	if (output__format_from_name(fmt, &r->format)) {
		ret = reply_error(c, 400, "unknown format", "use folded, svg, json or pprof");
		goto out;
	}
	if (until_exit && r->nr_pids != 1) {
		ret = reply_error(c, 400, "until_exit needs exactly one pid", NULL);
		goto out;
	}
	if (!may_profile(q, c, r->pids, r->nr_pids, &ret))
		goto out;
	for (int i = 0; i < r->nr_pids; i++) {
		uid_t owner;

		if (pid_identity(r->pids[i], &owner, &r->pid_starts[i])) {
			snprintf(msg, sizeof(msg), "no such process: %d", (int)r->pids[i]);
			ret = reply_error(c, 404, msg, "check the pid with ps");
			goto out;
		}
	}
	prune_recordings(s);
	if (!recording_allowed(s, q, r->duration_s, c, &ret))
		goto out;
	ro.freq_hz = r->freq_hz;
	ro.pids = r->pids;
	ro.nr_pids = r->nr_pids;
	/* Descendants join the pid filter in the kernel at fork, so none is missed. */
	ro.follow_forks = r->children && r->nr_pids;
	ro.cuda = !s->opts->no_cuda;
	ro.keep_launch_uprobes =
		!strcmp(r->view.strategy, "timestamp") || !strcmp(r->view.strategy, "stream");
	ro.max_timeline = r->format == OUTPUT_CHROME_JSON ? RECORD_MAX_TIMELINE : 0;
	/* Off-CPU and wall recordings: the sched_switch program too (10 us minimum block). */
	ro.offcpu = r->view.cpu_mode != XSPROFD_MODE_CPU;
	ro.offcpu_min_ns = 10000;
	ro.gpu_wait_exclusive = r->view.cpu_mode == XSPROFD_MODE_WALL;
	/* --group-by: each process's unit or container read while it runs. */
	if (r->view.group_by && !(r->view.groups = group_by__new(r->view.group_by))) {
		ret = reply_error(c, 500, "out of memory", NULL);
		goto out;
	}
	ro.on_new_process = r->view.groups ? group_by__note : NULL;
	ro.on_new_process_ctx = r->view.groups;
	r->rec = recording__new(s->ev, &ro, s->sym, &what);
	if (!r->rec) {
		snprintf(msg, sizeof(msg), "%s failed: %s", what, strerror(errno));
		ret = reply_error(c, 500, msg, "see the daemon's journal");
		goto out;
	}
	rc->s = s;
	rc->r = r;
	err = sd_event_add_time_relative(s->ev, &r->end, CLOCK_MONOTONIC,
					 (uint64_t)(r->duration_s * 1e6), 0, on_rec_timer, rc);
	if (!err && until_exit) {
		r->pidfd = (int)syscall(SYS_pidfd_open, r->pids[0], 0);
		err = r->pidfd < 0 ? -errno
				   : sd_event_add_io(s->ev, &r->exit_watch, r->pidfd, EPOLLIN,
						     on_rec_exit, rc);
	}
	if (!err)
		err = recording__start(r->rec);
	if (err) {
		snprintf(msg, sizeof(msg), "starting the recording failed: %s", strerror(-err));
		ret = reply_error(c, 500, msg, "see the daemon's journal");
		goto out;
	}
	/* The timer and watch hold rc; it lives as long as r (freed with the daemon). */
	sd_event_source_set_destroy_callback(r->end, free);
	rc = NULL;
	r->id = ++s->next_id;
	r->owner = q->uid;
	r->owner_root = q->authed;
	r->started_ns = now_ns();
	r->next = s->recs;
	s->recs = r;
	log_info("recording %u started: %s, %g s at %u Hz, for uid %u", r->id,
		 r->nr_pids ? "selected processes" : "whole machine", r->duration_s, r->freq_hz,
		 (unsigned int)q->uid);
	out = json_object_new_object();
	add_u64(out, "id", r->id);
	json_object_object_add(out, "duration_s", json_object_new_double(r->duration_s));
	json_object_object_add(out, "until_exit", json_object_new_boolean(until_exit));
	r = NULL;
	ret = reply_json(c, 201, out);
out:
	if (r) {
		if (r->end)
			sd_event_source_set_destroy_callback(r->end, NULL);
		free_rec(r);
	}
	free(rc);
	json_object_put(body);
	return ret;
}

static enum MHD_Result api_record_result(struct service *s, struct req *q, struct MHD_Connection *c,
					 const char *id_str)
{
	char *end;
	unsigned long id = strtoul(id_str, &end, 10);
	struct svc_rec *r = *end || !*id_str ? NULL : find_rec(s, (unsigned int)id);

	if (!r)
		return reply_error(c, 404, "no such recording",
				   "recordings are kept 5 minutes after they end");
	if (!q->authed && r->owner != q->uid)
		return reply_error(c, 403, "that recording belongs to another user", NULL);
	if (r->state == REC_RUNNING) {
		if (r->nr_waiters == MAX_WAITERS)
			return reply_error(c, 429, "too many clients waiting on this recording",
					   NULL);
		/* Park the request until the recording ends, and not forever. */
		r->waiters[r->nr_waiters++] = c;
		q->waiting = r;
		http__suspend(c, r->started_ns + (uint64_t)(r->duration_s * 1e9) +
					 WAIT_GRACE_S * 1000000000ull);
		return MHD_YES;
	}
	if (r->state == REC_FAILED)
		return reply_error(c, 500, r->error, "see the daemon's journal");
	return reply(c, 200, content_type(r->format), r->result, r->result_len);
}

/* ---- rolling window, attach ---- */

static enum MHD_Result api_profile(struct service *s, struct req *q, struct MHD_Connection *c)
{
	const char *since = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "since_s");
	const char *fmt = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format");
	const char *mode_s = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "gpu_mode");
	const char *weight = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "weight");
	enum gpu_mode mode = GPU_MODE_MERGED;
	unsigned long since_s = 300;
	enum output_format f;
	struct calltree *tree;
	struct output_meta meta = {.unit = "samples"};
	char title[160], *buf = NULL, *end;
	size_t len = 0;
	uint64_t from = 0, now = now_ns();
	enum MHD_Result ret;
	FILE *out;
	int err;

	if (MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "pid"))
		return reply_error(c, 400, "the rolling window keeps no per-process data",
				   "record the process instead: xsprofctl record --pid PID");
	if (since) {
		/* Digits only: strtoul would take "-1" as "everything". */
		errno = 0;
		since_s =
			strspn(since, "0123456789") == strlen(since) ? strtoul(since, &end, 10) : 0;
		if (errno || !*since || !since_s || since_s > MAX_SINCE_S) {
			snprintf(title, sizeof(title),
				 "since_s must be a whole number of seconds in [1, %u]",
				 MAX_SINCE_S);
			return reply_error(c, 400, title,
					   "e.g. since_s=300 for the last 5 minutes");
		}
	}
	if (mode_s && profile__mode_from_name(mode_s, &mode))
		return reply_error(c, 400, "gpu_mode must be cpu, gpu or merged", NULL);
	if (weight && strcmp(weight, "samples"))
		return reply_error(
			c, 400, "the rolling window counts samples only",
			"GPU time is in samples at the window's frequency; record for us");
	if (!window_format(fmt ? fmt : "folded", &f))
		return reply_error(
			c, 400, "the rolling window has no timeline for a Chrome trace",
			"use folded, svg or pprof, or record: xsprofctl record -o x.json");
	/* Include the slice being recorded: close it now. */
	close_slice(s);
	tree = calltree__new();
	if (!tree)
		return reply_error(c, 500, "out of memory", NULL);
	/* CPU samples and the GPU work they launched, by gpu_mode (default: both). */
	err = mode == GPU_MODE_GPU
		      ? 0
		      : store__query(s->store,
				     since_s * 1000000000ull < now ? now - since_s * 1000000000ull
								   : 0,
				     q->authed, q->uid, tree, &from);
	if (!err && mode != GPU_MODE_CPU) {
		struct calltree *us = calltree__new();
		uint64_t gfrom = 0;

		/* The GPU window is in microseconds: as the samples they would have been worth. */
		err = us ? store__query(s->gpu_window,
					since_s * 1000000000ull < now
						? now - since_s * 1000000000ull
						: 0,
					q->authed, q->uid, us, &gfrom)
			 : -ENOMEM;
		if (!err)
			err = gpu_window__add_scaled(us, tree, s->opts->freq_hz, 1000000);
		calltree__free(us);
		if (!from || (gfrom && gfrom < from))
			from = gfrom;
	}
	snprintf(title, sizeof(title), "xsprof: last %.0f s at %u Hz%s",
		 from ? (now - from) / 1e9 : 0.0, s->opts->freq_hz,
		 q->authed ? "" : " (your processes)");
	meta.title = title;
	out = err ? NULL : open_memstream(&buf, &len);
	if (!err && !out)
		err = -errno;
	if (!err)
		err = write_tree(tree, f, out, &meta, s->opts->freq_hz, from, now, NULL);
	if (out && fclose(out) && !err)
		err = -EIO;
	calltree__free(tree);
	if (err)
		ret = reply_error(c, 500, "building the profile failed", strerror(-err));
	else
		ret = reply(c, 200, content_type(f), buf, len);
	free(buf);
	return ret;
}

static int parse_pid_body(struct req *q, pid_t *ret)
{
	struct json_object *body = json_tokener_parse(q->body ? q->body : ""), *v;
	int64_t pid;
	int err = -EINVAL;

	if (body && json_object_object_get_ex(body, "pid", &v) &&
	    json_object_is_type(v, json_type_int)) {
		pid = json_object_get_int64(v);
		if (pid > 0 && pid <= INT32_MAX) {
			*ret = (pid_t)pid;
			err = 0;
		}
	}
	json_object_put(body);
	return err;
}

/* Forget attachments whose process is gone, or whose pid now names another process. */
static void prune_attached(struct service *s)
{
	for (int i = 0; i < s->nr_attached;) {
		struct attachment *a = &s->attached[i];
		uint64_t start;
		uid_t owner;

		if (!pid_identity(a->pid, &owner, &start) && start == a->start) {
			i++;
			continue;
		}
		s->refused.attach_dead_pruned++;
		*a = s->attached[--s->nr_attached];
	}
}

static enum MHD_Result api_attach(struct service *s, struct req *q, struct MHD_Connection *c,
				  bool attach)
{
	struct json_object *out;
	enum MHD_Result ret;
	bool cuda = false;
	int i, all_users = 0, mine = 0;
	uint64_t start = 0;
	uid_t owner = 0;
	pid_t pid;
	char msg[160];

	if (parse_pid_body(q, &pid))
		return reply_error(c, 400, "expected {\"pid\": N}", NULL);
	/* Dead pids hold no slot: a user cannot fill the table with them. */
	prune_attached(s);
	for (i = 0; i < s->nr_attached && s->attached[i].pid != pid; i++)
		;
	if (!attach) {
		if (i == s->nr_attached)
			return reply_error(c, 404, "that pid is not attached", NULL);
		if (!q->authed && (s->attached[i].by_root || s->attached[i].by != q->uid))
			return reply_error(c, 403, "another user attached that process", NULL);
		s->attached[i] = s->attached[--s->nr_attached];
		log_info("detached pid %d", (int)pid);
	} else {
		if (!may_profile(q, c, &pid, 1, &ret))
			return ret;
		if (pid_identity(pid, &owner, &start)) {
			snprintf(msg, sizeof(msg), "no such process: %d", (int)pid);
			return reply_error(c, 404, msg, "check the pid with ps");
		}
		for (int j = 0; j < s->nr_attached; j++) {
			all_users += !s->attached[j].by_root;
			mine += !s->attached[j].by_root && s->attached[j].by == q->uid;
		}
		if (i == s->nr_attached && !q->authed && mine >= ATTACHED_PER_UID) {
			s->refused.attach_uid++;
			snprintf(msg, sizeof(msg),
				 "you already have %d processes attached (at most %d "
				 "per user)",
				 mine, ATTACHED_PER_UID);
			return reply_error(c, 429, msg, "detach some first");
		}
		if (i == s->nr_attached &&
		    (s->nr_attached == MAX_ATTACHED ||
		     (!q->authed && all_users >= MAX_ATTACHED - ATTACHED_ROOT_SLOTS))) {
			s->refused.attach_full++;
			return reply_error(c, 429, "too many attached processes",
					   "detach some first");
		}
		if (i == s->nr_attached) {
			s->attached[s->nr_attached++] = (struct attachment){
				.pid = pid, .by = q->uid, .by_root = q->authed, .start = start};
			/* Map it now: its names survive it exiting. */
			symbolizer__add_process(s->sym, pid);
			/* Its CUDA launches from now on, when it maps CUDA. */
			if (s->always && recording__cuda(s->always)) {
				int n = cuda_probes__attach_pid(recording__cuda(s->always), pid);

				cuda = n > 0;
				if (n < 0)
					log_warn("attaching CUDA probes to pid %d: %s", (int)pid,
						 strerror(-n));
			}
			log_info("attached pid %d%s", (int)pid, cuda ? " with CUDA probes" : "");
		}
	}
	out = json_object_new_object();
	add_u64(out, "pid", (uint64_t)pid);
	json_object_object_add(out, "attached", json_object_new_boolean(attach));
	if (attach)
		json_object_object_add(out, "cuda", json_object_new_boolean(cuda));
	return reply_json(c, 200, out);
}

/*
 * Ownership, again: a user's process that execs a setuid program, or whose pid is reused by
 * another user's process, is no longer the user's to profile. Recordings of a user that name
 * such a process end at once (what was recorded before is theirs), and such attachments go.
 */
static void recheck_owners(struct service *s)
{
	for (struct svc_rec *r = s->recs; r; r = r->next) {
		if (r->state != REC_RUNNING || r->owner_root)
			continue;
		for (int i = 0; i < r->nr_pids; i++) {
			uint64_t start;
			uid_t owner;
			int err = pid_identity(r->pids[i], &owner, &start);

			if (err == -ENOENT || err == -ESRCH)
				continue; /* exited: nothing more is sampled of it */
			if (!err && owner == r->owner && start == r->pid_starts[i])
				continue;
			s->refused.ended_owner_changed++;
			log_warn(
				"recording %u: process %d is no longer uid %u's (a setuid exec, or "
				"its pid reused): recording ended",
				r->id, (int)r->pids[i], (unsigned int)r->owner);
			snprintf(r->note, sizeof(r->note),
				 "ended early: process %d changed owner or was replaced",
				 (int)r->pids[i]);
			finish_rec(s, r);
			break;
		}
	}
	for (int i = 0; i < s->nr_attached;) {
		struct attachment *a = &s->attached[i];
		uint64_t start;
		uid_t owner;

		if (a->by_root || (!pid_identity(a->pid, &owner, &start) && owner == a->by &&
				   start == a->start)) {
			i++;
			continue;
		}
		s->refused.detached_owner_changed++;
		log_info("pid %d detached: it exited or is no longer uid %u's", (int)a->pid,
			 (unsigned int)a->by);
		*a = s->attached[--s->nr_attached];
	}
}

static int on_owner_check(sd_event_source *src, uint64_t usec, void *ctx)
{
	recheck_owners(ctx);
	sd_event_source_set_time_relative(src, OWNER_CHECK_US);
	return sd_event_source_set_enabled(src, SD_EVENT_ONESHOT);
}

/* ---- request plumbing ---- */

static bool token_ok(struct service *s, struct MHD_Connection *c)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	size_t n, m;
	unsigned char diff;

	if (!s->token || !h || strncasecmp(h, "Bearer ", 7))
		return false;
	h += 7;
	n = strlen(s->token);
	/*
	 * Time depends on the length sent, never on where it differs or on the token's length:
	 * the token is compared against every byte sent (wrapping), and a length mismatch counts.
	 */
	m = strlen(h);
	diff = m != n;
	for (size_t i = 0; i < m; i++)
		diff |= (unsigned char)(h[i] ^ s->token[i % n]);
	return !diff;
}

static enum MHD_Result route(struct service *s, struct req *q, struct MHD_Connection *c,
			     const char *method, const char *url)
{
	bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");

	if (s->stopping)
		return reply_error(c, 503, "the daemon is stopping", NULL);
	if (!strcmp(url, "/v1/status"))
		return get ? reply_json(c, 200, status_json(s))
			   : reply_error(c, 405, "use GET for /v1/status", NULL);
	if (!strcmp(url, "/v1/profile"))
		return get ? api_profile(s, q, c)
			   : reply_error(c, 405, "use GET for /v1/profile", NULL);
	if (!strcmp(url, "/v1/attach") || !strcmp(url, "/v1/detach"))
		return post ? api_attach(s, q, c, url[4] == 'a')
			    : reply_error(c, 405, "use POST", NULL);
	if (!strcmp(url, "/v1/recordings"))
		return post ? api_record_start(s, q, c)
			    : reply_error(c, 405, "use POST to start a recording", NULL);
	if (!strncmp(url, "/v1/recordings/", 15))
		return get ? api_record_result(s, q, c, url + 15)
			   : reply_error(c, 405, "use GET to fetch a recording", NULL);
	return reply_error(c, 404, "no such endpoint", "see xsprofd's API.md: /v1/status, ...");
}

static enum MHD_Result on_request(void *ctx, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct service *s = ctx;
	struct req *q = *con_cls;

	if (!q) {
		struct http_peer peer;
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

		q = calloc(1, sizeof(*q));
		if (!q)
			return MHD_NO;
		*con_cls = q;
		q->tcp = ci && ci->client_addr && ci->client_addr->sa_family != AF_UNIX;
		if (q->tcp) {
			q->authed = token_ok(s, c);
			q->uid = 0;
		} else if (!http__peer(c, s->group, &peer)) {
			q->uid = peer.uid;
			q->authed = peer.uid == 0;
			q->member = peer.in_group;
		}
		return MHD_YES;
	}
	if (*upload_size) {
		if (!q->too_big && q->len + *upload_size <= MAX_BODY) {
			char *nb = realloc(q->body, q->len + *upload_size + 1);

			if (!nb)
				return MHD_NO;
			q->body = nb;
			memcpy(q->body + q->len, upload, *upload_size);
			q->len += *upload_size;
			q->body[q->len] = '\0';
		} else {
			q->too_big = true;
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (q->waiting) {
		/* Resumed: the recording it waited on has ended, or the wait did. */
		struct svc_rec *r = q->waiting;

		if (http__expired(c))
			return MHD_NO; /* closed; on_completed takes it off the waiter list */

		q->waiting = NULL;
		return r->state == REC_FAILED ? reply_error(c, 500, r->error, NULL)
		       : r->state == REC_DONE
			       ? reply(c, 200, content_type(r->format), r->result, r->result_len)
			       : reply_error(c, 503, "the daemon is stopping", NULL);
	}
	if (q->too_big)
		return reply_error(c, 413, "request body over 64 KiB", NULL);
	if (q->tcp && !q->authed)
		return reply_error(c, 401, "missing or wrong token",
				   "send Authorization: Bearer TOKEN (the daemon's --token-file)");
	if (!q->authed && !q->member)
		return reply_error(c, 403, "permission denied",
				   "join group xsprof (e.g. adduser USER xsprof) or use root");
	return route(s, q, c, method, url);
}

static void on_completed(void *ctx, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode code)
{
	struct req *q = *con_cls;

	if (!q)
		return;
	/* A client that gave up while parked: take it off the waiter list. */
	if (q->waiting) {
		struct svc_rec *r = q->waiting;

		for (int i = 0; i < r->nr_waiters; i++)
			if (r->waiters[i] == c)
				r->waiters[i] = r->waiters[--r->nr_waiters];
	}
	free(q->body);
	free(q);
	*con_cls = NULL;
}

/* ---- GPU timing ---- */

static int on_cupti(sd_event_source *src, int fd, uint32_t revents, void *ctx)
{
	struct service *s = ctx;
	struct cupti_server_stats cs;
	int n = cupti_server__process(s->cupti);

	if (n < 0)
		log_err("CUPTI pipe: %s", strerror(-n));
	cupti_server__stats(s->cupti, &cs);
	if (cs.malformed != s->cupti_malformed_seen) {
		log_warn("dropped a CUPTI connection that sent malformed data (%s); %llu so far",
			 cs.last_malformed, (unsigned long long)cs.malformed);
		s->cupti_malformed_seen = cs.malformed;
	}
	return 0;
}

static void start_cupti(struct service *s)
{
	struct cupti_server_opts co = {.socket_path = s->opts->cupti_socket};
	int err;

	s->cupti = cupti_server__new(&co);
	if (!s->cupti) {
		log_warn("GPU timing is off: cannot listen on %s: %s", s->opts->cupti_socket,
			 strerror(errno));
		return;
	}
	err = sd_event_add_io(s->ev, &s->cupti_io, cupti_server__fd(s->cupti), EPOLLIN, on_cupti,
			      s);
	if (err < 0) {
		log_warn("GPU timing is off: %s", strerror(-err));
		cupti_server__free(s->cupti);
		s->cupti = NULL;
	}
}

/* ---- lifecycle ---- */

static int read_token(const char *path, char **ret)
{
	char buf[512];
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return -errno;
	/* A secret others can read is no secret: refuse it rather than serve TCP with it. */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (st.st_mode & 0077)) {
		close(fd);
		return -EPERM;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = '\0';
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	if (n < 16)
		return -EINVAL;
	*ret = strdup(buf);
	return *ret ? 0 : -ENOMEM;
}

static int start_http(struct service *s)
{
	struct group *g = getgrnam(s->opts->socket_group);
	int fd, err;

	s->group = g ? g->gr_gid : (gid_t)-1;
	if (!g)
		log_warn("group %s does not exist: only root can use %s (create it: addgroup "
			 "--system %s)",
			 s->opts->socket_group, s->opts->socket_path, s->opts->socket_group);
	err = http__unix_listen(s->opts->socket_path, s->group, &s->unix_sock);
	if (err == -EADDRINUSE) {
		log_err("another xsprofd (pid %d) serves %s: stop it first, or give this one other "
			"paths (--socket, --cupti-socket); nothing was changed",
			(int)s->unix_sock.holder, s->opts->socket_path);
		return err;
	}
	if (err) {
		log_err("cannot listen on %s: %s", s->opts->socket_path, strerror(-err));
		return err;
	}
	s->unix_http = http_server__new(s->ev, s->unix_sock.fd, on_request, on_completed, s);
	if (!s->unix_http) {
		log_err("cannot start the HTTP server on %s", s->opts->socket_path);
		return -EIO;
	}
	if (!s->opts->listen_addr)
		return 0;
	err = read_token(s->opts->token_file, &s->token);
	if (err) {
		log_err("--token-file %s: %s", s->opts->token_file,
			err == -EINVAL	? "the token must be at least 16 characters"
			: err == -EPERM ? "not a regular file, or readable or writable by group or "
					  "others: chmod 600 it (and keep it owned by root)"
					: strerror(-err));
		return err;
	}
	err = http__tcp_listen(s->opts->listen_addr, &fd);
	if (err) {
		log_err("--listen %s: %s", s->opts->listen_addr, strerror(-err));
		return err;
	}
	s->tcp_http = http_server__new(s->ev, fd, on_request, on_completed, s);
	if (!s->tcp_http)
		return -EIO;
	log_info("also serving the API on TCP %s (token required)", s->opts->listen_addr);
	return 0;
}

static int on_term(sd_event_source *src, const struct signalfd_siginfo *si, void *ctx)
{
	struct service *s = ctx;

	log_info("%s: stopping", strsignal(si->ssi_signo));
	sd_notify(0, "STOPPING=1");
	s->stopping = true;
	return sd_event_exit(s->ev, 0);
}

static int on_reload(sd_event_source *src, const struct signalfd_siginfo *si, void *ctx)
{
	struct service *s = ctx;
	unsigned int old_freq = s->opts->freq_hz;
	struct store_opts so;
	int err;

	sd_notify(0, "RELOADING=1");
	if (xsprofd_opts__reload(s->opts, s->argc, s->argv)) {
		log_err("reload: the config has errors (above); keeping the running settings");
		sd_notify(0, "READY=1");
		return 0;
	}
	so.window_s = s->opts->window_s;
	so.cap_bytes = (size_t)s->opts->store_mb << 20;
	store__configure(s->store, &so);
	store__configure(s->gpu_window, &so);
	if (s->opts->freq_hz != old_freq && s->always) {
		struct recording_stats rs;

		close_slice(s);
		recording__stop(s->always);
		recording__stats(s->always, &rs);
		xsprof_cpu_stats__add(&s->totals, &rs.bpf);
		s->totals_bad += rs.bad_records;
		recording__free(s->always);
		s->always = NULL;
		err = start_always(s);
		if (err)
			log_err("reload: could not restart sampling at %u Hz; sampling is off until "
				"the next reload",
				s->opts->freq_hz);
	}
	log_info("reloaded %s: %u Hz, window %u s, store cap %u MiB",
		 s->opts->config_path ? s->opts->config_path : "(no config file)", s->opts->freq_hz,
		 s->opts->window_s, s->opts->store_mb);
	sd_notify(0, "READY=1");
	notify_status(s);
	return 0;
}

int service__run(struct xsprofd_opts *opts, int argc, char **argv)
{
	struct service *s = calloc(1, sizeof(*s));
	struct symbolizer_opts yopts = {
		.no_demangle = opts->no_demangle,
		.debug_dirs = opts->nr_debug_dirs ? opts->debug_dirs : NULL,
		.nr_debug_dirs = (size_t)opts->nr_debug_dirs,
		.debuginfod = opts->debuginfod,
		.cache_bytes = (uint64_t)(opts->symbol_cache_mb ? opts->symbol_cache_mb
								: XSPROFD_SERVICE_SYMBOL_CACHE_MB)
			       << 20,
		.debug_info = opts->debug_info,
	};
	struct store_opts so = {.window_s = opts->window_s,
				.cap_bytes = (size_t)opts->store_mb << 20};
	sigset_t mask;
	int err, status = 1;

	if (!s)
		return 1;
	s->unix_sock.lock_fd = -1;
	s->opts = opts;
	s->argc = argc;
	s->argv = argv;
	s->started_ns = now_ns();
	libbpf_set_print(xsprof_libbpf_log);
	if (preflight__kernel())
		goto out;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);

	err = sd_event_new(&s->ev);
	if (err >= 0)
		err = sd_event_add_signal(s->ev, NULL, SIGTERM, on_term, s);
	if (err >= 0)
		err = sd_event_add_signal(s->ev, NULL, SIGINT, on_term, s);
	if (err >= 0)
		err = sd_event_add_signal(s->ev, NULL, SIGHUP, on_reload, s);
	/* Keep-alives to systemd from the loop itself: a stuck loop gets us restarted. */
	if (err >= 0)
		err = sd_event_set_watchdog(s->ev, true);
	if (err >= 0)
		err = sd_event_add_time_relative(s->ev, &s->slice_timer, CLOCK_MONOTONIC, SLICE_US,
						 0, on_slice, s);
	if (err >= 0)
		err = sd_event_add_time_relative(s->ev, &s->owner_timer, CLOCK_MONOTONIC,
						 OWNER_CHECK_US, 0, on_owner_check, s);
	if (err < 0) {
		log_err("setting up the event loop: %s", strerror(-err));
		goto out;
	}
	s->sym = symbolizer__new(&yopts);
	s->store = store__new(&so);
	s->gpu_window = store__new(&so);
	if (!s->sym || !s->store || !s->gpu_window) {
		log_err("out of memory setting up");
		goto out;
	}
	if (start_always(s) || start_http(s))
		goto out;
	start_cupti(s);

	log_info("xsprofd %s serving %s: sampling all CPUs at %u Hz, keeping %u s (at most %u "
		 "MiB)",
		 XSPROF_VERSION, opts->socket_path, opts->freq_hz, opts->window_s, opts->store_mb);
	sd_notify(0, "READY=1");
	notify_status(s);

	err = sd_event_loop(s->ev);
	status = err < 0 ? 1 : 0;
	if (err < 0)
		log_err("event loop failed: %s", strerror(-err));
out:
	s->stopping = true;
	/* Parked clients get an answer (503) before the server goes. */
	for (struct svc_rec *r = s->recs; r; r = r->next)
		wake_waiters(s, r);
	http_server__run(s->unix_http);
	http_server__run(s->tcp_http);
	http_server__free(s->unix_http);
	/* Only our own socket file goes; the lock is released last. */
	http__unix_release(&s->unix_sock, s->opts->socket_path);
	http_server__free(s->tcp_http);
	while (s->recs) {
		struct svc_rec *r = s->recs;

		s->recs = r->next;
		free_rec(r);
	}
	recording__free(s->always);
	sd_event_source_disable_unref(s->cupti_io);
	cupti_server__free(s->cupti);
	sd_event_source_disable_unref(s->slice_timer);
	sd_event_source_disable_unref(s->owner_timer);
	store__free(s->store);
	store__free(s->gpu_window);
	symbolizer__free(s->sym);
	free(s->token);
	sd_event_unref(s->ev);
	free(s);
	if (status == 0)
		log_info("stopped; all BPF programs detached");
	return status;
}
