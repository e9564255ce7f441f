/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Protocol buffers by hand, for pprof: varints and length-delimited fields into growable
 * buffers (an error sticks in the buffer and is read once at the end), and the interned
 * string table profile.proto refers to by index.
 */
#ifndef XSPROF_OUTPUT_PROTOBUF_H
#define XSPROF_OUTPUT_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

#define WT_VARINT 0
#define WT_LEN	  2

struct buf {
	uint8_t *p;
	size_t len, cap;
	int err;
};

/* Room for n more bytes (sets b->err on failure). */
void pb_need(struct buf *b, size_t n);
void pb_varint(struct buf *b, uint64_t v);
void pb_key(struct buf *b, unsigned int field, unsigned int wt);
/* A varint field; zero (proto3's default) is left out. */
void pb_uint(struct buf *b, unsigned int field, uint64_t v);
void pb_bytes(struct buf *b, unsigned int field, const void *p, size_t n);
/* A nested message, from its own scratch buffer. */
void pb_msg(struct buf *b, unsigned int field, const struct buf *m);

struct keymap;

/* String table: interned, index 0 is "". Zero-initialised is empty. */
struct strtab {
	const char **s;	      /* by index: the index's copies */
	size_t n, cap;	      /* strings, and room in s */
	struct keymap *index; /* string -> index + 1 */
};

/* Index of s (NULL: ""), interned on first use; -ENOMEM. */
int64_t pb_intern(struct strtab *t, const char *s);
void pb_strtab_free(struct strtab *t);

#endif
