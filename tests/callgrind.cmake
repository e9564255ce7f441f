# SPDX-License-Identifier: Apache-2.0
# The callgrind format read by valgrind's callgrind_annotate against the folded profile of the
# same run: C with lines, Python, the GPU double's event, off-CPU time, the service's window
# (tests/callgrind.sh; needs root, BTF, valgrind).
add_test(NAME callgrind COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/callgrind.sh ${CMAKE_BINARY_DIR})
set_tests_properties(callgrind PROPERTIES TIMEOUT 400)
