// SPDX-License-Identifier: Apache-2.0
/* A short-lived child: burns MS milliseconds (default 20) in symfix_child_burn, then exits. */
#include <stdlib.h>

#include "fixture.h"

unsigned long symfix_burn_spin(double secs);

SYMFIX_FN unsigned long symfix_child_burn(double secs)
{
	return symfix_burn_spin(secs) + 1;
}

int main(int argc, char **argv)
{
	double ms = argc > 1 ? atof(argv[1]) : 20;

	return symfix_child_burn(ms / 1000) == 0;
}
