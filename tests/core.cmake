# SPDX-License-Identifier: Apache-2.0
# The core stages' own tests, no BPF needed: xsprofd's command line and config file, the
# command run under the profiler, the stack table and folding; the base's containers.
xsprof_unit_test(test_options SOURCES test_options.c LIBS xsprofd_cli)
xsprof_unit_test(test_command SOURCES test_command.c LIBS xsprof_base)
xsprof_unit_test(test_stack_table SOURCES test_stack_table.c LIBS xsprof_stacks)
xsprof_unit_test(test_fold SOURCES test_fold.c LIBS xsprof_stacks)
# The sampler's restarts off its fixed grid (daemon/probes/dither.c).
xsprof_unit_test(test_dither SOURCES test_dither.c LIBS xsprof_probes m)
# The base's containers, with their allocations failed in turn (tests/alloc_fail.h).
xsprof_unit_test(test_vec SOURCES test_vec.c alloc_fail.c LIBS xsprof_base ${ALLOC_FAIL_LINK})
xsprof_unit_test(test_arena SOURCES test_arena.c alloc_fail.c LIBS xsprof_base ${ALLOC_FAIL_LINK})
xsprof_unit_test(test_strset SOURCES test_strset.c alloc_fail.c LIBS xsprof_base ${ALLOC_FAIL_LINK})
xsprof_unit_test(test_keymap SOURCES test_keymap.c alloc_fail.c LIBS xsprof_base ${ALLOC_FAIL_LINK})
xsprof_unit_test(test_hashmap SOURCES test_hashmap.c alloc_fail.c LIBS xsprof_base ${ALLOC_FAIL_LINK})
# --job and --rank: the rank list's parser and the label-set predicate (daemon/base/job_filter.c).
xsprof_unit_test(test_job_filter SOURCES test_job_filter.c LIBS xsprof_base)
