// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/symbolize/arena.h"
#include "daemon/symbolize/fileio.h"
#include "daemon/symbolize/kallsyms.h"

struct kallsyms {
	struct ksym *syms;
	size_t nr_syms;
	struct arena *arena;
	bool available;
};

/* One line while loading; strings point into the file buffer (NUL-terminated in place). */
struct kline {
	uint64_t addr;
	const char *name;
	const char *module;
	int rank; /* lower wins at one address; text symbols only */
	bool text;
};

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int text_rank(char type, const char *name)
{
	int rank, underscores = 0;

	switch (type) {
	case 'T':
		rank = 0;
		break;
	case 'W':
		rank = 1;
		break;
	case 't':
		rank = 2;
		break;
	case 'w':
		rank = 3;
		break;
	default:
		return -1;
	}
	/* At one address, "_text"/"_stext" are markers and "__foo" a wrapper; name the function. */
	while (name[underscores] == '_' && underscores < 3)
		underscores++;
	return rank * 4 + underscores;
}

/* "ADDR TYPE NAME[\t[MODULE]]"; modifies the line in place. false for a malformed line. */
static bool parse_line(char *p, char *end, struct kline *l)
{
	uint64_t addr = 0;
	int digits = 0, rank;
	char type, *name, *mod;

	while (p < end && is_hex(*p)) {
		if (++digits > 16)
			return false;
		addr = addr << 4 | (uint64_t)(*p <= '9' ? *p - '0' : (*p | 0x20) - 'a' + 10);
		p++;
	}
	if (!digits || end - p < 3 || p[0] != ' ' || p[2] != ' ')
		return false;
	type = p[1];
	p += 3;
	name = p;
	while (p < end && *p != ' ' && *p != '\t')
		p++;
	if (p == name)
		return false;
	mod = NULL;
	if (p < end) {
		*p++ = '\0';
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p < end && *p == '[' && end[-1] == ']' && end - p > 2) {
			mod = p + 1;
			end[-1] = '\0';
		}
	}
	*end = '\0';
	/* End-of-text markers bound the symbols before them but name nothing. */
	rank = strcmp(name, "_etext") && strcmp(name, "_einittext") ? text_rank(type, name) : -1;
	l->addr = addr;
	l->name = name;
	l->module = mod;
	l->text = rank >= 0;
	l->rank = rank;
	return true;
}

static int cmp_kline(const void *a, const void *b)
{
	const struct kline *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Text before non-text, then the best name first. */
	if (x->text != y->text)
		return x->text ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	/* qsort is not stable: fall back to file order (lines sit in one buffer). */
	return x->name < y->name ? -1 : x->name > y->name;
}

static int kallsyms__build(struct kallsyms *k, struct kline *lines, size_t n, uint64_t etext)
{
	const char *last_mod = NULL, *mod_copy = NULL;
	size_t i, j, out = 0;
	uint64_t end;

	if (n)
		qsort(lines, n, sizeof(*lines), cmp_kline);
	k->syms = calloc(n ? n : 1, sizeof(*k->syms));
	if (!k->syms)
		return -ENOMEM;
	for (i = 0; i < n; i = j) {
		const struct kline *l = &lines[i];
		struct ksym *s;

		/* Skip the other names at this address; the first sorted best. */
		for (j = i + 1; j < n && lines[j].addr == l->addr; j++)
			;
		if (!l->text)
			continue;
		/* Any symbol, text or not, ends the one before it. */
		end = UINT64_MAX - l->addr < KALLSYMS_MAX_TAIL ? UINT64_MAX
							       : l->addr + KALLSYMS_MAX_TAIL;
		if (j < n && lines[j].addr < end)
			end = lines[j].addr;
		if (!l->module && etext && l->addr < etext && end > etext)
			end = etext;
		s = &k->syms[out++];
		s->addr = l->addr;
		s->end = end;
		s->name = arena__strndup(k->arena, l->name, strlen(l->name));
		if (!s->name)
			return -ENOMEM;
		if (l->module) {
			/* Module lines come in runs; copy each module name once per run. */
			if (!last_mod || strcmp(last_mod, l->module)) {
				mod_copy = arena__strndup(k->arena, l->module, strlen(l->module));
				if (!mod_copy)
					return -ENOMEM;
				last_mod = l->module;
			}
			s->module = mod_copy;
		}
	}
	k->nr_syms = out;
	return 0;
}

struct kallsyms *kallsyms__load(const char *path)
{
	struct kline *lines = NULL, *nl;
	size_t len, n = 0, cap = 0;
	struct kallsyms *k;
	char *buf = NULL, *p, *end, *eol;
	uint64_t etext = 0;
	int err;

	k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->arena = arena__new();
	if (!k->arena) {
		err = -ENOMEM;
		goto out;
	}
	err = file__read_all(path ? path : "/proc/kallsyms", KALLSYMS_MAX_SIZE, &buf, &len);
	if (err)
		goto out;
	for (p = buf, end = buf + len; p < end; p = eol + 1) {
		struct kline l;

		eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end; /* buf[len] is NUL, so eol stays writable */
		if (!parse_line(p, eol, &l))
			continue;
		/* Zero means hidden by kptr_restrict, not a symbol at 0. */
		if (!l.addr)
			continue;
		if (!l.module && !strcmp(l.name, "_etext"))
			etext = l.addr;
		if (n == cap) {
			cap = cap ? cap * 2 : 4096;
			nl = realloc(lines, cap * sizeof(*lines));
			if (!nl) {
				err = -ENOMEM;
				goto out;
			}
			lines = nl;
		}
		lines[n++] = l;
	}
	k->available = n > 0;
	err = kallsyms__build(k, lines, n, etext);
out:
	free(lines);
	free(buf);
	if (err) {
		kallsyms__free(k);
		errno = -err;
		return NULL;
	}
	return k;
}

void kallsyms__free(struct kallsyms *k)
{
	if (!k)
		return;
	arena__free(k->arena);
	free(k->syms);
	free(k);
}

bool kallsyms__available(const struct kallsyms *k)
{
	return k->available;
}

size_t kallsyms__count(const struct kallsyms *k)
{
	return k->nr_syms;
}

const struct ksym *kallsyms__at(const struct kallsyms *k, size_t idx)
{
	return idx < k->nr_syms ? &k->syms[idx] : NULL;
}

const struct ksym *kallsyms__lookup(const struct kallsyms *k, uint64_t addr)
{
	size_t lo = 0, hi = k->nr_syms;
	const struct ksym *s;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	s = &k->syms[lo - 1];
	return addr < s->end ? s : NULL;
}

const struct ksym *kallsyms__find(const struct kallsyms *k, const char *name)
{
	size_t i;

	for (i = 0; i < k->nr_syms; i++) {
		if (!strcmp(k->syms[i].name, name))
			return &k->syms[i];
	}
	return NULL;
}
