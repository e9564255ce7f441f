// SPDX-License-Identifier: Apache-2.0
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/symbolize/proc_maps.h"

static struct proc_maps *parse_str(const char *text)
{
	struct proc_maps *m = proc_maps__parse(text, strlen(text));

	cr_assert_not_null(m, "parse failed: %s", strerror(errno));
	return m;
}

Test(proc_maps, typical_lines)
{
	const char *text =
		"55e0c0a00000-55e0c0a02000 r--p 00000000 fd:01 1311 /usr/bin/cat\n"
		"55e0c0a02000-55e0c0a07000 r-xp 00002000 fd:01 1311 /usr/bin/cat\n"
		"55e0c1000000-55e0c1021000 rw-p 00000000 00:00 0                          [heap]\n"
		"7f1234500000-7f1234600000 rw-s 00000000 00:05 4242 /dev/shm/x\n"
		"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n"
		"7ffd00100000-7ffd00102000 r-xp 00000000 00:00 0                          [vdso]\n"
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";
	struct proc_maps *m = parse_str(text);
	const struct proc_map *p;

	cr_assert_eq(proc_maps__count(m), 7);
	cr_assert_eq(proc_maps__skipped(m), 0);

	p = proc_maps__at(m, 1);
	cr_assert_eq(p->start, 0x55e0c0a02000ULL);
	cr_assert_eq(p->end, 0x55e0c0a07000ULL);
	cr_assert_eq(p->offset, 0x2000);
	cr_assert_eq(p->dev_major, 0xfd);
	cr_assert_eq(p->dev_minor, 0x01);
	cr_assert_eq(p->inode, 1311);
	cr_assert_eq(p->perms, PROC_MAP_READ | PROC_MAP_EXEC | PROC_MAP_PRIVATE);
	cr_assert_str_eq(p->path, "/usr/bin/cat");
	cr_assert_not(p->deleted);

	cr_assert_str_eq(proc_maps__at(m, 2)->path, "[heap]");
	p = proc_maps__at(m, 3);
	cr_assert_eq(p->perms, PROC_MAP_READ | PROC_MAP_WRITE, "shared mapping has no P bit");
	cr_assert_str_eq(proc_maps__at(m, 4)->path, "[stack]");
	cr_assert_str_eq(proc_maps__at(m, 5)->path, "[vdso]");
	p = proc_maps__at(m, 6);
	cr_assert_str_eq(p->path, "[vsyscall]");
	cr_assert_eq(p->start, 0xffffffffff600000ULL);
	cr_assert_eq(p->perms, PROC_MAP_EXEC | PROC_MAP_PRIVATE);
	cr_assert_null(proc_maps__at(m, 7));
	proc_maps__free(m);
}

Test(proc_maps, anonymous_spaces_and_deleted)
{
	const char *text = "1000-2000 rw-p 00000000 00:00 0\n"
			   "3000-4000 rw-p 00000000 00:00 0    \n"
			   "5000-6000 r-xp 00001000 08:02 77 /opt/my app/lib with spaces.so\n"
			   "7000-8000 r-xp 00000000 08:02 78 /tmp/jit code.so (deleted)\n"
			   "9000-a000 rw-s 00000000 00:01 79 /memfd:buf (deleted)\n"
			   "b000-c000 r--p 00000000 00:00 0 [anon:my region]\n";
	struct proc_maps *m = parse_str(text);
	const struct proc_map *p;

	cr_assert_eq(proc_maps__count(m), 6);
	cr_assert_null(proc_maps__at(m, 0)->path);
	cr_assert_null(proc_maps__at(m, 1)->path, "trailing padding is not a path");
	cr_assert_str_eq(proc_maps__at(m, 2)->path, "/opt/my app/lib with spaces.so");
	p = proc_maps__at(m, 3);
	cr_assert_str_eq(p->path, "/tmp/jit code.so");
	cr_assert(p->deleted);
	p = proc_maps__at(m, 4);
	cr_assert_str_eq(p->path, "/memfd:buf");
	cr_assert(p->deleted);
	cr_assert_str_eq(proc_maps__at(m, 5)->path, "[anon:my region]");
	proc_maps__free(m);
}

