/* SPDX-License-Identifier: Apache-2.0 */
/*
 * xsprofctl talking to xsprofd (client.c): the global options every request follows, one
 * request, and its answer saved where the user asked.
 */
#ifndef XSPROF_DAEMON_CTL_CLIENT_H
#define XSPROF_DAEMON_CTL_CLIENT_H

#include <stdbool.h>
#include <sys/types.h>

struct reply_buf;

#define CTL_DEFAULT_TIMEOUT_S 30 /* seconds: connecting, and any answer but a recording's */

/* xsprofctl's global options (--socket, --json, --quiet, --timeout). */
struct ctl_opts {
	const char *sock_path;
	bool json_out; /* machine-readable results on stdout */
	bool quiet;    /* no progress line */
	double timeout_s;
};

/* The one set of them: ctl_main fills it, the commands and requests read it. */
struct ctl_opts *ctl_opts(void);

/* A long wait (a recording): its progress line, and the daemon watched meanwhile. */
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

/*
 * One request. Returns an exit status; on HTTP success (2xx) *reply holds the body. Errors
 * from the daemon are printed with their hint. prog may be NULL.
 */
int ctl_request(const char *method, const char *path, const char *body, struct reply_buf *reply,
		struct progress *prog);
/* b written to path ("-": stdout) and said so (--json: as JSON); an exit status. */
int ctl_save(const char *path, struct reply_buf *b, const char *what);
/* xsprofd answers, and answers this user (else why not is said); an exit status. */
int ctl_check_daemon(void);

#endif
