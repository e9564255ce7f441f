// SPDX-License-Identifier: Apache-2.0
/*
 * The SVG is written in two walks over the tree: the first finds how deep the drawn part goes
 * (the image height comes first in the file) and how many frames are too narrow to draw; the
 * second streams one <g> per drawn frame. Each <g> carries its level, offset and weight in
 * data-* attributes, so the embedded script can re-lay frames out for zoom and search without
 * the C side having to repeat anything.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/hash.h"
#include "output/flamegraph.h"
#include "output/model/calltree.h"
#include "output/output_meta.h"

#define IMG_W	  1200
#define XPAD	  10
#define FRAME_H	  16
#define TOP	  56 /* title, subtitle, controls */
#define BOTTOM	  44 /* details line, note */
#define FONT_PX	  12
#define CHAR_W	  7.0	/* average glyph width at FONT_PX, to fit labels */
#define MIN_FRAC  0.001 /* narrower than this share of the total: not drawn */
#define MATCH_RGB "rgb(230,0,230)"

struct svg {
	FILE *f;
	int err;
	uint64_t total;
	double scale; /* pixels per unit of weight */
	const char *unit;
	uint64_t *next_off; /* per depth: where the next frame at that depth starts */
	size_t drawn_depth; /* deepest drawn frame's depth + 1 */
	size_t elided;
	const struct flamegraph_style *style; /* NULL: the usual colours */
	const char **path;		      /* with a style: names from the root down */
};

static void out(struct svg *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void out(struct svg *s, const char *fmt, ...)
{
	va_list ap;

	if (s->err)
		return;
	va_start(ap, fmt);
	if (vfprintf(s->f, fmt, ap) < 0)
		s->err = errno ? -errno : -EIO;
	va_end(ap);
}

/*
 * Decodes one UTF-8 sequence. Anything XML 1.0 cannot carry (malformed UTF-8, control
 * characters, U+FFFE/U+FFFF) becomes U+FFFD, because one bad byte in a symbol name would make
 * the whole document unreadable.
 */
static size_t utf8_next(const unsigned char *p, uint32_t *ret_cp)
{
	uint32_t cp, min;
	size_t len, i;

	if (p[0] < 0x80) {
		*ret_cp = p[0] < 0x20 ? 0xfffd : p[0];
		return 1;
	}
	if ((p[0] & 0xe0) == 0xc0) {
		len = 2, cp = p[0] & 0x1f, min = 0x80;
	} else if ((p[0] & 0xf0) == 0xe0) {
		len = 3, cp = p[0] & 0x0f, min = 0x800;
	} else if ((p[0] & 0xf8) == 0xf0) {
		len = 4, cp = p[0] & 0x07, min = 0x10000;
	} else {
		*ret_cp = 0xfffd;
		return 1;
	}
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80) { /* also stops at the terminating NUL */
			*ret_cp = 0xfffd;
			return i;
		}
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe ||
	    cp == 0xffff)
		cp = 0xfffd;
	*ret_cp = cp;
	return len;
}

static size_t utf8_count(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = 0;
	uint32_t cp;

	while (*p) {
		p += utf8_next(p, &cp);
		n++;
	}
	return n;
}

/* Writes at most max characters of s, escaped for text and attribute values alike. */
static void put_escaped(struct svg *s, const char *str, size_t max)
{
	const unsigned char *p = (const unsigned char *)str;
	size_t n;

	for (n = 0; *p && n < max && !s->err; n++) {
		const unsigned char *start = p;
		uint32_t cp;

		p += utf8_next(p, &cp);
		switch (cp) {
		case '&':
			out(s, "&amp;");
			break;
		case '<':
			out(s, "&lt;");
			break;
		case '>':
			out(s, "&gt;");
			break;
		case '"':
			out(s, "&quot;");
			break;
		case '\'':
			out(s, "&apos;");
			break;
		case 0xfffd:
			out(s, "\xef\xbf\xbd");
			break;
		default:
			out(s, "%.*s", (int)(p - start), (const char *)start);
		}
	}
}

/* Same rule as fit() in the script: the label, shortened with "..", or nothing. */
static void put_label(struct svg *s, const char *name, double width)
{
	long fits = (long)((width - 6) / CHAR_W);
	size_t len;

	if (fits < 3)
		return;
	len = utf8_count(name);
	if (len <= (size_t)fits) {
		put_escaped(s, name, SIZE_MAX);
		return;
	}
	put_escaped(s, name, fits - 2);
	out(s, "..");
}

