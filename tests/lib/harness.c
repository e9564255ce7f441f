// SPDX-License-Identifier: Apache-2.0
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/lib/harness.h"

extern char **environ;

void folded_load(const char *path, struct folded *ret)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int lineno = 0;

	cr_assert(f, "cannot open %s: %s", path, strerror(errno));
	memset(ret, 0, sizeof(*ret));
	while ((len = getline(&line, &cap, f)) > 0) {
		struct folded_line *l;
		char *sp, *save = NULL, *tok, *end;

		lineno++;
		/* "# xsprof folded stacks: ..., weights in us": the unit, for readers that look */
		if (line[0] == '#' && lineno == 1)
			continue;
		cr_assert(line[len - 1] == '\n', "%s:%d: no newline", path, lineno);
		line[len - 1] = '\0';
		sp = strrchr(line, ' ');
		cr_assert(sp && sp != line, "%s:%d: no count: %s", path, lineno, line);
		*sp = '\0';
		ret->lines = realloc(ret->lines, (ret->n + 1) * sizeof(*ret->lines));
		l = &ret->lines[ret->n++];
		memset(l, 0, sizeof(*l));
		l->count = strtoull(sp + 1, &end, 10);
		cr_assert(*end == '\0' && l->count > 0, "%s:%d: bad count '%s'", path, lineno,
			  sp + 1);
		for (tok = strtok_r(line, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
			l->frames = realloc(l->frames, (l->n + 1) * sizeof(char *));
			l->frames[l->n++] = strdup(tok);
		}
		cr_assert(l->n >= 2, "%s:%d: a stack needs a comm and a frame", path, lineno);
		ret->total += l->count;
	}
	free(line);
	fclose(f);
}

void folded_free(struct folded *f)
{
	for (size_t i = 0; i < f->n; i++) {
		for (int j = 0; j < f->lines[i].n; j++)
			free(f->lines[i].frames[j]);
		free(f->lines[i].frames);
	}
	free(f->lines);
	memset(f, 0, sizeof(*f));
}

int folded_find(const struct folded_line *l, const char *name)
{
	for (int j = 0; j < l->n; j++)
		if (!strcmp(l->frames[j], name))
			return j;
	return -1;
}

uint64_t folded_count_with(const struct folded *f, const char *name)
{
	uint64_t n = 0;

	for (size_t i = 0; i < f->n; i++)
		if (folded_find(&f->lines[i], name) >= 0)
			n += f->lines[i].count;
	return n;
}

pid_t spawn(char *const argv[], const char *out_path, const char *err_path)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int err;

	posix_spawn_file_actions_init(&fa);
	if (out_path)
		posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC,
						 0644);
	if (err_path)
		posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC,
						 0644);
	err = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	cr_assert(err == 0, "cannot start %s: %s", argv[0], strerror(err));
	return pid;
}

int wait_exit(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		cr_assert(errno == EINTR, "waitpid: %s", strerror(errno));
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int run(char *const argv[], const char *out_path, const char *err_path)
{
	return wait_exit(spawn(argv, out_path, err_path));
}

const char *test_path(const char *name, const char *suffix)
{
	static char buf[8][512];
	static int seq;
	char *p = buf[seq % 8];

	snprintf(p, sizeof(buf[0]), "%s/%s.%d.%d%s", XSPROF_TEST_BINARY_DIR, name, (int)getpid(),
		 seq, suffix);
	seq++;
	unlink(p);
	return p;
}

char *read_file(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0;

	if (!f)
		return NULL;
	for (;;) {
		buf = realloc(buf, len + 65536 + 1);
		size_t n = fread(buf + len, 1, 65536, f);

		len += n;
		if (n < 65536)
			break;
	}
	buf[len] = '\0';
	fclose(f);
	return buf;
}

bool wait_for_text(const char *path, const char *needle, double timeout_s)
{
	for (double waited = 0; waited < timeout_s; waited += 0.05) {
		char *text = read_file(path);
		bool found = text && strstr(text, needle);

		free(text);
		if (found)
			return true;
		usleep(50000);
	}
	return false;
}
