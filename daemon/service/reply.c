// SPDX-License-Identifier: Apache-2.0
/* Replies to API requests, and profiles in every format written into them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <microhttpd.h>

#include "daemon/base/clock.h"
#include "daemon/base/api_socket.h"
#include "daemon/service/internal.h"
#include "daemon/session/lasting.h"
#include "output/gpu_report/gpu_report.h"
#include "output/output.h"
#include "output/model/profile.h"

/* One daemon per process: its responses by status, for /metrics. */
static uint64_t replies_by_status[600];

void reply__counts(const uint64_t **ret, size_t *ret_n)
{
	*ret = replies_by_status;
	*ret_n = sizeof(replies_by_status) / sizeof(replies_by_status[0]);
}

enum MHD_Result reply__headers(struct MHD_Connection *c, unsigned int status, const char *type,
			       const void *body, size_t len, bool copy, const char *const *kv,
			       size_t n)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
		len, (void *)body, copy ? MHD_RESPMEM_MUST_COPY : MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;
	bool cache_set = false;

	if (!r)
		return MHD_NO;
	if (type)
		MHD_add_response_header(r, "Content-Type", type);
	for (size_t i = 0; i + 1 < n; i += 2) {
		MHD_add_response_header(r, kv[i], kv[i + 1]);
		cache_set |= !strcasecmp(kv[i], "Cache-Control");
	}
	if (!cache_set)
		MHD_add_response_header(r, "Cache-Control", "no-store");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	if (ret == MHD_YES && status < sizeof(replies_by_status) / sizeof(replies_by_status[0]))
		replies_by_status[status]++;
	return ret;
}

enum MHD_Result reply__file(struct MHD_Connection *c, int fd, uint64_t size, const char *type)
{
	struct MHD_Response *r = MHD_create_response_from_fd64(size, fd);
	enum MHD_Result ret;

	if (!r) {
		close(fd);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	ret = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	if (ret == MHD_YES)
		replies_by_status[200]++;
	return ret;
}

static enum MHD_Result reply_with(struct MHD_Connection *c, unsigned int status, const char *type,
				  const void *body, size_t len, const char *name, const char *value)
{
	const char *kv[] = {name, value};

	return reply__headers(c, status, type, body, len, true, kv, name ? 2 : 0);
}

enum MHD_Result reply__send(struct MHD_Connection *c, unsigned int status, const char *type,
			    const void *body, size_t len)
{
	return reply_with(c, status, type, body, len, NULL, NULL);
}

enum MHD_Result reply__span(struct MHD_Connection *c, const char *type, const void *body,
			    size_t len, uint64_t from_ns, uint64_t to_ns)
{
	char span[32];

	snprintf(span, sizeof(span), "%.3f",
		 from_ns && to_ns > from_ns ? (to_ns - from_ns) / 1e9 : 0.0);
	return reply_with(c, 200, type, body, len, XSPROF_SPAN_HEADER, span);
}

enum MHD_Result reply__json(struct MHD_Connection *c, unsigned int status, struct json_object *j)
{
	const char *s = json_object_to_json_string_ext(j, JSON_C_TO_STRING_PRETTY |
								  JSON_C_TO_STRING_NOSLASHESCAPE);
	enum MHD_Result ret = reply__send(c, status, "application/json", s, strlen(s));

	json_object_put(j);
	return ret;
}

enum MHD_Result reply__error(struct MHD_Connection *c, unsigned int status, const char *error,
			     const char *hint)
{
	struct json_object *j = json_object_new_object();

	json_object_object_add(j, "error", json_object_new_string(error));
	if (hint)
		json_object_object_add(j, "hint", json_object_new_string(hint));
	return reply__json(c, status, j);
}

const char *reply__content_type(enum output_format f)
{
	const struct output_format_info *fi = output__format_info(f);

	return fi ? fi->content_type : "text/plain; charset=utf-8";
}

/* Formats of a window, which holds aggregated stacks and GPU reports (the table's
 * OUTPUT_IN_WINDOW): no Chrome trace or GPU timeline, which need every sample and GPU record
 * (recordings keep them). */
bool reply__window_format(const char *name, enum output_format *ret)
{
	return !output__format_from_name(name, ret) &&
	       output__format_allowed(*ret, OUTPUT_IN_WINDOW);
}

bool reply__is_report(enum output_format f)
{
	const struct output_format_info *fi = output__format_info(f);

	return fi && fi->write_report; /* the formats that are a GPU report */
}

enum MHD_Result reply__gpu_report(struct MHD_Connection *c, const struct lasting *l,
				  uint64_t since_ns, uint64_t until_ns, bool all_uids, uid_t uid,
				  enum output_format f, uint64_t end_ns)
{
	struct gpu_report *r = NULL;
	uint64_t from = 0;
	char *buf = NULL;
	size_t len = 0;
	enum MHD_Result ret;
	FILE *out = NULL;
	int err = lasting__report(l, since_ns, until_ns, all_uids, uid, &r, &from);

	if (!err && !(out = open_memstream(&buf, &len)))
		err = -errno;
	if (!err)
		err = output__format_info(f)->write_report(r, out);
	if (out && fclose(out) && !err)
		err = -EIO;
	gpu_report__free(r);
	if (err)
		ret = reply__error(c, 500, "building the GPU report failed", strerror(-err));
	else
		ret = reply__span(c, reply__content_type(f), buf, len, from,
				  until_ns < end_ns ? until_ns : end_ns);
	free(buf);
	return ret;
}

/* A window's call tree in any format but the Chrome trace (a window keeps no timeline). */
int reply__write_tree(const struct calltree *tree, enum output_format fmt, FILE *f,
		      const struct output_meta *meta, unsigned int freq_hz, enum weight_unit unit,
		      uint64_t start_ns, uint64_t end_ns, const struct frame_sites *sites)
{
	struct profile_data pd = {
		.cpu_tree = tree,
		.sites = sites,
		.sample_period_ns = 1000000000ull / (freq_hz ? freq_hz : 1),
		.mode = GPU_MODE_CPU,
		.unit = unit,
		.start_ns = start_ns,
		.end_ns = end_ns,
	};

	/* Outputs that show wall time get one (realtime - monotonic) pair per profile. */
	pd.realtime_offset_ns = clock__realtime_offset_ns();
	if (fmt == OUTPUT_FOLDED || fmt == OUTPUT_SVG)
		return output__write(tree, fmt, f, meta);
	return output__write_profile(&pd, fmt, f, meta);
}
