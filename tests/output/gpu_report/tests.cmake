# SPDX-License-Identifier: Apache-2.0
# The GPU report (output/gpu_report/gpu_report.c): its arithmetic on hand-made profiles (test_gpu_report,
# read back with json-c; kept in slices and merged: test_gpu_report_merge), and the real xsprofd
# diagnosing workloads held back in known ways (tests/output/gpu_report/gpu_report.sh: input-, launch- and
# sync-bound, pageable copies) with the GPU test doubles: the fake injection library's launches
# and the GPU work the workload reports itself.
xsprof_unit_test(test_gpu_report SOURCES output/gpu_report/test_gpu_report.c LIBS xsprof_output PkgConfig::JSONC)
xsprof_unit_test(test_gpu_report_merge SOURCES output/gpu_report/test_gpu_report_merge.c
	LIBS xsprof_output PkgConfig::JSONC)

if(NOT TARGET xs_cupti_fake)
	add_test(NAME gpu_report COMMAND sh -c
		"echo 'gpu_report: no CUDA toolkit found at configure time (set CUDAToolkit_ROOT)' >&2; exit 1")
	return()
endif()

add_library(xs_cuda_bound SHARED workloads/fake_cuda_bound.c)
set_target_properties(xs_cuda_bound PROPERTIES OUTPUT_NAME cuda_xsbound)
target_compile_options(xs_cuda_bound PRIVATE ${XS_FRAME_FLAGS})
target_include_directories(xs_cuda_bound PRIVATE ${PROJECT_SOURCE_DIR})

# The GPU double: launches on the fake injection library's USDT, work sent as CUPTI would.
add_library(xs_gpu_double SHARED workloads/gpu_double.c)
target_compile_options(xs_gpu_double PRIVATE ${XS_FRAME_FLAGS})
target_include_directories(xs_gpu_double PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(xs_gpu_double PRIVATE xs_cupti_fake)

add_executable(xs_gpu_bound workloads/gpu_bound.c)
target_compile_options(xs_gpu_bound PRIVATE ${XS_FRAME_FLAGS})
target_include_directories(xs_gpu_bound PRIVATE ${PROJECT_SOURCE_DIR}
	${PROJECT_SOURCE_DIR}/cupti_inject/include)
target_link_libraries(xs_gpu_bound PRIVATE xs_gpu_double xs_cuda_bound)

add_test(NAME gpu_report COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/output/gpu_report/gpu_report.sh ${CMAKE_BINARY_DIR})
set_tests_properties(gpu_report PROPERTIES TIMEOUT 300)

# A 4-rank job on the GPU double (tests/output/job/tests.cmake's job_report runs it).
# A command in another process's namespaces (tests/output/job/job_fleet.sh's hosts).
add_executable(xs_ns_run workloads/ns_run.c)
add_executable(xs_gpu_job workloads/gpu_job.c)
target_compile_options(xs_gpu_job PRIVATE ${XS_FRAME_FLAGS})
target_include_directories(xs_gpu_job PRIVATE ${PROJECT_SOURCE_DIR}
	${PROJECT_SOURCE_DIR}/cupti_inject/include)
target_link_libraries(xs_gpu_job PRIVATE xs_gpu_double Threads::Threads)
