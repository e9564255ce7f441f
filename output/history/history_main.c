// SPDX-License-Identifier: Apache-2.0
/*
 * xsprof-history: profiles over time. `record` stores a run's figures (from the profiles
 * xsprofd wrote), `compare` tells a change from its base with a rank test, `steps` finds the
 * commits where a figure stepped and names the commits behind it, `trend` plots a figure, `ci`
 * does what a pull request's job needs in one command, `runs` lists what is stored.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon/base/fileio.h"
#include "output/history/history_cli.h"
#include "output/history/history_figures.h"
#include "output/history/history_git.h"
#include "output/history/history_store.h"

static const char usage[] =
	"Usage: xsprof-history COMMAND [OPTIONS] [ARGS]\n"
	"Profiles over time: runs of a benchmark or job stored with their figures (self and\n"
	"total samples per function, GPU time per kernel, launching stack and NVTX range, GPU\n"
	"idle time by cause, wall time), compared with a rank test, and the commits behind a\n"
	"change named.\n"
	"\n"
	"Commands:\n"
	"  record PROFILE...     store one run: its folded stacks and/or GPU report (.gpu.json)\n"
	"  compare BASE HEAD     the runs of commit HEAD against those of BASE: each figure\n"
	"                        DIFFERENT, SAME or UNKNOWN, with its effect and interval\n"
	"  steps                 the commits where a figure stepped over history, and the\n"
	"                        commits between its last good and first bad run\n"
	"  trend                 one figure over history as an SVG plot (--figure, -o)\n"
	"  ci [PROFILE...]       store the run (if given), compare --head with its merge base on\n"
	"                        --base, write --markdown, --json and --badge; exit 3 on a\n"
	"                        regression only\n"
	"  runs                  the stored runs\n"
	"\n"
	"Where and what:\n"
	"      --db URL           the store: a file (SQLite, made when missing), sqlite:PATH, or\n"
	"                         postgresql://USER@HOST/DB (default: $XSPROF_HISTORY, else\n"
	"                         ./xsprof-history.db)\n"
	"  -p, --project NAME     the project (required)\n"
	"  -b, --bench NAME       the benchmark or job (required)\n"
	"  -c, --commit REF       record: the run's commit (required; a name with --repo)\n"
	"      --branch NAME      record: its branch; steps, trend: runs of this branch only\n"
	"      --host NAME        record: the machine (default: this one's name)\n"
	"      --label K=V        record: a label of the run (repeatable)\n"
	"      --time EPOCH       record: when it ran (default: now; orders the history)\n"
	"      --wall SECONDS     record: the run's wall time, a figure of its own\n"
	"      --max-figures N    record: figures kept per kind, the largest (default 2000)\n"
	"      --no-stacks        record: keep only the figures, not the run's folded stacks\n"
	"                         (kept by default, up to 16 MiB a run, for the differential\n"
	"                         flamegraph between two commits in the web view: xsprofctl ui)\n"
	"      --repo DIR         the git repository: names resolve, commits are named\n"
	"      --binary FILE      the program as built at the newest commit: its line tables\n"
	"                         find a function's source lines (repeatable)\n"
	"      --base REF         ci: the base branch (required)\n"
	"      --head REF         ci: the change (default: HEAD)\n"
	"\n"
	"Statistics:\n"
	"      --min-effect PCT   the least change that counts (default 5)\n"
	"      --alpha P          the rank test's level, over all figures compared (default 0.05)\n"
	"      --min-runs N       fewer runs a side is UNKNOWN (default 3)\n"
	"      --min-share PCT    figures under this share of their kind's whole are not\n"
	"                         compared (default 1)\n"
	"      --base-window N    ci: the base is the N newest commits with runs on --base's\n"
	"                         first-parent line from the merge base (default 5)\n"
	"      --figure KIND:NAME steps, trend: this figure (repeatable; default: every one\n"
	"                         above --min-share); KIND is self, total, kernel,\n"
	"                         kernel_stack, range, gpu_idle, wall or samples\n"
	"\n"
	"Outputs:\n"
	"      --markdown FILE    compare, ci: a comment body (a table of what changed)\n"
	"      --json FILE        compare, ci: every figure compared, as JSON\n"
	"      --badge FILE       compare, ci: a badge (SVG)\n"
	"      --flamegraph URL   compare, ci: the differential flamegraph to link\n"
	"  -o, --output FILE      trend: the SVG\n"
	"      --svg-dir DIR      steps: a trend SVG per figure that stepped\n"
	"  -n, --top N            rows printed (default 20, 0 for all)\n"
	"  -q, --quiet            no table on stdout\n"
	"  -V, --version          print the version and exit\n"
	"  -h, --help             this help\n"
	"\n"
	"Exit status: 0 done, 1 error (store, profile, git), 2 bad usage, 3 compare or ci found a\n"
	"regression (DIFFERENT and worse).\n"
	"\n"
	"Examples:\n"
	"  xsprofd -f -o run.folded -o run.gpu.json -- ./bench\n"
	"  xsprof-history record -p app -b bench -c \"$(git rev-parse HEAD)\" run.folded run.gpu.json\n"
	"  xsprof-history steps -p app -b bench --repo . --binary ./bench\n"
	"  xsprof-history ci -p app -b bench --repo . --base origin/main --head HEAD \\\n"
	"      --markdown comment.md --json result.json --badge badge.svg\n";

static int bad(const char *opt, const char *arg, const char *why)
{
	fprintf(stderr, "xsprof-history: %s%s%s%s: %s\n", opt, arg ? " '" : "", arg ? arg : "",
		arg ? "'" : "", why);
	fprintf(stderr, "Try 'xsprof-history --help' for more information.\n");
	return HIST_EXIT_USAGE;
}

enum {
	OPT_DB = 256,
	OPT_BRANCH,
	OPT_HOST,
	OPT_LABEL,
	OPT_TIME,
	OPT_WALL,
	OPT_MAX_FIGURES,
	OPT_REPO,
	OPT_BINARY,
	OPT_MIN_EFFECT,
	OPT_ALPHA,
	OPT_MIN_RUNS,
	OPT_MIN_SHARE,
	OPT_BASE_WINDOW,
	OPT_FIGURE,
	OPT_MARKDOWN,
	OPT_JSON,
	OPT_BADGE,
	OPT_FLAMEGRAPH,
	OPT_NO_STACKS,
	OPT_SVG_DIR,
	OPT_BASE,
	OPT_HEAD,
};

static const struct option long_opts[] = {
	{"db", required_argument, NULL, OPT_DB},
	{"project", required_argument, NULL, 'p'},
	{"bench", required_argument, NULL, 'b'},
	{"commit", required_argument, NULL, 'c'},
	{"branch", required_argument, NULL, OPT_BRANCH},
	{"host", required_argument, NULL, OPT_HOST},
	{"label", required_argument, NULL, OPT_LABEL},
	{"time", required_argument, NULL, OPT_TIME},
	{"wall", required_argument, NULL, OPT_WALL},
	{"max-figures", required_argument, NULL, OPT_MAX_FIGURES},
	{"repo", required_argument, NULL, OPT_REPO},
	{"binary", required_argument, NULL, OPT_BINARY},
	{"min-effect", required_argument, NULL, OPT_MIN_EFFECT},
	{"alpha", required_argument, NULL, OPT_ALPHA},
	{"min-runs", required_argument, NULL, OPT_MIN_RUNS},
	{"min-share", required_argument, NULL, OPT_MIN_SHARE},
	{"base-window", required_argument, NULL, OPT_BASE_WINDOW},
	{"figure", required_argument, NULL, OPT_FIGURE},
	{"markdown", required_argument, NULL, OPT_MARKDOWN},
	{"json", required_argument, NULL, OPT_JSON},
	{"badge", required_argument, NULL, OPT_BADGE},
	{"flamegraph", required_argument, NULL, OPT_FLAMEGRAPH},
	{"no-stacks", no_argument, NULL, OPT_NO_STACKS},
	{"svg-dir", required_argument, NULL, OPT_SVG_DIR},
	{"base", required_argument, NULL, OPT_BASE},
	{"head", required_argument, NULL, OPT_HEAD},
	{"output", required_argument, NULL, 'o'},
	{"top", required_argument, NULL, 'n'},
	{"quiet", no_argument, NULL, 'q'},
	{"version", no_argument, NULL, 'V'},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

/* A number within [lo, hi]: 0, or -EINVAL. */
static int number(const char *s, double lo, double hi, double *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= lo && v <= hi))
		return -EINVAL;
	*ret = v;
	return 0;
}