static bool has_prefix(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t ls = strlen(s), lx = strlen(suffix);

	return ls >= lx && !strcmp(s + ls - lx, suffix);
}

/*
 * Colour by a hash of the name, so a function keeps its colour across profiles. The ranges do
 * not overlap: user frames are saturated red to yellow (blue <= 50), kernel frames a pale
 * orange (blue 80-100), GPU work green, CUDA API calls blue.
 */
static void frame_rgb(const char *name, unsigned int rgb[3])
{
	uint64_t h = hash_str(name);
	double v1, v2, v3;

	v1 = (h & 0xff) / 255.0;
	v2 = ((h >> 8) & 0xff) / 255.0;
	v3 = ((h >> 16) & 0xff) / 255.0;
	if (has_prefix(name, "[gpu] ")) {
		rgb[0] = 70 + 40 * v1, rgb[1] = 180 + 40 * v2, rgb[2] = 70 + 40 * v3;
	} else if (has_prefix(name, "[cuda] ")) {
		rgb[0] = 70 + 40 * v1, rgb[1] = 130 + 40 * v2, rgb[2] = 210 + 35 * v3;
	} else if (has_suffix(name, "_[k]")) {
		rgb[0] = 230 + 15 * v1, rgb[1] = 140 + 25 * v2, rgb[2] = 80 + 20 * v3;
	} else {
		rgb[0] = 200 + 55 * v1, rgb[1] = 50 + 170 * v2, rgb[2] = 10 + 40 * v3;
	}
}

static bool too_narrow(const struct svg *s, uint64_t weight)
{
	return weight == 0 || (double)weight < MIN_FRAC * (double)s->total;
}

static void put_frame(struct svg *s, const char *name, size_t level, uint64_t off, uint64_t weight,
		      const unsigned int rgb[3], const char *note)
{
	double x = XPAD + off * s->scale, w = weight * s->scale;
	int y = TOP + (int)(s->drawn_depth - level) * FRAME_H;

	out(s,
	    "<g class=\"f\" data-l=\"%zu\" data-o=\"%" PRIu64 "\" data-s=\"%" PRIu64 "\"><title>",
	    level, off, weight);
	put_escaped(s, name, SIZE_MAX);
	out(s, " (%" PRIu64 " ", weight);
	put_escaped(s, s->unit, SIZE_MAX);
	out(s, ", %.2f%%)", 100.0 * weight / s->total);
	/* After the closing parenthesis, where the script's name parsing does not look. */
	if (note && note[0]) {
		out(s, " ");
		put_escaped(s, note, SIZE_MAX);
	}
	out(s, "</title>");
	out(s,
	    "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" rx=\"2\" fill=\"rgb(%u,%u,%u)\"/>",
	    x, y, w, FRAME_H - 1, rgb[0], rgb[1], rgb[2]);
	out(s, "<text x=\"%.2f\" y=\"%d\">", x + 3, y + FRAME_H - 4);
	put_label(s, name, w);
	out(s, "</text></g>\n");
}

static int measure(const struct calltree_frame *fr, void *data)
{
	struct svg *s = data;

	if (too_narrow(s, fr->total))
		s->elided++;
	else if (fr->depth + 1 > s->drawn_depth)
		s->drawn_depth = fr->depth + 1;
	return 0;
}

static int draw(const struct calltree_frame *fr, void *data)
{
	struct svg *s = data;
	uint64_t off = s->next_off[fr->depth];
	unsigned int rgb[3];
	char note[128] = "";

	s->next_off[fr->depth] += fr->total;
	s->next_off[fr->depth + 1] = off; /* children start under their parent */
	if (s->path)
		s->path[fr->depth] = fr->name;
	if (too_narrow(s, fr->total))
		return 0;
	if (!s->style || !s->style->fill || !s->style->fill(s->style->ctx, fr, s->path, rgb))
		frame_rgb(fr->name, rgb);
	if (s->style && s->style->note)
		s->style->note(s->style->ctx, fr, s->path, note, sizeof(note));
	put_frame(s, fr->name, fr->depth + 1, off, fr->total, rgb, note);
	return s->err;
}

