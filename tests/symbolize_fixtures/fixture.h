/* SPDX-License-Identifier: Apache-2.0 */
/* Functions the symbolizer tests look up by name, in the fixture binaries and library. */
#ifndef XSPROF_TESTS_SYMBOLIZE_FIXTURES_FIXTURE_H
#define XSPROF_TESTS_SYMBOLIZE_FIXTURES_FIXTURE_H

/* noipa: keep each function a real, separate symbol (no inlining, cloning or folding). */
#define SYMFIX_FN __attribute__((noipa, used))

int symfix_lib_alpha(int x);
int symfix_lib_beta(int x);
int symfix_lib_weak(int x);
/* The lib's static function, reachable for runtime-address tests. */
int (*symfix_lib_local_ptr(void))(int);

int symfix_main_alpha(int x);
int symfix_main_beta(int x);

#endif
