// SPDX-License-Identifier: Apache-2.0
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* process_vm_readv */
#endif
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "bpf/xsprof_events.h"
#include "daemon/python/py_code.h"
#include "daemon/python/py_offsets.h"

int py_mem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	ssize_t n;

	if (!addr)
		return -EFAULT;
	n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return errno == ESRCH ? -ESRCH : -EFAULT;
	return (size_t)n == len ? 0 : -EFAULT;
}

static uint64_t word_at(const uint8_t *p, uint32_t off)
{
	uint64_t v;

	memcpy(&v, p + off, sizeof(v));
	return v;
}

/* One code point as UTF-8 into out (room for 4): bytes written. */
static size_t utf8_put(uint32_t c, char *out)
{
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | c >> 6);
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | c >> 12);
		out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	if (c > 0x10ffff)
		c = 0xfffd;
	out[0] = (char)(0xf0 | c >> 18);
	out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/*
 * A compact str object into out (UTF-8, NUL-terminated, at most PY_CODE_MAX_NAME - 1 bytes).
 * The state word's bits (Include/cpython/unicodeobject.h): kind 2-4, compact 5, ascii 6.
 */
static int read_str(pid_t pid, uint64_t addr, const struct py_offsets *o, char *out,
		    uint32_t *truncated)
{
	uint8_t hdr[32], raw[PY_CODE_MAX_NAME * 4];
	uint32_t state, kind;
	int64_t len;
	size_t n = 0, cap, want;
	int err;

	out[0] = '\0';
	if (o->str_state < o->str_length || o->str_state - o->str_length + 4 > sizeof(hdr))
		return -EINVAL;
	err = py_mem_read(pid, addr + o->str_length, hdr, o->str_state - o->str_length + 4);
	if (err)
		return err;
	memcpy(&len, hdr, sizeof(len));
	memcpy(&state, hdr + (o->str_state - o->str_length), sizeof(state));
	kind = (state >> 2) & 7;
	if (len < 0 || !(state & (1u << 5)) || (kind != 1 && kind != 2 && kind != 4))
		return -EINVAL; /* not a compact str: code objects' names always are */
	cap = PY_CODE_MAX_NAME - 1;
	if ((uint64_t)len > cap / (kind == 1 ? 1 : 4)) {
		*truncated = 1;
		len = (int64_t)(cap / (kind == 1 ? 1 : 4));
	}
	want = (size_t)len * kind;
	err = py_mem_read(pid,
			  addr + ((state & (1u << 6)) ? o->str_ascii_data : o->str_compact_data),
			  raw, want);
	if (err)
		return err;
	for (size_t i = 0; i < (size_t)len && n + 4 < PY_CODE_MAX_NAME; i++) {
		uint32_t c;

		if (kind == 1) {
			c = raw[i];
		} else if (kind == 2) {
			uint16_t v;

			memcpy(&v, raw + 2 * i, 2);
			c = v;
		} else {
			memcpy(&c, raw + 4 * i, 4);
		}
		/* Keep names one folded-stack field: no separators, no control characters. */
		if (c == ';' || c < 0x20)
			c = '_';
		n += utf8_put(c, out + n);
	}
	out[n] = '\0';
	return 0;
}

static int read_bytes(pid_t pid, uint64_t addr, const struct py_offsets *o, struct py_code *c)
{
	int64_t size;
	int err;

	err = py_mem_read(pid, addr + o->bytes_size, &size, sizeof(size));
	if (err)
		return err;
	if (size <= 0)
		return size < 0 ? -EINVAL : 0;
	if (size > PY_CODE_MAX_LINETABLE) {
		c->truncated = 1;
		size = PY_CODE_MAX_LINETABLE;
	}
	c->linetable = malloc((size_t)size);
	if (!c->linetable)
		return -ENOMEM;
	err = py_mem_read(pid, addr + o->bytes_data, c->linetable, (size_t)size);
	if (err) {
		free(c->linetable);
		c->linetable = NULL;
		return err;
	}
	c->linetable_len = (uint32_t)size;
	return 0;
}

int py_code__read(pid_t pid, uint64_t addr, const struct py_offsets *o, uint64_t code_type,
		  struct py_code *ret)
{
	uint8_t buf[256];
	int32_t first;
	int err;

	memset(ret, 0, sizeof(*ret));
	if (o->code_read > sizeof(buf))
		return -EINVAL;
	err = py_mem_read(pid, addr, buf, o->code_read);
	if (err)
		return err;
	if (code_type && word_at(buf, o->ob_type) != code_type)
		return -EINVAL;
	memcpy(&first, buf + o->co_firstlineno, sizeof(first));
	ret->firstlineno = first;
	ret->lines = (uint8_t)o->lines;
	err = read_str(pid, word_at(buf, o->co_qualname), o, ret->qualname, &ret->truncated);
	if (!err)
		err = read_str(pid, word_at(buf, o->co_filename), o, ret->file, &ret->truncated);
	/* Without its table a frame still has its name and first line. */
	if (!err && read_bytes(pid, word_at(buf, o->co_linetable), o, ret) == -ESRCH)
		err = -ESRCH;
	if (err)
		py_code__release(ret);
	return err;
}

