/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the service's files share: its state, a request's, a recording's, an attachment's, and
 * the functions one file offers another. Only daemon/service/ includes this.
 *
 * Names: a function here is module__verb, the module being the file that offers it (reply.c:
 * reply__, status.c: status__, recordings.c: recordings__, attach.c: attachments__, ...); a
 * request handler is module__api, or module__api_what where a file has several (window_api.c's
 * are window_api__what). What only one file uses is static in it and not declared here.
 */
#ifndef XSPROF_DAEMON_SERVICE_INTERNAL_H
#define XSPROF_DAEMON_SERVICE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <microhttpd.h>

#include "bpf/xsprof_events.h"
#include "correlate/correlate.h"
#include "daemon/base/job_filter.h"
#include "daemon/service/http.h"
#include "daemon/session/lasting.h"
#include "daemon/session/slice.h"
#include "output/output.h"
#include "output/model/profile.h"

typedef struct sd_event sd_event;
typedef struct sd_event_source sd_event_source;
struct calltree;
struct ceiling;
struct cupti_server;
struct exporter;
struct flight;
struct cupti_server_opts;
struct frame_sites;
struct host_labels;
struct job_keep;
struct gpu_store;
struct json_object;
struct launch_event;
struct recording;
struct recording_opts;
struct symbolizer;
struct unwinder;
struct xsprofd_opts;

#define SLICE_US	(10 * 1000000ull) /* the rolling window's granularity */
#define MAX_BODY	(64 * 1024)
#define MAX_RECORDINGS	4   /* running at once */
#define MAX_FINISHED	16  /* kept for fetching */
#define FINISHED_KEEP_S 300 /* a finished result is kept this long, or until fetched */
#define MAX_WAITERS	8
#define MAX_ATTACHED	16 /* attachments, each a lasting profile with its own sampler */

/* A slice closes early once the CUPTI pipe brought this many GPU records since its start, but
 * not before it is SLICE_MIN_US old: the close joins and reports them in one turn of the event
 * loop, which then answers nobody, and its work grows with them (issue 40). */
#define SLICE_GPU_RECORDS (64u * 1024)
#define SLICE_MIN_US	  (250 * 1000ull)

/* What one user other than root may hold, so that root and other users always find room. */
#define RECORDINGS_PER_UID    2
#define RECORDINGS_ROOT_SLOTS 1 /* of MAX_RECORDINGS, only root may take */
#define FINISHED_PER_UID      4
#define ATTACHED_PER_UID      4
#define ATTACHED_ROOT_SLOTS   4
#define ATTACH_WINDOW_MB      4	 /* each of an attachment's two windows */
#define WAIT_GRACE_S	      60 /* a client waits for a recording this long past its end */
#define MAX_SINCE_S	      (7 * 24 * 3600u)
#define OWNER_CHECK_US	      (1000 * 1000ull)
#define MAX_REQUEST_PIDS      64
#define RECORD_MAX_TIMELINE   (2u * 1000 * 1000) /* samples kept for a trace: ~50 MiB */
/* An attachment grouped by range keeps a slice's samples one by one, two slices at a time. */
#define ATTACH_MAX_TIMELINE (128u * 1024) /* per slice: ~3 MiB */
/* The window grouped by range (--window-group-by) likewise, for the whole machine. */
#define WINDOW_MAX_TIMELINE (512u * 1024) /* per slice: ~12 MiB */
/* The window and each attachment keep their slices' samples one by one for the GPU reports
 * (dropped at the slice's close) within these caps too. The GPU reports of a lasting profile
 * are capped at a quarter of each of its two windows' cap (--store-mb), 1 MiB at least. */
#define REPORT_WINDOW_BYTES(cap) ((cap) / 4 > (1u << 20) ? (cap) / 4 : (size_t)1 << 20)

enum recording_state { RECORDING_RUNNING, RECORDING_DONE, RECORDING_FAILED };

/* The correlation strategies a session may ask for; their counters are kept per name. */
extern const char *const recordings__strategies[];
#define NR_STRATEGIES 4

/* An attached process, and who attached it (a non-root user only its own, while it is). */
struct attach_job;

struct attachment {
	struct service *svc;
	struct attach_job
		*job; /* its sampler is loading on another thread (recording NULL till then) */
	pid_t pid;
	uid_t by;
	bool by_root;
	uint64_t start; /* its start time: a reused pid is another process */
	bool children;	/* its descendants are followed */
	struct lasting prof;
	int pidfd;
	sd_event_source *exit_watch;
	uint64_t attached_ns, ended_ns; /* ended: exited or changed owner; kept until fetched */
	char name[40];
	char note[96]; /* why it ended */
};

