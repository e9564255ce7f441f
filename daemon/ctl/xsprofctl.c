// SPDX-License-Identifier: Apache-2.0
/* xsprofctl: the command-line client of xsprofd's control API (daemon/CLI.md). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "daemon/session/session_mode.h"
#include "daemon/base/clock.h"
#include "daemon/base/api_socket.h"
#include "daemon/base/atomic_file.h"
#include "daemon/base/command.h"
#include "daemon/base/job_filter.h"
#include "daemon/base/cupti_lib_path.h"
#include "daemon/ctl/ctl.h"
#include "daemon/ctl/fleet.h"
#include "daemon/ctl/json_get.h"
#include "daemon/ctl/reply_buf.h"
#include "daemon/ctl/ui.h"
#include "output/output.h"

#define DEFAULT_SOCKET	XSPROF_API_SOCKET
#define DEFAULT_TIMEOUT 30 /* seconds: connecting, and any answer but a recording's */
#define MAX_DURATION_S	(7 * 24 * 3600.0) /* the daemon's own limit is lower */

static const char usage_text[] =
	"Usage: xsprofctl [--socket PATH] [--json] [--quiet] [--timeout S] COMMAND [ARGS]\n"
	"\n"
	"Talks to xsprofd, the always-on profiling service.\n"
	"\n"
	"Commands:\n"
	"  status                         version, uptime, frequency, counters, attachments,\n"
	"                                 GPU correlation per strategy, memory\n"
	"  attach PID [--freq HZ] [--no-children]\n"
	"                                 keep profiling PID and its descendants (CPU at HZ,\n"
	"                                 default 99; CUDA launches joined to GPU work) until\n"
	"                                 detached; fetch it with flamegraph --pid PID\n"
	"  attach PID --group-by range|outer-range [--range-domain DOMAIN] ...\n"
	"                                 the same, each sample and launch under the NVTX\n"
	"                                 range or xsprof scope it was made in (one slice,\n"
	"                                 10 s, late: a range is known once it ends)\n"
	"  detach PID                     end the attachment and free what it held\n"
	"  record [--pid PID[,PID...]]... [--duration S] [--freq HZ] -o FILE\n"
	"                                 record now (default 10 s at 99 Hz)\n"
	"  record [--job ID] [--rank LIST] ... -o FILE\n"
	"                                 only one training job's processes, or some ranks\n"
	"  record [--mode cpu|offcpu|wall] ... -o FILE\n"
	"                                 off-CPU time, or wall time (on and off the CPU,\n"
	"                                 GPU waits included), in us, instead of samples\n"
	"  record [--freq HZ] -o FILE -- CMD [ARGS...]\n"
	"                                 run CMD with the CUDA injection library and the\n"
	"                                 ITT collector preset, profile it and its\n"
	"                                 descendants until it exits, and\n"
	"                                 exit with its status (127: not found)\n"
	"  flamegraph [--since DURATION] [--pid PID] [--group-by G] -o FILE\n"
	"                                 the rolling window's last DURATION (90s, 5m, 1h;\n"
	"                                 default 5m), or with --pid, the attachment of PID's\n"
	"                                 (--group-by: as it was attached, or as xsprofd\n"
	"                                 groups the window, see xsprofd(8); without it,\n"
	"                                 ungrouped)\n"
	"  report [--since DURATION] [--pid PID] [-o FILE]\n"
	"                                 why the GPUs waited in the rolling window's last\n"
	"                                 DURATION (default 5m), or in PID's attachment: busy\n"
	"                                 and idle time, each idle stretch with its cause and\n"
	"                                 CPU stack, findings; as text on stdout, or into FILE\n"
	"                                 (.gpu.json: JSON, .gpu.txt: text)\n"
	"  top [--since DURATION] [--number N] [--pid PID] [--gpu-mode M] [--interval S]\n"
	"      [--once]                   the hottest N functions (default 20) by self and\n"
	"                                 total share, of the window or of PID's attachment;\n"
	"                                 on a terminal live: the last 10 s (or DURATION),\n"
	"                                 redrawn every S seconds (default 1) with samples/s,\n"
	"                                 xsprofd's cost and GPU busy, q quits; once (default\n"
	"                                 the last 5m) with --once or when stdout is not one\n"
	"  fleet [OPTIONS] -o FILE [HOST[:PORT]...]\n"
	"                                 ask many xsprofd hosts (serving TCP) at once, merge\n"
	"                                 their profiles under a host or label root; see\n"
	"                                 'xsprofctl fleet --help': --hosts --by --select\n"
	"                                 --token-file --cacert --cert --key --parallel\n"
	"                                 --host-timeout --deadline --comm\n"
	"  dump [--before D] [--after D] [--note TEXT] [--no-wait] [-o DIR]\n"
	"                                 save the flight recorder's last D (default 60s)\n"
	"                                 and the next D (default 0) as a dump: a Chrome\n"
	"                                 trace, the GPU report, pprof and folded stacks of\n"
	"                                 your processes with GPU work (root's: everyone's);\n"
	"                                 waits for it and prints its directory (-o DIR:\n"
	"                                 fetches its files there)\n"
	"  dump get NAME [-o DIR]         fetch dump NAME's files into DIR (default NAME)\n"
	"  dumps                          the dumps you may read, newest first: the\n"
	"                                 trigger that made each, its state and size\n"
	"  triggers [add SPEC | remove ID]\n"
	"                                 the triggers that save dumps, with how often each\n"
	"                                 tripped; root adds (SPEC as in xsprofd(8):\n"
	"                                 gpu-idle, slow-step, hang, death) and removes\n"
	"  ui [--port N]                  serve xsprofd's read-only web view to a browser on\n"
	"                                 this machine: a proxy on 127.0.0.1 (port N, default\n"
	"                                 a free one) that prints the address to open, with\n"
	"                                 its key; Ctrl-C stops; see 'xsprofctl ui --help'\n"
	"\n"
	"Record and flamegraph options:\n"
	"  -p, --pid PID[,PID...]  processes to record (repeatable); their descendants too\n"
	"      --no-children       only the named processes, not their descendants\n"
	"  -d, --duration S        seconds to record (default 10)\n"
	"  -F, --freq HZ           samples per second, 1..10000 (default 99; 999 with\n"
	"                          --mode wall)\n"
	"  -o, --output FILE       the format follows FILE's extension: .folded or .txt\n"
	"                          (folded stacks), .svg (flamegraph), .callgrind\n"
	"                          (KCachegrind), .json (Chrome trace; not for flamegraph),\n"
	"                          .pb.gz (pprof), record: .xplane.pb (TensorBoard,\n"
	"                          XProf), .job.json or .job.txt (the job report: which\n"
	"                          rank holds the job back); - for folded on stdout\n"
	"      --gpu-mode MODE     cpu, gpu or merged: which work the flamegraph shows\n"
	"                          (default: merged when GPU work was joined, else cpu)\n"
	"      --weight UNIT       samples or us (default samples)\n"
	"      --correlate NAME    how CUDA launches are joined to GPU work: auto, id,\n"
	"                          timestamp or stream (default auto)\n"
	"  -S, --since DURATION    flamegraph, report: how far back (default 5m)\n"
	"  -m, --mode MODE         record: cpu (samples, the default), offcpu (time off the\n"
	"                          CPU, in us) or wall (both, in us; GPU waits as [wait gpu])\n"
	"      --group-by WHAT     record: a root level above each process: unit (systemd\n"
	"                          unit), container, comm (the process name), rank or job\n"
	"                          (from its launcher's environment); range or\n"
	"                          outer-range: the innermost or outermost NVTX range each\n"
	"                          sample and launch was made in (-- CMD loads the NVTX\n"
	"                          injection; --mode cpu); attach, flamegraph: range or\n"
	"                          outer-range (the window: if xsprofd groups it)\n"
	"      --range-domain D    record, attach: only NVTX domain D's ranges (xsprof: the\n"
	"                          scopes)\n"
	"      --job ID            record: only the processes of training job ID (the id\n"
	"                          their launcher set: TORCHELASTIC_RUN_ID, SLURM_JOB_ID)\n"
	"      --rank LIST         record: only these ranks (RANK, SLURM_PROCID, ...), like\n"
	"                          0,2-3 (at most 64); with --job both must hold; processes\n"
	"                          that name no job or rank are left out\n"
	"\n"
	"Options:\n"
	"  -s, --socket PATH   xsprofd's socket (default " DEFAULT_SOCKET ", or $XSPROF_SOCKET)\n"
	"  -j, --json          print machine-readable results on stdout\n"
	"  -q, --quiet         no progress line\n"
	"  -t, --timeout S     give up on xsprofd after S seconds (default 30); waiting for a\n"
	"                      recording may take its duration on top, but not once xsprofd\n"
	"                      is gone or has been stopped (SIGSTOP) for S seconds\n"
	"  -h, --help          this text\n"
	"  -V, --version       print the version\n"
	"\n"
	"Examples:\n"
	"  xsprofctl status\n"
	"  xsprofctl record --pid 1234 --duration 30 -o app.svg\n"
	"  xsprofctl record --mode wall --pid 1234 -d 10 -o wall.svg   # where the time went\n"
	"  xsprofctl record --rank 0,3 -d 20 -o ranks03.pb.gz   # ranks 0 and 3 of the job here\n"
	"  xsprofctl flamegraph --since 10m -o last10m.svg\n"
	"  xsprofctl record --gpu-mode merged -o train.json -- python3 train.py\n"
	"  xsprofctl attach 1234; xsprofctl flamegraph --gpu-mode merged -o last5m.pb.gz\n"
	"  xsprofctl report --since 10m        # why the GPUs waited, the last 10 minutes\n"
	"  xsprofctl dump --before 2m -o incident   # the last 2 minutes, files in incident/\n"
	"  xsprofctl triggers add slow-step,range=step,factor=3\n"
	"  xsprofctl ui --port 8080     # then open the address it prints in a browser\n"
	"\n"
	"Exit status: 0 done; 1 the daemon reported an error; 2 usage error; 3 xsprofd is not\n"
	"running or cannot be reached (fleet: no host answered); 4 permission denied (join\n"
	"group xsprof, or use root); 5 fleet: only some hosts answered (partial profile);\n"
	"record -- CMD: CMD's own exit status once the profile is written; ui: 0 once stopped\n"
	"by Ctrl-C or SIGTERM, 1 when its port cannot be had.\n";

