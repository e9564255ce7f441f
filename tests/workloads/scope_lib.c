// SPDX-License-Identifier: Apache-2.0
/*
 * libxs_scope_lib.so: an xsprof scope inside a shared library that is no CUDA library, for the
 * attach test (a running process's libraries are probed for their scopes, not only its
 * executable): xs_lib_phase(ns) spins ns of CPU in the scope "lib_phase".
 */
#include <stdint.h>

#include "tests/workloads/phases.h"
#include "xsprof/scope.h"

NOINLINE void xs_lib_phase(uint64_t ns)
{
	XSPROF_SCOPE("lib_phase");
	xs_burn(ns);
}