static const char style[] =
	"<style><![CDATA[\n"
	"text { font-family: Verdana, \"DejaVu Sans\", sans-serif; font-size: 12px; fill: #000; }\n"
	"#title { font-size: 17px; text-anchor: middle; }\n"
	"#subtitle { fill: #555; text-anchor: middle; }\n"
	"#note { font-size: 11px; fill: #777; }\n"
	"#matched { text-anchor: end; }\n"
	".btn { fill: #1a4f9c; cursor: pointer; }\n"
	".btn:hover { text-decoration: underline; }\n"
	".hide { display: none; }\n"
	".f { cursor: pointer; }\n"
	".f text { pointer-events: none; }\n"
	".f:hover rect { stroke: #000; stroke-width: 0.75; }\n"
	".ctx rect { opacity: 0.5; }\n"
	"]]></style>\n"
	"<defs><linearGradient id=\"bg\" x1=\"0\" y1=\"0\" x2=\"0\" y2=\"1\">"
	"<stop offset=\"5%\" stop-color=\"#f4f4f4\"/><stop offset=\"95%\" stop-color=\"#eeeeb8\"/>"
	"</linearGradient></defs>\n";

/*
 * Written for this file, not taken from elsewhere. Frames are laid out from their data-*
 * attributes: zooming into Z shows Z's subtree scaled to the full width and Z's callers faded
 * at full width; search unions the [offset, offset + weight) spans of matching frames so a
 * match nested in another is not counted twice.
 */
