# SPDX-License-Identifier: Apache-2.0
# The CUPTI pipe's daemon side: its parser, server and GPU record store; xsprof-cupti-dump,
# a standalone receiver for trying the library on a GPU machine. No GPU needed.
xsprof_unit_test(test_gpu_records SOURCES daemon/gpu/test_gpu_records.c LIBS xsprof_gpu)
xsprof_unit_test(test_cupti_wire SOURCES daemon/gpu/test_cupti_wire.c LIBS xsprof_gpu)
xsprof_unit_test(test_cupti_server SOURCES daemon/gpu/test_cupti_server.c LIBS xsprof_gpu)
add_executable(xsprof-cupti-dump daemon/gpu/cupti_dump.c)
target_link_libraries(xsprof-cupti-dump PRIVATE xsprof_gpu)
