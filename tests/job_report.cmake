# SPDX-License-Identifier: Apache-2.0
# A training job's ranks and their collectives: NCCL's kernel names across its versions
# (test_nccl).
xsprof_unit_test(test_nccl SOURCES test_nccl.c LIBS xsprof_output)
