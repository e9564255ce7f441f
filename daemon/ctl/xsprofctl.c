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
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "daemon/cupti_lib_path.h"
#include "output/output.h"

enum {
	EXIT_OK = 0,
	EXIT_DAEMON_ERROR = 1,
	EXIT_USAGE = 2,
	EXIT_UNREACHABLE = 3,
	EXIT_DENIED = 4,
};

#define DEFAULT_SOCKET	"/run/xsprof/xsprofd.sock"
#define DEFAULT_TIMEOUT 30 /* seconds: connecting, and any answer but a recording's */
#define MAX_DURATION_S	(7 * 24 * 3600.0) /* the daemon's own limit is lower */
#define MAX_REPLY	(512u << 20)	  /* a profile can be large; not unbounded */

static const char usage_text[] =
	"Usage: xsprofctl [--socket PATH] [--json] [--quiet] [--timeout S] COMMAND [ARGS]\n"
	"\n"
	"Talks to xsprofd, the always-on profiling service.\n"
	"\n"
	"Commands:\n"
	"  status                         version, uptime, frequency, counters, memory\n"
	"  attach PID                     track a process (and its CUDA launches)\n"
	"  detach PID\n"
	"  record [--pid PID]... [--duration S] [--freq HZ] -o FILE\n"
	"                                 record now (default 10 s at 99 Hz); the format follows\n"
	"                                 FILE's extension: .folded or .svg\n"
	"  record [--freq HZ] -o FILE -- CMD [ARGS...]\n"
	"                                 run CMD with the CUDA injection library preset and\n"
	"                                 profile it until it exits\n"
	"  flamegraph [--since DURATION] -o FILE\n"
	"                                 the rolling window's last DURATION (90s, 5m, 1h;\n"
	"                                 default 5m)\n"
	"\n"
	"Options:\n"
	"  -s, --socket PATH   xsprofd's socket (default " DEFAULT_SOCKET ", or $XSPROF_SOCKET)\n"
	"  -j, --json          print machine-readable results on stdout\n"
	"  -q, --quiet         no progress line\n"
	"  -t, --timeout S     give up on xsprofd after S seconds (default 30); waiting for a\n"
	"                      recording may take its duration on top\n"
	"  -h, --help          this text\n"
	"\n"
	"Examples:\n"
	"  xsprofctl status\n"
	"  xsprofctl record --pid 1234 --duration 30 -o app.svg\n"
	"  xsprofctl flamegraph --since 10m -o last10m.svg\n"
	"  xsprofctl record -o train.svg -- python3 train.py\n"
	"\n"
	"Exit status: 0 done; 1 the daemon reported an error; 2 usage error; 3 xsprofd is not\n"
	"running or cannot be reached; 4 permission denied (join group xsprof, or use root).\n";

static const char *sock_path;
static bool json_out, quiet;
static double timeout_s = DEFAULT_TIMEOUT;

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "xsprofctl: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'xsprofctl --help' for more information.\n");
	return EXIT_USAGE;
}

/* ---- HTTP over the Unix socket ---- */

struct buf {
	char *data;
	size_t len;
	bool overflow;
};

static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
	struct buf *b = ctx;
	size_t add = size * n;
	char *nd;

	if (b->len + add > MAX_REPLY) {
		b->overflow = true;
		return 0;
	}
	nd = realloc(b->data, b->len + add + 1);
	if (!nd)
		return 0;
	memcpy(nd + b->len, p, add);
	b->data = nd;
	b->len += add;
	b->data[b->len] = '\0';
	return add;
}

struct progress {
	const char *what;
	double total_s; /* 0: unknown (until the command exits) */
	double wait_s;	/* how long the answer may take beyond --timeout */
	double start;
	double last;
};

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int on_progress(void *ctx, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct progress *p = ctx;
	double now = mono(), el = now - p->start;

	if (now - p->last < 0.25)
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
static int request(const char *method, const char *path, const char *body, struct buf *reply,
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
	/* Every wait is bounded: connecting, and the whole exchange (a recording's on top). */
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout_s * 1000));
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
			 (long)((timeout_s + (prog ? prog->wait_s : 0)) * 1000));
	if (body) {
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	}
	if (prog && prog->what && !quiet && isatty(STDERR_FILENO)) {
		curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
		curl_easy_setopt(h, CURLOPT_XFERINFODATA, prog);
	}
	rc = curl_easy_perform(h);
	if (prog && prog->what && !quiet && isatty(STDERR_FILENO))
		fputs("\r\033[K", stderr);
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
	return output__write_file_with(path, write_blob, &b);
}

