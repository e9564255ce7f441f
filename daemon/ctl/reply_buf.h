/* SPDX-License-Identifier: Apache-2.0 */
/* A reply body growing as libcurl hands it over, capped: xsprofctl's requests and fleet's. */
#ifndef XSPROF_DAEMON_CTL_REPLY_BUF_H
#define XSPROF_DAEMON_CTL_REPLY_BUF_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REPLY (512u << 20) /* one answer of xsprofd's: a profile can be large; not unbounded */

struct reply_buf {
	char *data; /* NUL-terminated */
	size_t len;
	bool overflow; /* the reply passed the cap: cut there */
	double span_s; /* a window profile's XSPROF_SPAN_HEADER; 0 when absent */
};

/* For CURLOPT_WRITEFUNCTION: add bytes, up to max in all; a short count stops the transfer. */
static inline size_t reply_buf__append(struct reply_buf *b, const char *p, size_t add, size_t max)
{
	char *nd;

	if (b->len + add > max) {
		b->overflow = true;
		return 0;
	}
	nd = realloc(b->data, b->len + add + 1);
	if (!nd)
		return 0;
	memcpy(nd + b->len, p, add);
	b->data = nd;
	b->len += add;
	b->data[b->len] = '\0';
	return add;
}

#endif
