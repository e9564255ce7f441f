# SPDX-License-Identifier: Apache-2.0
# The core stages' own tests, no BPF needed: xsprofd's command line and config file, and the
# command run under the profiler.
xsprof_unit_test(test_options SOURCES test_options.c LIBS xsprofd_cli)
xsprof_unit_test(test_command SOURCES test_command.c LIBS xsprof_base)
