# SPDX-License-Identifier: Apache-2.0
# Output library tests. test_flamegraph runs xmllint (Debian package: libxml2-utils) to check
# the SVG is well-formed; test_output_file mounts a small tmpfs, so it needs root.
xsprof_unit_test(test_calltree SOURCES output/model/test_calltree.c lib/alloc_fail.c LIBS xsprof_output
	${ALLOC_FAIL_LINK})
xsprof_unit_test(test_folded SOURCES output/test_folded.c LIBS xsprof_output)
xsprof_unit_test(test_flamegraph SOURCES output/test_flamegraph.c LIBS xsprof_output)
xsprof_unit_test(test_output_file SOURCES output/test_output_file.c LIBS xsprof_output)
xsprof_unit_test(test_report SOURCES output/test_report.c LIBS xsprof_output)
# test_callgrind reads the writer's files back with callgrind_annotate (Debian: valgrind).
xsprof_unit_test(test_callgrind SOURCES output/test_callgrind.c LIBS xsprof_output)

# The callgrind format read by valgrind's callgrind_annotate against the folded profile of the
# same run: C with lines, Python, the GPU double's event, off-CPU time, the service's window
# (tests/output/callgrind.sh; needs root, BTF, valgrind).
add_test(NAME callgrind COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/output/callgrind.sh ${CMAKE_BINARY_DIR})
set_tests_properties(callgrind PROPERTIES TIMEOUT 400)

# The GPU-aware writers.
# Needs python3 (its json module parses the trace back for the structural check).
xsprof_unit_test(test_chrome_trace SOURCES output/test_chrome_trace.c LIBS xsprof_output)
# The web view's GPU timeline, read back with json-c.
xsprof_unit_test(test_gpu_timeline SOURCES output/test_gpu_timeline.c LIBS xsprof_output PkgConfig::JSONC)
# Reads the profile back with `go tool pprof` (Debian: golang-go).
xsprof_unit_test(test_pprof SOURCES output/test_pprof.c LIBS xsprof_output)
xsprof_unit_test(test_xplane SOURCES output/test_xplane.c LIBS xsprof_output)
