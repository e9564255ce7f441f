// SPDX-License-Identifier: Apache-2.0
/*
 * The CPython location table decoder and the frame name formatter (daemon/python/py_code.c):
 * both read bytes a profiled process controls. Input: 4 bytes of first line, 4 of instruction,
 * then a qualname and a file name (NUL-separated, cut to size) and the table's bytes.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "daemon/python/py_code.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct py_code c = {0};
	const uint8_t *p = data, *end = data + size;
	char buf[2 * PY_CODE_MAX_NAME + 64];
	uint32_t instr;
	int32_t first;
	size_t n;

	if (size < 8)
		return 0;
	memcpy(&first, p, 4);
	memcpy(&instr, p + 4, 4);
	p += 8;
	c.firstlineno = first;
	for (int k = 0; k < 2; k++) {
		char *dst = k ? c.file : c.qualname;

		n = strnlen((const char *)p, (size_t)(end - p));
		if (n > PY_CODE_MAX_NAME - 1)
			n = PY_CODE_MAX_NAME - 1;
		memcpy(dst, p, n);
		dst[n] = '\0';
		p += n < (size_t)(end - p) ? n + 1 : n;
	}
	c.linetable = (uint8_t *)p;
	c.linetable_len = (uint32_t)(end - p);
	py_code__format(&c, py_code__line(&c, instr), buf, sizeof(buf));
	for (uint32_t i = 0; i < 64; i++)
		py_code__line(&c, i);
	return 0;
}
