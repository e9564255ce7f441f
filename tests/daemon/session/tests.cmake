# SPDX-License-Identifier: Apache-2.0
# The session stage's own tests: naming a session's stacks (from a fake /proc,
# tests/lib/fake_proc.h) and joining its launches to GPU records need no BPF; the profile builder
# runs on a real recording of the test itself (root and BPF).
xsprof_unit_test(test_stack_names SOURCES daemon/session/test_stack_names.c LIBS xsprof_session)
xsprof_unit_test(test_pid_uids SOURCES daemon/session/test_pid_uids.c LIBS xsprof_session)
# The join, and a window slice's GPU work (gpu_slice__tree) made through it.
xsprof_unit_test(test_gpu_join SOURCES daemon/session/test_gpu_join.c LIBS xsprof_session)
# The windows a lasting profile folds its slices into.
xsprof_unit_test(test_window SOURCES daemon/session/test_window.c LIBS xsprof_session)
xsprof_unit_test(test_report_window SOURCES daemon/session/test_report_window.c LIBS xsprof_session)
# lib/alloc_fail.c and ALLOC_FAIL_LINK fail the builder's first allocation, for its error path.
xsprof_unit_test(test_session_profile SOURCES daemon/session/test_session_profile.c lib/alloc_fail.c
	LIBS xsprof_session ${ALLOC_FAIL_LINK})
# One recording of the test itself (root and BPF): its pid filter, timeline, rotation, and
# allocation failures through alloc_fail.c.
xsprof_unit_test(test_recording SOURCES daemon/session/test_recording.c lib/alloc_fail.c
	LIBS xsprof_session ${ALLOC_FAIL_LINK})
# --correlate-check: the three strategies on one run's launches, seen by uprobe and USDT.
xsprof_unit_test(test_join_check SOURCES daemon/session/test_join_check.c LIBS xsprof_session)
# The labels exported with each process: job and rank from its environment, unit, container and
# Kubernetes pod from fake /proc and /var/log/pods, the cap on distinct sets.
xsprof_unit_test(test_host_labels SOURCES daemon/session/test_host_labels.c LIBS xsprof_session)
# A session's plan: each kind of session's recording options and wants from its view, base and
# outputs, field by field as its caller's builder wrote them.
xsprof_unit_test(test_session_plan SOURCES daemon/session/test_session_plan.c LIBS xsprof_session)
# The table of counters: every row's value the same in the status JSON, /metrics and the lines
# of xsprofctl status and the one-shot's -v (tests/daemon/session/test_counters.c).
xsprof_unit_test(test_counters SOURCES daemon/session/test_counters.c LIBS xsprof_counters)

# GPU waits: CUDA calls that wait for the GPU, timed by entry and return uprobes, shown as
# [wait gpu] frames with the GPU work that ran meanwhile (a fake driver whose synchronize and
# blocking copy take a known time, and GPU records sent as libxsprof_cupti.so sends them).
if(NOT TARGET xs_cuda_fake)
	add_test(NAME test_gpu_waits COMMAND sh -c
		"echo 'test_gpu_waits: no CUDA toolkit found at configure time' >&2; exit 1")
	return()
endif()

add_library(xs_cuda_wait SHARED workloads/fake_cuda_wait.c)
set_target_properties(xs_cuda_wait PROPERTIES OUTPUT_NAME cuda_xswait)
target_compile_options(xs_cuda_wait PRIVATE ${XS_FRAME_FLAGS})
target_include_directories(xs_cuda_wait PRIVATE ${PROJECT_SOURCE_DIR})

add_executable(xs_gpu_wait workloads/gpu_wait.c)
target_compile_options(xs_gpu_wait PRIVATE ${XS_FRAME_FLAGS})
target_include_directories(xs_gpu_wait PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(xs_gpu_wait PRIVATE xs_cuda_wait)

# Allocations through the real libcudart from threads that set known devices (cudaSetDevice).
add_executable(xs_cuda_devices workloads/cuda_devices.c)
target_compile_options(xs_cuda_devices PRIVATE ${XS_FRAME_FLAGS})
target_link_libraries(xs_cuda_devices PRIVATE CUDA::cudart pthread)

xsprof_unit_test(test_gpu_waits SOURCES daemon/session/test_gpu_waits.c lib/harness.c LIBS xsprof_session)
target_compile_definitions(test_gpu_waits PRIVATE XSPROFD_PATH="$<TARGET_FILE:xsprofd>"
	XS_GPU_WAIT_PATH="$<TARGET_FILE:xs_gpu_wait>" XS_CUDA_PATH="$<TARGET_FILE:xs_cuda>"
	XS_CUDA_DEVICES_PATH="$<TARGET_FILE:xs_cuda_devices>")
add_dependencies(test_gpu_waits xsprofd xs_gpu_wait xs_cuda xs_cuda_devices)

# --max-cpu (daemon/session/ceiling.h): the ceiling held on a load that costs far more, what was
# shed said in the report, status and /metrics, shares and launch counts kept (tests/daemon/session/max_cpu.sh).
# Needs root, BPF, bpftool and the CUDA test doubles (tests/daemon/cuda/tests.cmake).
if(TARGET xs_launch_rate)
	add_test(NAME max_cpu COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/session/max_cpu.sh ${CMAKE_BINARY_DIR})
	set_tests_properties(max_cpu PROPERTIES TIMEOUT 300)
else()
	add_test(NAME max_cpu COMMAND sh -c
		"echo 'max_cpu: no CUDA toolkit found at configure time (set CUDAToolkit_ROOT)' >&2; exit 1")
endif()

# --group-by range: the NVTX range a thread was in at a time.
xsprof_unit_test(test_ranges SOURCES daemon/session/test_ranges.c LIBS xsprof_session)