static int add_list(const char **list, size_t *n, const char *v, const char *opt)
{
	if (*n >= HIST_MAX_LIST)
		return bad(opt, v, "given more than 64 times");
	list[(*n)++] = v;
	return 0;
}

/* One option into cli. 0, or an exit status. */
static int option(struct hist_cli *cli, int c, const char *arg)
{
	double v;

	switch (c) {
	case OPT_DB:
		cli->db = arg;
		return 0;
	case 'p':
		cli->project = arg;
		return 0;
	case 'b':
		cli->bench = arg;
		return 0;
	case 'c':
		cli->commit = arg;
		return 0;
	case OPT_BRANCH:
		cli->branch = arg;
		return 0;
	case OPT_HOST:
		cli->host = arg;
		return 0;
	case OPT_LABEL:
		if (!strchr(arg, '=') || arg[0] == '=' || strchr(arg, ','))
			return bad("--label", arg, "wants KEY=VALUE (no comma)");
		return add_list(cli->labels, &cli->nlabels, arg, "--label");
	case OPT_TIME:
		if (number(arg, 1, 1e11, &v))
			return bad("--time", arg, "wants seconds since the epoch");
		cli->time = (int64_t)v;
		return 0;
	case OPT_WALL:
		if (number(arg, 0, 1e9, &v))
			return bad("--wall", arg, "wants seconds (0 or more)");
		cli->wall_s = v;
		return 0;
	case OPT_MAX_FIGURES:
		if (number(arg, 1, 1e6, &v))
			return bad("--max-figures", arg, "wants 1 to 1000000");
		cli->max_figures = (unsigned)v;
		return 0;
	case OPT_REPO:
		cli->repo = arg;
		return 0;
	case OPT_BINARY:
		return add_list(cli->binaries, &cli->nbinaries, arg, "--binary");
	case OPT_MIN_EFFECT:
		if (number(arg, 0.1, 1000, &v))
			return bad("--min-effect", arg, "wants a percentage, 0.1 to 1000");
		cli->stats.min_effect = v / 100;
		return 0;
	case OPT_ALPHA:
		if (number(arg, 1e-9, 0.5, &v))
			return bad("--alpha", arg, "wants a level between 1e-9 and 0.5");
		cli->stats.alpha = v;
		return 0;
	case OPT_MIN_RUNS:
		if (number(arg, 2, 10000, &v))
			return bad("--min-runs", arg, "wants 2 or more");
		cli->stats.min_runs = (unsigned)v;
		return 0;
	case OPT_MIN_SHARE:
		if (number(arg, 0, 100, &v))
			return bad("--min-share", arg, "wants a percentage, 0 to 100");
		cli->min_share = v / 100;
		return 0;
	case OPT_BASE_WINDOW:
		if (number(arg, 1, 1000, &v))
			return bad("--base-window", arg, "wants 1 to 1000 commits");
		cli->base_window = (unsigned)v;
		return 0;
	case OPT_FIGURE: {
		enum hist_kind k;
		const char *name;

		if (hist_cli__figure(arg, &k, &name))
			return bad("--figure", arg,
				   "wants KIND:NAME, KIND one of self, total, kernel, "
				   "kernel_stack, range, gpu_idle, wall, samples");
		return add_list(cli->figures, &cli->nfigures, arg, "--figure");
	}
	case OPT_MARKDOWN:
		cli->markdown = arg;
		return 0;
	case OPT_JSON:
		cli->json = arg;
		return 0;
	case OPT_BADGE:
		cli->badge = arg;
		return 0;
	case OPT_NO_STACKS:
		cli->no_stacks = true;
		return 0;
	case OPT_FLAMEGRAPH:
		cli->flamegraph = arg;
		return 0;
	case OPT_SVG_DIR:
		cli->svg_dir = arg;
		return 0;
	case OPT_BASE:
		cli->base = arg;
		return 0;
	case OPT_HEAD:
		cli->head = arg;
		return 0;
	case 'o':
		cli->output = arg;
		return 0;
	case 'n':
		if (number(arg, 0, 1e6, &v))
			return bad("--top", arg, "wants 0 (all) or more rows");
		cli->top = (unsigned)v;
		return 0;
	case 'q':
		cli->quiet = true;
		return 0;
	default:
		return HIST_EXIT_USAGE;
	}
}

