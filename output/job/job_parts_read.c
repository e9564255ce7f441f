// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "output/job/job_parts_read.h"

static const char *ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	return p;
}

/* Past a string whose opening quote is at p; NULL if it does not end. */
static const char *past_string(const char *p, const char *end)
{
	for (p++; p < end; p++) {
		if (*p == '\\')
			p++;
		else if (*p == '"')
			return p + 1;
	}
	return NULL;
}

/* Past one value at p (after whitespace): strings, numbers, literals, and arrays and objects
 * by counting brackets (their inner syntax is checked by whoever reads them). NULL: it does
 * not end, or nests deeper than JP_MAX_DEPTH. */
static const char *past_value(const char *p, const char *end, const char **why)
{
	char stack[JP_MAX_DEPTH];
	int depth = 0;

	do {
		p = ws(p, end);
		if (p >= end) {
			*why = "the document ends inside a value";
			return NULL;
		}
		switch (*p) {
		case '"':
			if (!(p = past_string(p, end))) {
				*why = "a string does not end";
				return NULL;
			}
			break;
		case '[':
		case '{':
			if (depth == JP_MAX_DEPTH) {
				*why = "nested deeper than 64";
				return NULL;
			}
			stack[depth++] = *p == '[' ? ']' : '}';
			p++;
			break;
		case ']':
		case '}':
			if (!depth || stack[depth - 1] != *p) {
				*why = "a bracket that closes nothing";
				return NULL;
			}
			depth--;
			p++;
			break;
		case ',':
		case ':':
			if (!depth) {
				*why = "a separator outside any array or object";
				return NULL;
			}
			p++;
			break;
		default:
			if (!((*p >= '0' && *p <= '9') || *p == '-' || *p == 't' || *p == 'f' ||
			      *p == 'n')) {
				*why = "an unexpected character";
				return NULL;
			}
			while (p < end && ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
					   *p == '-' || *p == '+' || *p == '.' || *p == 'E'))
				p++;
			break;
		}
	} while (depth);
	return p;
}

int jp_scan(const char *json, size_t len, struct jp_field *fields, size_t nr_fields, char *why,
	    size_t why_size)
{
	const char *p = json, *end = json + len, *msg = "not an object";

	for (size_t i = 0; i < nr_fields; i++)
		fields[i].found = 0;
	p = ws(p, end);
	if (p >= end || *p != '{')
		goto bad;
	p = ws(p + 1, end);
	if (p < end && *p == '}') {
		p++;
		goto done;
	}
	for (;;) {
		const char *k, *ke, *v;

		msg = "a field without a name";
		if (p >= end || *p != '"')
			goto bad;
		k = p + 1;
		if (!(ke = past_string(p, end)))
			goto bad;
		p = ws(ke, end);
		msg = "a field without a value";
		if (p >= end || *p != ':')
			goto bad;
		v = ws(p + 1, end);
		if (!(p = past_value(v, end, &msg)))
			goto bad;
		for (size_t i = 0; i < nr_fields; i++) {
			if (strlen(fields[i].key) == (size_t)(ke - 1 - k) &&
			    !memcmp(fields[i].key, k, (size_t)(ke - 1 - k))) {
				fields[i].val = (struct jp_span){v, (size_t)(p - v)};
				fields[i].found = 1;
			}
		}
		p = ws(p, end);
		msg = "fields not separated";
		if (p < end && *p == ',') {
			p = ws(p + 1, end);
			continue;
		}
		if (p < end && *p == '}') {
			p++;
			break;
		}
		goto bad;
	}
done:
	p = ws(p, end);
	msg = "more after the document";
	if (p == end || (p + 1 == end && *p == '\0'))
		return 0;
bad:
	snprintf(why, why_size, "not JSON: %s (at byte %zu)", msg, (size_t)(p - json));
	return -EINVAL;
}

int jp_rows_begin(struct jp_rows *r, struct jp_span span)
{
	const char *p = ws(span.p, span.p + span.len);

	if (p >= span.p + span.len || *p != '[')
		return -EINVAL;
	*r = (struct jp_rows){.p = p + 1, .end = span.p + span.len, .first = 1};
	return 0;
}

/* An integer at *pp (after whitespace), into *v. */
static bool integer(const char **pp, const char *end, int64_t *v)
{
	const char *p = ws(*pp, end);
	bool neg = false;
	uint64_t x = 0;
	int digits = 0;

	if (p < end && *p == '-') {
		neg = true;
		p++;
	}
	while (p < end && *p >= '0' && *p <= '9') {
		unsigned d = (unsigned)(*p - '0');

		if (x > (UINT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
		p++;
		digits++;
	}
	if (!digits || (p < end && (*p == '.' || *p == 'e' || *p == 'E')))
		return false;
	/* Unsigned fields (handles, ids) may use all 64 bits: kept as their two's complement. */
	if (neg && x > (uint64_t)INT64_MAX + 1)
		return false;
	*v = neg ? (int64_t)(0 - x) : (int64_t)x;
	*pp = p;
	return true;
}

/* An array of integers at *pp ('[' already checked): the first max into v, *n all. */
static bool int_array(const char **pp, const char *end, int64_t *v, size_t max, size_t *n)
{
	const char *p = ws(*pp + 1, end);

	*n = 0;
	if (p < end && *p == ']') {
		*pp = p + 1;
		return true;
	}
	for (;;) {
		int64_t x;

		if (!integer(&p, end, &x))
			return false;
		if (*n < max)
			v[*n] = x;
		(*n)++;
		p = ws(p, end);
		if (p < end && *p == ',') {
			p++;
			continue;
		}
		if (p < end && *p == ']') {
			*pp = p + 1;
			return true;
		}
		return false;
	}
}

int jp_row_next(struct jp_rows *r, int64_t *v, size_t max, size_t *n, int64_t *inner,
		size_t max_inner, size_t *n_inner)
{
	const char *p = ws(r->p, r->end);
	bool got_inner = false;

	*n = 0;
	if (n_inner)
		*n_inner = 0;
	if (p < r->end && *p == ']') {
		r->p = p + 1;
		return 0;
	}
	if (!r->first) {
		if (p >= r->end || *p != ',')
			return -EINVAL;
		p = ws(p + 1, r->end);
	}
	if (p >= r->end || *p != '[')
		return -EINVAL;
	p = ws(p + 1, r->end);
	if (p < r->end && *p == ']') {
		p++;
		goto done;
	}
	for (;;) {
		p = ws(p, r->end);
		if (p < r->end && *p == '[') {
			size_t k;

			if (!inner || got_inner || !int_array(&p, r->end, inner, max_inner, &k))
				return -EINVAL;
			*n_inner = k < max_inner ? k : max_inner;
			got_inner = true;
			/* Its place in the row holds its count. */
			if (*n < max)
				v[*n] = (int64_t)k;
			(*n)++;
		} else {
			int64_t x;

			if (!integer(&p, r->end, &x))
				return -EINVAL;
			if (*n < max)
				v[*n] = x;
			(*n)++;
		}
		p = ws(p, r->end);
		if (p < r->end && *p == ',') {
			p++;
			continue;
		}
		if (p < r->end && *p == ']') {
			p++;
			break;
		}
		return -EINVAL;
	}
done:
	if (*n > max)
		*n = max;
	r->p = p;
	r->first = 0;
	r->n++;
	return 1;
}
