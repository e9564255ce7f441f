/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Frames that are not native code (interpreter frames: daemon/python) travel in user stacks as
 * tokens: values no user address can take (the top 16 bits are "py", a non-canonical address on
 * x86-64) that index a table of names. The table is never trimmed (stored stacks refer to it),
 * so it is capped in names and bytes; past the cap, interning fails and the caller says so.
 * The low 4 bits of a token are ignored, so a token minus one (what stack naming does to return
 * addresses) names the same frame.
 */
#ifndef XSPROF_DAEMON_SYMBOLIZE_FRAME_NAMES_H
#define XSPROF_DAEMON_SYMBOLIZE_FRAME_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FRAME_TOKEN_TAG	 0x7079000000000000ull
#define FRAME_TOKEN_MASK 0xffff000000000000ull

#define FRAME_NAMES_DEFAULT_MAX_NAMES (1u << 20)
#define FRAME_NAMES_DEFAULT_MAX_BYTES (64u << 20)

static inline bool frame_token__is(uint64_t addr)
{
	return (addr & FRAME_TOKEN_MASK) == FRAME_TOKEN_TAG;
}

struct frame_names;

/* 0 for the defaults. NULL with errno set. */
struct frame_names *frame_names__new(size_t max_names, size_t max_bytes);
void frame_names__free(struct frame_names *fn);

/* The token of name (interned once), or 0 when the table is full (counted) or out of memory. */
uint64_t frame_names__intern(struct frame_names *fn, const char *name);
/* The name of a token (or a token minus a few), NULL for one this table did not make. */
const char *frame_names__name(const struct frame_names *fn, uint64_t token);

struct frame_names_stats {
	uint64_t names; /* interned now */
	uint64_t bytes; /* memory held */
	uint64_t full;	/* interning refused: a cap was reached */
};

void frame_names__stats(const struct frame_names *fn, struct frame_names_stats *ret);

#endif
