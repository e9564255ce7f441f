# SPDX-License-Identifier: Apache-2.0
# The sampler's restarts off its fixed grid (daemon/probes/dither.c).
xsprof_unit_test(test_dither SOURCES daemon/probes/test_dither.c LIBS xsprof_probes m)
