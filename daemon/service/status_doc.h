/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The rows of the service's JSON documents (the status, an attachment's, a recording's): what
 * every file that adds one calls, so that none calls up into status.c for them. Calls nothing
 * of the service.
 */
#ifndef XSPROF_DAEMON_SERVICE_STATUS_DOC_H
#define XSPROF_DAEMON_SERVICE_STATUS_DOC_H

#include <stdint.h>

struct json_object;
struct xsprof_owner_stats;

/* k: v, a counter (JSON has no unsigned 64-bit integer: an int64 that readers take whole). */
void status_doc__add_u64(struct json_object *o, const char *k, uint64_t v);
/* "left_out_other_users": {samples, offcpu, cuda_calls, launches} into o, when any. */
void status_doc__add_left_out(struct json_object *o, const struct xsprof_owner_stats *st);

#endif
