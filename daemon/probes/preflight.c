// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/log.h"
#include "daemon/probes/features.h"
#include "daemon/probes/preflight.h"

#define CAP_SYS_ADMIN_BIT 21
#define CAP_PERFMON_BIT	  38
#define CAP_BPF_BIT	  39

static bool effective_caps(uint64_t *ret)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");
	bool found = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "CapEff:", 7)) {
			*ret = strtoull(line + 7, NULL, 16);
			found = true;
			break;
		}
	}
	fclose(f);
	return found;
}

int preflight__kernel(void)
{
	uint64_t caps = 0;
	bool have_caps;

	have_caps = effective_caps(&caps) &&
		    ((caps & (1ull << CAP_SYS_ADMIN_BIT)) ||
		     ((caps & (1ull << CAP_BPF_BIT)) && (caps & (1ull << CAP_PERFMON_BIT))));
	if (!have_caps) {
		log_err("xsprofd needs root to load BPF programs and open perf events: run it with "
			"sudo (or grant CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE)");
		return -EPERM;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		log_err("/sys/kernel/btf/vmlinux is missing: this kernel has no BTF, which the CO-RE "
			"BPF programs need; use a kernel built with CONFIG_DEBUG_INFO_BTF=y (every "
			"major distribution's kernel since 2021 is)");
		return -ENOTSUP;
	}
	return preflight__features(kfeatures__get());
}

int preflight__features(const struct kfeatures *k)
{
	for (int f = 0; f < KF_MAX; f++) {
		const struct kfeature_row *r = &kfeature_rows[f];

		if (kfeatures__has(k, f))
			continue;
		if (r->required) {
			log_err("this kernel (%s) lacks %s (Linux %s and later, or a distribution "
				"kernel that backports it): xsprofd needs it",
				k->release, r->name, r->since);
			return -ENOTSUP;
		}
		if (r->loses)
			log_warn("this kernel (%s) lacks %s (Linux %s): %s", k->release, r->name,
				 r->since, r->without);
		else
			log_info("this kernel (%s) lacks %s (Linux %s): %s", k->release, r->name,
				 r->since, r->without);
	}
	return 0;
}

int preflight__pid(pid_t pid)
{
	if (kill(pid, 0) && errno == ESRCH) {
		log_err("--pid %d: no such process", (int)pid);
		return -ESRCH;
	}
	return 0;
}

int preflight__tid(pid_t tid)
{
	char path[32];

	/* /proc/TID exists for every thread, though only leaders are listed. */
	snprintf(path, sizeof(path), "/proc/%d", (int)tid);
	if (access(path, F_OK)) {
		log_err("--tid %d: no such thread", (int)tid);
		return -ESRCH;
	}
	return 0;
}

int preflight__output(const char *path)
{
	char dir[PATH_MAX];
	const char *slash;

	if (!strcmp(path, "-"))
		return 0;
	slash = strrchr(path, '/');
	if (!slash) {
		strcpy(dir, ".");
	} else if (slash == path) {
		strcpy(dir, "/");
	} else {
		if ((size_t)(slash - path) >= sizeof(dir)) {
			log_err("--output %s: path too long", path);
			return -ENAMETOOLONG;
		}
		memcpy(dir, path, slash - path);
		dir[slash - path] = '\0';
	}
	if (access(dir, W_OK | X_OK)) {
		int err = errno;

		log_err("--output %s: cannot write in %s (%s); create the directory or choose "
			"another path",
			path, dir, strerror(err));
		return -err;
	}
	return 0;
}

void preflight__explain_bpf_error(const char *what, int err)
{
	switch (-err) {
	case EACCES:
		/* Privileges were checked up front: as root, EACCES at load is the verifier. */
		if (!geteuid()) {
			log_err("%s: the kernel's BPF verifier rejected the program; run with -v to "
				"see its log, and please report it with your kernel version",
				what);
			break;
		}
		/* fall through */
	case EPERM:
		log_err("%s: permission denied (%s); run xsprofd as root. If you are root, a "
			"security module or kernel.unprivileged_bpf_disabled/lockdown may forbid BPF",
			what, strerror(-err));
		break;
	case ENOENT:
	case EOPNOTSUPP:
	case EINVAL:
		log_err("%s failed (%s): the kernel may lack perf events or BPF support "
			"(CONFIG_PERF_EVENTS, CONFIG_BPF_EVENTS); run with -v for the verifier log",
			what, strerror(-err));
		break;
	case ENOMEM:
		log_err("%s: out of memory (%s); lower --ring-buffer-size", what, strerror(-err));
		break;
	default:
		log_err("%s failed: %s (run with -v for details)", what, strerror(-err));
	}
}

int preflight__libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if ((level == LIBBPF_DEBUG || level == LIBBPF_INFO) && log_max_level < LOG_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}