static const char script[] =
	"<script><![CDATA[\n"
	"(function () {\n"
	"\"use strict\";\n"
	"var root = document.getElementById(\"frames\");\n"
	"var total = +root.getAttribute(\"data-total\");\n"
	"var left = +root.getAttribute(\"data-x\"), width = +root.getAttribute(\"data-w\");\n"
	"var charW = +root.getAttribute(\"data-cw\"), unit = root.getAttribute(\"data-unit\");\n"
	"var details = document.getElementById(\"details\");\n"
	"var matched = document.getElementById(\"matched\");\n"
	"var unzoomBtn = document.getElementById(\"unzoom\");\n"
	"var searchBtn = document.getElementById(\"search\");\n"
	"var frames = [], zoomed = null, lastTerm = \"\", searching = false;\n"
	"\n"
	"Array.prototype.forEach.call(root.querySelectorAll(\"g.f\"), function (g) {\n"
	"\tvar title = g.querySelector(\"title\").textContent;\n"
	"\tvar rect = g.querySelector(\"rect\"), n = g.getAttribute(\"data-s\");\n"
	"\tvar fr = {\n"
	"\t\tg: g, rect: rect, text: g.querySelector(\"text\"),\n"
	"\t\tname: title.substring(0, title.lastIndexOf(\" (\" + n + \" \")),\n"
	"\t\tlevel: +g.getAttribute(\"data-l\"), off: +g.getAttribute(\"data-o\"),\n"
	"\t\tn: +n, fill: rect.getAttribute(\"fill\")\n"
	"\t};\n"
	"\tg.xsFrame = fr;\n"
	"\tframes.push(fr);\n"
	"});\n"
	"\n"
	"function pct(n, of) {\n"
	"\treturn (100 * n / of).toFixed(2) + \"%\";\n"
	"}\n"
	"\n"
	"function fit(name, w) {\n"
	"\tvar chars = Math.floor((w - 6) / charW);\n"
	"\tif (chars < 3)\n"
	"\t\treturn \"\";\n"
	"\treturn name.length <= chars ? name : name.substring(0, chars - 2) + \"..\";\n"
	"}\n"
	"\n"
	"function frameOf(el) {\n"
	"\tfor (; el && el !== root; el = el.parentNode) {\n"
	"\t\tif (el.xsFrame)\n"
	"\t\t\treturn el.xsFrame;\n"
	"\t}\n"
	"\treturn null;\n"
	"}\n"
	"\n"
	"function zoom(z) {\n"
	"\tvar scale = width / z.n;\n"
	"\tframes.forEach(function (f) {\n"
	"\t\tvar inside = f.level >= z.level && f.off >= z.off && f.off + f.n <= z.off + z.n;\n"
	"\t\tvar above = f.level < z.level && f.off <= z.off && f.off + f.n >= z.off + z.n;\n"
	"\t\tif (!inside && !above) {\n"
	"\t\t\tf.g.classList.add(\"hide\");\n"
	"\t\t\treturn;\n"
	"\t\t}\n"
	"\t\tvar x = inside ? left + (f.off - z.off) * scale : left;\n"
	"\t\tvar w = inside ? f.n * scale : width;\n"
	"\t\tf.g.classList.remove(\"hide\");\n"
	"\t\tf.g.classList.toggle(\"ctx\", above);\n"
	"\t\tf.rect.setAttribute(\"x\", x.toFixed(2));\n"
	"\t\tf.rect.setAttribute(\"width\", w.toFixed(2));\n"
	"\t\tf.text.setAttribute(\"x\", (x + 3).toFixed(2));\n"
	"\t\tf.text.textContent = fit(f.name, w);\n"
	"\t});\n"
	"\tzoomed = z.level > 0 ? z : null;\n"
	"\tunzoomBtn.classList.toggle(\"hide\", !zoomed);\n"
	"}\n"
	"\n"
	"function resetZoom() {\n"
	"\tzoom(frames[0]);\n"
	"}\n"
	"\n"
	"function search(re) {\n"
	"\tvar spans = [], sum = 0, end = -1;\n"
	"\tframes.forEach(function (f) {\n"
	"\t\tvar hit = re !== null && re.test(f.name);\n"
	"\t\tf.rect.setAttribute(\"fill\", hit ? \"" MATCH_RGB "\" : f.fill);\n"
	"\t\tif (hit)\n"
	"\t\t\tspans.push([f.off, f.off + f.n]);\n"
	"\t});\n"
	"\tsearching = re !== null;\n"
	"\tsearchBtn.textContent = searching ? \"Reset search\" : \"Search\";\n"
	"\tif (!searching) {\n"
	"\t\tmatched.textContent = \"\";\n"
	"\t\treturn;\n"
	"\t}\n"
	"\tspans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });\n"
	"\tspans.forEach(function (s) {\n"
	"\t\tif (s[1] <= end)\n"
	"\t\t\treturn;\n"
	"\t\tsum += s[1] - Math.max(s[0], end);\n"
	"\t\tend = s[1];\n"
	"\t});\n"
	"\tmatched.textContent = \"Matched: \" + pct(sum, total) + \" (\" + re.source + \")\";\n"
	"}\n"
	"\n"
	"function askSearch() {\n"
	"\tvar term = window.prompt(\"Search frames (regular expression):\", lastTerm);\n"
	"\tif (term === null)\n"
	"\t\treturn;\n"
	"\tif (term === \"\") {\n"
	"\t\tsearch(null);\n"
	"\t\treturn;\n"
	"\t}\n"
	"\ttry {\n"
	"\t\tsearch(new RegExp(term));\n"
	"\t\tlastTerm = term;\n"
	"\t} catch (e) {\n"
	"\t\twindow.alert(\"Not a valid regular expression: \" + e.message);\n"
	"\t}\n"
	"}\n"
	"\n"
	"root.addEventListener(\"mouseover\", function (e) {\n"
	"\tvar f = frameOf(e.target);\n"
	"\tif (!f)\n"
	"\t\treturn;\n"
	"\tvar s = f.name + \" (\" + f.n.toLocaleString() + \" \" + unit + \", \" + pct(f.n, total);\n"
	"\tif (zoomed && f.level >= zoomed.level)\n"
	"\t\ts += \", \" + pct(f.n, zoomed.n) + \" of zoomed frame\";\n"
	"\tdetails.textContent = s + \")\";\n"
	"});\n"
	"root.addEventListener(\"mouseout\", function () {\n"
	"\tdetails.textContent = \" \";\n"
	"});\n"
	"root.addEventListener(\"click\", function (e) {\n"
	"\tvar f = frameOf(e.target);\n"
	"\tif (f)\n"
	"\t\tzoom(f);\n"
	"});\n"
	"unzoomBtn.addEventListener(\"click\", resetZoom);\n"
	"searchBtn.addEventListener(\"click\", function () {\n"
	"\tif (searching)\n"
	"\t\tsearch(null);\n"
	"\telse\n"
	"\t\taskSearch();\n"
	"});\n"
	"window.addEventListener(\"keydown\", function (e) {\n"
	"\tif ((e.ctrlKey || e.metaKey) && (e.key === \"f\" || e.key === \"F\")) {\n"
	"\t\te.preventDefault();\n"
	"\t\taskSearch();\n"
	"\t} else if (e.key === \"Escape\") {\n"
	"\t\tsearch(null);\n"
	"\t\tresetZoom();\n"
	"\t}\n"
	"});\n"
	"/* For tests and for embedding pages: the same actions as the controls. */\n"
	"document.documentElement.xsprof = {\n"
	"\tzoom: function (name) {\n"
	"\t\tvar f = frames.filter(function (x) { return x.name === name; })[0];\n"
	"\t\tif (f)\n"
	"\t\t\tzoom(f);\n"
	"\t},\n"
	"\tresetZoom: resetZoom,\n"
	"\tsearch: function (term) { search(term ? new RegExp(term) : null); }\n"
	"};\n"
	"})();\n"
	"]]></script>\n";

