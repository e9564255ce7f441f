// SPDX-License-Identifier: Apache-2.0
/*
 * xsprofctl ui --history STORE: the history of benchmark runs (xsprof-history's store) in the
 * web view, answered by the proxy itself under /history/, beside xsprofd's API:
 *   /history/benches                          every (project, bench) with its runs
 *   /history/steps?project=P&bench=B          each figure's steps over commits (JSON)
 *   /history/trend.svg?project&bench&figure=KIND:NAME   a figure's plot, as `trend` draws it
 *   /history/diff.svg?project&bench&before=C&after=C    the differential flamegraph of the
 *                                             runs of commit `after` against those of `before`
 * The store is one connection, used by one request at a time.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "daemon/ctl/ui_history.h"
#include "output/diff/diff.h"
#include "output/diff_svg.h"
#include "output/history/history_cli.h"
#include "output/history/history_render.h"
#include "output/history/history_store.h"
#include "output/model/calltree.h"
#include "output/output_meta.h"

struct ui_history {
	pthread_mutex_t lock;
	struct hist_store *store;
};

int ui_history__open(const char *url, struct ui_history **ret, char *err, size_t errlen)
{
	struct ui_history *h = calloc(1, sizeof(*h));
	int r;

	if (!h)
		return -ENOMEM;
	r = hist_store__open(url, &h->store, err, errlen);
	if (r) {
		free(h);
		return r;
	}
	pthread_mutex_init(&h->lock, NULL);
	*ret = h;
	return 0;
}

void ui_history__close(struct ui_history *h)
{
	if (!h)
		return;
	hist_store__close(h->store);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

bool ui_history__path(const char *url)
{
	return !strncmp(url, "/history/", 9);
}

/* A reply built in memory: the body, its type, and the status. */
struct answer {
	char *body;
	size_t len;
	FILE *f;
	const char *type;
	unsigned int status;
	char err[512];
};