static const char *sock_path;
static bool json_out, quiet;
static double timeout_s = DEFAULT_TIMEOUT;

int ctl_usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "xsprofctl: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'xsprofctl --help' for more information.\n");
	return EXIT_USAGE;
}

/* ---- HTTP over the Unix socket ---- */

static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
	return reply_buf__append(ctx, p, size * n, MAX_REPLY);
}

/* The one response header read: how many seconds a window profile covers. */
static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
	static const char name[] = XSPROF_SPAN_HEADER ":";
	struct reply_buf *b = ctx;
	size_t len = size * n;
	char v[32];

	if (len > sizeof(name) - 1 && len - (sizeof(name) - 1) < sizeof(v) &&
	    !strncasecmp(p, name, sizeof(name) - 1)) {
		memcpy(v, p + sizeof(name) - 1, len - (sizeof(name) - 1));
		v[len - (sizeof(name) - 1)] = '\0';
		b->span_s = strtod(v, NULL);
	}
	return len;
}

struct progress {
	const char *what;
	double total_s; /* 0: unknown (until the command exits) */
	double wait_s;	/* how long the answer may take beyond --timeout */
	double start;
	double last;
	bool draw; /* a terminal: the time so far on stderr */
	/* The daemon watched during the long wait: its pid (SO_PEERCRED), since when it has been
	 * seen stopped, and why the wait was given up (empty: it was not). */
	int fd; /* the request's socket (CURLOPT_SOCKOPTFUNCTION); -1: none yet */
	pid_t daemon;
	double stopped_since, last_check;
	char gave_up[160];
};

/* The daemon's state letter from /proc (R, S, T, ...); 0 when gone, '?' when unreadable. */
static char daemon_state(pid_t pid)
{
	char path[64], buf[512], *rp;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = '\0';
	rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' && rp[2] ? rp[2] : '?';
}

/*
 * A long wait (a recording) ends when the daemon cannot answer any more: gone (its socket
 * closes then too, unless a child holds it), or stopped (SIGSTOP, a debugger) for longer than
 * --timeout. Checked once a second.
 */
