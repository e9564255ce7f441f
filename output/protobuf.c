// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/keymap.h"
#include "daemon/base/vec.h"
#include "daemon/base/utf8.h"
#include "output/protobuf.h"

/* Most messages fit in the first 256 bytes: one allocation each. */
#define BUF_MIN 256

void pb_need(struct buf *b, size_t n)
{
	if (b->err)
		return;
	if (n > SIZE_MAX - b->len)
		b->err = -ENOMEM;
	else if (b->len + n > b->cap)
		b->err = vec_reserve(&b->p, &b->cap, b->len + n > BUF_MIN ? b->len + n : BUF_MIN);
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

/* Index of s, interned on first use; -ENOMEM. */
/* A string field must be UTF-8 (protoc, collectors and pprof refuse the message otherwise):
 * names from profiled processes are repaired byte by byte on their way in. */
int64_t pb_intern(struct strtab *t, const char *s)
{
	char small[256], *fixed = NULL;
	size_t len;
	uintptr_t id;
	const void *copy;
	int64_t ret;
	int err;

	if (!s)
		s = "";
	if (!t->index && !(t->index = keymap__new()))
		return -ENOMEM;
	len = strlen(s);
	if (!utf8_valid(s)) {
		fixed = len < sizeof(small) ? small : malloc(len + 1);
		if (!fixed)
			return -ENOMEM;
		utf8_repair(fixed, s);
		s = fixed;
	}
	id = (uintptr_t)keymap__get(t->index, s, len);
	if (id) {
		ret = (int64_t)id - 1;
		goto out;
	}
	err = vec_reserve(&t->s, &t->cap, t->n + 1);
	if (!err)
		err = keymap__put(t->index, s, len, (void *)(uintptr_t)(t->n + 1), &copy);
	if (err) {
		ret = err;
		goto out;
	}
	t->s[t->n] = copy;
	ret = (int64_t)t->n++;
out:
	if (fixed != small)
		free(fixed);
	return ret;
}

void pb_strtab_free(struct strtab *t)
{
	keymap__free(t->index);
	free(t->s);
}
