# SPDX-License-Identifier: Apache-2.0
# xsprofctl's own logic without a daemon, through the library xsprofctl is built from:
# arguments, errors, -o checks, status rendering; fleet's host lines, errors and the merge of
# the hosts' GPU reports.
xsprof_unit_test(test_ctl SOURCES test_ctl.c LIBS xsprof_ctl)
xsprof_unit_test(test_ctl_fleet SOURCES test_ctl_fleet.c LIBS xsprof_ctl)