static bool daemon_lost(struct progress *p, double now)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	char st;

	if (now - p->last_check < 1)
		return false;
	p->last_check = now;
	/* Connected by now (the peer's credentials are those it had at connect). */
	if (!p->daemon && p->fd >= 0 && !getsockopt(p->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		p->daemon = cred.pid;
	if (p->daemon <= 0)
		return false;
	st = daemon_state(p->daemon);
	if (!st || st == 'Z' || st == 'X') {
		snprintf(p->gave_up, sizeof(p->gave_up), "xsprofd (pid %d) is gone",
			 (int)p->daemon);
		return true;
	}
	if (st != 'T' && st != 't') {
		p->stopped_since = 0;
		return false;
	}
	if (!p->stopped_since)
		p->stopped_since = now;
	if (now - p->stopped_since < timeout_s)
		return false;
	snprintf(p->gave_up, sizeof(p->gave_up),
		 "xsprofd (pid %d) has been stopped for %.0f s (--timeout)", (int)p->daemon,
		 now - p->stopped_since);
	return true;
}

static int on_socket(void *ctx, curl_socket_t fd, curlsocktype purpose)
{
	struct progress *p = ctx;

	p->fd = fd;
	p->daemon = 0;
	return CURL_SOCKOPT_OK;
}

static int on_progress(void *ctx, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct progress *p = ctx;
	double now = clock__mono_s(), el = now - p->start;

	if (daemon_lost(p, now))
		return 1; /* CURLE_ABORTED_BY_CALLBACK */
	if (!p->draw || now - p->last < 0.25)
		return 0;
	p->last = now;
	if (p->total_s > 0)
		fprintf(stderr, "\r%s: %.0f/%.0f s ", p->what, el < p->total_s ? el : p->total_s,
			p->total_s);
	else
		fprintf(stderr, "\r%s: %.0f s ", p->what, el);
	return 0;
}

/* Explain why the socket cannot be reached; returns the exit status. */
static int unreachable(void)
{
	struct stat st;

	if (stat(sock_path, &st)) {
		fprintf(stderr,
			"xsprofctl: xsprofd is not running (no socket at %s): start it with "
			"'systemctl start xsprofd'\n",
			sock_path);
		return EXIT_UNREACHABLE;
	}
	if (access(sock_path, R_OK | W_OK) && errno == EACCES) {
		fprintf(stderr,
			"xsprofctl: permission denied on %s: join group xsprof ('sudo adduser "
			"$USER xsprof', then log in again) or run as root\n",
			sock_path);
		return EXIT_DENIED;
	}
	fprintf(stderr,
		"xsprofctl: cannot connect to %s: is xsprofd running? ('systemctl status "
		"xsprofd')\n",
		sock_path);
	return EXIT_UNREACHABLE;
}

/*
 * One request. Returns an exit status; on HTTP success (2xx) *reply holds the body. Errors
 * from the daemon are printed with their hint.
 */
int ctl_request(const char *method, const char *path, const char *body, struct reply_buf *reply,
		struct progress *prog)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = NULL;
	char url[512];
	long code = 0;
	CURLcode rc;
	int status;

	if (!h)
		return EXIT_DAEMON_ERROR;
	memset(reply, 0, sizeof(*reply));
	snprintf(url, sizeof(url), "http://localhost%s", path);
	curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, sock_path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, reply);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, reply);
	/* Every wait is bounded: connecting, and the whole exchange (a recording's on top). */
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout_s * 1000));
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
			 (long)((timeout_s + (prog ? prog->wait_s : 0)) * 1000));
	if (body) {
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	}
	if (prog) {
		prog->draw = prog->what && !quiet && isatty(STDERR_FILENO);
		prog->fd = -1;
		prog->gave_up[0] = '\0';
		curl_easy_setopt(h, CURLOPT_SOCKOPTFUNCTION, on_socket);
		curl_easy_setopt(h, CURLOPT_SOCKOPTDATA, prog);
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, prog);
	}
	rc = curl_easy_perform(h);
	if (prog && prog->draw)
		fputs("\r\033[K", stderr);
	if (prog)
		prog->fd = -1;
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST)
		return unreachable();
	if (reply->overflow) {
		fprintf(stderr, "xsprofctl: the reply is over %u MiB; ask for a shorter window\n",
			MAX_REPLY >> 20);
		return EXIT_DAEMON_ERROR;
	}
	if (rc == CURLE_ABORTED_BY_CALLBACK && prog && prog->gave_up[0]) {
		fprintf(stderr, "xsprofctl: %s: no answer will come\n", prog->gave_up);
		return EXIT_UNREACHABLE;
	}
	if (rc == CURLE_OPERATION_TIMEDOUT) {
		fprintf(stderr,
			"xsprofctl: xsprofd did not answer within %.0f s (raise --timeout, or check "
			"'systemctl status xsprofd')\n",
			timeout_s + (prog ? prog->wait_s : 0));
		return EXIT_UNREACHABLE;
	}
	if (rc != CURLE_OK) {
		fprintf(stderr, "xsprofctl: talking to xsprofd failed: %s\n",
			curl_easy_strerror(rc));
		return EXIT_DAEMON_ERROR;
	}
	if (code >= 200 && code < 300)
		return EXIT_OK;
	status = code == 403 || code == 401 ? EXIT_DENIED : EXIT_DAEMON_ERROR;
	{
		struct json_object *j = json_tokener_parse(reply->data ? reply->data : ""), *e,
				   *hint;

		if (j && json_object_object_get_ex(j, "error", &e)) {
			fprintf(stderr, "xsprofctl: %s", json_object_get_string(e));
			if (json_object_object_get_ex(j, "hint", &hint))
				fprintf(stderr, " (%s)", json_object_get_string(hint));
			fputc('\n', stderr);
		} else {
			fprintf(stderr, "xsprofctl: xsprofd answered HTTP %ld\n", code);
		}
		json_object_put(j);
	}
	if (json_out && reply->data)
		fputs(reply->data, stdout);
	free(reply->data);
	reply->data = NULL;
	return status;
}

/* ---- writing results ---- */

struct blob {
	const char *data;
	size_t len;
};

static int write_blob(FILE *f, void *ctx)
{
	const struct blob *b = ctx;

	return fwrite(b->data, 1, b->len, f) == b->len ? 0 : -EIO;
}

/* The one atomic writer (temp file, fsync, rename; mode from the umask), or stdout for "-". */
static int write_atomic(const char *path, const char *data, size_t len)
{
	struct blob b = {data, len};

	if (!strcmp(path, "-"))
		return fwrite(data, 1, len, stdout) == len ? 0 : -EIO;
	return atomic_file__write(path, write_blob, &b);
}

