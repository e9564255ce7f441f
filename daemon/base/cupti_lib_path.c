// SPDX-License-Identifier: Apache-2.0
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/base/cupti_lib_path.h"

const char *xsprof_cupti_lib_path(void)
{
	static char found[PATH_MAX];
	char exe[PATH_MAX], rel[PATH_MAX + 64];
	const char *env = getenv("XSPROF_CUPTI_LIB");
	ssize_t n;
	char *slash;

	if (env && *env)
		return env;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			snprintf(rel, sizeof(rel), "%s/../%s/xsprof/libxsprof_cupti.so", exe,
				 XSPROF_INSTALL_LIBDIR);
			if (realpath(rel, found))
				return found;
		}
	}
	return XSPROF_CUPTI_LIB_PATH;
}
