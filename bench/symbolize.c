// SPDX-License-Identifier: Apache-2.0
/*
 * Symbolization speed: names a list of addresses of one running process, cold (a new
 * symbolizer: snapshot, ELF files read, first lookups) and warm (the same addresses again,
 * for at least a second), and prints frames per second and peak memory. With --a2l DIR it
 * also writes, per mapped file, the ELF addresses addr2line -e takes, for bench/symbolize.sh.
 *
 *   xs_symbolize_bench PID ADDRS_FILE [--debug-info] [--a2l DIR]
 * ADDRS_FILE: one hex address per line (as perf script prints them).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "daemon/base/vec.h"
#include "daemon/symbolize/elf_symtab.h"
#include "daemon/symbolize/proc_maps.h"
#include "daemon/symbolize/symbolizer.h"

#define MAX_ADDRS (1u << 24)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t *read_addrs(const char *path, size_t *ret_n)
{
	FILE *f = fopen(path, "re");
	uint64_t *v = NULL, a;
	size_t n = 0, cap = 0;
	char line[256];

	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f) && n < MAX_ADDRS) {
		char *end;

		a = strtoull(line, &end, 16);
		if (end == line || !a)
			continue;
		if (vec_reserve(&v, &cap, n + 1))
			exit(1);
		v[n++] = a;
	}
	fclose(f);
	*ret_n = n;
	return v;
}

/* DIR/N.addrs holds file N's addresses; DIR/modules lists "N path". */
static int write_a2l(const char *dir, pid_t pid, const uint64_t *addrs, size_t n)
{
	struct proc_maps *m = proc_maps__read(NULL, pid);
	struct elf_symtab **tabs;
	FILE **out, *mods;
	char path[4096];
	size_t nm;

	if (!m)
		return -errno;
	nm = proc_maps__count(m);
	out = calloc(nm, sizeof(*out));
	tabs = calloc(nm, sizeof(*tabs)); /* one read per mapping */
	snprintf(path, sizeof(path), "%s/modules", dir);
	mods = fopen(path, "we");
	if (!out || !tabs || !mods)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		ssize_t idx = proc_maps__index(m, addrs[i]);
		const struct proc_map *pm;
		struct elf_symtab *t;
		uint64_t vaddr;

		if (idx < 0)
			continue;
		pm = proc_maps__at(m, (size_t)idx);
		if (!pm->path || pm->path[0] != '/')
			continue;
		if (!tabs[idx])
			tabs[idx] = elf_symtab__open(pm->path);
		t = tabs[idx];
		if (!t || elf_symtab__offset_to_vaddr(t, addrs[i] - pm->start + pm->offset, &vaddr))
			continue;
		if (!out[idx]) {
			snprintf(path, sizeof(path), "%s/%zd.addrs", dir, idx);
			out[idx] = fopen(path, "we");
			fprintf(mods, "%zd %s\n", idx, pm->path);
		}
		fprintf(out[idx], "0x%" PRIx64 "\n", vaddr);
	}
	for (size_t i = 0; i < nm; i++) {
		if (out[i])
			fclose(out[i]);
		elf_symtab__free(tabs[i]);
	}
	free(tabs);
	fclose(mods);
	free(out);
	proc_maps__free(m);
	return 0;
}

int main(int argc, char **argv)
{
	struct symbolizer_opts opts = {};
	struct symbolizer_frame fr[16];
	struct symbolizer_stats st;
	struct symbolizer *s;
	const char *a2l = NULL;
	uint64_t *addrs, unnamed = 0, warm = 0;
	double t0, cold_s, warm_s;
	struct rusage ru;
	size_t n = 0;
	pid_t pid;

	if (argc < 3) {
		fprintf(stderr, "usage: %s PID ADDRS_FILE [--debug-info] [--a2l DIR]\n", argv[0]);
		return 2;
	}
	pid = atoi(argv[1]);
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--debug-info"))
			opts.debug_info = true;
		else if (!strcmp(argv[i], "--a2l") && i + 1 < argc)
			a2l = argv[++i];
	}
	addrs = read_addrs(argv[2], &n);
	if (!addrs || !n) {
		fprintf(stderr, "no addresses in %s\n", argv[2]);
		return 1;
	}
	if (a2l && write_a2l(a2l, pid, addrs, n)) {
		fprintf(stderr, "cannot write the addr2line lists\n");
		return 1;
	}
	t0 = now_s();
	s = symbolizer__new(&opts);
	if (!s || symbolizer__add_process(s, pid)) {
		fprintf(stderr, "cannot snapshot pid %d\n", (int)pid);
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		const char *name;

		if (opts.debug_info)
			name = fr[symbolizer__user_frames(s, pid, 0, addrs[i], fr, 16) - 1].name;
		else
			name = symbolizer__user(s, pid, addrs[i]);
		unnamed += name[0] == '[' || strstr(name, "+0x");
		if (i < 5 && getenv("XS_BENCH_PRINT"))
			printf("%#" PRIx64 " %s\n", addrs[i], name);
	}
	cold_s = now_s() - t0;
	t0 = now_s();
	do {
		for (size_t i = 0; i < n; i++) {
			if (opts.debug_info)
				symbolizer__user_frames(s, pid, 0, addrs[i], fr, 16);
			else
				symbolizer__user(s, pid, addrs[i]);
		}
		warm += n;
		warm_s = now_s() - t0;
	} while (warm_s < 1.0);
	symbolizer__stats(s, &st);
	getrusage(RUSAGE_SELF, &ru);
	printf("xsprof%s: %zu frames, %" PRIu64 " unnamed; cold %.0f frames/s (%.1f ms, %" PRIu64
	       " files read); warm %.0f frames/s; peak RSS %ld KiB, cache peak %" PRIu64 " KiB\n",
	       opts.debug_info ? " --debug-info" : "", n, unnamed, n / cold_s, cold_s * 1e3,
	       st.files_loaded, warm / warm_s, ru.ru_maxrss, st.peak_bytes >> 10);
	symbolizer__free(s);
	free(addrs);
	return 0;
}