Test(proc_maps, empty_input)
{
	struct proc_maps *m = proc_maps__parse("", 0);

	cr_assert_not_null(m);
	cr_assert_eq(proc_maps__count(m), 0);
	cr_assert_eq(proc_maps__skipped(m), 0);
	cr_assert_null(proc_maps__find(m, 0x1000));
	cr_assert_eq(proc_maps__index(m, 0x1000), -ENOENT);
	proc_maps__free(m);

	m = proc_maps__parse(NULL, 0);
	cr_assert_not_null(m);
	cr_assert_eq(proc_maps__count(m), 0);
	proc_maps__free(m);

	m = parse_str("\n\n\n");
	cr_assert_eq(proc_maps__count(m), 0);
	cr_assert_eq(proc_maps__skipped(m), 0, "blank lines are not malformed");
	proc_maps__free(m);
}

Test(proc_maps, malformed_lines_are_skipped_and_counted)
{
	const char *bad[] = {
		"garbage",
		"1000",
		"1000-",
		"1000-2000",
		"1000-2000 ",
		"1000-2000 rw",
		"1000-2000 rwxq 00000000 00:00 0", /* bad share flag */
		"1000-2000 rw-p",
		"1000-2000 rw-p 0000",
		"1000-2000 rw-p 00000000 00",
		"1000-2000 rw-p 00000000 00:",
		"1000-2000 rw-p 00000000 00:00",
		"1000-2000 rw-p 00000000 00:00 ",
		"1000-2000 rw-p 00000000 00:00 x /a",
		"1000-2000 rw-p 00000000 00:00 12x /a",		/* no space after inode */
		"2000-1000 rw-p 00000000 00:00 0",		/* start after end */
		"1000-1000 rw-p 00000000 00:00 0",		/* empty */
		"11112222333344445-2000 rw-p 00000000 00:00 0", /* 17 hex digits */
		"1000-2000 rw-p 00000000 00:00 99999999999999999999999 /a", /* inode overflow */
		"1000-2000 rw-p 00000000 123456789:00 0",		    /* major > 32 bits */
		"1000+2000 rw-p 00000000 00:00 0",
		"-1000-2000 rw-p 00000000 00:00 0",
		" 1000-2000 rw-p 00000000 00:00 0",
	};
	char text[4096] = "";
	struct proc_maps *m;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		m = parse_str(bad[i]);
		cr_assert_eq(proc_maps__count(m), 0, "accepted: '%s'", bad[i]);
		cr_assert_eq(proc_maps__skipped(m), 1, "not counted: '%s'", bad[i]);
		proc_maps__free(m);
		strcat(text, bad[i]);
		strcat(text, "\n");
		if (i == 5)
			strcat(text, "a000-b000 r-xp 00000000 08:01 5 /lib/good.so\n");
	}
	/* Good lines among bad ones survive; the last line may lack its newline. */
	strcat(text, "c000-d000 r-xp 00000000 08:01 6 /lib/last.so");
	m = parse_str(text);
	cr_assert_eq(proc_maps__count(m), 2);
	cr_assert_eq(proc_maps__skipped(m), sizeof(bad) / sizeof(bad[0]));
	cr_assert_str_eq(proc_maps__at(m, 0)->path, "/lib/good.so");
	cr_assert_str_eq(proc_maps__at(m, 1)->path, "/lib/last.so");
	proc_maps__free(m);
}

Test(proc_maps, truncated_buffer_never_reads_past_end)
{
	const char *line =
		"7f0000000000-7f0000001000 r-xp 00001000 08:01 1234 /usr/lib/libc.so.6\n";
	size_t full = strlen(line), len, page = (size_t)sysconf(_SC_PAGESIZE);
	struct proc_maps *m;
	char *mem;

	/* Each prefix ends right before a PROT_NONE page: any overread faults. */
	mem = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(mem, MAP_FAILED);
	cr_assert_eq(mprotect(mem + page, page, PROT_NONE), 0);
	for (len = 0; len <= full; len++) {
		char *buf = mem + page - len;

		memcpy(buf, line, len);
		m = proc_maps__parse(buf, len);
		cr_assert_not_null(m);
		/* A prefix that reaches the inode parses, with a shorter path. */
		cr_assert_eq(proc_maps__count(m) + proc_maps__skipped(m), len ? 1 : 0, "len %zu",
			     len);
		proc_maps__free(m);
	}
	munmap(mem, 2 * page);
}

