/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A secret a client sent (a bearer token, a key) compared with the one expected, in time that
 * depends only on the length sent: never on where they differ, nor on the secret's length.
 * Header-only.
 */
#ifndef XSPROF_DAEMON_BASE_SECRET_H
#define XSPROF_DAEMON_BASE_SECRET_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* The secret is compared against every byte sent (wrapping); a length mismatch counts. */
static inline bool secret__equal(const char *sent, const char *secret)
{
	size_t n = strlen(secret), m = strlen(sent);
	unsigned char diff = m != n;

	if (!n)
		return false;
	for (size_t i = 0; i < m; i++)
		diff |= (unsigned char)(sent[i] ^ secret[i % n]);
	return !diff;
}

#endif
