# SPDX-License-Identifier: Apache-2.0
# The profile model.
xsprof_unit_test(test_profile SOURCES output/model/test_profile.c LIBS xsprof_output)
