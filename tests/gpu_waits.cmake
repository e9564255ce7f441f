# SPDX-License-Identifier: Apache-2.0
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

xsprof_unit_test(test_gpu_waits SOURCES test_gpu_waits.c harness.c LIBS xsprof_session)
target_compile_definitions(test_gpu_waits PRIVATE XSPROFD_PATH="$<TARGET_FILE:xsprofd>"
	XS_GPU_WAIT_PATH="$<TARGET_FILE:xs_gpu_wait>" XS_CUDA_PATH="$<TARGET_FILE:xs_cuda>"
	XS_CUDA_DEVICES_PATH="$<TARGET_FILE:xs_cuda_devices>")
add_dependencies(test_gpu_waits xsprofd xs_gpu_wait xs_cuda xs_cuda_devices)
