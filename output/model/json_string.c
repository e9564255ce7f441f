// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>

#include "daemon/base/utf8.h"
#include "output/model/json_string.h"

static int write_error(void)
{
	return errno ? -errno : -EIO;
}

int json__put_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : ""), *run = p;

	errno = 0;
	if (putc('"', f) == EOF)
		return write_error();
	while (*p) {
		const char *esc = NULL;
		char ubuf[8];
		size_t len = 1;

		if (*p >= 0x80) {
			len = utf8_seq_len(p);
			if (len) {
				p += len;
				continue;
			}
			esc = "\\ufffd";
			len = 1;
		} else if (*p == '"') {
			esc = "\\\"";
		} else if (*p == '\\') {
			esc = "\\\\";
		} else if (*p == '\n') {
			esc = "\\n";
		} else if (*p == '\t') {
			esc = "\\t";
		} else if (*p == '\r') {
			esc = "\\r";
		} else if (*p < 0x20) {
			snprintf(ubuf, sizeof(ubuf), "\\u%04x", *p);
			esc = ubuf;
		} else {
			p++;
			continue;
		}
		/* Plain runs go out in one call. */
		if (p > run && fwrite(run, 1, p - run, f) != (size_t)(p - run))
			return write_error();
		if (fputs(esc, f) == EOF)
			return write_error();
		p += len;
		run = p;
	}
	if (p > run && fwrite(run, 1, p - run, f) != (size_t)(p - run))
		return write_error();
	if (putc('"', f) == EOF)
		return write_error();
	return 0;
}
