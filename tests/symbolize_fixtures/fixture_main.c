// SPDX-License-Identifier: Apache-2.0
/*
 * Executable fixture, built as PIE and as non-PIE. With "wait" it prints the runtime address
 * of symfix_main_alpha and blocks until stdin closes, so a test can snapshot it, then let it
 * exit, then symbolize.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"

SYMFIX_FN int symfix_main_alpha(int x)
{
	return x * 7 + 3;
}

SYMFIX_FN int symfix_main_beta(int x)
{
	return x * 13 - 2;
}

int main(int argc, char **argv)
{
	char c;

	if (argc > 1 && !strcmp(argv[1], "wait")) {
		printf("%p\n", (void *)symfix_main_alpha);
		fflush(stdout);
		while (read(STDIN_FILENO, &c, 1) > 0)
			;
	}
	return symfix_main_alpha(argc) + symfix_main_beta(argc) == 0;
}