/* A recording asked for through the API. */
struct svc_recording {
	unsigned int id;
	uid_t owner;
	bool owner_root;
	enum recording_state state;
	enum output_format format;
	unsigned int freq_hz;
	double duration_s;
	pid_t pids[MAX_REQUEST_PIDS];
	uint64_t pid_starts[MAX_REQUEST_PIDS]; /* start times: a reused pid is another process */
	int nr_pids;
	bool children;		  /* descendants followed (in the kernel) */
	struct session_view view; /* --gpu-mode, --weight, --correlate */
	char range_domain[64];	  /* view.range_domain's text (group_by range: one domain) */
	/* The formats that carry labels (the job report's, pprof's...) and "job"/"rank": each
	 * process's job and rank, read while it runs. */
	struct host_labels *labels;
	struct job_filter job_filter; /* "job", "rank": only those processes (off: all) */
	struct job_keep *keep;	      /* job_filter's, when on */
	uint32_t *launch_pids;	      /* at the end: processes that launched, sorted */
	size_t nr_launch_pids;
	uint64_t started_ns, finished_ns;
	struct recording *recording;
	sd_event_source *end, *exit_watch;
	int pidfd;
	char *result;
	size_t result_len;
	char error[256];
	char note[128];			    /* why it ended early, if it did */
	struct xsprof_owner_stats left_out; /* another user's threads left out, as of its end */
	uint64_t lost;			    /* samples lost: its ring buffer was full */
	uint64_t stalled_ns; /* how long the daemon's loop did not run while it recorded */
	struct MHD_Connection *waiters[MAX_WAITERS];
	int nr_waiters;
	struct svc_recording *next;
};

/* Requests refused at a cap, and recordings ended because their process changed hands. */
struct refusals {
	uint64_t recordings_full, recordings_uid, record_seconds_uid;
	uint64_t attach_full, attach_uid;
	uint64_t start_rate; /* attachments and recordings of a member past its start budget */
	uint64_t attach_dead_pruned;
	uint64_t ended_owner_changed, detached_owner_changed;
};

/* Each start of a sampler (an attachment, a recording) loads BPF on the event loop: a member
 * may start START_BURST at once, then one per START_REFILL_NS. */
#define START_BURST	6
#define START_REFILL_NS (10ull * 1000000000)
#define MAX_START_USERS 64

struct start_budget {
	uid_t uid;
	uint32_t tokens;
	uint64_t at_ns; /* tokens were counted up to here */
};

struct service {
	struct xsprofd_opts *opts;
	int argc;
	char **argv;
	sd_event *ev;
	struct symbolizer *sym;
	/* The unwind tables of every recording (their samplers share its maps); NULL with
	 * --unwind fp. */
	struct unwinder *unwinder;
	struct frame_sites *sites; /* where the names in pprof replies came from */
	/* The rolling window: the whole machine at low frequency, folded every slice. */
	struct lasting machine;
	struct gpu_metrics *gpu_metrics; /* the window's GPU figures as Prometheus metrics */
	struct correlate_stats corr[NR_STRATEGIES]; /* per strategy, every session together */
	sd_event_source *slice_timer;
	bool slice_early;	/* it is set to fire for the GPU records, not the time */
	uint64_t slice_gpu_seq; /* the GPU store's last record at the last slice's close */
	uint64_t slices_early;	/* slices closed early for their GPU records */
	struct http_server *unix_http, *tcp_http;
	struct cupti_server *cupti; /* GPU timing from CUDA processes; NULL when off */
	sd_event_source *cupti_io;
	uint64_t cupti_malformed_seen;
	char *token;
	struct http_tls tls; /* the TCP listener's PEM material, when TLS */
	gid_t group;
	uint64_t started_ns;
	struct svc_recording *recordings;
	unsigned int next_id;
	struct attachment *attached[MAX_ATTACHED];
	int nr_attached;
	struct http_unix_socket unix_sock;
	sd_event_source *owner_timer;
	struct refusals refused;
	struct start_budget starts[MAX_START_USERS];
	bool stopping;
	struct xsprof_cpu_stats totals; /* BPF counters of always-on recordings already retired */
	struct flight *flight; /* the flight recorder (flight.h); NULL: off (--flight-mb 0) */
	struct host_labels *flight_labels; /* its processes' job and rank */
	sd_event_source *flight_timer, *flight_io;
	uint64_t flight_freeze_failed;
	struct exporter *exporter; /* --export sinks; NULL: none */
	struct ceiling *ceiling;   /* --max-cpu (daemon/session/ceiling.h); NULL: none */
	struct host_labels *export_labels;
	uint64_t totals_bad;
};

