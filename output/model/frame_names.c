// SPDX-License-Identifier: Apache-2.0
#include <stdio.h>
#include <string.h>

#include "output/model/frame_names.h"

bool frame__is_python(const char *frame)
{
	const char *p = strstr(frame, ".py:"), *open = strchr(frame, '(');

	return p && open && open < p;
}

size_t frame__fn_len(const char *frame)
{
	const char *p = strstr(frame, " (");

	return p ? (size_t)(p - frame) : strlen(frame);
}

bool frame__has_fn(const char *const *frames, size_t n, const char *fn, size_t len)
{
	for (size_t k = 0; k < n; k++)
		if (frame__fn_len(frames[k]) == len && !strncmp(frames[k], fn, len))
			return true;
	return false;
}

/* A kernel frame ("schedule_[k]"). */
static bool is_kernel(const char *frame)
{
	size_t n = strlen(frame);

	return n > 4 && !strcmp(frame + n - 4, "_[k]");
}

/* The file of a Python frame ("x.py" of "m.f (x.py:12)"), its length into *ret_n. */
static const char *py_file(const char *frame, size_t *ret_n)
{
	const char *open = strrchr(frame, '('), *colon = strrchr(frame, ':');

	if (!open || !colon || colon < open)
		return NULL;
	*ret_n = (size_t)(colon - open - 1);
	return open + 1;
}

const char *frame__wait_site(const char *const *frames, size_t n, char *buf, size_t size)
{
	const char *in = NULL, *user = NULL, *file = NULL;
	size_t flen = 0;

	for (size_t k = 0; k < n; k++) {
		size_t len;
		const char *fl;

		if (!frame__is_python(frames[k]))
			continue;
		in = frames[k];
		fl = py_file(frames[k], &len);
		if (!file && fl) {
			file = fl;
			flen = len;
		}
		if (file && fl && len == flen && !strncmp(fl, file, len))
			user = frames[k];
	}
	if (!in) {
		/* Native: the innermost frame that is neither the kernel's nor a reserved name
		 * (the C library's insides: __futex_abstimed_wait_common), and its caller. */
		size_t k = n;

		while (k > 0 && (frames[k - 1][0] == '_' || is_kernel(frames[k - 1])))
			k--;
		if (!k)
			k = n;
		in = k ? frames[k - 1] : "?";
		user = k > 1 ? frames[k - 2] : NULL;
	}
	if (user && user != in)
		snprintf(buf, size, "%s (called from %s)", in, user);
	else
		snprintf(buf, size, "%s", in);
	return buf;
}
