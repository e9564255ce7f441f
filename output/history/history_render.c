// SPDX-License-Identifier: Apache-2.0
/*
 * A comparison and a history rendered: the Markdown of a pull request's comment (GitHub's
 * pipe tables), the JSON result, a badge and a trend plot (SVG). Names come from profiled
 * programs: each output escapes them its own way.
 */
#include "output/history/history_render.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define NAME_MAX_MD 90 /* characters of a name in a table cell; longer ones lose their middle */

size_t hist_report__regressions(const struct hist_report *r)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n; i++)
		n += r->rows[i].cmp.verdict == HIST_DIFFERENT && r->rows[i].cmp.effect > 0;
	return n;
}

static size_t count(const struct hist_report *r, enum hist_verdict v, int sign)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n; i++)
		n += r->rows[i].cmp.verdict == v &&
		     (!sign || (sign > 0 ? r->rows[i].cmp.effect > 0 : r->rows[i].cmp.effect <= 0));
	return n;
}

static void value(enum hist_kind kind, double v, char *buf, size_t len)
{
	if (strcmp(hist_kind__unit(kind), "ns"))
		snprintf(buf, len, "%.0f samples", v);
	else if (fabs(v) >= 1e9)
		snprintf(buf, len, "%.3f s", v / 1e9);
	else if (fabs(v) >= 1e6)
		snprintf(buf, len, "%.3f ms", v / 1e6);
	else
		snprintf(buf, len, "%.1f µs", v / 1e3);
}

/* A name in a table cell: | and ` escaped, newlines as spaces, the middle of a long one cut. */
static void md_name(FILE *f, const char *s)
{
	size_t n = strlen(s), keep = NAME_MAX_MD / 2;

	fputc('`', f);
	for (size_t i = 0; i < n; i++) {
		if (n > NAME_MAX_MD && i == keep) {
			fputs("…", f);
			i = n - keep;
		}
		if (s[i] == '|')
			fputs("\\|", f);
		else if (s[i] == '`')
			fputc('\'', f);
		else if (s[i] == '\n' || s[i] == '\r')
			fputc(' ', f);
		else
			fputc(s[i], f);
	}
	fputc('`', f);
}

static void md_row(FILE *f, const struct hist_row *r)
{
	char b[64], h[64];

	value(r->kind, r->cmp.base_median, b, sizeof(b));
	value(r->kind, r->cmp.head_median, h, sizeof(h));
	fprintf(f, "| %s | %s | ", r->cmp.effect > 0 ? "regressed" : "improved",
		hist_kind__name(r->kind));
	md_name(f, r->name);
	if (r->cmp.base_median == 0) /* no relative change of nothing: it is new */
		fprintf(f, " | %s | %s | new | %.2g | %zu / %zu |\n", b, h, r->cmp.p, r->cmp.n_base,
			r->cmp.n_head);
	else
		fprintf(f, " | %s | %s | %+.1f%% [%+.1f%%, %+.1f%%] | %.2g | %zu / %zu |\n", b, h,
			100 * r->cmp.effect, 100 * r->cmp.ci_lo, 100 * r->cmp.ci_hi, r->cmp.p,
			r->cmp.n_base, r->cmp.n_head);
}

int hist_render__markdown(const struct hist_report *r, FILE *f)
{
	size_t reg = hist_report__regressions(r), imp = count(r, HIST_DIFFERENT, -1);
	size_t unk = count(r, HIST_UNKNOWN, 0), same = count(r, HIST_SAME, 0);

	if (reg)
		fprintf(f, "### xsprof: %zu regression%s in %s\n\n", reg, reg == 1 ? "" : "s",
			r->bench);
	else
		fprintf(f, "### xsprof: no regression in %s\n\n", r->bench);
	fprintf(f,
		"`%s` against `%s` (project %s): %zu figures compared: %zu regressed, %zu "
		"improved, %zu the same, %zu unknown.\n\n",
		r->head, r->base, r->project, r->n, reg, imp, same, unk);
	if (reg + imp) {
		fputs("| change | kind | name | base | head | effect [95% interval] | p | runs |\n"
		      "|---|---|---|---:|---:|---:|---:|---:|\n",
		      f);
		for (int pass = 0; pass < 2; pass++)
			for (size_t i = 0; i < r->n; i++)
				if (r->rows[i].cmp.verdict == HIST_DIFFERENT &&
				    (r->rows[i].cmp.effect > 0) == (pass == 0))
					md_row(f, &r->rows[i]);
		fputs("\n", f);
	}
	if (unk)
		fprintf(f,
			"%zu figure%s UNKNOWN: these runs cannot tell whether %s changed; more "
			"runs a side (%u at the least) would.\n\n",
			unk, unk == 1 ? "" : "s", unk == 1 ? "it" : "they", r->min_runs);
	for (size_t i = 0; i < r->n; i++) {
		const struct hist_row *row = &r->rows[i];

		if (row->cmp.verdict != HIST_DIFFERENT || row->cmp.effect <= 0 || !row->ncommits)
			continue;
		fputs("**Commits behind ", f);
		md_name(f, row->name);
		fputs("**", f);
		if (row->source)
			fprintf(f, " (source `%s`, %s)", row->source,
				row->source_how && !strcmp(row->source_how, "name")
					? "found by name: no line information"
					: "from the line tables");
		fputs(":\n\n", f);
		for (size_t j = 0; j < row->ncommits; j++) {
			fprintf(f, "- `%.12s` ", row->commits[j].hash);
			for (const char *p = row->commits[j].subject; *p; p++)
				fputc(*p == '\n' ? ' ' : *p, f);
			fputs(row->commits[j].touched ? " — **touched it**\n" : "\n", f);
		}
		fputs("\n", f);
	}
	if (r->flamegraph)
		fprintf(f, "Differential flamegraph: [%s](%s)\n", r->flamegraph, r->flamegraph);
	return ferror(f) ? -EIO : 0;
}