static int save(const char *path, struct buf *b, const char *what)
{
	int err = write_atomic(path, b->data ? b->data : "", b->len);

	if (err) {
		fprintf(stderr, "xsprofctl: writing %s failed: %s\n", path, strerror(-err));
		return EXIT_DAEMON_ERROR;
	}
	if (json_out)
		printf("{\"output\": \"%s\", \"bytes\": %zu}\n", path, b->len);
	else if (strcmp(path, "-"))
		fprintf(stderr, "xsprofctl: wrote %s (%s, %zu bytes)\n", path, what, b->len);
	return EXIT_OK;
}

/* ---- commands ---- */

static int cmd_status(void)
{
	struct buf b;
	struct json_object *j, *v, *c, *st, *m;
	int st_code = request("GET", "/v1/status", NULL, &b, NULL);

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
#define GET(o, k) (json_object_object_get_ex((o), (k), &v) ? json_object_get_int64(v) : 0)
	json_object_object_get_ex(j, "counters", &c);
	json_object_object_get_ex(j, "store", &st);
	json_object_object_get_ex(j, "memory", &m);
	printf("xsprofd %s, pid %lld, up %lld s\n",
	       json_object_object_get_ex(j, "version", &v) ? json_object_get_string(v) : "?",
	       (long long)GET(j, "pid"), (long long)GET(j, "uptime_s"));
	printf("sampling: %lld Hz on %lld CPUs; %lld samples, %lld kept, %lld lost (ring buffer "
	       "full), %lld malformed\n",
	       (long long)GET(j, "freq_hz"), (long long)GET(j, "cpus"),
	       (long long)GET(c, "samples"), (long long)GET(c, "kept"),
	       (long long)GET(c, "lost_ring_buffer_full"), (long long)GET(c, "malformed_records"));
	printf("window: %lld s kept; %lld samples in %lld slices, %lld of %lld KiB; %lld slices "
	       "dropped at the cap\n",
	       (long long)GET(j, "window_s"), (long long)GET(st, "samples"),
	       (long long)GET(st, "slices"), (long long)GET(st, "bytes") >> 10,
	       (long long)GET(st, "cap_bytes") >> 10, (long long)GET(st, "dropped_slices"));
	printf("memory: %lld KiB resident\n", (long long)GET(m, "rss_bytes") >> 10);
	if (json_object_object_get_ex(j, "attached", &v) && json_object_array_length(v)) {
		printf("attached:");
		for (size_t i = 0; i < json_object_array_length(v); i++)
			printf(" %s", json_object_get_string(json_object_array_get_idx(v, i)));
		putchar('\n');
	}
	if (json_object_object_get_ex(j, "recordings", &v))
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			struct json_object *r = json_object_array_get_idx(v, i), *x;

			printf("recording %lld: %s\n",
			       (long long)(json_object_object_get_ex(r, "id", &x)
						   ? json_object_get_int64(x)
						   : 0),
			       json_object_object_get_ex(r, "state", &x) ? json_object_get_string(x)
									 : "?");
		}
#undef GET
	json_object_put(j);
	return EXIT_OK;
}

static bool parse_pid(const char *s, long *ret)
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

static int cmd_attach(int argc, char **argv, bool attach)
{
	char body[64];
	struct buf b;
	long pid;
	int st;

	if (argc != 2)
		return usage_error("%s needs exactly one PID", attach ? "attach" : "detach");
	if (!parse_pid(argv[1], &pid))
		return usage_error("'%s' is not a process id", argv[1]);
	snprintf(body, sizeof(body), "{\"pid\": %ld}", pid);
	st = request("POST", attach ? "/v1/attach" : "/v1/detach", body, &b, NULL);
	if (st)
		return st;
	if (json_out)
		fputs(b.data, stdout);
	else
		fprintf(stderr, "xsprofctl: %s %ld\n", attach ? "attached" : "detached", pid);
	free(b.data);
	return EXIT_OK;
}

