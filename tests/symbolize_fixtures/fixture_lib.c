// SPDX-License-Identifier: Apache-2.0
/* Shared library fixture: global, weak and local functions. */
#include "fixture.h"

SYMFIX_FN int symfix_lib_alpha(int x)
{
	return x * 3 + 1;
}

SYMFIX_FN int symfix_lib_beta(int x)
{
	return x * 5 - 7;
}

SYMFIX_FN __attribute__((weak)) int symfix_lib_weak(int x)
{
	return x ^ 0x5a5a;
}

SYMFIX_FN static int symfix_lib_local(int x)
{
	return x * x + 11;
}

SYMFIX_FN int (*symfix_lib_local_ptr(void))(int)
{
	return symfix_lib_local;
}

/* Aliases of beta that sort before it by name: only their binding must make them lose. */
__attribute__((weak, alias("symfix_lib_beta"))) int aaa_weak_alias_of_beta(int x);
__attribute__((alias("symfix_lib_beta"), used)) static int aaa_local_alias_of_beta(int x);

/*
 * A function with no .size (as hand-written assembly often has): it must reach to the next
 * symbol. "nop" and "ret" assemble on x86-64 and arm64 alike.
 */
__asm__(".text\n"
	".globl symfix_asm_nosize\n"
	".type symfix_asm_nosize, %function\n"
	"symfix_asm_nosize:\n"
	"\tnop\n"
	"\tnop\n"
	"\tret\n"
	".globl symfix_asm_after\n"
	".type symfix_asm_after, %function\n"
	"symfix_asm_after:\n"
	"\tret\n"
	".size symfix_asm_after, .-symfix_asm_after\n");
