# SPDX-License-Identifier: Apache-2.0
# Correlation strategies on synthetic streams, and the GPU-aware outputs.
xsprof_unit_test(test_correlate SOURCES test_correlate.c LIBS xsprof_correlate)
xsprof_unit_test(test_profile SOURCES test_profile.c LIBS xsprof_output)
# Needs python3 (its json module parses the trace back for the structural check).
xsprof_unit_test(test_chrome_trace SOURCES test_chrome_trace.c LIBS xsprof_output)
# --group-by range: the NVTX range a thread was in at a time.
xsprof_unit_test(test_ranges SOURCES test_ranges.c LIBS xsprof_session)
# The web view's GPU timeline, read back with json-c.
xsprof_unit_test(test_gpu_timeline SOURCES test_gpu_timeline.c LIBS xsprof_output PkgConfig::JSONC)
# Reads the profile back with `go tool pprof` (Debian: golang-go).
xsprof_unit_test(test_pprof SOURCES test_pprof.c LIBS xsprof_output)
# Runs the xsprof-diff binary for its exit statuses; xmllint (libxml2-utils) checks the SVG.
xsprof_unit_test(test_diff SOURCES test_diff.c LIBS xsprof_output)
target_compile_definitions(test_diff PRIVATE XSPROF_DIFF_BIN="$<TARGET_FILE:xsprof-diff>")
add_dependencies(test_diff xsprof-diff)
xsprof_unit_test(test_xplane SOURCES test_xplane.c LIBS xsprof_output)