static int save(const char *path, struct reply_buf *b, const char *what)
{
	int err = write_atomic(path, b->data ? b->data : "", b->len);

	if (err) {
		fprintf(stderr, "xsprofctl: writing %s failed: %s\n", path, strerror(-err));
		return EXIT_DAEMON_ERROR;
	}
	if (json_out) {
		/* The path as a JSON string: a quote or backslash in it is escaped. */
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "output", json_object_new_string(path));
		json_object_object_add(o, "bytes", json_object_new_uint64(b->len));
		printf("%s\n",
		       json_object_to_json_string_ext(o, JSON_C_TO_STRING_SPACED |
								 JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else if (strcmp(path, "-"))
		fprintf(stderr, "xsprofctl: wrote %s (%s, %zu bytes)\n", path, what, b->len);
	return EXIT_OK;
}

/* ---- commands ---- */

/* Before ui listens: xsprofd answers, and answers this user. */
static int check_daemon(void)
{
	struct reply_buf b;
	int st = ctl_request("GET", "/v1/status", NULL, &b, NULL);

	if (!st)
		free(b.data);
	return st;
}

/* `xsprofctl status`'s lines, one function per part of the status document. */

/* --max-cpu: the cost against the ceiling, what is shed now and what was, for how long. */
static void status_print_ceiling(struct json_object *k)
{
	struct json_object *now = jget(k, "shed_now"), *secs = jget(k, "shed_s");
	size_t n = now ? json_object_array_length(now) : 0;

	printf("ceiling: --max-cpu %g%% of %lld CPUs; cost %.2f%% now, %.2f%% on average (%.1f s "
	       "own CPU, %.1f s BPF%s); %lld steps shed, %lld restored\n",
	       jnum(k, "max_cpu_pct"), jint(k, "cpus"), jnum(k, "cost_pct"),
	       jnum(k, "avg_cost_pct"), jnum(k, "own_cpu_s"), jnum(k, "bpf_s"),
	       json_object_get_boolean(jget(k, "bpf_measured")) ? "" : ", not measured",
	       jint(k, "steps_shed"), jint(k, "steps_restored"));
	printf("  shed now: ");
	for (size_t i = 0; i < n; i++)
		printf("%s%s", i ? ", " : "",
		       json_object_get_string(json_object_array_get_idx(now, i)));
	printf("%s; sampling at %.0f Hz (a sample counts for %lld), launch stacks 1 in %lld\n",
	       n ? "" : "nothing", jnum(k, "freq_hz"), jint(k, "rate_divisor"),
	       jint(k, "launch_stack_every"));
	if (json_object_get_boolean(jget(k, "all_shed")) &&
	    jnum(k, "cost_pct") > jnum(k, "max_cpu_pct"))
		printf("  not held with every step shed: what is left costs %.2f%% (xsprofd's floor)\n",
		       jnum(k, "cost_pct"));
	if (secs) {
		bool any = false;

		printf("  shed in all:");
		json_object_object_foreach(secs, key, val)
		{
			if (json_object_get_double(val) <= 0)
				continue;
			printf("%s %s %.1f s", any ? "," : "", key, json_object_get_double(val));
			any = true;
		}
		printf("%s\n", any ? "" : " nothing");
	}
	if (jget(k, "launches_without_stack"))
		printf("  CUDA: %lld launches counted without their stack, %lld calls counted only\n",
		       jint(k, "launches_without_stack"), jint(k, "cuda_calls_counted_only"));
}

static void status_print_head(struct json_object *j)
{
	struct json_object *c = jget(j, "counters"), *st = jget(j, "store"), *m = jget(j, "memory"),
			   *k;

	printf("xsprofd %s, pid %lld, up %lld s\n", jstr(j, "version", "?"), jint(j, "pid"),
	       jint(j, "uptime_s"));
	if ((k = jget(j, "kernel"))) {
		struct json_object *fb = jget(k, "fallbacks");
		size_t n = fb && json_object_is_type(fb, json_type_array)
				   ? json_object_array_length(fb)
				   : 0;

		printf("kernel: %s, %s\n", jstr(k, "release", "?"),
		       n ? "fallbacks in use:" : "every BPF feature xsprofd uses is there");
		for (size_t i = 0; i < n; i++) {
			struct json_object *e = json_object_array_get_idx(fb, i);

			printf("  no %s (Linux %s): %s\n", jstr(e, "feature", "?"),
			       jstr(e, "since", "?"), jstr(e, "instead", "?"));
		}
	}
	printf("sampling: %lld Hz on %lld CPUs; %lld samples, %lld kept, %lld lost (ring buffer "
	       "full), %lld malformed\n",
	       jint(j, "freq_hz"), jint(j, "cpus"), jint(c, "samples"), jint(c, "kept"),
	       jint(c, "lost_ring_buffer_full"), jint(c, "malformed_records"));
	if ((k = jget(j, "cost")))
		printf("cost: xsprofd %.2f%% of one CPU (%.1f s since it started); BPF %.2f us per "
		       "sample (%.3f%% of one CPU), %.2f us per CUDA launch\n",
		       jnum(k, "own_cpu_pct"), jnum(k, "own_cpu_s"),
		       jnum(k, "bpf_ns_per_sample") / 1e3, jnum(k, "bpf_cpu_pct"),
		       jnum(k, "bpf_ns_per_launch") / 1e3);
	if ((k = jget(j, "ceiling")))
		status_print_ceiling(k);
	printf("window: %lld s kept; %lld samples in %lld slices, %lld of %lld KiB; %lld slices "
	       "dropped at the cap\n",
	       jint(j, "window_s"), jint(st, "samples"), jint(st, "slices"),
	       jint(st, "bytes") >> 10, jint(st, "cap_bytes") >> 10, jint(st, "dropped_slices"));
	printf("memory: %lld KiB resident; pprof frame sites %lld names, %lld of %lld KiB, emptied "
	       "%lld times at the cap, %lld refused\n",
	       jint(m, "rss_bytes") >> 10, jint(m, "frame_sites_names"),
	       jint(m, "frame_sites_bytes") >> 10, jint(m, "frame_sites_cap_bytes") >> 10,
	       jint(m, "frame_sites_resets"), jint(m, "frame_sites_refused"));
}

static void status_print_unwind(struct json_object *k)
{
	struct json_object *files = jget(k, "files_without_table_named");
	long long named = (long long)jlen(k, "files_without_table_named");

	printf("unwind: %lld walks with tables, %lld by frame pointers only; %lld tables "
	       "(%lld of %lld rows, %lld MiB), %lld without an .eh_frame, %lld did not fit, "
	       "%lld evicted\n",
	       jint(k, "walks_with_tables"), jint(k, "walks_frame_pointers_only"),
	       jint(k, "tables"), jint(k, "table_rows"), jint(k, "table_rows_cap"),
	       jint(k, "table_mb"), jint(k, "tables_without_eh_frame"), jint(k, "tables_no_room"),
	       jint(k, "tables_evicted"));
	for (long long i = 0; i < named; i++) {
		struct json_object *f = json_object_array_get_idx(files, i);

		printf("unwind: no table for %s (%s): frame pointers there\n", jstr(f, "path", "?"),
		       jstr(f, "why", "?"));
	}
	if (jint(k, "files_without_table") > named)
		printf("unwind: and %lld more files without a table\n",
		       jint(k, "files_without_table") - named);
	printf("unwind processes: %lld of %lld (at most %lld per user), %lld evicted, %lld "
	       "refused over a user's share, %lld and %lld mappings refused at the table "
	       "caps; held samples %lld (%lld whole, %lld given up, %lld past the hold "
	       "budget, %lld lost)\n",
	       jint(k, "processes"), jint(k, "processes_cap"), jint(k, "processes_share_per_user"),
	       jint(k, "processes_evicted"), jint(k, "processes_over_user_share"),
	       jint(k, "processes_table_full"), jint(k, "mappings_table_full"),
	       jint(k, "held_samples"), jint(k, "held_whole"), jint(k, "held_given_up"),
	       jint(k, "hold_budget_spent"), jint(k, "held_lost_ring_buffer_full"));
}

static void status_print_parts(struct json_object *j)
{
	struct json_object *k;

	if ((k = jget(j, "processes")))
		printf("processes: %lld execs, %lld exits, %lld gone before read; %lld exec records "
		       "past a user's budget, %lld lost (ring buffer full)\n",
		       jint(k, "execs"), jint(k, "exits"), jint(k, "gone_before_read"),
		       jint(k, "records_over_user_budget"), jint(k, "lost_ring_buffer_full"));
	if ((k = jget(j, "symbolizer")))
		printf("symbolizer: %lld snapshots (%lld deferred past a user's share, %lld failed), "
		       "%lld of %lld KiB; %lld evictions (%lld unsampled snapshots, %lld images not "
		       "named yet); %lld of %lld user frames unnamed\n",
		       jint(k, "snapshots"), jint(k, "snapshots_deferred_user_share"),
		       jint(k, "snapshots_failed_gone"), jint(k, "bytes") >> 10,
		       jint(k, "cache_bytes") >> 10, jint(k, "evictions"),
		       jint(k, "unsampled_snapshots_dropped"), jint(k, "unnamed_images_dropped"),
		       jint(k, "user_unnamed"), jint(k, "user_lookups"));
	if ((k = jget(j, "export")) && jlen(k, "sinks"))
		printf("export: %lld slices pushed to %lld sinks, %lld queued (%lld KiB of %lld), "
		       "%lld failed pushes retried, %lld dropped past the queue cap, %lld refused by "
		       "a store\n",
		       jint(k, "pushed"), (long long)jlen(k, "sinks"), jint(k, "queued"),
		       jint(k, "queued_bytes") >> 10, jint(k, "cap_bytes") >> 10,
		       jint(k, "failed_pushes"), jint(k, "dropped"), jint(k, "rejected"));
	if ((k = jget(j, "python")))
		printf("python: %lld processes (%lld past the cap), %lld stacks walked, %lld cut at the "
		       "frame cap, %lld ended on unreadable memory, %lld kept native (nested walk); "
		       "code objects %lld read, %lld unreadable; %lld frames unnamed (name table "
		       "full)\n",
		       jint(k, "processes"), jint(k, "procs_full"), jint(k, "walks"),
		       jint(k, "truncated"), jint(k, "unreadable"), jint(k, "nested_native_only"),
		       jint(k, "code_reads"), jint(k, "code_unreadable"), jint(k, "names_full"));
	if ((k = jget(j, "cuda_probes")))
		printf("cuda: %lld calls, %lld files probed (%lld refused at the uprobe cap, %lld "
		       "failed); launch stacks %lld walked, %lld reused; lost: %lld ring buffer full, "
		       "%lld scratch busy, %lld reuse records; %lld not stored\n",
		       jint(k, "calls"), jint(k, "probed_files"), jint(k, "links_capped"),
		       jint(k, "attach_failed"), jint(k, "stacks_walked"), jint(k, "stacks_reused"),
		       jint(k, "lost_ring_buffer_full"), jint(k, "lost_scratch_busy"),
		       jint(k, "reuse_drops"), jint(k, "store_failures"));
	if ((k = jget(j, "gpu")))
		printf("gpu socket: %lld connections, %lld refused at the caps, %lld closed idle, "
		       "%lld malformed; %lld records held, %lld evicted, %lld dropped by senders\n",
		       jint(k, "connections"), jint(k, "refused_connections"),
		       jint(k, "idle_connections_closed"), jint(k, "malformed_connections"),
		       jint(k, "records_held"), jint(k, "records_evicted"),
		       jint(k, "sender_dropped"));
}

static void status_print_recordings(struct json_object *j)
{
	struct json_object *v = jget(j, "attached");

	if (v && json_object_array_length(v)) {
		printf("attached:");
		for (size_t i = 0; i < json_object_array_length(v); i++)
			printf(" %s", json_object_get_string(json_object_array_get_idx(v, i)));
		putchar('\n');
	}
	v = jget(j, "recordings");
	for (size_t i = 0; v && i < json_object_array_length(v); i++) {
		struct json_object *r = json_object_array_get_idx(v, i), *x;

		printf("recording %lld: %s", jint(r, "id"), jstr(r, "state", "?"));
		if ((x = jget(r, "left_out_other_users")))
			printf("; left out as another user's: %lld samples, %lld off-CPU, %lld CUDA "
			       "calls, %lld launches",
			       jint(x, "samples"), jint(x, "offcpu"), jint(x, "cuda_calls"),
			       jint(x, "launches"));
		if ((x = jget(r, "note")))
			printf("; %s", json_object_get_string(x));
		putchar('\n');
	}
}

/* The status document as `xsprofctl status` prints it. */
static void status_print(struct json_object *j)
{
	struct json_object *k;

	status_print_head(j);
	if ((k = jget(j, "unwind")))
		status_print_unwind(k);
	status_print_parts(j);
	status_print_recordings(j);
}

static int cmd_status(void)
{
	struct reply_buf b;
	struct json_object *j;
	int st_code = ctl_request("GET", "/v1/status", NULL, &b, NULL);

	if (st_code)
		return st_code;
	if (json_out) {
		fputs(b.data, stdout);
		free(b.data);
		return EXIT_OK;
	}
	j = json_tokener_parse(b.data);
	free(b.data);
	if (!j) {
		fprintf(stderr, "xsprofctl: xsprofd sent a status that is not JSON\n");
		return EXIT_DAEMON_ERROR;
	}
	status_print(j);
	json_object_put(j);
	return EXIT_OK;
}

bool ctl_parse_pid(const char *s, long *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || !*s || v <= 0 || v > INT_MAX)
		return false;
	*ret = v;
	return true;
}

static long parse_freq(const char *arg)
{
	char *end;
	long freq = strtol(arg, &end, 10);

	return end == arg || *end || freq < 1 || freq > 10000 ? 0 : freq;
}

static int cmd_attach(int argc, char **argv, bool attach)
{
	static const struct option lo[] = {{"freq", required_argument, NULL, 'F'},
					   {"no-children", no_argument, NULL, 'N'},
					   {"group-by", required_argument, NULL, 'G'},
					   {"range-domain", required_argument, NULL, 'D'},
					   {}};
	struct json_object *req = json_object_new_object(), *j, *v;
	const char *pid_arg = NULL, *group = NULL, *domain = NULL;
	long pid, freq = 0;
	bool children = true;
	struct reply_buf b;
	int c, st = 0;

	optind = 1;
	/* The pid may come before or after the options: "attach 12 --freq 499". */
	while (!st && optind < argc) {
		if (argv[optind][0] != '-') {
			if (pid_arg)
				st = ctl_usage_error("%s takes one PID",
						     attach ? "attach" : "detach");
			pid_arg = argv[optind++];
			continue;
		}
		c = getopt_long(argc, argv, "F:", lo, NULL);
		if (c == -1)
			break;
		if (c == 'F' && attach && !(freq = parse_freq(optarg)))
			st = ctl_usage_error("--freq '%s': expected 1..10000", optarg);
		else if (c == 'N' && attach)
			children = false;
		else if (c == 'G' && attach && strcmp(optarg, "range") &&
			 strcmp(optarg, "outer-range"))
			st = ctl_usage_error(
				"--group-by '%s': an attachment groups by range or "
				"outer-range (unit, container, comm, rank, job: record --group-by)",
				optarg);
		else if (c == 'G' && attach)
			group = optarg;
		else if (c == 'D' && attach)
			domain = optarg;
		else if ((c != 'F' && c != 'D' && c != 'G') || !attach)
			st = ctl_usage_error("%s",
					     attach ? "attach takes PID, --freq HZ, --no-children, "
						      "--group-by range|outer-range and "
						      "--range-domain DOMAIN"
						    : "detach takes exactly one PID");
	}
	if (!st && domain && !group)
		st = ctl_usage_error("%s",
				     "--range-domain goes with --group-by range or outer-range");
	if (!st && optind < argc)
		st = ctl_usage_error("unexpected argument '%s'", argv[optind]);
	if (!st && !pid_arg)
		st = ctl_usage_error("%s needs a PID", attach ? "attach" : "detach");
	if (!st && !ctl_parse_pid(pid_arg, &pid))
		st = ctl_usage_error("'%s' is not a process id", pid_arg);
	if (st)
		goto out;
	json_object_object_add(req, "pid", json_object_new_int64(pid));
	if (freq)
		json_object_object_add(req, "freq_hz", json_object_new_int64(freq));
	if (attach)
		json_object_object_add(req, "children", json_object_new_boolean(children));
	if (group)
		json_object_object_add(req, "group_by", json_object_new_string(group));
	if (domain)
		json_object_object_add(req, "range_domain", json_object_new_string(domain));
	st = ctl_request("POST", attach ? "/v1/attach" : "/v1/detach",
			 json_object_to_json_string(req), &b, NULL);
	if (st)
		goto out;
	if (json_out) {
		fputs(b.data, stdout);
	} else if (attach) {
		j = json_tokener_parse(b.data);
		if (j && json_object_object_get_ex(j, "freq_hz", &v))
			freq = (long)json_object_get_int64(v);
		fprintf(stderr,
			"xsprofctl: attached %ld at %ld Hz%s%s%s; fetch with: xsprofctl flamegraph "
			"--pid %ld%s%s -o FILE\n",
			pid, freq, children ? ", descendants followed" : "",
			group ? ", grouped by " : "", group ? group : "", pid,
			group ? " --group-by " : "", group ? group : "");
		json_object_put(j);
	} else {
		fprintf(stderr, "xsprofctl: detached %ld\n", pid);
	}
	free(b.data);
out:
	json_object_put(req);
	return st;
}

/* "90", "90s", "5m", "1h" in seconds; 0 on junk. */
unsigned long ctl_parse_duration(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	/* NaN and infinity are numbers to strtod, not durations. */
	if (end == s || !isfinite(v) || !(v > 0) || v > MAX_DURATION_S)
		return 0;
	if (!strcmp(end, "") || !strcmp(end, "s"))
		return (unsigned long)v;
	if (!strcmp(end, "m"))
		return (unsigned long)(v * 60);
	if (!strcmp(end, "h"))
		return (unsigned long)(v * 3600);
	return 0;
}

/* Refused before anything starts: a recording whose result cannot be written is wasted. */
static int check_writable(const char *out)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(out, '/');
	struct stat st;

	if (!strcmp(out, "-"))
		return 0;
	if (!stat(out, &st) && S_ISDIR(st.st_mode))
		return ctl_usage_error("-o '%s' is a directory; name a file", out);
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == out)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - out), out);
	if (access(dir, W_OK | X_OK)) {
		fprintf(stderr,
			"xsprofctl: cannot write %s: %s: %s (create the directory or choose another "
			"path)\n",
			out, dir, strerror(errno));
		return EXIT_USAGE;
	}
	return 0;
}

