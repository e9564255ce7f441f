// SPDX-License-Identifier: Apache-2.0
/* The rows of the service's JSON documents. */
#include <json-c/json.h>

#include "bpf/xsprof_events.h"
#include "daemon/service/status_doc.h"

void status_doc__add_u64(struct json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_int64((int64_t)v));
}

void status_doc__add_left_out(struct json_object *o, const struct xsprof_owner_stats *st)
{
	struct json_object *l;

	if (!st->dropped[XSPROF_OWNER_SAMPLE] && !st->dropped[XSPROF_OWNER_OFFCPU] &&
	    !st->dropped[XSPROF_OWNER_CUDA_CALL] && !st->dropped[XSPROF_OWNER_USDT])
		return;
	l = json_object_new_object();
	status_doc__add_u64(l, "samples", st->dropped[XSPROF_OWNER_SAMPLE]);
	status_doc__add_u64(l, "offcpu", st->dropped[XSPROF_OWNER_OFFCPU]);
	status_doc__add_u64(l, "cuda_calls", st->dropped[XSPROF_OWNER_CUDA_CALL]);
	status_doc__add_u64(l, "launches", st->dropped[XSPROF_OWNER_USDT]);
	json_object_object_add(o, "left_out_other_users", l);
}
