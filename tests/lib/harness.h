/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers for tests that run real programs: spawning, waiting, reading folded profiles. */
#ifndef XSPROF_TESTS_HARNESS_H
#define XSPROF_TESTS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct folded_line {
	char **frames; /* frames[0] is the comm */
	int n;
	uint64_t count;
};

struct folded {
	struct folded_line *lines;
	size_t n;
	uint64_t total;
};

/* Parse a folded file; every line must be well formed (the test fails otherwise). */
void folded_load(const char *path, struct folded *ret);
void folded_free(struct folded *f);
/* Samples of lines that contain a frame equal to name (any depth). */
uint64_t folded_count_with(const struct folded *f, const char *name);
/* Index of the first frame equal to name in a line, or -1. */
int folded_find(const struct folded_line *l, const char *name);

/* Start argv[0] with stdout to out_path (or inherited when NULL) and stderr to err_path. */
pid_t spawn(char *const argv[], const char *out_path, const char *err_path);
/* Wait for pid; its exit status, or 128+signal. */
int wait_exit(pid_t pid);
/* Run to completion: its exit status. */
int run(char *const argv[], const char *out_path, const char *err_path);

/* A fresh path under the test build directory: DIR/NAME.PID.SEQ.SUFFIX */
const char *test_path(const char *name, const char *suffix);
/* Whole file as a NUL-terminated string (caller frees); NULL when it cannot be read. */
char *read_file(const char *path);
/* Wait until the file holds needle (a daemon's "sampling" line), at most timeout_s: true once
 * it does. */
bool wait_for_text(const char *path, const char *needle, double timeout_s);

#endif
