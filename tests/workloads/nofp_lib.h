/* SPDX-License-Identifier: Apache-2.0 */
/* A shared library built without frame pointers, for tests/workloads/nofp.c. */
#ifndef XSPROF_TESTS_WORKLOADS_NOFP_LIB_H
#define XSPROF_TESTS_WORKLOADS_NOFP_LIB_H

unsigned long xs_nofp_lib_spin(unsigned long x);

#endif