Test(proc_maps, very_long_line)
{
	size_t plen = 20000, i;
	char *text = malloc(plen + 128), *p;
	struct proc_maps *m;

	cr_assert_not_null(text);
	p = text + sprintf(text, "1000-2000 r-xp 00000000 08:01 9 /");
	for (i = 0; i < plen; i++)
		*p++ = (char)('a' + i % 26);
	p += sprintf(p, "\n3000-4000 r-xp 00000000 08:01 10 /short\n");
	m = proc_maps__parse(text, (size_t)(p - text));
	cr_assert_not_null(m);
	cr_assert_eq(proc_maps__count(m), 2);
	cr_assert_eq(strlen(proc_maps__at(m, 0)->path), plen + 1);
	cr_assert_str_eq(proc_maps__at(m, 1)->path, "/short");
	proc_maps__free(m);
	free(text);
}

Test(proc_maps, find_uses_half_open_ranges_and_sorts)
{
	/* Out of order on purpose: hand-written input gets sorted. */
	struct proc_maps *m = parse_str("5000-6000 r-xp 00000000 08:01 2 /b\n"
					"1000-2000 r-xp 00000000 08:01 1 /a\n"
					"2000-3000 r-xp 00000000 08:01 3 /c\n");

	cr_assert_eq(proc_maps__count(m), 3);
	cr_assert_null(proc_maps__find(m, 0xfff));
	cr_assert_str_eq(proc_maps__find(m, 0x1000)->path, "/a");
	cr_assert_str_eq(proc_maps__find(m, 0x1fff)->path, "/a");
	cr_assert_str_eq(proc_maps__find(m, 0x2000)->path, "/c");
	cr_assert_null(proc_maps__find(m, 0x3000), "gap between mappings");
	cr_assert_null(proc_maps__find(m, 0x4fff));
	cr_assert_str_eq(proc_maps__find(m, 0x5abc)->path, "/b");
	cr_assert_eq(proc_maps__index(m, 0x5abc), 2);
	cr_assert_null(proc_maps__find(m, 0x6000));
	cr_assert_null(proc_maps__find(m, UINT64_MAX));
	proc_maps__free(m);
}

static __attribute__((noinline)) int marker_fn(int x)
{
	return x * 3;
}

Test(proc_maps, read_own_process)
{
	struct proc_maps *m = proc_maps__read(NULL, getpid());
	const struct proc_map *p;
	bool found_self = false;
	char self[PATH_MAX];
	ssize_t n;
	size_t i;

	cr_assert_not_null(m, "%s", strerror(errno));
	cr_assert_gt(proc_maps__count(m), 5);
	cr_assert_eq(proc_maps__skipped(m), 0);
	p = proc_maps__find(m, (uint64_t)(uintptr_t)&marker_fn);
	cr_assert_not_null(p);
	cr_assert(p->perms & PROC_MAP_EXEC);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	cr_assert_gt(n, 0);
	self[n] = '\0';
	cr_assert_str_eq(p->path, self);
	for (i = 0; i < proc_maps__count(m); i++)
		found_self |= proc_maps__at(m, i)->path && !strcmp(proc_maps__at(m, i)->path, self);
	cr_assert(found_self);
	proc_maps__free(m);
}

Test(proc_maps, read_errors)
{
	char dir[] = "/tmp/xsprof-maps-XXXXXX", path[PATH_MAX];
	struct proc_maps *m;
	FILE *f;

	errno = 0;
	cr_assert_null(proc_maps__read(NULL, INT_MAX));
	cr_assert_eq(errno, ESRCH, "a pid that cannot exist gives ESRCH, got %d", errno);
	cr_assert_null(proc_maps__read(NULL, -5));
	cr_assert_eq(errno, EINVAL);
	cr_assert_null(proc_maps__read("/nonexistent-proc-root", 1));
	cr_assert_eq(errno, ESRCH);

	/* A configurable proc root: tests and containers point it elsewhere. */
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/42", dir);
	cr_assert_eq(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/42/maps", dir);
	f = fopen(path, "we");
	cr_assert_not_null(f);
	fputs("400000-401000 r-xp 00000000 08:01 3 /bin/fake\nbroken line\n", f);
	fclose(f);
	m = proc_maps__read(dir, 42);
	cr_assert_not_null(m);
	cr_assert_eq(proc_maps__count(m), 1);
	cr_assert_eq(proc_maps__skipped(m), 1);
	cr_assert_str_eq(proc_maps__find(m, 0x400abc)->path, "/bin/fake");
	proc_maps__free(m);
	unlink(path);
	snprintf(path, sizeof(path), "%s/42", dir);
	rmdir(path);
	rmdir(dir);
}

Test(proc_maps, free_null)
{
	proc_maps__free(NULL);
}
