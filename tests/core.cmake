# SPDX-License-Identifier: Apache-2.0
# The core stages' own tests, no BPF needed: xsprofd's command line and config file, the
# command run under the profiler, the stack table and folding.
xsprof_unit_test(test_options SOURCES test_options.c LIBS xsprofd_cli)
xsprof_unit_test(test_command SOURCES test_command.c LIBS xsprof_base)
xsprof_unit_test(test_stack_table SOURCES test_stack_table.c LIBS xsprof_stacks)
xsprof_unit_test(test_fold SOURCES test_fold.c LIBS xsprof_stacks)
