// SPDX-License-Identifier: Apache-2.0
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/base/fileio.h"
#include "daemon/symbolize/proc_maps.h"
#include "daemon/unwind/unwind_jvm.h"

#define JVM_ARGS_MAX (256 * 1024)

bool jvm__maps_hotspot(const struct proc_maps *pm)
{
	for (size_t i = 0; i < proc_maps__count(pm); i++) {
		const struct proc_map *m = proc_maps__at(pm, i);
		const char *base;

		if (!m->path || m->path[0] != '/' || !(m->perms & PROC_MAP_EXEC))
			continue;
		base = strrchr(m->path, '/') + 1;
		if (!strcmp(base, "libjvm.so"))
			return true;
	}
	return false;
}

/* The PreserveFramePointer setting the options in s (len bytes, separated by NULs or
 * blanks) leave, starting from *on. */
static void scan_options(const char *s, size_t len, bool *on)
{
	static const char flag[] = "PreserveFramePointer";
	const char *end = s + len;

	for (const char *p = s; p < end;) {
		size_t n = 0;

		while (p < end && (*p == '\0' || *p == ' ' || *p == '\t' || *p == '\n'))
			p++;
		while (p + n < end && p[n] && p[n] != ' ' && p[n] != '\t' && p[n] != '\n')
			n++;
		if (n == 5 + sizeof(flag) - 1 && !strncmp(p, "-XX:", 4) &&
		    (p[4] == '+' || p[4] == '-') && !memcmp(p + 5, flag, sizeof(flag) - 1))
			*on = p[4] == '+';
		p += n;
	}
}

/* The value of variable name in env (NUL-separated NAME=VALUE), or NULL; *ret_len its length. */
static const char *env_value(const char *env, size_t len, const char *name, size_t *ret_len)
{
	size_t nl = strlen(name);

	for (const char *p = env, *end = env + len; p < end;) {
		const char *e = memchr(p, '\0', (size_t)(end - p));
		size_t n = e ? (size_t)(e - p) : (size_t)(end - p);

		if (n > nl && !memcmp(p, name, nl) && p[nl] == '=') {
			*ret_len = n - nl - 1;
			return p + nl + 1;
		}
		p += n + 1;
	}
	return NULL;
}

bool jvm__options_leave_fp_off(const char *cmdline, size_t cmdline_len, const char *env,
			       size_t env_len)
{
	static const char *const before[] = {"JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS"};
	bool on = false;
	const char *v;
	size_t n;

	for (size_t i = 0; env && i < 2; i++)
		if ((v = env_value(env, env_len, before[i], &n)))
			scan_options(v, n, &on);
	if (cmdline)
		scan_options(cmdline, cmdline_len, &on);
	if (env && (v = env_value(env, env_len, "_JAVA_OPTIONS", &n)))
		scan_options(v, n, &on);
	return !on;
}

bool jvm__jit_without_fp(const char *proc_root, pid_t pid)
{
	char path[128], *cmd = NULL, *env = NULL;
	size_t cn = 0, en = 0;
	bool off;

	snprintf(path, sizeof(path), "%s/%d/cmdline", proc_root ? proc_root : "/proc", (int)pid);
	if (file__read_all(path, JVM_ARGS_MAX, &cmd, &cn))
		cmd = NULL;
	snprintf(path, sizeof(path), "%s/%d/environ", proc_root ? proc_root : "/proc", (int)pid);
	if (file__read_all(path, JVM_ARGS_MAX, &env, &en))
		env = NULL;
	off = jvm__options_leave_fp_off(cmd, cn, env, en);
	free(cmd);
	free(env);
	return off;
}