/* The run's folded stacks, all its folded profiles one after the other, kept beside its figures
 * for differential flamegraphs. Not keeping them costs only those: said, not an error. */
static void keep_stacks(struct hist_cli *cli, int64_t run_id)
{
	char *all = NULL, *buf = NULL, err[512];
	size_t len = 0, n = 0, files = 0;
	int r = 0;

	for (size_t i = 0; i < cli->nprofiles && !r; i++) {
		size_t at = 0;
		char *grown;

		r = file__read_all(cli->profiles[i], HIST_PROFILE_MAX + 1, &buf, &n);
		if (r)
			break;
		while (at < n && (buf[at] == ' ' || buf[at] == '\n' || buf[at] == '\t'))
			at++;
		if (at < n && buf[at] != '{') { /* a GPU report is JSON: no stacks */
			grown = realloc(all, len + n + 2);
			r = grown ? 0 : -ENOMEM;
			if (grown) {
				all = grown;
				memcpy(all + len, buf, n);
				len += n;
				if (n && all[len - 1] != '\n')
					all[len++] = '\n';
				all[len] = 0;
				files++;
			}
		}
		free(buf);
		buf = NULL;
	}
	if (!r && !files)
		return;
	if (!r)
		r = hist_store__add_profile(cli->store, run_id, all, len, err, sizeof(err));
	else
		snprintf(err, sizeof(err), "%s",
			 r == -EFBIG || r == -E2BIG
				 ? "the folded stacks are over the 16 MiB a run keeps"
				 : strerror(-r));
	if (r)
		fprintf(stderr,
			"xsprof-history: the run's figures are stored, its stacks not: %s\n", err);
	else if (!cli->quiet)
		printf("kept its stacks: %zu KiB\n", (len + 1023) >> 10);
	free(all);
}