/* -o FILE of a command whose answer comes from where (enum output_where): the window's
 * (flamegraph) or a recording's (record). */
static int check_output(const char *out, unsigned int where, enum output_format *ret)
{
	char list[200], msg[400];

	output__format_list(where, true, list, sizeof(list));
	if (!out) {
		snprintf(msg, sizeof(msg),
			 "an output file is needed: -o FILE (%s; '-': folded stacks)", list);
		return ctl_usage_error("%s", msg);
	}
	if (!strcmp(out, "-")) {
		*ret = OUTPUT_FOLDED;
		return 0;
	}
	if (output__format_from_path(out, ret)) {
		snprintf(msg, sizeof(msg),
			 "cannot tell the format of '%s' from its extension; name it %s", out,
			 list);
		return ctl_usage_error("%s", msg);
	}
	if (!output__format_allowed(*ret, where)) {
		snprintf(msg, sizeof(msg), "'%s': %s is not answered here; name it %s", out,
			 output__format_name(*ret), list);
		return ctl_usage_error("%s", msg);
	}
	return check_writable(out);
}

/* "1234" or "1,2,3" into arr; an empty item ("1,,2") or junk is refused. */
static int add_pid_list(const char *arg, struct json_object *arr)
{
	char *copy = strdup(arg), *save = NULL, *tok;
	const char *p;
	long pid;
	int st = 0;

	if (!copy)
		return EXIT_DAEMON_ERROR;
	for (p = arg; *p; p++)
		if (*p == ',' && (p == arg || p[1] == ',' || !p[1]))
			st = ctl_usage_error("--pid '%s': an empty item in the list", arg);
	for (tok = strtok_r(copy, ",", &save); !st && tok; tok = strtok_r(NULL, ",", &save)) {
		if (!ctl_parse_pid(tok, &pid))
			st = ctl_usage_error("--pid '%s': not a process id", tok);
		else if (json_object_array_length(arr) >= 64)
			st = ctl_usage_error("--pid %s: at most 64 processes", tok);
		else
			json_object_array_add(arr, json_object_new_int64(pid));
	}
	if (!*arg)
		st = ctl_usage_error("--pid '%s': not a process id", arg);
	free(copy);
	return st;
}

