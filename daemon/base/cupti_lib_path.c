// SPDX-License-Identifier: Apache-2.0
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/base/cupti_lib_path.h"

/* $env, else LIBDIR/xsprof/file beside our executable, else the installed path (into found). */
static const char *lib_path(const char *env_name, const char *file, const char *installed,
			    char *found)
{
	char exe[PATH_MAX], rel[PATH_MAX + 64];
	const char *env = getenv(env_name);
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
			snprintf(rel, sizeof(rel), "%s/../%s/xsprof/%s", exe, XSPROF_INSTALL_LIBDIR,
				 file);
			if (realpath(rel, found))
				return found;
		}
	}
	return installed;
}

const char *xsprof_cupti_lib_path(void)
{
	static char found[PATH_MAX];

	return lib_path("XSPROF_CUPTI_LIB", "libxsprof_cupti.so", XSPROF_CUPTI_LIB_PATH, found);
}

const char *xsprof_itt_lib_path(void)
{
	static char found[PATH_MAX];

	return lib_path("XSPROF_ITT_LIB", "libxsprof_itt.so", XSPROF_ITT_LIB_PATH, found);
}
