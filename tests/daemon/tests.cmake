# SPDX-License-Identifier: Apache-2.0
# xsprofd's command line and config file.
xsprof_unit_test(test_options SOURCES daemon/test_options.c LIBS xsprofd_cli)