static void put_header(struct svg *s, int height, const struct output_meta *meta)
{
	const char *title = meta && meta->title ? meta->title : "Flame Graph";
	const char *subtitle = meta ? meta->subtitle : NULL;

	out(s, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n");
	out(s,
	    "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
	    "viewBox=\"0 0 %d %d\">\n",
	    IMG_W, height, IMG_W, height);
	out(s, "%s", style);
	out(s, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"url(#bg)\"/>\n", IMG_W,
	    height);
	out(s, "<text id=\"title\" x=\"%d\" y=\"24\">", IMG_W / 2);
	put_escaped(s, title, SIZE_MAX);
	out(s, "</text>\n");
	if (subtitle && subtitle[0]) {
		out(s, "<text id=\"subtitle\" x=\"%d\" y=\"44\">", IMG_W / 2);
		put_escaped(s, subtitle, SIZE_MAX);
		out(s, "</text>\n");
	}
}

static int write_empty(struct svg *s, const struct output_meta *meta)
{
	int height = TOP + 3 * FRAME_H + BOTTOM;

	put_header(s, height, meta);
	out(s,
	    "<text id=\"nosamples\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">No samples</text>\n",
	    IMG_W / 2, TOP + 2 * FRAME_H);
	out(s, "</svg>\n");
	return s->err;
}

int flamegraph__write_svg(const struct calltree *t, FILE *f, const struct output_meta *meta)
{
	return flamegraph__write_svg_styled(t, f, meta, NULL);
}

int flamegraph__write_svg_styled(const struct calltree *t, FILE *f, const struct output_meta *meta,
				 const struct flamegraph_style *style)
{
	struct svg s = {.f = f, .style = style};
	int height, err, y;
	unsigned int all_rgb[3] = {215, 215, 215};

	if (!t || !f)
		return -EINVAL;
	s.unit = meta && meta->unit ? meta->unit : "samples";
	s.total = calltree__total(t);
	errno = 0;
	if (!s.total)
		return write_empty(&s, meta);

	err = calltree__walk(t, measure, &s);
	if (err)
		return err;
	s.scale = (double)(IMG_W - 2 * XPAD) / s.total;
	s.next_off = calloc(calltree__max_depth(t) + 1, sizeof(*s.next_off));
	if (style)
		s.path = calloc(calltree__max_depth(t) + 1, sizeof(*s.path));
	if (!s.next_off || (style && !s.path)) {
		free(s.next_off);
		free(s.path);
		return -ENOMEM;
	}

	height = TOP + (int)(s.drawn_depth + 1) * FRAME_H + BOTTOM;
	put_header(&s, height, meta);
	out(&s, "<text id=\"unzoom\" class=\"btn hide\" x=\"%d\" y=\"24\">Reset zoom</text>\n",
	    XPAD);
	out(&s,
	    "<text id=\"search\" class=\"btn\" x=\"%d\" y=\"24\" text-anchor=\"end\">Search</text>\n",
	    IMG_W - XPAD);
	out(&s,
	    "<g id=\"frames\" data-total=\"%" PRIu64
	    "\" data-x=\"%d\" data-w=\"%d\" data-cw=\"%g\" "
	    "data-unit=\"",
	    s.total, XPAD, IMG_W - 2 * XPAD, CHAR_W);
	put_escaped(&s, s.unit, SIZE_MAX);
	out(&s, "\">\n");
	put_frame(&s, "all", 0, 0, s.total, all_rgb, NULL);
	err = calltree__walk(t, draw, &s);
	free(s.next_off);
	free(s.path);
	if (err)
		return err;
	out(&s, "</g>\n");

	y = height - BOTTOM + 18;
	out(&s, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", XPAD, y);
	out(&s, "<text id=\"matched\" x=\"%d\" y=\"%d\"></text>\n", IMG_W - XPAD, y);
	if (s.elided) {
		out(&s,
		    "<text id=\"note\" x=\"%d\" y=\"%d\">%zu %s narrower than 0.1%% of the total "
		    "not drawn (still counted in their callers)</text>\n",
		    XPAD, y + 18, s.elided, s.elided == 1 ? "frame" : "frames");
	}
	if (style && style->legend) {
		out(&s, "<text id=\"legend\" x=\"%d\" y=\"%d\" text-anchor=\"end\">", IMG_W - XPAD,
		    y + 18);
		put_escaped(&s, style->legend, SIZE_MAX);
		out(&s, "</text>\n");
	}
	out(&s, "%s</svg>\n", script);
	return s.err;
}