/* "90", "90s", "5m", "1h" in seconds; 0 on junk. */
static unsigned long parse_duration(const char *s)
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

static int check_output(const char *out, enum output_format *ret)
{
	if (!out)
		return usage_error("%s", "an output file is needed: -o FILE (.folded or .svg)");
	if (!strcmp(out, "-")) {
		*ret = OUTPUT_FOLDED;
		return 0;
	}
	if (output__format_from_path(out, ret))
		return usage_error("cannot tell the format of '%s' from its extension; name it "
				   ".folded or .svg",
				   out);
	return 0;
}

static int cmd_flamegraph(int argc, char **argv)
{
	static const struct option lo[] = {{"since", required_argument, NULL, 'S'},
					   {"output", required_argument, NULL, 'o'},
					   {}};
	unsigned long since = 300;
	const char *out = NULL;
	enum output_format fmt;
	char path[128];
	struct buf b;
	int c, st;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+S:o:", lo, NULL)) != -1) {
		if (c == 'S') {
			since = parse_duration(optarg);
			if (!since)
				return usage_error("--since '%s': expected e.g. 90s, 5m or 1h",
						   optarg);
		} else if (c == 'o') {
			out = optarg;
		} else {
			return usage_error("%s", "flamegraph takes --since DURATION and -o FILE");
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	st = check_output(out, &fmt);
	if (st)
		return st;
	snprintf(path, sizeof(path), "/v1/profile?since_s=%lu&format=%s", since,
		 output__format_name(fmt));
	st = request("GET", path, NULL, &b, NULL);
	if (st)
		return st;
	st = save(out, &b, output__format_name(fmt));
	free(b.data);
	return st;
}

/* Start CMD stopped at a pipe, so the recording is running before it does anything. */
static pid_t spawn_held(char **cmd, int *ret_release)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		const char *lib = xsprof_cupti_lib_path();

		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(127); /* the recording did not start */
		if (!access(lib, R_OK))
			setenv("CUDA_INJECTION64_PATH", lib, 0);
		execvp(cmd[0], cmd);
		fprintf(stderr, "xsprofctl: cannot run %s: %s\n", cmd[0], strerror(errno));
		_exit(127);
	}
	close(p[0]);
	*ret_release = p[1];
	return pid;
}

