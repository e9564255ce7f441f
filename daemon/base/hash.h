/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The one hash function family every table in xsprof uses: FNV-1a over bytes and strings (names,
 * stacks), and splitmix64's finalizer for integer keys (pids, ids, addresses), whose low bits a
 * power-of-two table masks off. None of these tables is keyed by anything a network peer picks.
 */
#ifndef XSPROF_DAEMON_BASE_HASH_H
#define XSPROF_DAEMON_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_INIT 0xcbf29ce484222325ULL

/* FNV-1a: h continues a hash (HASH_INIT to start one) over n bytes at p. */
static inline uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

/* FNV-1a of a NUL-terminated string. */
static inline uint64_t hash_str(const char *s)
{
	uint64_t h = HASH_INIT;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ULL;
	return h;
}

/* splitmix64's finalizer: every input bit reaches the low bits. */
static inline uint64_t hash_u64(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* h continued with one more word. */
static inline uint64_t hash_combine(uint64_t h, uint64_t v)
{
	return hash_u64(h ^ (v + 0x9e3779b97f4a7c15ULL));
}

#endif
