/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A fake /proc and a fake kallsyms, so a symbolizer names frames exactly without BPF, root or a
 * live process. Each pid is a directory with its maps; user frames get real names from a perf
 * map in the pid's root (read, as a JIT's is, for anonymous executable memory), kernel frames
 * from the kallsyms text. Samples of those processes, and the folded text a named tree comes to.
 */
#ifndef XSPROF_TESTS_FAKE_PROC_H
#define XSPROF_TESTS_FAKE_PROC_H

#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bpf/xsprof_events.h"
#include "daemon/symbolize/symbolizer.h"
#include "output/model/calltree.h"
#include "output/folded.h"

/* The kernel every fake /proc has: k_outer, k_inner and k_end, 0x100 bytes each. */
#define FAKE_KBASE 0xffffffff81000000ull
#define FAKE_KALLSYMS \
	"ffffffff81000000 T k_outer\nffffffff81000100 T k_inner\nffffffff81000200 T k_end\n"

struct fake_proc {
	char root[64];
	char kallsyms[PATH_MAX];
	struct symbolizer *sym; /* fake_proc__symbolizer's, freed by fake_proc__remove */
};

/* Write text to root/rel, making the directories on the way. */
static inline void fake_proc__write(const struct fake_proc *fp, const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", fp->root, rel);
	for (char *p = path + strlen(fp->root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		cr_assert(!mkdir(path, 0755) || errno == EEXIST, "mkdir %s: %s", path,
			  strerror(errno));
		*p = '/';
	}
	f = fopen(path, "we");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

/* A fresh root with FAKE_KALLSYMS and no process yet. */
static inline void fake_proc__init(struct fake_proc *fp)
{
	snprintf(fp->root, sizeof(fp->root), "/tmp/xsprof-fakeproc-XXXXXX");
	fp->sym = NULL;
	cr_assert_not_null(mkdtemp(fp->root));
	fake_proc__write(fp, "kallsyms", FAKE_KALLSYMS);
	snprintf(fp->kallsyms, sizeof(fp->kallsyms), "%s/kallsyms", fp->root);
}

/* Process pid with these /proc/PID/maps lines, and these perf map lines (may be NULL). */
static inline void fake_proc__add(const struct fake_proc *fp, int pid, const char *maps,
				  const char *perf_map)
{
	char rel[96];

	snprintf(rel, sizeof(rel), "%d/maps", pid);
	fake_proc__write(fp, rel, maps);
	if (perf_map) {
		snprintf(rel, sizeof(rel), "%d/root/tmp/perf-%d.map", pid, pid);
		fake_proc__write(fp, rel, perf_map);
	}
}

/* A symbolizer that reads only the fake root and kallsyms. */
static inline struct symbolizer *fake_proc__symbolizer(struct fake_proc *fp)
{
	fp->sym = symbolizer__new(
		&(struct symbolizer_opts){.proc_root = fp->root, .kallsyms_path = fp->kallsyms});
	cr_assert_not_null(fp->sym, "%s", strerror(errno));
	return fp->sym;
}

/* A sample of process pid (its only thread), uid 1000: user pcs innermost first (return
 * addresses after the first), kernel pcs innermost first. */
static inline struct xsprof_sample fake_proc__sample(int pid, const char *comm,
						     const uint64_t *user, int nu,
						     const uint64_t *kernel, int nk)
{
	struct xsprof_sample s;

	memset(&s, 0, sizeof(s));
	s.type = XSPROF_REC_SAMPLE;
	s.tgid = s.tid = (uint32_t)pid;
	s.uid = 1000;
	snprintf(s.comm, sizeof(s.comm), "%s", comm);
	s.nr_kernel = (uint16_t)nk;
	s.nr_user = (uint16_t)nu;
	for (int i = 0; i < nk; i++)
		s.ips[i] = kernel[i];
	for (int i = 0; i < nu; i++)
		s.ips[nk + i] = user[i];
	return s;
}

/* The tree as folded stacks ("a;b;c N" lines); valid until the next call. */
static inline const char *fake_proc__folded(const struct calltree *t)
{
	static char buf[4096];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	cr_assert_not_null(f);
	cr_assert_eq(folded__write(t, f), 0);
	cr_assert_eq(fclose(f), 0);
	return buf;
}

/* The symbolizer freed (unless the test did: then it set fp->sym to NULL), the files gone. */
static inline void fake_proc__remove(struct fake_proc *fp)
{
	char cmd[sizeof(fp->root) + 16];

	symbolizer__free(fp->sym);
	fp->sym = NULL;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fp->root);
	cr_assert_eq(system(cmd), 0);
}

#endif
