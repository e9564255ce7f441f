/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Names come from profiled processes (symbols, Python strings, process names) and go into
 * JSON, SVG and protobuf strings, which must be UTF-8: what is not is repaired, byte by byte.
 */
#ifndef XSPROF_DAEMON_BASE_UTF8_H
#define XSPROF_DAEMON_BASE_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* Bytes of the valid UTF-8 sequence at s (1-4), or 0 when it is not one. */
static inline size_t utf8_seq_len(const unsigned char *s)
{
	size_t n;
	unsigned int c;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	/* Overlong forms, surrogates and code points past U+10FFFF are not UTF-8. */
	c = n == 3 ? ((s[0] & 0x0fu) << 12) | ((s[1] & 0x3fu) << 6)
		   : ((s[0] & 0x07u) << 18) | ((s[1] & 0x3fu) << 12);
	if ((n == 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) ||
	    (n == 4 && (c < 0x10000 || c > 0x10ffff)))
		return 0;
	return n;
}

static inline bool utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n;

	for (; *p; p += n)
		if (!(n = utf8_seq_len(p)))
			return false;
	return true;
}

/* src into dst (room for strlen(src) + 1), each byte not part of valid UTF-8 made '?'. */
static inline void utf8_repair(char *dst, const char *src)
{
	const unsigned char *p = (const unsigned char *)src;

	while (*p) {
		size_t n = utf8_seq_len(p);

		if (!n) {
			*dst++ = '?';
			p++;
			continue;
		}
		while (n--)
			*dst++ = (char)*p++;
	}
	*dst = '\0';
}

#endif
