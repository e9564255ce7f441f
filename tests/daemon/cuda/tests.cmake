# SPDX-License-Identifier: Apache-2.0
# GPU path, CPU side: CUDA API uprobes, the xsprof:launch USDT, command mode, the launches output.
# The workloads call the real libcudart.so.13 (no GPU needed: the calls fail, the uprobes fire),
# a fake driver library (libcuda is not installed without a GPU driver) and a fake injection
# library that fires the same USDT as libxsprof_cupti.so.
# The launch store and fold: pure data, no CUDA and no BPF needed.
xsprof_unit_test(test_launch_store SOURCES daemon/cuda/test_launch_store.c LIBS xsprof_cuda)
# xsprof scopes: probe records paired into ranges, names read once.
xsprof_unit_test(test_cuda_scopes SOURCES daemon/cuda/test_cuda_scopes.c LIBS xsprof_cuda)

find_package(CUDAToolkit QUIET)
if(NOT CUDAToolkit_FOUND OR NOT TARGET CUDA::cudart)
	# Fail loudly rather than skip: these tests are how the GPU path is checked.
	message(WARNING "xsprof: no CUDA toolkit (set CUDAToolkit_ROOT): test_cuda_probes will fail")
	add_test(NAME test_cuda_probes COMMAND sh -c
		"echo 'test_cuda_probes: no CUDA toolkit found at configure time (set CUDAToolkit_ROOT)' >&2; exit 1")
	return()
endif()

set(XS_FRAME_FLAGS -O1 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer
	-fno-optimize-sibling-calls)

# The driver entry points, doing nothing; named libcuda* so xsprofd treats it as the driver.
add_library(xs_cuda_fake SHARED workloads/fake_cuda.c)
set_target_properties(xs_cuda_fake PROPERTIES OUTPUT_NAME cuda_xsfake)
target_compile_options(xs_cuda_fake PRIVATE ${XS_FRAME_FLAGS})

# xsprof:launch with its semaphore, as libxsprof_cupti.so fires it.
add_library(xs_cupti_fake SHARED workloads/fake_cupti.c)
set_target_properties(xs_cupti_fake PROPERTIES OUTPUT_NAME xsprof_cupti_fake)
target_compile_options(xs_cupti_fake PRIVATE ${XS_FRAME_FLAGS})
# The same on sdt.h's 1-byte nop: the trap the 5-byte site avoids (bench/cuda_launch.sh).
add_library(xs_cupti_fake_int3 SHARED workloads/fake_cupti.c)
set_target_properties(xs_cupti_fake_int3 PROPERTIES OUTPUT_NAME xsprof_cupti_fake_int3)
target_compile_options(xs_cupti_fake_int3 PRIVATE ${XS_FRAME_FLAGS})
target_compile_definitions(xs_cupti_fake_int3 PRIVATE XSPROF_USDT_INT3)

# The known call tree, shared by the workload and the in-process test.
add_library(xs_cuda_calls STATIC workloads/cuda_calls.c)
# It calls the deprecated array copies too: programs still do, and libcudart still exports them.
target_compile_options(xs_cuda_calls PRIVATE ${XS_FRAME_FLAGS} -Wno-deprecated-declarations)
target_link_libraries(xs_cuda_calls PUBLIC CUDA::cudart xs_cuda_fake)

add_executable(xs_cuda workloads/cuda_launches.c)
target_compile_options(xs_cuda PRIVATE ${XS_FRAME_FLAGS})
target_link_libraries(xs_cuda PRIVATE xs_cuda_calls pthread)

add_executable(xs_usdt workloads/usdt_launches.c)
target_compile_options(xs_usdt PRIVATE ${XS_FRAME_FLAGS})
target_link_libraries(xs_usdt PRIVATE xs_cupti_fake)

xsprof_unit_test(test_cuda_probes SOURCES daemon/cuda/test_cuda_probes.c lib/harness.c
	LIBS xsprof_session xs_cuda_calls xs_cupti_fake pthread)
target_compile_options(test_cuda_probes PRIVATE ${XS_FRAME_FLAGS})
target_compile_definitions(test_cuda_probes PRIVATE
	XSPROFD_PATH="$<TARGET_FILE:xsprofd>"
	XS_CUDA_PATH="$<TARGET_FILE:xs_cuda>"
	XS_USDT_PATH="$<TARGET_FILE:xs_usdt>"
	XS_CUDA_FAKE_PATH="$<TARGET_FILE:xs_cuda_fake>"
	XS_CUPTI_FAKE_PATH="$<TARGET_FILE:xs_cupti_fake>"
	XS_CUDART_DIR="${CUDAToolkit_LIBRARY_DIR}")
target_compile_definitions(test_cuda_probes PRIVATE
	XS_CUDA_BENCH_PATH="$<TARGET_FILE:xs_cuda_bench>")
add_dependencies(test_cuda_probes xsprofd xs_cuda xs_usdt xs_cuda_bench)
# The same probes as a kernel before 6.6 takes them: one perf-event uprobe per API.
add_test(NAME cuda_perf_uprobes COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/daemon/cuda/cuda_perf_uprobes.sh ${CMAKE_BINARY_DIR})
set_tests_properties(cuda_perf_uprobes PROPERTIES TIMEOUT 120)

# bench/cuda_launch.sh: added CPU time per CUDA call, uprobe and USDT paths.
add_executable(xs_cuda_bench ${PROJECT_SOURCE_DIR}/bench/cuda_launch.c
	${PROJECT_SOURCE_DIR}/bench/cuda_launch_deep.c)
target_compile_options(xs_cuda_bench PRIVATE ${XS_FRAME_FLAGS})
# The -deep modes' chain: no frame pointers (the walk needs the tables), calls kept calls.
set_source_files_properties(${PROJECT_SOURCE_DIR}/bench/cuda_launch_deep.c PROPERTIES
	COMPILE_OPTIONS "-fomit-frame-pointer;-momit-leaf-frame-pointer;-fno-optimize-sibling-calls")
target_link_libraries(xs_cuda_bench PRIVATE dl)
target_compile_definitions(xs_cuda_bench PRIVATE
	XS_CUPTI_FAKE_PATH="$<TARGET_FILE:xs_cupti_fake>"
	XS_CUPTI_FAKE_INT3_PATH="$<TARGET_FILE:xs_cupti_fake_int3>"
	XS_CUDART_PATH="${CUDAToolkit_LIBRARY_DIR}/libcudart.so")
target_include_directories(xs_cuda_bench PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
add_dependencies(xs_cuda_bench xs_cupti_fake xs_cupti_fake_int3)

# --max-cpu's load (tests/daemon/session/max_cpu.sh, bench/max_cpu.sh): launches at a set rate, two sites.
add_executable(xs_launch_rate workloads/launch_rate.c)
target_compile_options(xs_launch_rate PRIVATE ${XS_FRAME_FLAGS})
target_link_libraries(xs_launch_rate PRIVATE xs_cuda_fake)

# The daemon's hand-typed CUPTI callback ids, checked by the real libcupti (no GPU needed).
if(TARGET xsprof_cupti)
	xsprof_unit_test(test_cupti_ids SOURCES daemon/cuda/test_cupti_ids.c
		LIBS xsprof_cuda ${XSPROF_CUPTI_LIBRARY})
	target_include_directories(test_cupti_ids SYSTEM PRIVATE
		${XSPROF_CUPTI_INCLUDE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
endif()
