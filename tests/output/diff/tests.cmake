# SPDX-License-Identifier: Apache-2.0
# Runs the xsprof-diff binary for its exit statuses; xmllint (libxml2-utils) checks the SVG.
xsprof_unit_test(test_diff SOURCES output/diff/test_diff.c LIBS xsprof_output)
target_compile_definitions(test_diff PRIVATE XSPROF_DIFF_BIN="$<TARGET_FILE:xsprof-diff>")
add_dependencies(test_diff xsprof-diff)
