# SPDX-License-Identifier: Apache-2.0
# The stack table and folding, no BPF needed.
xsprof_unit_test(test_stack_table SOURCES daemon/stacks/test_stack_table.c LIBS xsprof_stacks)
xsprof_unit_test(test_fold SOURCES daemon/stacks/test_fold.c LIBS xsprof_stacks)