/* Per request: the body read so far and who sent it. */
struct req {
	char *body;
	size_t len;
	bool too_big;
	bool tcp;
	bool authed;  /* root, or a valid TCP token */
	bool backoff; /* TCP: a wrong token from an address refused for a while (503) */
	bool member;
	uid_t uid;
	struct svc_recording *waiting; /* set while suspended on a recording */
	struct attach_job *attach;     /* set while suspended on an attach's sampler load */
	bool attach_done;	       /* ... which ended: the answer is below */
	unsigned int attach_status;
	char *attach_body; /* JSON */
	bool resumed;
};

/* reply.c: answers, and the profile formats a window gives. */
const char *reply__content_type(enum output_format f);
/*
 * An answer with n/2 more headers (kv: name, value, ...; Cache-Control: no-store unless one is
 * given); body copied unless copy is false (it then lives as long as the process).
 */
enum MHD_Result reply__headers(struct MHD_Connection *c, unsigned int status, const char *type,
			       const void *body, size_t len, bool copy, const char *const *kv,
			       size_t n);
enum MHD_Result reply__send(struct MHD_Connection *c, unsigned int status, const char *type,
			    const void *body, size_t len);
enum MHD_Result reply__json(struct MHD_Connection *c, unsigned int status, struct json_object *j);
/* A file's size bytes from fd (200; the answer takes fd and closes it). */
enum MHD_Result reply__file(struct MHD_Connection *c, int fd, uint64_t size, const char *type);
enum MHD_Result reply__error(struct MHD_Connection *c, unsigned int status, const char *error,
			     const char *hint);
/* A window profile (200): its data covers the window's slices from from_ns to to_ns, said in
 * XSPROF_SPAN_HEADER (seconds), which can be more than the since_s asked for (whole slices). */
enum MHD_Result reply__span(struct MHD_Connection *c, const char *type, const void *body,
			    size_t len, uint64_t from_ns, uint64_t to_ns);
/* Responses sent since start, indexed by HTTP status (*ret_n entries). */
void reply__counts(const uint64_t **ret, size_t *ret_n);
bool reply__window_format(const char *name, enum output_format *ret);
/* gpu-report (JSON) or gpu-text: what a window answers from its GPU reports. */
bool reply__is_report(enum output_format f);
/*
 * The GPU report of l's slices in [since_ns, until_ns) (the uid's processes only unless
 * all_uids) in f (200, the span up to end_ns or until_ns; no GPU work: a report that says so).
 */
enum MHD_Result reply__gpu_report(struct MHD_Connection *c, const struct lasting *l,
				  uint64_t since_ns, uint64_t until_ns, bool all_uids, uid_t uid,
				  enum output_format f, uint64_t end_ns);
int reply__write_tree(const struct calltree *tree, enum output_format fmt, FILE *f,
		      const struct output_meta *meta, unsigned int freq_hz, enum weight_unit unit,
		      uint64_t start_ns, uint64_t end_ns, const struct frame_sites *sites);

/* permissions.c: who may profile what, and who may start a sampler now. */
int permissions__pid_identity(pid_t pid, uid_t *ret_uid, uint64_t *ret_start);
bool permissions__may_profile(struct req *q, struct MHD_Connection *c, const pid_t *pids, int n,
			      enum MHD_Result *ret);
/* Whether a member may start another sampler now (root always); refused: 429 in *ret. */
bool permissions__start_allowed(struct service *s, struct req *q, struct MHD_Connection *c,
				enum MHD_Result *ret);
bool permissions__still_owns(uid_t uid, pid_t pid, uint64_t start);

/* status.c: GET /v1/status, and the sd_notify status line (its rows: status_doc.h). */
struct json_object *status__json(struct service *s);
void status__notify(struct service *s);
/* --stats FILE and the -v counters' lines as the service stops. */
int status__end_report(struct service *s);

/* metrics.c: GET /metrics. */
enum MHD_Result metrics__api(struct service *s, struct MHD_Connection *c);
/* The metrics of a status document (all but those of the service's own sums). */
void metrics__write(FILE *f, struct json_object *status);
/* Whether a numeric status path has a metric. */
bool metrics__covers(const char *path);