void hist_render__json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* A number JSON can hold (NaN and infinities as null). */
static void json_num(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%.9g", v);
	else
		fputs("null", f);
}

int hist_render__json(const struct hist_report *r, FILE *f)
{
	fputs("{\"schema\":\"xsprof.history_compare\",\"version\":1,\"project\":", f);
	hist_render__json_string(f, r->project);
	fputs(",\"bench\":", f);
	hist_render__json_string(f, r->bench);
	fputs(",\"base\":", f);
	hist_render__json_string(f, r->base);
	fputs(",\"head\":", f);
	hist_render__json_string(f, r->head);
	fprintf(f,
		",\"counts\":{\"regressions\":%zu,\"improvements\":%zu,\"same\":%zu,"
		"\"unknown\":%zu},\"rows\":[",
		hist_report__regressions(r), count(r, HIST_DIFFERENT, -1), count(r, HIST_SAME, 0),
		count(r, HIST_UNKNOWN, 0));
	for (size_t i = 0; i < r->n; i++) {
		const struct hist_row *row = &r->rows[i];
		const double nums[] = {row->cmp.base_median, row->cmp.head_median, row->cmp.effect,
				       row->cmp.ci_lo,	     row->cmp.ci_hi,	   row->cmp.p};
		static const char *const keys[] = {"base_median", "head_median", "effect",
						   "ci_lo",	  "ci_hi",	 "p"};

		fputs(i ? ",{\"kind\":" : "{\"kind\":", f);
		hist_render__json_string(f, hist_kind__name(row->kind));
		fputs(",\"name\":", f);
		hist_render__json_string(f, row->name);
		fputs(",\"unit\":", f);
		hist_render__json_string(f, hist_kind__unit(row->kind));
		fputs(",\"verdict\":", f);
		hist_render__json_string(f, hist_verdict__name(row->cmp.verdict));
		for (size_t k = 0; k < sizeof(nums) / sizeof(nums[0]); k++) {
			fprintf(f, ",\"%s\":", keys[k]);
			json_num(f, nums[k]);
		}
		fprintf(f, ",\"n_base\":%zu,\"n_head\":%zu", row->cmp.n_base, row->cmp.n_head);
		if (row->source) {
			fputs(",\"source\":", f);
			hist_render__json_string(f, row->source);
			fputs(",\"source_how\":", f);
			hist_render__json_string(f, row->source_how);
		}
		fputs(",\"commits\":[", f);
		for (size_t j = 0; j < row->ncommits; j++) {
			fputs(j ? ",{\"hash\":" : "{\"hash\":", f);
			hist_render__json_string(f, row->commits[j].hash);
			fputs(",\"subject\":", f);
			hist_render__json_string(f, row->commits[j].subject);
			fprintf(f, ",\"touched\":%s}", row->commits[j].touched ? "true" : "false");
		}
		fputs("]}", f);
	}
	fputs("]}\n", f);
	return ferror(f) ? -EIO : 0;
}

static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else if (*s == '"')
			fputs("&quot;", f);
		else if ((unsigned char)*s >= 0x20 || *s == '\t')
			fputc(*s, f);
	}
}

int hist_render__badge(const struct hist_report *r, FILE *f)
{
	size_t reg = hist_report__regressions(r);
	char msg[64];
	const char *colour;
	int lw = 44, mw;

	if (reg) {
		snprintf(msg, sizeof(msg), "%zu regression%s", reg, reg == 1 ? "" : "s");
		colour = "#e05d44";
	} else if (count(r, HIST_UNKNOWN, 0) && !count(r, HIST_SAME, 0) &&
		   !count(r, HIST_DIFFERENT, 0)) {
		snprintf(msg, sizeof(msg), "unknown");
		colour = "#9f9f9f";
	} else {
		snprintf(msg, sizeof(msg), "no change");
		colour = "#4c1";
	}
	mw = 12 + 7 * (int)strlen(msg);
	fprintf(f,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"20\" "
		"role=\"img\" aria-label=\"perf: %s\">\n"
		"<title>perf: %s</title>\n"
		"<rect width=\"%d\" height=\"20\" fill=\"#555\"/>\n"
		"<rect x=\"%d\" width=\"%d\" height=\"20\" fill=\"%s\"/>\n"
		"<g fill=\"#fff\" font-family=\"Verdana,DejaVu Sans,sans-serif\" "
		"font-size=\"11\" text-anchor=\"middle\">\n"
		"<text x=\"%d\" y=\"14\">perf</text>\n"
		"<text x=\"%d\" y=\"14\">%s</text>\n</g>\n</svg>\n",
		lw + mw, msg, msg, lw, lw, mw, colour, lw / 2, lw + mw / 2, msg);
	return ferror(f) ? -EIO : 0;
}

