# SPDX-License-Identifier: Apache-2.0
# Output library tests. test_flamegraph runs xmllint (Debian package: libxml2-utils) to check
# the SVG is well-formed; test_output_file mounts a small tmpfs, so it needs root.
xsprof_unit_test(test_calltree SOURCES test_calltree.c alloc_fail.c LIBS xsprof_output
	${ALLOC_FAIL_LINK})
xsprof_unit_test(test_folded SOURCES test_folded.c LIBS xsprof_output)
xsprof_unit_test(test_flamegraph SOURCES test_flamegraph.c LIBS xsprof_output)
xsprof_unit_test(test_output_file SOURCES test_output_file.c LIBS xsprof_output)
xsprof_unit_test(test_report SOURCES test_report.c LIBS xsprof_output)
# test_callgrind reads the writer's files back with callgrind_annotate (Debian: valgrind).
xsprof_unit_test(test_callgrind SOURCES test_callgrind.c LIBS xsprof_output)
