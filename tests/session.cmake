# SPDX-License-Identifier: Apache-2.0
# The session stage's own tests: naming a session's stacks (from a fake /proc,
# tests/fake_proc.h) and joining its launches to GPU records need no BPF; the profile builder
# runs on a real recording of the test itself (root and BPF).
xsprof_unit_test(test_stack_names SOURCES test_stack_names.c LIBS xsprof_session)
xsprof_unit_test(test_pid_uids SOURCES test_pid_uids.c LIBS xsprof_session)
# The join, and a window slice's GPU work (gpu_slice__tree) made through it.
xsprof_unit_test(test_gpu_join SOURCES test_gpu_join.c LIBS xsprof_session)
# The windows a lasting profile folds its slices into.
xsprof_unit_test(test_window SOURCES test_window.c LIBS xsprof_session)
xsprof_unit_test(test_report_window SOURCES test_report_window.c LIBS xsprof_session)
# alloc_fail.c and ALLOC_FAIL_LINK fail the builder's first allocation, for its error path.
xsprof_unit_test(test_session_profile SOURCES test_session_profile.c alloc_fail.c
	LIBS xsprof_session ${ALLOC_FAIL_LINK})
# One recording of the test itself (root and BPF): its pid filter, timeline, rotation, and
# allocation failures through alloc_fail.c.
xsprof_unit_test(test_recording SOURCES test_recording.c alloc_fail.c
	LIBS xsprof_session ${ALLOC_FAIL_LINK})
# --correlate-check: the three strategies on one run's launches, seen by uprobe and USDT.
xsprof_unit_test(test_join_check SOURCES test_join_check.c LIBS xsprof_session)
# The labels exported with each process: job and rank from its environment, unit, container and
# Kubernetes pod from fake /proc and /var/log/pods, the cap on distinct sets.
xsprof_unit_test(test_host_labels SOURCES test_host_labels.c LIBS xsprof_session)
# A session's plan: each kind of session's recording options and wants from its view, base and
# outputs, field by field as its caller's builder wrote them.
xsprof_unit_test(test_session_plan SOURCES test_session_plan.c LIBS xsprof_session)
# The table of counters: every row's value the same in the status JSON, /metrics and the lines
# of xsprofctl status and the one-shot's -v (tests/test_counters.c).
xsprof_unit_test(test_counters SOURCES test_counters.c LIBS xsprof_counters)