/* The profile options every command that returns a profile takes; 1 if c was one of them. */
int ctl_profile_opt(int c, const char *arg, struct json_object *req, int *ret_st)
{
	static const char *const modes[] = {"cpu", "gpu", "merged", NULL};
	static const char *const units[] = {"samples", "us", NULL};
	static const char *const strategies[] = {"auto", "id", "timestamp", "stream", NULL};
	const char *const *set = c == 'M' ? modes : c == 'W' ? units : c == 'C' ? strategies : NULL;
	const char *key = c == 'M' ? "gpu_mode" : c == 'W' ? "weight" : "correlate";

	if (!set)
		return 0;
	for (int i = 0; set[i]; i++)
		if (!strcmp(arg, set[i])) {
			json_object_object_add(req, key, json_object_new_string(arg));
			*ret_st = 0;
			return 1;
		}
	*ret_st = ctl_usage_error(
		c == 'M'   ? "--gpu-mode '%s': expected cpu, gpu or merged"
		: c == 'W' ? "--weight '%s': expected samples or us"
			   : "--correlate '%s': expected auto, id, timestamp or stream",
		arg);
	return 1;
}

#define PROFILE_LONG_OPTS                                                                     \
	{"gpu-mode", required_argument, NULL, 'M'}, {"weight", required_argument, NULL, 'W'}, \
		{"correlate", required_argument, NULL, 'C'},                                  \
	{                                                                                     \
		"no-children", no_argument, NULL, 'N'                                         \
	}

/* --since, -o and --pid, as flamegraph and report read them: true when c was one of them. */
static bool window_opt(int c, const char *arg, unsigned long *since, const char **out, long *pid,
		       int *st)
{
	if (c == 'S') {
		*since = ctl_parse_duration(arg);
		if (!*since)
			*st = ctl_usage_error("--since '%s': expected e.g. 90s, 5m or 1h", arg);
	} else if (c == 'o') {
		*out = arg;
	} else if (c == 'p') {
		if (!ctl_parse_pid(arg, pid))
			*st = ctl_usage_error(
				"--pid '%s': expected one process id (an attached one)", arg);
	} else {
		return false;
	}
	return true;
}

static int cmd_flamegraph(int argc, char **argv)
{
	static const struct option lo[] = {{"since", required_argument, NULL, 'S'},
					   {"output", required_argument, NULL, 'o'},
					   {"pid", required_argument, NULL, 'p'},
					   {"group-by", required_argument, NULL, 'G'},
					   PROFILE_LONG_OPTS,
					   {}};
	struct json_object *opts = json_object_new_object(), *v;
	unsigned long since = 300;
	long pid = 0;
	const char *out = NULL, *group = NULL;
	enum output_format fmt;
	char path[256];
	struct reply_buf b;
	int c, st = 0;

	optind = 1;
	while (!st && (c = getopt_long(argc, argv, "+S:o:p:", lo, NULL)) != -1) {
		if (window_opt(c, optarg, &since, &out, &pid, &st))
			continue;
		if (c == 'G') {
			group = optarg;
			if (strcmp(optarg, "range") && strcmp(optarg, "outer-range"))
				st = ctl_usage_error(
					"--group-by '%s': expected range or outer-range (an "
					"attachment's, or the window's with xsprofd "
					"--window-group-by; record --group-by has the others)",
					optarg);
		} else if (!ctl_profile_opt(c, optarg, opts, &st)) {
			st = ctl_usage_error("%s", "flamegraph takes --since DURATION, --pid PID, "
						   "--group-by range|outer-range, --gpu-mode, "
						   "--weight and -o FILE");
		}
	}
	if (!st && optind < argc)
		st = ctl_usage_error("unexpected argument '%s'", argv[optind]);
	if (!st)
		st = check_output(out, OUTPUT_IN_WINDOW, &fmt);
	if (st)
		goto out;
	snprintf(path, sizeof(path), "/v1/profile?since_s=%lu&format=%s", since,
		 output__format_name(fmt));
	if (pid)
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "&pid=%ld", pid);
	if (group)
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "&group_by=%s", group);
	if (json_object_object_get_ex(opts, "gpu_mode", &v))
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "&gpu_mode=%s",
			 json_object_get_string(v));
	if (json_object_object_get_ex(opts, "weight", &v))
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "&weight=%s",
			 json_object_get_string(v));
	st = ctl_request("GET", path, NULL, &b, NULL);
	if (!st) {
		st = save(out, &b, output__format_name(fmt));
		free(b.data);
	}
out:
	json_object_put(opts);
	return st;
}

/* A GPU report's file: .gpu.json (JSON) or .txt / .gpu.txt (text); NULL for another. */
static const char *report_format(const char *out)
{
	size_t n = strlen(out);

	if (n > 9 && !strcasecmp(out + n - 9, ".gpu.json"))
		return "gpu-report";
	if (n > 4 && !strcasecmp(out + n - 4, ".txt"))
		return "gpu-text";
	return NULL;
}

