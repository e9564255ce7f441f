// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "daemon/symbolize/demangle.h"

/* From libstdc++ (cxxabi.h is C++-only). */
char *__cxa_demangle(const char *mangled_name, char *output_buffer, size_t *length, int *status);

bool demangle__is_cxx(const char *name)
{
	return name[0] == '_' && name[1] == 'Z';
}

char *demangle__cxx(const char *name)
{
	int status = 0;
	char *out;

	if (!demangle__is_cxx(name)) {
		errno = EINVAL;
		return NULL;
	}
	/* Names come from files a profiled process chose; keep the demangler's input bounded. */
	if (strnlen(name, DEMANGLE_MAX_LEN + 1) > DEMANGLE_MAX_LEN) {
		errno = E2BIG;
		return NULL;
	}
	out = __cxa_demangle(name, NULL, NULL, &status);
	if (!out) {
		errno = status == -1 ? ENOMEM : EINVAL;
		return NULL;
	}
	return out;
}