int hist_cmd__record(struct hist_cli *cli)
{
	struct hist_figures figs = {.cap = cli->max_figures};
	struct hist_run run = {0};
	char err[512] = "", hash[41], labels[4096] = "", host[256];
	size_t dropped = 0;
	int r;

	if (!cli->commit)
		return bad("record", NULL, "a run needs its commit (--commit)");
	if (!cli->nprofiles)
		return bad("record", NULL, "no profile given (folded stacks or a .gpu.json)");
	run.commit = cli->commit;
	if (cli->repo) {
		r = hist_git__resolve(cli->repo, cli->commit, hash, err, sizeof(err));
		if (r) {
			fprintf(stderr, "xsprof-history: %s\n", err);
			return HIST_EXIT_ERROR;
		}
		run.commit = hash;
	} else if (strlen(cli->commit) < 7 ||
		   strspn(cli->commit, "0123456789abcdef") != strlen(cli->commit)) {
		return bad("--commit", cli->commit,
			   "wants a commit hash (7 or more hex digits), or a name with --repo");
	}
	for (size_t i = 0; i < cli->nprofiles; i++) {
		r = hist_figures__read(&figs, cli->profiles[i], err, sizeof(err));
		if (r) {
			fprintf(stderr, "xsprof-history: %s: nothing stored\n", err);
			hist_figures__free(&figs);
			return HIST_EXIT_ERROR;
		}
	}
	if (cli->wall_s >= 0 && hist_figures__add(&figs, HIST_WALL, "wall", cli->wall_s * 1e9)) {
		hist_figures__free(&figs);
		return HIST_EXIT_ERROR;
	}
	hist_figures__trim(&figs);
	for (size_t i = 0; i < cli->nlabels; i++) {
		size_t used = strlen(labels);

		snprintf(labels + used, sizeof(labels) - used, "%s%s", used ? "," : "",
			 cli->labels[i]);
	}
	if (!cli->host) {
		if (gethostname(host, sizeof(host)))
			snprintf(host, sizeof(host), "unknown");
		host[sizeof(host) - 1] = '\0';
	}
	run.project = cli->project;
	run.bench = cli->bench;
	run.branch = cli->branch;
	run.host = cli->host ? cli->host : host;
	run.labels = labels[0] ? labels : NULL;
	run.time = cli->time ? cli->time : (int64_t)time(NULL);
	r = hist_store__add_run(cli->store, &run, figs.v, figs.n, err, sizeof(err));
	for (int k = 0; k < HIST_KIND_COUNT; k++)
		dropped += figs.dropped[k];
	if (r)
		fprintf(stderr, "xsprof-history: %s: nothing stored\n", err);
	else if (!cli->quiet)
		printf("stored run %lld of %s/%s at %.12s: %zu figures%s\n", (long long)run.id,
		       cli->project, cli->bench, run.commit, figs.n,
		       dropped ? " (some left out past --max-figures: the smallest)" : "");
	if (!r && dropped)
		fprintf(stderr, "xsprof-history: %zu figures left out past --max-figures %zu\n",
			dropped, figs.cap ? figs.cap : (size_t)HIST_FIGURES_CAP_DEFAULT);
	if (!r && !cli->no_stacks)
		keep_stacks(cli, run.id);
	hist_figures__free(&figs);
	return r ? HIST_EXIT_ERROR : 0;
}