/* Plot geometry */
#define W     900
#define H     360
#define LEFT  90
#define RIGHT 20
#define TOP   40
#define BOT   80

int hist_render__trend_svg(const char *title, enum hist_kind kind, const char *const *labels,
			   const struct hist_series *s, const struct hist_step *steps,
			   size_t nsteps, FILE *f)
{
	double lo = INFINITY, hi = -INFINITY, pw = W - LEFT - RIGHT, ph = H - TOP - BOT, dx;
	size_t every;
	char buf[64];

	for (size_t c = 0; c < s->ncommits; c++)
		for (size_t i = 0; i < s->n[c]; i++) {
			lo = fmin(lo, s->runs[c][i]);
			hi = fmax(hi, s->runs[c][i]);
		}
	if (!isfinite(lo)) {
		lo = 0;
		hi = 1;
	}
	if (hi - lo < 1e-12 * fmax(1, fabs(hi))) {
		lo -= 1;
		hi += 1;
	}
	{
		double m = (hi - lo) * 0.08;

		lo -= m;
		hi += m;
	}
	dx = s->ncommits > 1 ? pw / (double)(s->ncommits - 1) : 0;
	every = s->ncommits > 40 ? (s->ncommits + 39) / 40 : 1;
#define X(c) (LEFT + (s->ncommits > 1 ? dx * (double)(c) : pw / 2))
#define Y(v) (TOP + ph - ((v)-lo) / (hi - lo) * ph)
	fprintf(f,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" font-family=\"Verdana,DejaVu Sans,sans-serif\" "
		"font-size=\"11\">\n<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n"
		"<text x=\"%d\" y=\"22\" font-size=\"14\">",
		W, H, W, H, W, H, LEFT);
	xml_text(f, title);
	fputs("</text>\n", f);
	/* axes and the value scale (5 ticks) */
	fprintf(f,
		"<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n"
		"<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n",
		LEFT, TOP, LEFT, H - BOT, LEFT, H - BOT, W - RIGHT, H - BOT);
	for (int t = 0; t <= 4; t++) {
		double v = lo + (hi - lo) * t / 4;

		value(kind, v, buf, sizeof(buf));
		fprintf(f,
			"<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n"
			"<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>\n",
			LEFT - 6, Y(v) + 4, buf, LEFT + 1, Y(v), W - RIGHT, Y(v));
	}
	/* steps: a dashed line between the last good commit and the first bad one */
	for (size_t i = 0; i < nsteps; i++) {
		double x = steps[i].at ? (X(steps[i].at - 1) + X(steps[i].at)) / 2 : X(0);

		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#d62728\" "
			"stroke-dasharray=\"5,4\"/>\n<text x=\"%.1f\" y=\"%d\" fill=\"#d62728\" "
			"text-anchor=\"middle\">step %+.1f%%</text>\n",
			x, TOP, x, H - BOT, x, TOP - 4, 100 * steps[i].cmp.effect);
	}
	/* medians, then runs */
	fputs("<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"", f);
	for (size_t c = 0; c < s->ncommits; c++)
		if (s->n[c])
			fprintf(f, "%s%.1f,%.1f", c ? " " : "", X(c),
				Y(hist_median(s->runs[c], s->n[c])));
	fputs("\"/>\n", f);
	for (size_t c = 0; c < s->ncommits; c++) {
		for (size_t i = 0; i < s->n[c]; i++) {
			value(kind, s->runs[c][i], buf, sizeof(buf));
			fprintf(f,
				"<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#1f77b4\" "
				"fill-opacity=\"0.45\"><title>",
				X(c), Y(s->runs[c][i]));
			xml_text(f, labels && labels[c] ? labels[c] : "?");
			fprintf(f, ": %s</title></circle>\n", buf);
		}
		if (c % every == 0 && labels && labels[c]) {
			fprintf(f,
				"<text x=\"%.1f\" y=\"%d\" transform=\"rotate(-45 %.1f %d)\" "
				"text-anchor=\"end\">",
				X(c), H - BOT + 14, X(c), H - BOT + 14);
			xml_text(f, labels[c]);
			fputs("</text>\n", f);
		}
	}
#undef X
#undef Y
	fputs("</svg>\n", f);
	return ferror(f) ? -EIO : 0;
}