/* slices.c: the always-on recording and its slices. */
/* The always-on recording's options, from the daemon's (whole machine, or its --pid trees). */
void slices__recording_opts(const struct service *s, struct recording_opts *ret);
int slices__start(struct service *s);
/* Put a recording that started under --max-cpu's ceiling (none: nothing). */
void service__govern(struct service *s, struct recording *r);
/*
 * The oldest moment a slice closed at end_ns must keep GPU records and process names from: a
 * running recording's start, an attachment's slice waiting for its ranges, or end_ns.
 */
uint64_t slices__wanted_since(struct service *s, uint64_t end_ns);
/*
 * Close the rolling window's slice (and each attachment's) at end (CLOCK_MONOTONIC): the GPU
 * records of gs (may be NULL) that ended before what a running recording or a slice not
 * folded yet may still want are let go.
 */
void slices__close_at(struct service *s, struct gpu_store *gs, uint64_t end);
/* The same now, with what the CUPTI pipe has queued taken in first. */
void slices__close(struct service *s);
/* After the CUPTI pipe was read: a slice that holds SLICE_GPU_RECORDS closes early. */
void slices__check_gpu(struct service *s);
/* The slice timer: closes a slice, prunes finished recordings, and fires again in SLICE_US. */
int slices__on_timer(sd_event_source *src, uint64_t usec, void *ctx);

/* recordings.c: POST /v1/recordings, GET /v1/recordings/ID. */
struct recording_ctx {
	struct service *s;
	struct svc_recording *r;
};
void recordings__wake_waiters(struct service *s, struct svc_recording *r);
/* A recording request's fields into r, checked. 0, or -EINVAL with msg (and *ret_hint). */
int recordings__parse_body(struct service *s, struct json_object *body, struct svc_recording *r,
			   bool *ret_until_exit, char *msg, size_t size, const char **ret_hint);
/* A running recording stopped, its profile built and its waiters woken (else nothing). */
void recordings__finish(struct service *s, struct svc_recording *r);
/* A user's recording whose process is no longer the user's ends (checked every second). */
void recordings__recheck_owners(struct service *s);
void recordings__free(struct svc_recording *r);
/*
 * An exec seen by the machine's recording (the one that reads exec events): each running
 * recording's job and rank for tgid are its new image's. A child first sampled between its
 * fork and its exec (posix_spawn, vfork) was read with its parent's environment.
 */
void recordings__note_exec(struct service *s, uint32_t tgid);
/*
 * A recording's range_domain (request body or scrape query) into r: only with a range
 * group_by. 0, or -EINVAL with msg.
 */
int recordings__set_range_domain(struct svc_recording *r, const char *domain, char *msg,
				 size_t size);
/*
 * A recording's job and rank list (request body or scrape query; NULL: not given) into
 * r->job_filter: only those processes are kept. 0, or -EINVAL with msg.
 */
int recordings__set_job_filter(struct svc_recording *r, const char *job, const char *rank,
			       char *msg, size_t size);
/* Finished recordings past their caps (kept FINISHED_KEEP_S, MAX_FINISHED in all,
 * FINISHED_PER_UID of one member's) freed, newest kept first; none a client waits on. */
void recordings__prune(struct service *s);
/* The same, as of now_ns (CLOCK_MONOTONIC). */
void recordings__prune_at(struct service *s, uint64_t now_ns);
/* Whether another recording may start beside the running ones of list. */
enum recording_cap {
	RECORDING_CAP_OK,
	RECORDING_CAP_FULL,	   /* MAX_RECORDINGS run (a member: all but the root slots) */
	RECORDING_CAP_UID,	   /* the member runs RECORDINGS_PER_UID already */
	RECORDING_CAP_UID_SECONDS, /* the member's running seconds would pass max_record_s */
};
/* For uid (root: true when root or a token's holder); *ret_mine and *ret_seconds: the uid's
 * running recordings and their seconds with duration_s, for the refusal's words. */
enum recording_cap recordings__cap(const struct svc_recording *list, uid_t uid, bool root,
				   double duration_s, unsigned int max_record_s,
				   unsigned int *ret_mine, double *ret_seconds);
/* Caps on running recordings (recordings__cap), then the member's start budget: refused, the
 * answer in *ret and counted. */
bool recordings__allowed(struct service *s, struct req *q, double duration_s,
			 struct MHD_Connection *c, enum MHD_Result *ret);
/*
 * A running recording's end, its profile built (err: 0, or why it failed): done, or failed
 * with the error said; finished at now_ns. False, and nothing changed, unless it was running.
 */
bool recordings__settle(struct svc_recording *r, int err, uint64_t now_ns);
/* r's processes and those of the n launches ev (their tgids) into r->launch_pids, sorted: the
 * GPU records a recording of processes takes. Out of memory: none (recordings__accepts). */