static int print_run(void *ctx, const struct hist_run *run)
{
	char when[32];
	time_t t = (time_t)run->time;
	struct tm tm;

	(void)ctx;
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", gmtime_r(&t, &tm));
	printf("%-6lld %.12s  %-16s %-16s %s  %s\n", (long long)run->id, run->commit,
	       run->branch ? run->branch : "-", run->host ? run->host : "-", when,
	       run->labels ? run->labels : "");
	return 0;
}

static int cmd_runs(struct hist_cli *cli)
{
	printf("%-6s %-12s  %-16s %-16s %-19s  %s\n", "run", "commit", "branch", "host",
	       "time (UTC)", "labels");
	int r = hist_store__runs(cli->store, cli->project, cli->bench, print_run, NULL);

	if (r) {
		fprintf(stderr, "xsprof-history: reading the runs: %s\n", strerror(-r));
		return HIST_EXIT_ERROR;
	}
	return 0;
}

struct command {
	const char *name;
	int (*run)(struct hist_cli *cli);
	bool positional; /* takes arguments after its options */
};

static const struct command commands[] = {
	{"record", hist_cmd__record, true}, {"compare", hist_cmd__compare, true},
	{"steps", hist_cmd__steps, false},  {"trend", hist_cmd__trend, false},
	{"ci", hist_cmd__ci, true},	    {"runs", cmd_runs, false},
};

int main(int argc, char **argv)
{
	struct hist_cli cli = {.wall_s = -1, .min_share = 0.01, .base_window = 5, .top = 20};
	const struct command *cmd = NULL;
	char err[512] = "";
	int c, r;

	hist_stats_opts__default(&cli.stats);
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc >= 2 && (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version"))) {
		printf("xsprof-history %s\n", XSPROF_VERSION);
		return 0;
	}
	if (argc < 2)
		return bad("a command", NULL, "missing (record, compare, steps, trend, ci, runs)");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			cmd = &commands[i];
	if (!cmd)
		return bad("command", argv[1], "unknown (record, compare, steps, trend, ci, runs)");
	optind = 2;
	while ((c = getopt_long(argc, argv, "p:b:c:o:n:qVh", long_opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(usage, stdout);
			return 0;
		}
		if (c == 'V') {
			printf("xsprof-history %s\n", XSPROF_VERSION);
			return 0;
		}
		if (c == '?')
			return bad(argv[1], NULL, "bad option");
		r = option(&cli, c, optarg);
		if (r)
			return r;
	}
	cli.profiles = argv + optind;
	cli.nprofiles = (size_t)(argc - optind);
	if (cli.nprofiles && !cmd->positional)
		return bad(cmd->name, argv[optind], "takes no arguments");
	if (!cli.project || !*cli.project)
		return bad(cmd->name, NULL, "needs --project");
	if (!cli.bench || !*cli.bench)
		return bad(cmd->name, NULL, "needs --bench");
	if (!cli.db)
		cli.db = getenv("XSPROF_HISTORY");
	if (!cli.db || !*cli.db)
		cli.db = "xsprof-history.db";
	r = hist_store__open(cli.db, &cli.store, err, sizeof(err));
	if (r) {
		fprintf(stderr, "xsprof-history: %s\n", err[0] ? err : strerror(-r));
		return HIST_EXIT_ERROR;
	}
	r = cmd->run(&cli);
	hist_store__close(cli.store);
	return r;
}
