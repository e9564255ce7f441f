/* SPDX-License-Identifier: Apache-2.0 */
#ifndef XSPROF_TESTS_SYMBOLIZE_FIXTURES_FIXTURE_CXX_H
#define XSPROF_TESTS_SYMBOLIZE_FIXTURES_FIXTURE_CXX_H

#ifdef __cplusplus
namespace symfix
{
namespace outer
{
struct Widget {
	int value;
	int frob(int x);
};
} // namespace outer
template <typename T> T twice(T x);
} // namespace symfix

extern "C" {
#endif

/* Runtime addresses of symfix::outer::Widget::frob(int) and symfix::twice<int>(int). */
void *symfix_cxx_frob_addr(void);
void *symfix_cxx_twice_int_addr(void);

#ifdef __cplusplus
}
#endif

#endif
