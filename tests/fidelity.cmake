# SPDX-License-Identifier: Apache-2.0
# Whole stacks in real software (tests/fidelity.sh): Debian's clang++-14 compiling and python3's
# numpy in BLAS/LAPACK, each under the real xsprofd and beside perf (--call-graph dwarf, -g) on
# the same work; xsprofd's stacks must be whole and at least as whole as perf's best mode. Needs
# root, BTF, linux-perf, clang-14 and python3-numpy (scripts/deps.sh); about a minute here.
add_test(NAME fidelity_real_software COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/fidelity.sh
	${CMAKE_BINARY_DIR})
set_tests_properties(fidelity_real_software PROPERTIES TIMEOUT 600)