static int cmd_report(int argc, char **argv)
{
	static const struct option lo[] = {{"since", required_argument, NULL, 'S'},
					   {"output", required_argument, NULL, 'o'},
					   {"pid", required_argument, NULL, 'p'},
					   {}};
	const char *out = NULL, *fmt = "gpu-text";
	unsigned long since = 300;
	long pid = 0;
	char path[160];
	struct reply_buf b;
	int c, st = 0;

	optind = 1;
	while (!st && (c = getopt_long(argc, argv, "+S:o:p:", lo, NULL)) != -1) {
		if (!window_opt(c, optarg, &since, &out, &pid, &st))
			st = ctl_usage_error("%s", "report takes --since DURATION, --pid PID and "
						   "-o FILE");
	}
	if (!st && optind < argc)
		st = ctl_usage_error("unexpected argument '%s'", argv[optind]);
	if (!st && out && strcmp(out, "-") && !(fmt = report_format(out)))
		st = ctl_usage_error(
			"cannot tell the format of '%s' from its extension; name it "
			".gpu.json (JSON) or .gpu.txt (text), or leave -o out for text "
			"on stdout",
			out);
	if (!st && out && strcmp(out, "-"))
		st = check_writable(out);
	if (st)
		return st;
	snprintf(path, sizeof(path), "/v1/profile?since_s=%lu&format=%s", since, fmt);
	if (pid)
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "&pid=%ld", pid);
	st = ctl_request("GET", path, NULL, &b, NULL);
	if (st)
		return st;
	if (out && strcmp(out, "-")) {
		st = save(out, &b, strcmp(fmt, "gpu-text") ? "GPU report, JSON" : "GPU report");
	} else if (b.len && fwrite(b.data, 1, b.len, stdout) != b.len) {
		fprintf(stderr, "xsprofctl: writing the report failed: %s\n", strerror(errno));
		st = EXIT_DAEMON_ERROR;
	}
	free(b.data);
	return st;
}

/* CMD forked and held before its exec (base/command), with the CUDA injection library preset
 * unless the user set one; NULL with the exit status of a shell's "not found" in *ret_st. */
static struct command *spawn_held(char **cmd, int *ret_st)
{
	const char *lib = xsprof_cupti_lib_path(), *user = getenv(COMMAND_INJECTION_ENV);
	struct command *l;

	/* A recording asks for every GPU record (the library's own default is the service's
	 * always-on kernels policy); the user's choice stands. */
	setenv("XSPROF_CUPTI_POLICY", "full", 0);
	l = command__new(cmd, (user && *user) || access(lib, R_OK) ? NULL : lib,
			 access(xsprof_itt_lib_path(), R_OK) ? NULL : xsprof_itt_lib_path());
	if (!l) {
		fprintf(stderr, "xsprofctl: cannot run %s: %s\n", cmd[0],
			errno == ENOENT ? "command not found" : strerror(errno));
		*ret_st = errno == ENOENT ? 127 : 126;
	}
	return l;
}

struct record_args {
	struct json_object *req, *pids;
	const char *out;
	enum output_format fmt;
	double duration;
	char **cmd;
};

/* record --job ID, --rank LIST: checked as xsprofd checks them, sent as "job" and "rank".
 * True when c was one of them (*ret_st: 2 for a bad value). */
static bool job_opt(int c, const char *arg, struct json_object *req, int *ret_st)
{
	struct job_filter f = {0};

	if (c != 'J' && c != 'R')
		return false;
	if (c == 'J' && job_filter__set_job(&f, arg))
		*ret_st = ctl_usage_error("--job '%s': expected " JOB_FILTER_JOB_HELP, arg);
	else if (c == 'R' && job_filter__set_ranks(&f, arg))
		*ret_st = ctl_usage_error("--rank '%s': expected " JOB_FILTER_RANK_HELP, arg);
	else
		json_object_object_add(req, c == 'J' ? "job" : "rank", json_object_new_string(arg));
	return true;
}

