// SPDX-License-Identifier: Apache-2.0
/* C++ fixture: namespaced, member and template functions, so names must be demangled. */
#include "fixture_cxx.h"

namespace symfix
{
namespace outer
{
__attribute__((noipa)) int Widget::frob(int x)
{
	return x * 17 + value;
}
} // namespace outer

template <typename T> __attribute__((noipa)) T twice(T x)
{
	return x + x;
}
template int twice<int>(int);
template long twice<long>(long);
} // namespace symfix

extern "C" {
__attribute__((noipa)) void *symfix_cxx_frob_addr(void)
{
	int (symfix::outer::Widget::*pm)(int) = &symfix::outer::Widget::frob;
	void *p;

	/* A non-virtual member pointer's first word is the function's address (Itanium ABI). */
	static_assert(sizeof(pm) >= sizeof(p), "member pointer layout");
	__builtin_memcpy(&p, &pm, sizeof(p));
	return p;
}

__attribute__((noipa)) void *symfix_cxx_twice_int_addr(void)
{
	return reinterpret_cast<void *>(&symfix::twice<int>);
}
}
