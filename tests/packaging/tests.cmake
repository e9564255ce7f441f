# SPDX-License-Identifier: Apache-2.0
# Every flag --help lists is in the man page and the bash completion (tests/packaging/docs_in_step.sh).
add_test(NAME docs_in_step COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/packaging/docs_in_step.sh ${CMAKE_BINARY_DIR})