static int record_parse(int argc, char **argv, struct record_args *a)
{
	static const struct option lo[] = {{"pid", required_argument, NULL, 'p'},
					   {"duration", required_argument, NULL, 'd'},
					   {"freq", required_argument, NULL, 'F'},
					   {"output", required_argument, NULL, 'o'},
					   {"mode", required_argument, NULL, 'm'},
					   {"group-by", required_argument, NULL, 'G'},
					   {"range-domain", required_argument, NULL, 'D'},
					   {"job", required_argument, NULL, 'J'},
					   {"rank", required_argument, NULL, 'R'},
					   PROFILE_LONG_OPTS,
					   {}};
	const char *group = NULL, *domain = NULL;
	long freq = 0;
	bool wall = false;
	char *end;
	int c, st = 0;

	optind = 1;
	while (!st && (c = getopt_long(argc, argv, "+p:d:F:o:m:", lo, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (strcmp(optarg, "cpu") && strcmp(optarg, "offcpu") &&
			    strcmp(optarg, "wall"))
				st = ctl_usage_error("--mode '%s': expected cpu, offcpu or wall",
						     optarg);
			else
				json_object_object_add(a->req, "mode",
						       json_object_new_string(optarg));
			wall = !strcmp(optarg, "wall");
			break;
		case 'G':
			if (session_group__from_name(optarg, &(enum session_group){0}))
				st = ctl_usage_error(
					"--group-by '%s': expected unit, container, comm, rank, "
					"job, range or outer-range",
					optarg);
			else
				json_object_object_add(a->req, "group_by",
						       json_object_new_string(optarg));
			group = optarg;
			break;
		case 'D':
			domain = optarg;
			if (!*optarg)
				st = ctl_usage_error("%s",
						     "--range-domain: a domain's name, or default "
						     "for NVTX's default domain");
			else
				json_object_object_add(a->req, "range_domain",
						       json_object_new_string(optarg));
			break;
		case 'p':
			st = add_pid_list(optarg, a->pids);
			break;
		case 'd':
			a->duration = strtod(optarg, &end);
			if (end == optarg || *end || !isfinite(a->duration) || !(a->duration > 0) ||
			    a->duration > MAX_DURATION_S)
				st = ctl_usage_error(
					"--duration '%s': expected a number of seconds > 0 "
					"(at most a week)",
					optarg);
			break;
		case 'F':
			freq = parse_freq(optarg);
			if (!freq)
				st = ctl_usage_error("--freq '%s': expected 1..10000", optarg);
			break;
		case 'o':
			a->out = optarg;
			break;
		case 'N':
			json_object_object_add(a->req, "children", json_object_new_boolean(false));
			break;
		default:
			if (!ctl_profile_opt(c, optarg, a->req, &st) &&
			    !job_opt(c, optarg, a->req, &st))
				st = ctl_usage_error("%s",
						     "record takes --pid, --duration, --freq, "
						     "--mode, --group-by, --range-domain, --job, "
						     "--rank, --no-children, --gpu-mode, "
						     "--weight, --correlate, -o FILE [-- CMD "
						     "ARGS]");
		}
	}
	if (!st && domain && (!group || (strcmp(group, "range") && strcmp(group, "outer-range"))))
		st = ctl_usage_error("%s",
				     "--range-domain goes with --group-by range or outer-range");
	if (!st && optind < argc) {
		if (strcmp(argv[optind - 1], "--"))
			return ctl_usage_error("unexpected argument '%s' (put a command after --)",
					       argv[optind]);
		a->cmd = &argv[optind];
		if (json_object_array_length(a->pids))
			return ctl_usage_error("%s", "--pid and -- CMD do not mix");
	}
	if (!st)
		st = check_output(a->out, OUTPUT_IN_RECORDING, &a->fmt);
	/* Wall time's on-CPU part is sampled: 999 Hz keeps each share within a point. */
	if (!freq)
		freq = wall ? 999 : 99;
	json_object_object_add(a->req, "freq_hz", json_object_new_int64(freq));
	return st;
}

/* Start the recording; its id, or 0 after saying why (*ret_st). */
static long record_start(struct record_args *a, int *ret_st)
{
	struct json_object *r, *v;
	struct reply_buf b;
	long id;

	json_object_object_add(a->req, "duration_s", json_object_new_double(a->duration));
	json_object_object_add(a->req, "format",
			       json_object_new_string(output__format_name(a->fmt)));
	json_object_object_add(a->req, "pids", json_object_get(a->pids));
	*ret_st =
		ctl_request("POST", "/v1/recordings", json_object_to_json_string(a->req), &b, NULL);
	if (*ret_st)
		return 0;
	r = json_tokener_parse(b.data);
	id = r && json_object_object_get_ex(r, "id", &v) ? json_object_get_int64(v) : 0;
	json_object_put(r);
	free(b.data);
	if (!id) {
		fprintf(stderr, "xsprofctl: xsprofd did not say which recording it started\n");
		*ret_st = EXIT_DAEMON_ERROR;
	}
	return id;
}

static int cmd_record(int argc, char **argv)
{
	struct record_args a = {
		.req = json_object_new_object(), .pids = json_object_new_array(), .duration = 10};
	struct progress prog = {.what = "recording"};
	struct reply_buf b = {};
	struct command *child = NULL;
	int st, cmd_st = -1, err;
	bool released = false;
	char path[64];
	long id;

	st = record_parse(argc, argv, &a);
	if (st)
		goto out;
	if (a.cmd) {
		child = spawn_held(a.cmd, &st);
		if (!child)
			goto out;
		json_object_array_add(a.pids, json_object_new_int64(command__pid(child)));
		json_object_object_add(a.req, "until_exit", json_object_new_boolean(true));
		a.duration = 3600; /* until it exits, within the daemon's --max-record */
		prog.what = a.cmd[0];
	}
	id = record_start(&a, &st);
	if (!id)
		goto out;
	if (child) {
		/* Recording: let the command run. */
		err = command__release(child);
		released = true;
		if (err)
			fprintf(stderr, "xsprofctl: cannot run %s: %s\n", a.cmd[0], strerror(-err));
	}
	prog.total_s = a.cmd ? 0 : a.duration;
	prog.wait_s = a.duration;
	prog.start = clock__mono_s();
	snprintf(path, sizeof(path), "/v1/recordings/%ld", id);
	st = ctl_request("GET", path, NULL, &b, &prog);
	if (!st)
		st = save(a.out, &b, output__format_name(a.fmt));
	else if (child && released && !command__exited(child) &&
		 (st == EXIT_UNREACHABLE || st == EXIT_DAEMON_ERROR)) {
		/* Its watchdog continues what the daemon had stopped; SIGCONT to be sure. */
		command__kill(child, SIGCONT);
		fprintf(stderr,
			"xsprofctl: xsprofd went away during the recording: no profile; %s (pid %d) "
			"runs on, unprofiled, and xsprofctl waits for it as its parent (Ctrl-C "
			"stops it)\n",
			a.cmd[0], (int)command__pid(child));
	}
	free(b.data);
out:
	/* Never released (the recording did not start): killed and reaped by command__free. */
	if (child && released && command__reap(child, true, &cmd_st) == 1 && !json_out && !quiet)
		fprintf(stderr, "xsprofctl: %s exited with status %d\n", a.cmd[0], cmd_st);
	command__free(child);
	json_object_put(a.pids);
	json_object_put(a.req);
	/* Like env(1) and xsprofd: the command's status once the profile is saved. */
	return !st && cmd_st >= 0 ? cmd_st : st;
}

/* Every command as `struct ctl_command` calls it: with the arguments from its name on. */
static int cmd_status_args(int argc, char **argv)
{
	return argc == 1 ? cmd_status() : ctl_usage_error("%s", "status takes no arguments");
}

static int cmd_attach_args(int argc, char **argv)
{
	return cmd_attach(argc, argv, true);
}

static int cmd_detach_args(int argc, char **argv)
{
	return cmd_attach(argc, argv, false);
}

static int cmd_dumps_args(int argc, char **argv)
{
	return ctl_dumps(argc, argv, json_out);
}

static int cmd_dump_args(int argc, char **argv)
{
	return ctl_dump(argc, argv, json_out, timeout_s);
}

static int cmd_triggers_args(int argc, char **argv)
{
	return ctl_triggers(argc, argv, json_out);
}

static int cmd_ui_args(int argc, char **argv)
{
	return ctl_ui(argc, argv, sock_path, timeout_s, quiet, check_daemon);
}

/* One subcommand: its name and what runs it (argv[0] is the name). */
struct ctl_command {
	const char *name;
	int (*handler)(int argc, char **argv);
};

/* The one list of commands: the dispatch and the errors that name them read it. */
static const struct ctl_command ctl_commands[] = {
	{"status", cmd_status_args},
	{"attach", cmd_attach_args},
	{"detach", cmd_detach_args},
	{"record", cmd_record},
	{"flamegraph", cmd_flamegraph},
	{"report", cmd_report},
	{"top", ctl_top},
	{"fleet", cmd_fleet},
	{"dump", cmd_dump_args},
	{"dumps", cmd_dumps_args},
	{"triggers", cmd_triggers_args},
	{"ui", cmd_ui_args},
};

#define NR_COMMANDS (sizeof(ctl_commands) / sizeof(ctl_commands[0]))

/* "status, attach, ...": the commands' names, as the errors list them. */
static void command_names(char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < NR_COMMANDS && len < size; i++)
		len += snprintf(buf + len, size - len, "%s%s", i ? ", " : "", ctl_commands[i].name);
}

/* argv[0]'s command run with its arguments, or the usage error that lists them. */
static int command_select(int argc, char **argv)
{
	char names[256], fmt[320];

	for (size_t i = 0; i < NR_COMMANDS; i++)
		if (!strcmp(argv[0], ctl_commands[i].name))
			return ctl_commands[i].handler(argc, argv);
	command_names(names, sizeof(names));
	snprintf(fmt, sizeof(fmt), "unknown command '%%s' (%s)", names);
	return ctl_usage_error(fmt, argv[0]);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {{"socket", required_argument, NULL, 's'},
					   {"json", no_argument, NULL, 'j'},
					   {"quiet", no_argument, NULL, 'q'},
					   {"help", no_argument, NULL, 'h'},
					   {"timeout", required_argument, NULL, 't'},
					   {"version", no_argument, NULL, 'V'},
					   {}};
	char names[256];
	int c, st;

	sock_path = getenv("XSPROF_SOCKET") ? getenv("XSPROF_SOCKET") : DEFAULT_SOCKET;
	opterr = 0;
	/* Stop at the command: its own options follow. */
	while ((c = getopt_long(argc, argv, "+s:jqt:hV", lo, NULL)) != -1) {
		char *end;

		switch (c) {
		case 's':
			sock_path = optarg;
			break;
		case 'j':
			json_out = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 't':
			timeout_s = strtod(optarg, &end);
			if (end == optarg || *end || !isfinite(timeout_s) || timeout_s < 0.1 ||
			    timeout_s > 86400)
				return ctl_usage_error(
					"--timeout '%s': expected seconds, 0.1 to 86400", optarg);
			break;
		case 'h':
			fputs(usage_text, stdout);
			return EXIT_OK;
		case 'V':
			printf("xsprofctl %s\n", XSPROF_VERSION);
			return EXIT_OK;
		default:
			if (optopt == 't' || optopt == 's')
				return ctl_usage_error("option '%s' needs a value",
						       argv[optind - 1]);
			return ctl_usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc) {
		command_names(names, sizeof(names));
		return ctl_usage_error("a command is needed: %s", names);
	}
	opterr = 0;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	st = command_select(argc - optind, argv + optind);
	curl_global_cleanup();
	return st;
}