void py_code__release(struct py_code *c)
{
	free(c->linetable);
	c->linetable = NULL;
	c->linetable_len = 0;
}

/* Varints of the location table: 6 bits per byte, bit 6 says more follow. */
static uint32_t read_varint(const uint8_t *t, uint32_t len, uint32_t *i)
{
	uint32_t v = 0, shift = 0;

	while (*i < len && shift < 32) {
		uint8_t b = t[(*i)++];

		v |= (uint32_t)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	return v;
}

static int32_t read_svarint(const uint8_t *t, uint32_t len, uint32_t *i)
{
	uint32_t v = read_varint(t, len, i);

	return (v & 1) ? -(int32_t)(v >> 1) : (int32_t)(v >> 1);
}

/*
 * Before 3.11: (byte offset delta, line delta) pairs. 3.9 (co_lnotab): the line changes at the
 * offset reached, the deltas signed since 3.8. 3.10 (co_linetable): each pair ends a range of
 * its offset delta, on its line, or on none when the line delta is -128.
 */
static int line_of_pairs(const struct py_code *c, uint32_t instr)
{
	const uint8_t *t = c->linetable;
	uint64_t at = (uint64_t)instr * 2, addr = 0;
	int64_t line = c->firstlineno;

	for (uint32_t i = 0; i + 1 < c->linetable_len; i += 2) {
		int8_t dl = (int8_t)t[i + 1];

		if (c->lines == PY_LINES_LNOTAB) {
			addr += t[i];
			if (addr > at)
				break;
			line += dl;
		} else {
			bool none = dl == -128;

			addr += t[i];
			if (!none)
				line += dl;
			if (at < addr)
				return none ? c->firstlineno : (int)line;
		}
		if (line < -(1 << 30) || line > (1 << 30))
			return c->firstlineno;
	}
	return c->lines == PY_LINES_LNOTAB ? (int)line : c->firstlineno;
}

int py_code__line(const struct py_code *c, uint32_t instr)
{
	const uint8_t *t = c->linetable;
	uint32_t len = c->linetable_len, i = 0, addr = 0;
	int64_t line = c->firstlineno;

	if (instr == XSPROF_PY_INSTR_NONE || !t)
		return c->firstlineno;
	if (c->lines != PY_LINES_LOCATIONS)
		return line_of_pairs(c, instr);
	while (i < len) {
		uint8_t b = t[i++];
		uint32_t code = (b >> 3) & 15, n = (b & 7) + 1;
		int delta = 0;
		bool none = false;

		if (!(b & 0x80))
			break; /* not the first byte of an entry: a table we do not understand */
		switch (code) {
		case 15: /* no location */
			none = true;
			break;
		case 14: /* long form: line delta, end line delta, column, end column */
			delta = read_svarint(t, len, &i);
			read_varint(t, len, &i);
			read_varint(t, len, &i);
			read_varint(t, len, &i);
			break;
		case 13: /* no column */
			delta = read_svarint(t, len, &i);
			break;
		case 10:
		case 11:
		case 12: /* one line form: the delta is the code, then two column bytes */
			delta = (int)code - 10;
			i += 2;
			break;
		default: /* short form: same line, one column byte */
			i += 1;
			break;
		}
		line += delta;
		/* The table is the process's bytes: a line past any file's is not a line. */
		if (line < -(1 << 30) || line > (1 << 30))
			return c->firstlineno;
		if (instr < addr + n)
			return none ? c->firstlineno : (int)line;
		addr += n;
	}
	return c->firstlineno;
}

/* The module a file is: "a/b/mod.py" -> "mod", "pkg/__init__.py" -> "pkg". */
static void module_of(const char *file, char *out, size_t size)
{
	const char *base = strrchr(file, '/'), *dot;
	size_t n;

	out[0] = '\0';
	if (!strncmp(file, "<frozen ", 8)) {
		n = strcspn(file + 8, ">");
		snprintf(out, size, "%.*s", (int)n, file + 8);
		return;
	}
	if (file[0] == '<' || !file[0])
		return;
	base = base ? base + 1 : file;
	if (!strcmp(base, "__init__.py") && base > file + 1) {
		const char *end = base - 1, *start = end;

		while (start > file && start[-1] != '/')
			start--;
		snprintf(out, size, "%.*s", (int)(end - start), start);
		return;
	}
	dot = strrchr(base, '.');
	n = dot ? (size_t)(dot - base) : strlen(base);
	snprintf(out, size, "%.*s", (int)n, base);
}

void py_code__format(const struct py_code *c, int line, char *buf, size_t size)
{
	const char *base = strrchr(c->file, '/');
	char module[PY_CODE_MAX_NAME];

	base = base ? base + 1 : c->file;
	module_of(c->file, module, sizeof(module));
	if (line > 0)
		snprintf(buf, size, "%s%s%s (%s:%d)", module, module[0] ? "." : "", c->qualname,
			 base, line);
	else
		snprintf(buf, size, "%s%s%s (%s)", module, module[0] ? "." : "", c->qualname, base);
}
