# SPDX-License-Identifier: Apache-2.0
# The base's own tests, no BPF needed: the command run under the profiler; the containers,
# with their allocations failed in turn (tests/lib/alloc_fail.h).
xsprof_unit_test(test_command SOURCES daemon/base/test_command.c LIBS xsprof_base)
xsprof_unit_test(test_vec SOURCES daemon/base/test_vec.c lib/alloc_fail.c LIBS xsprof_base ${ALLOC_FAIL_LINK})
xsprof_unit_test(test_arena SOURCES daemon/base/test_arena.c lib/alloc_fail.c LIBS xsprof_base ${ALLOC_FAIL_LINK})
xsprof_unit_test(test_strset SOURCES daemon/base/test_strset.c lib/alloc_fail.c LIBS xsprof_base ${ALLOC_FAIL_LINK})
xsprof_unit_test(test_keymap SOURCES daemon/base/test_keymap.c lib/alloc_fail.c LIBS xsprof_base ${ALLOC_FAIL_LINK})
xsprof_unit_test(test_hashmap SOURCES daemon/base/test_hashmap.c lib/alloc_fail.c LIBS xsprof_base ${ALLOC_FAIL_LINK})
# --job and --rank: the rank list's parser and the label-set predicate (daemon/base/job_filter.c).
xsprof_unit_test(test_job_filter SOURCES daemon/base/test_job_filter.c LIBS xsprof_base)
