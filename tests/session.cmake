# SPDX-License-Identifier: Apache-2.0
# The session stage's own tests, no BPF needed: naming a session's stacks (from a fake /proc,
# tests/fake_proc.h) and joining its launches to GPU records.
xsprof_unit_test(test_stack_names SOURCES test_stack_names.c LIBS xsprof_session)
# gpu_slice__tree, the window's user of the join, lives in the service: its one file is
# compiled in rather than the whole service (HTTP, TLS, the web view) linked.
xsprof_unit_test(test_gpu_join SOURCES test_gpu_join.c
	${PROJECT_SOURCE_DIR}/daemon/service/service_gpu.c LIBS xsprof_session xsprofd_cli)
