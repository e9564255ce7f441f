// SPDX-License-Identifier: Apache-2.0
#include "nofp_lib.h"

/* Saves callee-saved registers (rbx, r12..) but keeps no frame pointer. */
__attribute__((noinline)) unsigned long xs_nofp_lib_spin(unsigned long x)
{
	unsigned long a = x, b = x ^ 0x9e3779b97f4a7c15ul, c = x + 7;

	for (int i = 0; i < 100000; i++) {
		a = a * 6364136223846793005ul + b;
		b ^= a >> 13;
		c += a ^ b;
		__asm__ volatile("" : "+r"(a), "+r"(b), "+r"(c));
	}
	return a ^ b ^ c;
}