static enum MHD_Result answer_send(struct MHD_Connection *c, struct answer *a)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (a->status != 200) {
		/* {"error": ...}, as xsprofd's errors; err is ours, escaped for JSON. What was
		 * written before the failure goes. */
		fclose(a->f);
		free(a->body);
		a->body = NULL;
		a->len = 0;
		a->f = open_memstream(&a->body, &a->len);
		if (!a->f)
			return MHD_NO;
		fputs("{\"error\":\"", a->f);
		for (const char *p = a->err; *p; p++)
			if (*p == '"' || *p == '\\')
				fprintf(a->f, "\\%c", *p);
			else if ((unsigned char)*p >= 0x20)
				fputc(*p, a->f);
		fputs("\"}\n", a->f);
		a->type = "application/json";
	}
	if (fclose(a->f)) {
		free(a->body);
		return MHD_NO;
	}
	r = MHD_create_response_from_buffer(a->len, a->body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(a->body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", a->type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	/* An SVG opened on its own shows, and runs, nothing but itself. */
	MHD_add_response_header(r, "Content-Security-Policy",
				"default-src 'none'; style-src 'unsafe-inline'");
	ret = MHD_queue_response(c, a->status, r);
	MHD_destroy_response(r);
	return ret;
}

static void fail(struct answer *a, unsigned int status, int r, const char *why)
{
	a->status = status;
	if (why && *why)
		snprintf(a->err, sizeof(a->err), "%s", why);
	else
		snprintf(a->err, sizeof(a->err), "%s", strerror(r < 0 ? -r : EIO));
}

/* The HTTP status of a store's failure. */
static unsigned int status_of(int r)
{
	return r == -ENOENT ? 404 : r == -EINVAL || r == -ENOTUNIQ ? 400 : 500;
}

struct bench_list {
	FILE *f;
	size_t n;
};

static int bench_json(void *ctx, const char *project, const char *bench, size_t runs, int64_t first,
		      int64_t last)
{
	struct bench_list *b = ctx;

	fputs(b->n++ ? ",{\"project\":" : "{\"project\":", b->f);
	hist_render__json_string(b->f, project);
	fputs(",\"bench\":", b->f);
	hist_render__json_string(b->f, bench);
	fprintf(b->f, ",\"runs\":%zu,\"first\":%lld,\"last\":%lld}", runs, (long long)first,
		(long long)last);
	return 0;
}

static void benches(struct ui_history *h, struct answer *a, bool live)
{
	struct bench_list b = {.f = a->f};
	int r;

	fprintf(a->f, "{\"live\":%s,\"benches\":[", live ? "true" : "false");
	r = hist_store__benches(h->store, bench_json, &b);
	fputs("]}\n", a->f);
	if (r)
		fail(a, 500, r, hist_store__last_error(h->store));
}

/* A cli of the store, the request's project and bench, and xsprof-history's defaults. */
static void cli_of(struct ui_history *h, const char *project, const char *bench,
		   struct hist_cli *cli)
{
	*cli = (struct hist_cli){.project = project,
				 .bench = bench,
				 .wall_s = -1,
				 .min_share = 0.01,
				 .base_window = 5,
				 .quiet = true,
				 .store = h->store};
	hist_stats_opts__default(&cli->stats);
}

static void steps(struct ui_history *h, const char *project, const char *bench, struct answer *a)
{
	struct hist_cli cli;
	int r;

	cli_of(h, project, bench, &cli);
	r = hist_steps__json(&cli, a->f, a->err, sizeof(a->err));
	if (r)
		fail(a, status_of(r), r, a->err);
}

static void trend(struct ui_history *h, const char *project, const char *bench, const char *figure,
		  struct answer *a)
{
	struct hist_cli cli;
	enum hist_kind kind;
	const char *name;
	int r;

	if (hist_cli__figure(figure, &kind, &name)) {
		snprintf(a->err, sizeof(a->err),
			 "figure=%.80s: want KIND:NAME (self, total, kernel, kernel_stack, range, "
			 "gpu_idle, wall or samples)",
			 figure);
		a->status = 400;
		return;
	}
	cli_of(h, project, bench, &cli);
	a->type = "image/svg+xml";
	r = hist_trend__write(&cli, kind, name, a->f, a->err, sizeof(a->err));
	if (r)
		fail(a, status_of(r), r, a->err);
}

/* Every kept stack of a commit's runs, read into one tree. */
struct tree_fill {
	struct calltree *t;
	size_t runs;
	int err;
};

static int fill_tree(void *ctx, const struct hist_run *run, const char *folded)
{
	struct tree_fill *tf = ctx;
	FILE *f = fmemopen((void *)folded, strlen(folded), "r");
	size_t bad = 0;

	(void)run;
	if (!f)
		return -errno;
	tf->err = diff__read_folded(f, tf->t, &bad);
	fclose(f);
	tf->runs++;
	return tf->err;
}

static int commit_tree(struct ui_history *h, const char *project, const char *bench,
		       const char *commit, struct tree_fill *tf, struct answer *a)
{
	int r = hist_store__profiles(h->store, project, bench, commit, fill_tree, tf);

	if (r) {
		fail(a, status_of(r), r,
		     tf->err ? "a kept profile is not folded stacks"
			     : hist_store__last_error(h->store));
		return r;
	}
	if (!tf->runs) {
		a->status = 404;
		snprintf(a->err, sizeof(a->err),
			 "no run of commit %.64s kept its stacks (recorded with --no-stacks, or "
			 "before xsprof-history kept them)",
			 commit);
		return -ENOENT;
	}
	return 0;
}

static void diff_svg(struct ui_history *h, const char *project, const char *bench,
		     const char *before, const char *after, struct answer *a)
{
	struct tree_fill tb = {.t = calltree__new()}, ta = {.t = calltree__new()};
	char subtitle[256];
	struct output_meta meta = {
		.title = "Differential flame graph", .subtitle = subtitle, .unit = "samples"};
	struct diff *d = NULL;

	if (!tb.t || !ta.t) {
		fail(a, 500, -ENOMEM, "");
		goto out;
	}
	if (commit_tree(h, project, bench, before, &tb, a) ||
	    commit_tree(h, project, bench, after, &ta, a))
		goto out;
	d = diff__new(tb.t, ta.t);
	if (!d) {
		fail(a, 500, -errno, "");
		goto out;
	}
	snprintf(subtitle, sizeof(subtitle), "%s/%s: %.12s (%zu runs) -> %.12s (%zu runs)", project,
		 bench, before, tb.runs, after, ta.runs);
	a->type = "image/svg+xml";
	if (diff__write_svg(d, a->f, &meta))
		fail(a, 500, -EIO, "writing the differential flamegraph failed");
out:
	diff__free(d);
	calltree__free(tb.t);
	calltree__free(ta.t);
}

enum MHD_Result ui_history__answer(struct ui_history *h, struct MHD_Connection *c, const char *url,
				   bool live)
{
	const char *project = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "project");
	const char *bench = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "bench");
	const char *figure = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "figure");
	const char *before = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "before");
	const char *after = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "after");
	struct answer a = {.type = "application/json", .status = 200};
	const char *what = url + 9;

	a.f = open_memstream(&a.body, &a.len);
	if (!a.f)
		return MHD_NO;
	if (!h) {
		fail(&a, 404, -ENOENT,
		     "no history here: start xsprofctl ui --history STORE (xsprof-history's "
		     "store)");
		return answer_send(c, &a);
	}
	pthread_mutex_lock(&h->lock);
	if (!strcmp(what, "benches"))
		benches(h, &a, live);
	else if (strcmp(what, "steps") && strcmp(what, "trend.svg") && strcmp(what, "diff.svg"))
		fail(&a, 404, -ENOENT, "no such history page: benches, steps, trend.svg, diff.svg");
	else if (!project || !*project || !bench || !*bench)
		fail(&a, 400, -EINVAL, "give project= and bench=");
	else if (!strcmp(what, "steps"))
		steps(h, project, bench, &a);
	else if (!strcmp(what, "trend.svg") && (!figure || !*figure))
		fail(&a, 400, -EINVAL, "give figure=KIND:NAME");
	else if (!strcmp(what, "trend.svg"))
		trend(h, project, bench, figure, &a);
	else if (!before || !*before || !after || !*after)
		fail(&a, 400, -EINVAL, "give before= and after= (two commits)");
	else
		diff_svg(h, project, bench, before, after, &a);
	pthread_mutex_unlock(&h->lock);
	return answer_send(c, &a);
}
