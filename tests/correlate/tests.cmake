# SPDX-License-Identifier: Apache-2.0
# Correlation strategies on synthetic streams.
xsprof_unit_test(test_correlate SOURCES correlate/test_correlate.c LIBS xsprof_correlate)