static int cmd_record(int argc, char **argv)
{
	static const struct option lo[] = {{"pid", required_argument, NULL, 'p'},
					   {"duration", required_argument, NULL, 'd'},
					   {"freq", required_argument, NULL, 'F'},
					   {"output", required_argument, NULL, 'o'},
					   {}};
	struct json_object *req = json_object_new_object(), *pids = json_object_new_array(), *v;
	const char *out = NULL;
	double duration = 10;
	long freq = 99, pid;
	char **cmd = NULL, path[64], *end;
	enum output_format fmt;
	struct progress prog = {.what = "recording"};
	struct buf b = {};
	int c, st, release = -1, wst;
	pid_t child = 0;
	long id;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+p:d:F:o:", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (!parse_pid(optarg, &pid)) {
				st = usage_error("--pid '%s': not a process id", optarg);
				goto out;
			}
			json_object_array_add(pids, json_object_new_int64(pid));
			break;
		case 'd':
			duration = strtod(optarg, &end);
			if (end == optarg || *end || !isfinite(duration) || !(duration > 0) ||
			    duration > MAX_DURATION_S) {
				st = usage_error(
					"--duration '%s': expected a number of seconds > 0 "
					"(at most a week)",
					optarg);
				goto out;
			}
			break;
		case 'F':
			freq = strtol(optarg, &end, 10);
			if (*end || freq < 1 || freq > 10000) {
				st = usage_error("--freq '%s': expected 1..10000", optarg);
				goto out;
			}
			break;
		case 'o':
			out = optarg;
			break;
		default:
			st = usage_error("%s", "record takes --pid, --duration, --freq, -o FILE "
					       "[-- CMD ARGS]");
			goto out;
		}
	}
	if (optind < argc) {
		if (strcmp(argv[optind - 1], "--")) {
			st = usage_error("unexpected argument '%s' (put a command after --)",
					 argv[optind]);
			goto out;
		}
		cmd = &argv[optind];
		if (json_object_array_length(pids)) {
			st = usage_error("%s", "--pid and -- CMD do not mix");
			goto out;
		}
	}
	st = check_output(out, &fmt);
	if (st)
		goto out;
	if (cmd) {
		child = spawn_held(cmd, &release);
		if (child < 0) {
			fprintf(stderr, "xsprofctl: cannot start %s: %s\n", cmd[0],
				strerror(errno));
			st = EXIT_DAEMON_ERROR;
			goto out;
		}
		json_object_array_add(pids, json_object_new_int64(child));
		json_object_object_add(req, "until_exit", json_object_new_boolean(true));
		duration = 3600; /* until it exits, within the daemon's --max-record */
		prog.what = cmd[0];
	}
	json_object_object_add(req, "duration_s", json_object_new_double(duration));
	json_object_object_add(req, "freq_hz", json_object_new_int64(freq));
	json_object_object_add(req, "format", json_object_new_string(output__format_name(fmt)));
	json_object_object_add(req, "pids", json_object_get(pids));
	st = request("POST", "/v1/recordings", json_object_to_json_string(req), &b, NULL);
	if (st)
		goto out;
	v = NULL;
	{
		struct json_object *r = json_tokener_parse(b.data);

		id = r && json_object_object_get_ex(r, "id", &v) ? json_object_get_int64(v) : 0;
		json_object_put(r);
	}
	free(b.data);
	b.data = NULL;
	if (!id) {
		fprintf(stderr, "xsprofctl: xsprofd did not say which recording it started\n");
		st = EXIT_DAEMON_ERROR;
		goto out;
	}
	if (release >= 0) {
		/* Recording: let the command run. */
		if (write(release, "g", 1) != 1)
			perror("xsprofctl: releasing the command");
		close(release);
		release = -1;
	}
	prog.total_s = cmd ? 0 : duration;
	prog.wait_s = duration;
	prog.start = mono();
	snprintf(path, sizeof(path), "/v1/recordings/%ld", id);
	st = request("GET", path, NULL, &b, &prog);
	if (!st)
		st = save(out, &b, output__format_name(fmt));
	free(b.data);
out:
	if (release >= 0)
		close(release); /* the child sees EOF and exits 127 without running CMD */
	if (child > 0 && waitpid(child, &wst, 0) == child && !json_out && !quiet)
		fprintf(stderr, "xsprofctl: %s exited with status %d\n", cmd[0],
			WIFEXITED(wst) ? WEXITSTATUS(wst) : 128 + WTERMSIG(wst));
	json_object_put(pids);
	json_object_put(req);
	return st;
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
	const char *cmd;
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
				return usage_error("--timeout '%s': expected seconds, 0.1 to 86400",
						   optarg);
			break;
		case 'h':
			fputs(usage_text, stdout);
			return EXIT_OK;
		case 'V':
			printf("xsprofctl %s\n", XSPROF_VERSION);
			return EXIT_OK;
		default:
			if (optopt == 't' || optopt == 's')
				return usage_error("option '%s' needs a value", argv[optind - 1]);
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return usage_error("%s", "a command is needed: status, attach, detach, record, "
					 "flamegraph");
	cmd = argv[optind];
	argc -= optind;
	argv += optind;
	opterr = 0;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (!strcmp(cmd, "status"))
		st = argc == 1 ? cmd_status() : usage_error("%s", "status takes no arguments");
	else if (!strcmp(cmd, "attach") || !strcmp(cmd, "detach"))
		st = cmd_attach(argc, argv, cmd[0] == 'a');
	else if (!strcmp(cmd, "record"))
		st = cmd_record(argc, argv);
	else if (!strcmp(cmd, "flamegraph"))
		st = cmd_flamegraph(argc, argv);
	else
		st = usage_error(
			"unknown command '%s' (status, attach, detach, record, flamegraph)", cmd);
	curl_global_cleanup();
	return st;
}
