// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/hash.h"
#include "output/protobuf.h"

void pb_need(struct buf *b, size_t n)
{
	uint8_t *p;
	size_t cap;

	if (b->err || b->len + n <= b->cap)
		return;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + n)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p) {
		b->err = -ENOMEM;
		return;
	}
	b->p = p;
	b->cap = cap;
}

void pb_varint(struct buf *b, uint64_t v)
{
	pb_need(b, 10);
	if (b->err)
		return;
	while (v >= 0x80) {
		b->p[b->len++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b->p[b->len++] = (uint8_t)v;
}

void pb_key(struct buf *b, unsigned int field, unsigned int wt)
{
	pb_varint(b, (uint64_t)field << 3 | wt);
}

void pb_uint(struct buf *b, unsigned int field, uint64_t v)
{
	/* proto3: zero is the default and is left out. */
	if (!v)
		return;
	pb_key(b, field, WT_VARINT);
	pb_varint(b, v);
}

void pb_bytes(struct buf *b, unsigned int field, const void *p, size_t n)
{
	pb_key(b, field, WT_LEN);
	pb_varint(b, n);
	pb_need(b, n);
	if (b->err)
		return;
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

/* A nested message, from its own scratch buffer. */
void pb_msg(struct buf *b, unsigned int field, const struct buf *m)
{
	if (m->err) {
		b->err = m->err;
		return;
	}
	pb_bytes(b, field, m->p, m->len);
}

static int pb_strtab_grow(struct strtab *t)
{
	size_t ns = t->nslots ? t->nslots * 2 : 1024, i;
	uint32_t *slot = calloc(ns, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (i = 0; i < t->n; i++) {
		size_t j;

		for (j = hash_str(t->s[i]) & (ns - 1); slot[j]; j = (j + 1) & (ns - 1))
			;
		slot[j] = i + 1;
	}
	free(t->slot);
	t->slot = slot;
	t->nslots = ns;
	return 0;
}

/* Index of s, interned on first use; -ENOMEM. */
int64_t pb_intern(struct strtab *t, const char *s)
{
	size_t j;
	char *copy;

	if (!s)
		s = "";
	if ((t->n + 1) * 2 > t->nslots && pb_strtab_grow(t))
		return -ENOMEM;
	for (j = hash_str(s) & (t->nslots - 1); t->slot[j]; j = (j + 1) & (t->nslots - 1)) {
		if (!strcmp(t->s[t->slot[j] - 1], s))
			return t->slot[j] - 1;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		const char **v = realloc(t->s, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->s = v;
		t->cap = cap;
	}
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	t->s[t->n] = copy;
	t->slot[j] = ++t->n;
	return t->n - 1;
}

void pb_strtab_free(struct strtab *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		free((char *)t->s[i]);
	free(t->s);
	free(t->slot);
}
