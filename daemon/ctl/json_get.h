/* SPDX-License-Identifier: Apache-2.0 */
/* Reading the daemon's JSON answers: a member, or a plain default when it is missing. */
#ifndef XSPROF_DAEMON_CTL_JSON_GET_H
#define XSPROF_DAEMON_CTL_JSON_GET_H

#include <stddef.h>

#include <json-c/json.h>

/* o's member k, or NULL (o may be NULL). */
static inline struct json_object *jget(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;

	return o && json_object_object_get_ex(o, k, &v) ? v : NULL;
}

/* As an integer (0 when missing). */
static inline long long jint(struct json_object *o, const char *k)
{
	return (long long)json_object_get_int64(jget(o, k));
}

/* As a number (0 when missing). */
static inline double jnum(struct json_object *o, const char *k)
{
	return json_object_get_double(jget(o, k));
}

/* As a string, or dflt when missing. */
static inline const char *jstr(struct json_object *o, const char *k, const char *dflt)
{
	struct json_object *v = jget(o, k);

	return v ? json_object_get_string(v) : dflt;
}

/* The length of an array member (0 when missing or not an array). */
static inline size_t jlen(struct json_object *o, const char *k)
{
	struct json_object *a = jget(o, k);

	return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

#endif