void recordings__launch_pids(struct svc_recording *r, const struct launch_event *ev, size_t n);
/* For gpu_join_scope.accept_pid (ctx: the recording): any pid for a whole-machine recording,
 * else those of r->launch_pids. */
bool recordings__accepts(void *ctx, uint32_t pid);
bool recordings__admit(struct service *s, struct req *q, struct MHD_Connection *c,
		       struct svc_recording *r, struct recording_ctx *rc, bool until_exit,
		       enum MHD_Result *ret);
/* A request's recording that was not admitted, and its context, freed (either may be NULL). */
void recordings__discard(struct svc_recording *r, struct recording_ctx *rc);
/* The request q waits on c for r to end (r has room for one more waiter): until its end and
 * WAIT_GRACE_S past it at most. */
void recordings__park(struct req *q, struct MHD_Connection *c, struct svc_recording *r);
enum MHD_Result recordings__api_start(struct service *s, struct req *q, struct MHD_Connection *c);
enum MHD_Result recordings__api_result(struct service *s, struct req *q, struct MHD_Connection *c,
				       const char *id_str);

/* flight_api.c: the flight recorder in the service, and its API. */
/* Start it (options, triggers, hooks on the window; none with --flight-mb 0). 0 or -errno
 * (said). */
int flight_api__start(struct service *s);
void flight_api__free(struct service *s);
/* What the recording and the CUPTI pipe tell it (nothing when it is off). */
void flight_api__recording_opts(struct service *s, struct recording_opts *ro);
void flight_api__cupti_opts(struct service *s, struct cupti_server_opts *co);
/* /v1/dumps (rest: what follows it in the URL) and /v1/triggers. */
enum MHD_Result flight_api__dumps(struct service *s, struct req *q, struct MHD_Connection *c,
				  const char *method, const char *rest);
enum MHD_Result flight_api__triggers(struct service *s, struct req *q, struct MHD_Connection *c,
				     const char *method);
/* The status's "flight" object; NULL when it is off. */
struct json_object *flight_api__status(struct service *s);

/* scrape.c: GET /debug/pprof/profile. */
enum MHD_Result scrape__api(struct service *s, struct req *q, struct MHD_Connection *c);

/* remote.c: the network listener's TLS and policy. */
bool remote__cert_ok(struct service *s, struct MHD_Connection *c);
bool remote__basic_ok(struct service *s, struct MHD_Connection *c);
bool remote__may(struct service *s, struct req *q, const char *method, struct MHD_Connection *c,
		 enum MHD_Result *ret);
int remote__tls(struct service *s, struct http_tls *tls, const struct http_tls **ret);
void remote__tls_free(struct http_tls *tls);

/* ui.c: the web view's files (no data: served before any credential check). */
bool ui__path(const char *url);
enum MHD_Result ui__api(struct MHD_Connection *c, const char *method, const char *url);

/* window_api.c: GET /v1/profile, GET /v1/timeline. */
enum MHD_Result window_api__profile(struct service *s, struct req *q, struct MHD_Connection *c);
enum MHD_Result window_api__timeline(struct service *s, struct req *q, struct MHD_Connection *c);

/* attach.c: POST /v1/attach and /v1/detach, and the attachments' lasting profiles. */
void attachments__close_slices(struct service *s, const struct gpu_store *gs, uint64_t end_ns);
uint64_t attachments__oldest_slice(struct service *s, uint64_t cutoff_ns);
void attachments__recheck(struct service *s);
struct json_object *attachments__json(struct service *s);
enum MHD_Result attachments__api_attach(struct service *s, struct req *q, struct MHD_Connection *c,
					bool attach);
/* The answer of an attach whose request waited for its sampler's load. */
enum MHD_Result attachments__reply(struct req *q, struct MHD_Connection *c);
/* The request q goes away: an attach it waits for goes on without it. */
void attachments__forget(struct req *q);
/*
 * The attachment of pid_str that q may read, with the slice being recorded closed; NULL with
 * *ret the error answer (400, 404, 403).
 */
struct attachment *attachments__to_read(struct service *s, struct req *q, struct MHD_Connection *c,
					const char *pid_str, enum MHD_Result *ret);
enum MHD_Result attachments__api_profile(struct service *s, struct req *q, struct MHD_Connection *c,
					 const char *pid_str, uint64_t since_ns, uint64_t until_ns,
					 enum gpu_mode mode, enum weight_unit unit,
					 enum session_group group, enum output_format f);
void attachments__free(struct service *s);

#endif
