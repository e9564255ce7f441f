// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <string.h>

#include "cupti_inject/wire_encode.h"
#include "cupti_inject/xsprof_wire.h"

uint32_t wire__string_len(const char *s, bool *truncated)
{
	size_t n;

	if (!s)
		return 0;
	n = strnlen(s, XSPROF_WIRE_NAME_MAX);
	if (n >= XSPROF_WIRE_NAME_MAX) {
		*truncated = true;
		return XSPROF_WIRE_NAME_MAX;
	}
	return (uint32_t)n + 1;
}

void wire__put_string(uint8_t *dst, const char *s, uint32_t len)
{
	if (!len)
		return;
	memcpy(dst, s, len - 1);
	dst[len - 1] = '\0';
}

void *wire__start_record(void *out, size_t cap, uint16_t type, size_t fixed, uint32_t strings,
			 uint32_t *ret_len)
{
	uint32_t len = xsprof_wire_align((uint32_t)fixed + strings);
	struct xsprof_wire_hdr *h = out;

	if (len > cap)
		return NULL;
	memset(out, 0, len);
	h->type = type;
	h->version = 1;
	h->length = len;
	*ret_len = len;
	return out;
}

long cupti_encode__nvtx(void *out, size_t cap, uint64_t start, uint64_t end, uint32_t id,
			uint32_t tid, const char *name, const char *domain, uint16_t flags)
{
	struct xsprof_wire_nvtx *w;
	bool trunc = false;
	uint32_t name_len = wire__string_len(name, &trunc);
	uint32_t domain_len = wire__string_len(domain, &trunc);
	uint32_t len;

	w = wire__start_record(out, cap, XSPROF_WIRE_NVTX, sizeof(*w), name_len + domain_len, &len);
	if (!w)
		return -ENOSPC;
	w->start = start;
	w->end = end;
	w->id = id;
	w->tid = tid;
	w->name_len = (uint16_t)name_len;
	w->domain_len = (uint16_t)domain_len;
	w->flags = flags | (trunc ? XSPROF_WIRE_F_NAME_TRUNC : 0);
	wire__put_string((uint8_t *)(w + 1), name, name_len);
	wire__put_string((uint8_t *)(w + 1) + name_len, domain, domain_len);
	return len;
}
